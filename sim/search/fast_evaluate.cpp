#include "search/fast_evaluate.hpp"

#include <algorithm>
#include <chrono>

#include "core/units.hpp"
#include "models/transformer/transformer.hpp"
#include "parallel/feasibility.hpp"
#include "parallel/memory_model.hpp"
#include "results/evaluate.hpp"

namespace dtsim::search {

namespace {

config::Scenario with_micro_batches(const config::Scenario& s, std::int64_t m) {
  config::Scenario out = s;
  out.training.global_batch_size = m * s.parallelism.data * s.training.micro_batch_size;
  return out;
}

// a + (b - a) * w
double affine(double a, double b, double w) { return a + (b - a) * w; }

results::Breakdown affine(const results::Breakdown& a, const results::Breakdown& b, double w) {
  results::Breakdown out;
  out.forward_s = affine(a.forward_s, b.forward_s, w);
  out.backward_s = affine(a.backward_s, b.backward_s, w);
  out.recompute_s = affine(a.recompute_s, b.recompute_s, w);
  out.optimizer_s = affine(a.optimizer_s, b.optimizer_s, w);
  out.exposed_tensor_comm_s = affine(a.exposed_tensor_comm_s, b.exposed_tensor_comm_s, w);
  out.exposed_context_comm_s = affine(a.exposed_context_comm_s, b.exposed_context_comm_s, w);
  out.exposed_pipeline_comm_s = affine(a.exposed_pipeline_comm_s, b.exposed_pipeline_comm_s, w);
  out.exposed_data_comm_s = affine(a.exposed_data_comm_s, b.exposed_data_comm_s, w);
  out.pipeline_bubble_s = affine(a.pipeline_bubble_s, b.pipeline_bubble_s, w);
  return out;
}

// FLOPs over all GPUs in one iteration, recompute included, recovered from a result's HFU.
double hardware_flops(const results::Result& r, double gpus) {
  return r.flops.hfu * r.iteration_time_s * gpus * r.flops.peak_tflops_per_gpu * core::kTera;
}

}  // namespace

ExtrapolationPoints extrapolation_points(const config::Scenario& s) {
  const std::int64_t p = s.parallelism.pipeline;
  const bool interleaved = s.parallelism.schedule == config::Schedule::interleaved;
  ExtrapolationPoints points;
  points.m1 = std::max<std::int64_t>(p, 2);
  points.m2 = points.m1 + (interleaved ? p : 1);
  return points;
}

results::Result evaluate_extrapolated(const config::Scenario& scenario) {
  const std::int64_t m = parallel::micro_batches(scenario);
  const ExtrapolationPoints points = extrapolation_points(scenario);
  const parallel::MemoryEstimate e = parallel::memory_per_gpu(scenario);
  // Short plans, and plans that cannot run (their result carries the reason), take the full path.
  if (m <= points.m2 || parallel::infeasibility(scenario) || e.total_bytes() > scenario.gpu.hbm_bytes) {
    return results::evaluate(scenario, {});
  }

  const auto started = std::chrono::steady_clock::now();
  const results::Result r1 = results::evaluate(with_micro_batches(scenario, points.m1), {});
  const results::Result r2 = results::evaluate(with_micro_batches(scenario, points.m2), {});
  const double w = static_cast<double>(m - points.m1) / static_cast<double>(points.m2 - points.m1);
  const double gpus = static_cast<double>(scenario.gpu_count());

  results::Result result = r2;
  result.scenario = scenario;
  // The memory model sees the real micro-batch count (GPipe keeps all of them in flight).
  result.memory.weights_bytes = e.weights_bytes;
  result.memory.gradients_bytes = e.gradients_bytes;
  result.memory.optimizer_bytes = e.optimizer_bytes;
  result.memory.activations_bytes = e.activations_bytes;
  result.memory.buffers_bytes = e.buffers_bytes;
  result.memory.peak_bytes_per_gpu = e.total_bytes();
  result.memory.fits = result.memory.peak_bytes_per_gpu <= result.memory.capacity_bytes_per_gpu;
  const double t = affine(r1.iteration_time_s, r2.iteration_time_s, w);
  const double batch = static_cast<double>(scenario.training.global_batch_size);
  const double peak = r1.flops.peak_tflops_per_gpu * core::kTera;
  const double model_flops =
      models::model_flops_per_iteration(scenario.model, scenario.training.global_batch_size);
  const double hw_flops = affine(hardware_flops(r1, gpus), hardware_flops(r2, gpus), w);
  result.iteration_time_s = t;
  result.throughput.samples_per_s = batch / t;
  result.throughput.tokens_per_s = batch * static_cast<double>(scenario.model.seq_length) / t;
  result.flops.model_tflops_per_gpu = model_flops / (t * gpus) / core::kTera;
  result.flops.hardware_tflops_per_gpu = hw_flops / (t * gpus) / core::kTera;
  result.flops.mfu = model_flops / (t * gpus) / peak;
  result.flops.hfu = hw_flops / (t * gpus) / peak;
  result.breakdown = affine(r1.breakdown, r2.breakdown, w);
  result.engine.events = r1.engine.events + r2.engine.events;
  result.engine.tasks = r1.engine.tasks + r2.engine.tasks;
  result.engine.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace dtsim::search
