// Re-routing a failed server's work to its data-parallel peers: which rank runs each pipeline step of
// an iteration while some nodes are down, and in what order (Gandhi et al., "ReCycle: Resilient
// Training of Large DNNs using Pipeline Adaptation", SOSP 2024, arXiv 2405.14009: "When servers
// fail, ReCycle dynamically re-routes micro-batches to data-parallel peers", "processed within the
// original pipeline schedule's bubbles" by decoupling the backward pass into its input-gradient and
// weight-gradient parts).
//
// A stage replica is the set of ranks of one pipeline stage in one data-parallel replica (every
// tensor and context coordinate): it holds the stage's parameters, as every other replica of the
// stage does. It is down when one of its ranks is on a down node (replicas_on_nodes()). Each micro-batch
// of a down replica goes to a live replica of the same stage, the one with the fewest adopted
// micro-batches so far (ties: the lowest data coordinate), so that the extra work spreads evenly (the
// busiest peer adopts ceil(down replicas x m / live replicas)); its activations come
// from the down replica's pipeline's preceding stage and go on to its following stage, and its
// gradients back. Every stage needs a live replica: plan_reroute() throws core::InfeasibleError
// otherwise (the job must restart).
//
// Order: a list schedule of the whole iteration, simulated on estimated step costs (the stages'
// FLOPs: StageCost). Whenever a replica is idle it starts, among the steps whose inputs are ready,
// the oldest input-gradient pass (B), else the oldest forward (F) while it holds fewer micro-batches
// between their forward and their B than its stage did without failures (`in_flight`: 1F1B's p - s;
// adopted micro-batches get no more activation memory than the stage had), else the oldest
// weight-gradient pass (W), which thus fills the bubbles, as in zero-bubble schedules (Qi et al.,
// ICLR 2024). "Oldest": the lowest micro-batch, then data coordinate. Without a split backward
// (`split_backward` false, a single stage) B carries the whole backward pass. The engine then runs
// each replica's steps in the order they started here, with the real costs; that order respects every
// dependency (each step starts after its inputs in the list schedule), so the task graph has no cycle.
// Should every replica wait at once (not expected: each holds at most its stage's micro-batches), the
// replicas' in-flight limits grow by one until one can start.
#pragma once

#include <cstdint>
#include <vector>

#include "parallel/mesh.hpp"
#include "parallel/pipeline_schedule.hpp"

namespace dtsim::parallel {

// One pipeline stage of one data-parallel replica.
struct StageReplica {
  std::int64_t data = 0;
  std::int64_t stage = 0;
  friend bool operator==(const StageReplica&, const StageReplica&) = default;
};

// The stage replicas with a rank on one of `nodes`, in the order of their first rank.
std::vector<StageReplica> replicas_on_nodes(const Mesh& mesh, const std::vector<std::int64_t>& nodes);

// One pipeline step a rank runs: `owner`'s (the mesh rank whose pipeline and data coordinates the
// micro-batch belongs to: the rank itself, or a down peer whose work it adopted).
struct RoutedStep {
  std::int64_t owner = 0;
  PipelineStep step;
};

// One micro-batch's estimated costs on a stage, in any unit common to all stages (FLOPs): forward,
// input-gradient pass (with its recompute), weight-gradient pass. Positive.
struct StageCost {
  double forward = 1.0;
  double input_grad = 1.0;
  double weight_grad = 1.0;
};

struct Reroute {
  std::int64_t micro_batches = 0;
  std::vector<std::uint8_t> down;              // per mesh rank: on a down node
  std::vector<std::vector<RoutedStep>> steps;  // per mesh rank, in the order it runs them; empty when down
  std::vector<std::int64_t> executor;          // per (mesh rank, micro-batch): the rank that runs its steps
  std::vector<std::int64_t> adopted;           // per stage: the most micro-batches one live replica adopted

  bool is_down(std::int64_t r) const { return down[static_cast<std::size_t>(r)] != 0; }
  std::int64_t executor_of(std::int64_t r, std::int64_t mb) const {
    return executor[static_cast<std::size_t>(r * micro_batches + mb)];
  }
};

// `in_flight[s]`: stage s's limit on micro-batches between forward and B (its fault-free schedule's
// peak, at least 1); `costs[s]`: stage s's costs. Throws core::InfeasibleError when a stage has no live
// replica.
Reroute plan_reroute(const Mesh& mesh, std::int64_t micro_batches, bool split_backward,
                     const std::vector<StageReplica>& down, const std::vector<std::int64_t>& in_flight,
                     const std::vector<StageCost>& costs);

}  // namespace dtsim::parallel
