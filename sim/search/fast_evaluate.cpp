#include "search/fast_evaluate.hpp"

#include <algorithm>
#include <array>
#include <chrono>

#include "core/checked_math.hpp"
#include "core/units.hpp"
#include "models/transformer/layer_kinds.hpp"
#include "models/transformer/transformer.hpp"
#include "parallel/feasibility.hpp"
#include "parallel/memory_model.hpp"
#include "results/evaluate.hpp"

namespace dtsim::search {

namespace {

// The scenario with m micro-batches per replica and `chunk_layers` layers per model chunk (0: its own
// layers, which need not split evenly).
config::Scenario reduced(const config::Scenario& s, std::int64_t m, std::int64_t chunk_layers) {
  config::Scenario out = s;
  out.training.global_batch_size = m * s.parallelism.data * s.training.micro_batch_size;
  if (chunk_layers > 0)
    out.model.layers = chunk_layers * s.parallelism.pipeline * s.parallelism.virtual_stages;
  return out;
}

// Bilinear weights of the four corners (m1 l1, m2 l1, m1 l2, m2 l2) for weights wm along m and wl along
// layers: exact for a + b m + c l + d m l.
std::array<double, 4> corner_weights(double wm, double wl) {
  return {(1 - wm) * (1 - wl), wm * (1 - wl), (1 - wm) * wl, wm * wl};
}

template <typename Get>
double combine(const std::array<results::Result, 4>& r, const std::array<double, 4>& w, Get get) {
  double sum = 0.0;
  for (std::size_t i = 0; i < 4; ++i) sum += w[i] * get(r[i]);
  return sum;
}

// FLOPs over all GPUs in one iteration, recompute included, recovered from a result's HFU.
double hardware_flops(const results::Result& r) {
  return r.flops.hfu * r.iteration_time_s * static_cast<double>(r.scenario.gpu_count()) *
         r.flops.peak_tflops_per_gpu * core::kTera;
}

results::Breakdown combine_breakdown(const std::array<results::Result, 4>& r,
                                     const std::array<double, 4>& w) {
  results::Breakdown b;
  for (const results::BreakdownPart& part : results::kBreakdownParts) {
    const auto value = part.value;
    b.*value = combine(r, w, [value](const results::Result& x) { return x.breakdown.*value; });
  }
  return b;
}

}  // namespace

results::EvaluateOptions plan_evaluate_options(const PlanCaches& caches) {
  return {.trace = false, .fuse_kernels = true, .flow_cache = caches.flow, .layouts_cache = caches.layouts};
}

ExtrapolationPoints extrapolation_points(const config::Scenario& s) {
  const std::int64_t p = s.parallelism.pipeline;
  // Past 64 bits the plan is infeasible (feasibility.hpp) and is not extrapolated.
  const std::int64_t chunks = core::checked_mul(p, s.parallelism.virtual_stages).value_or(0);
  const bool interleaved = s.parallelism.schedule == config::Schedule::interleaved;
  const bool zero_bubble = s.parallelism.schedule == config::Schedule::zero_bubble_h1;
  ExtrapolationPoints points;
  // Interleaved: the first multiple of p whose schedule has a steady phase on every stage, and the next.
  // Zero bubble: the first m at which every stage runs a forward + B + W step, and the next.
  points.m1 = interleaved ? 2 * p : zero_bubble ? std::max<std::int64_t>(p, 2) : 2;
  points.m2 = points.m1 + (interleaved ? p : 1);
  // Zero bubble: 6 and 8 layers per stage (see the header).
  // Layers of several kinds (a mixture of experts' dense first layers: models/transformer/layer_kinds.hpp)
  // are simulated as they are: fewer layers per chunk would change which kinds each stage holds; so are
  // those of a model with multi-token prediction modules, which take layer slots of the last chunk.
  if (chunks > 0 && s.model.layers % chunks == 0 && !models::mixed_layers(s.model) &&
      s.model.mtp_layers == 0) {
    points.l1 = zero_bubble ? 6 : 4;
    points.l2 = zero_bubble ? 8 : 6;
  }
  return points;
}

results::Result evaluate_extrapolated(const config::Scenario& scenario, const PlanCaches& caches) {
  return evaluate_extrapolated(scenario, extrapolation_points(scenario), caches);
}

results::Result evaluate_extrapolated(const config::Scenario& scenario, ExtrapolationPoints points,
                                      const PlanCaches& caches) {
  const results::EvaluateOptions options = plan_evaluate_options(caches);
  // Plans that cannot run (their result carries the reason) take the full path. The memory model
  // needs a feasible plan (one whose products of degrees fit in 64 bits).
  if (parallel::infeasibility(scenario)) return results::evaluate(scenario, options);
  // Jittery GPUs: the sampled iterations' spread is not extrapolated (config/speed_factors.hpp).
  if (config::has_jitter(scenario.cluster.speed_factors)) return results::evaluate(scenario, options);
  // An input pipeline: the iteration is max(the rest, the batch's load) or their sum, and the load grows
  // with the micro-batches of the short runs: not on the bilinear law.
  if (scenario.input) return results::evaluate(scenario, options);
  const parallel::MemoryEstimate e = parallel::memory_per_gpu(scenario);
  if (e.total_bytes() > scenario.hbm_bytes_per_gpu()) return results::evaluate(scenario, options);
  const std::int64_t m = parallel::micro_batches(scenario);
  const std::int64_t chunks = scenario.parallelism.pipeline * scenario.parallelism.virtual_stages;
  // A dimension is extrapolated only where that simulates fewer (micro-batch x layer) steps than its
  // real value: m1 + m2 < m, l1 + l2 < l (the work of the runs is their sum along each dimension).
  if (points.m1 + points.m2 >= m) points.m1 = points.m2 = m;
  // Layers that do not split evenly (the ends one short: parallel/pipeline_schedule.hpp) are simulated
  // as they are (l 0 below: the scenario's own layers).
  const std::int64_t l = scenario.model.layers % chunks == 0 ? scenario.model.layers / chunks : 0;
  if (points.l2 == 0 || l == 0 || points.l1 + points.l2 >= l || models::mixed_layers(scenario.model) ||
      scenario.model.mtp_layers > 0)
    points.l1 = points.l2 = l;
  if (points.m1 == m && points.l1 == l) return results::evaluate(scenario, options);

  const auto started = std::chrono::steady_clock::now();
  std::array<results::Result, 4> r;
  const std::array<std::int64_t, 4> ms{points.m1, points.m2, points.m1, points.m2};
  const std::array<std::int64_t, 4> ls{points.l1, points.l1, points.l2, points.l2};
  // Corners that repeat another (a dimension simulated at its real value) are copied, not simulated.
  std::size_t repeat_mask = 0;
  if (points.m1 == points.m2) repeat_mask |= 1U;
  if (points.l1 == points.l2) repeat_mask |= 2U;
  for (std::size_t i = 0; i < 4; ++i) {
    const std::size_t source = i & ~repeat_mask;
    r[i] = source != i ? r[source] : results::evaluate(reduced(scenario, ms[i], ls[i]), options);
  }
  const double wm = points.m2 > points.m1
                        ? static_cast<double>(m - points.m1) / static_cast<double>(points.m2 - points.m1)
                        : 0.0;
  const double wl = points.l2 > points.l1
                        ? static_cast<double>(l - points.l1) / static_cast<double>(points.l2 - points.l1)
                        : 0.0;
  const std::array<double, 4> w = corner_weights(wm, wl);

  results::Result result = r[0];
  result.scenario = scenario;
  // The memory model sees the real plan (GPipe keeps all micro-batches in flight).
  result.memory.weights_bytes = e.weights_bytes;
  result.memory.gradients_bytes = e.gradients_bytes;
  result.memory.optimizer_bytes = e.optimizer_bytes;
  result.memory.activations_bytes = e.activations_bytes;
  result.memory.buffers_bytes = e.buffers_bytes;
  result.memory.peak_bytes_per_gpu = e.total_bytes();
  result.memory.capacity_bytes_per_gpu = scenario.hbm_bytes_per_gpu();
  result.memory.fits = true;
  const double t = combine(r, w, [](const results::Result& x) { return x.iteration_time_s; });
  const double gpus = static_cast<double>(scenario.gpu_count());
  const double batch = static_cast<double>(scenario.training.global_batch_size);
  const double peak = r[0].flops.peak_tflops_per_gpu * core::kTera;
  const double model_flops =
      models::model_flops_per_iteration(scenario.model, scenario.training.global_batch_size);
  const double hw_flops = combine(r, w, hardware_flops);
  result.iteration_time_s = t;
  result.throughput.samples_per_s = batch / t;
  result.throughput.tokens_per_s = batch * static_cast<double>(scenario.model.seq_length) / t;
  result.flops.model_tflops_per_gpu = model_flops / (t * gpus) / core::kTera;
  result.flops.hardware_tflops_per_gpu = hw_flops / (t * gpus) / core::kTera;
  result.flops.mfu = model_flops / (t * gpus) / peak;
  result.flops.hfu = hw_flops / (t * gpus) / peak;
  result.breakdown = combine_breakdown(r, w);
  result.engine = {};
  for (std::size_t i = 0; i < 4; ++i) {
    if ((i & ~repeat_mask) != i) continue;
    result.engine.events += r[i].engine.events;
    result.engine.tasks += r[i].engine.tasks;
  }
  result.engine.simulated_ranks = r[0].engine.simulated_ranks;
  result.engine.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace dtsim::search
