// A faster estimate of one scenario's iteration for strategy search: simulate the same plan with few
// micro-batches and few layers per model chunk, and extrapolate to the real counts.
//
// Why it holds: once the pipeline runs, each further micro-batch adds one steady-state slot (the
// slowest stage's forward + backward, or its share of a pipeline transfer) while fill, drain, the
// gradient reduction after the last backward and the optimizer step stay the same; and each further
// layer in every model chunk adds the same layer work to every slot, to fill and drain, and the same
// gradient and parameter volume. The iteration time, every part of its breakdown and the hardware
// FLOPs are then bilinear in the micro-batch count m and the layers per chunk l:
//   T(m, l) = a + b m + c l + d m l
// (Narayanan et al. 2021, arXiv 2104.04473, Sec. 2.2: the 1F1B and interleaved iteration is
// (m + p - 1) t_slot and (m + (p - 1)/v) t_slot, t_slot proportional to the layers of a stage, plus
// fixed per-iteration terms). The four corners (m1 | m2) x (l1 | l2) are full simulations by the same
// engine of the plan with global_batch_size = m x data x micro-batch and layers = l x pipeline x
// virtual stages: m1 = 2, m2 = 3 (interleaved: 2p and 3p, see below), l1 = 4,
// l2 = 6 (only when the layers split evenly into the chunks; with 2 and 3 layers the first gradient
// buckets, sized in bytes, and the embedding's overlap differently and data-parallel plans on slow
// networks were off by 0.5%); layers that do not split evenly into the chunks (the embedding and the
// loss counted as layers) are simulated as they are. A dimension is extrapolated only where
// its two points sum to less than its real value (fewer steps simulated); otherwise it is simulated at
// its real value. tests/unit/test_search.cpp compares the
// result with the full simulation and prints the error.
//
// Interleaved points: the schedule needs m divisible by p, and stage s runs
// min(2 (p - s - 1) + (v - 1) p, m v) forward steps before its first backward
// (pipeline_schedule.hpp). At m = p that is all m v of stage 0's steps (2 (p - 1) + (v - 1) p >= p v
// for p >= 2): no steady phase, every forward before every backward, and the iteration is not on the
// affine law of larger m (GPT-3 175B plans with 3 to 6 virtual stages were off by up to 12%). From
// m = 2p on, 2 p v > 2 (p - 1) + (v - 1) p: every stage has a steady phase, and each further group of
// p micro-batches adds the same steady-state steps.
//
// Zero-bubble points (zb-h1): stage s runs p - s - 1 forwards, then s forward + B pairs whose W waits,
// then forward + B + W steps (pipeline_schedule.hpp). Below m = p some stage has no such step, its
// deferred W fill what would be bubbles with fewer micro-batches, and the iteration is not on the law of
// larger m; from m = p on each further micro-batch adds one forward + B + W step to every stage, so the
// points are m = p and p + 1. Its layer points are 6 and 8 per stage: the deferred W fill the bubble
// only while they outlast what does not grow with the layers (the pipeline transfers), and with 4
// layers they do not everywhere (GPT-3 175B, tp8 pp4 dp32, micro-batch 4: the bubble grows 0.104 s
// from 4 to 6 layers per stage and 0.1075 s per 2 layers from there on, and 4 and 6 gave the 96-layer
// iteration 0.2% short; 6 and 8 give it exactly).
//
// Plans with an input pipeline (scenario key "input") are simulated in full: the iteration is the
// larger of the rest and the batch's load (or their sum), which the short runs' smaller batches do not
// extrapolate.
//
// Memory, status and the model FLOP rates are those of the real scenario; engine.events and
// engine.tasks count what the short simulations processed.
#pragma once

#include <cstdint>

#include "config/scenario.hpp"
#include "results/evaluate.hpp"
#include "results/result.hpp"

namespace dtsim::search {

// What the plans of one search share (not owned, must outlive the calls; null: nothing shared):
// flow-level collective times (results::EvaluateOptions::flow_cache) and each mesh's group layouts
// (results::EvaluateOptions::layouts_cache).
struct PlanCaches {
  network::FlowCache* flow = nullptr;
  parallel::LayoutsCache* layouts = nullptr;
};

// How a search evaluates a plan, estimated or in full: runs of kernels as one task each (the same
// iteration and breakdown in fewer tasks, parallel/lower.hpp), no trace, `caches` shared.
results::EvaluateOptions plan_evaluate_options(const PlanCaches& caches);

struct ExtrapolationPoints {
  std::int64_t m1 = 0;  // micro-batches per replica
  std::int64_t m2 = 0;
  std::int64_t l1 = 0;  // layers per model chunk; 0: the layers are not extrapolated
  std::int64_t l2 = 0;
};

// The corner points for `scenario` (see above), before they are capped at its real values.
ExtrapolationPoints extrapolation_points(const config::Scenario& scenario);

// The Result of results::evaluate() without a trace, the iteration extrapolated as above. Infeasible
// plans (their result carries the reason) and plans where neither dimension is extrapolated are
// simulated as they are. `caches`: what it shares with other plans (above).
results::Result evaluate_extrapolated(const config::Scenario& scenario, const PlanCaches& caches = {});
// The same from the given corner points (capped as above).
results::Result evaluate_extrapolated(const config::Scenario& scenario, ExtrapolationPoints points,
                                      const PlanCaches& caches = {});

}  // namespace dtsim::search
