#include "results/evaluate.hpp"

#include "results/interval.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include <fmt/format.h>

#include "compute/compute_model.hpp"
#include "core/units.hpp"
#include "engine/simulate.hpp"
#include "models/transformer/transformer.hpp"
#include "network/flow_cache.hpp"
#include "network/network_model.hpp"
#include "parallel/feasibility.hpp"
#include "parallel/lower.hpp"
#include "parallel/memory_model.hpp"
#include "results/compute_calibration.hpp"
#include "results/distribution.hpp"
#include "results/engine_outcome.hpp"
#include "results/evaluate_data_parallel.hpp"
#include "results/evaluate_dlrm.hpp"
#include "results/goodput.hpp"

namespace dtsim::results {

namespace {

Memory memory_of(const config::Scenario& s, const parallel::MemoryEstimate& e) {
  Memory m;
  m.weights_bytes = e.weights_bytes;
  m.gradients_bytes = e.gradients_bytes;
  m.optimizer_bytes = e.optimizer_bytes;
  m.activations_bytes = e.activations_bytes;
  m.buffers_bytes = e.buffers_bytes;
  m.peak_bytes_per_gpu = e.total_bytes();
  m.capacity_bytes_per_gpu = s.hbm_bytes_per_gpu();
  m.fits = m.peak_bytes_per_gpu <= m.capacity_bytes_per_gpu;
  return m;
}

// a + w b, part by part.
Breakdown add_scaled(Breakdown a, const Breakdown& b, double w) {
  for (const BreakdownPart& part : kBreakdownParts) a.*part.value += w * b.*part.value;
  return a;
}


// GPUs at another speed (cluster.speed_factors) or of another profile (cluster.mixed_gpus; both in
// every-rank mode only, as the loader checks): one compute model per distinct (GPU, speed), each
// duration divided by the speed, and each rank's model; the mean peak of the ranks' GPUs.
struct RankComputeModels {
  std::vector<compute::ComputeModel> others;
  std::vector<const compute::ComputeModel*> of_rank;  // empty: every rank `compute`
  double mean_peak_flops_per_s = 0.0;
};

RankComputeModels rank_compute_models(const config::Scenario& scenario, const std::vector<config::SpeedFactor>& factors,
                                      const compute::ComputeModel& compute, double compute_scale) {
  RankComputeModels out;
  out.mean_peak_flops_per_s = compute.peak_flops_per_s();
  if (scenario.simulation.ranks != config::RankMode::all) return out;
  const std::int64_t ranks = scenario.gpu_count();
  const std::vector<double> speeds = config::rank_compute_speeds(factors, ranks, scenario.node.gpus_per_node);
  const std::vector<int> gpus =
      config::rank_gpu_entries(scenario.cluster.mixed_gpus, ranks, scenario.node.gpus_per_node);
  if (speeds.empty() && gpus.empty()) return out;
  const auto key_of = [&](std::size_t r) {
    return std::pair<int, double>{gpus.empty() ? -1 : gpus[r], speeds.empty() ? 1.0 : speeds[r]};
  };
  std::vector<std::pair<int, double>> distinct;
  for (std::size_t r = 0; r < static_cast<std::size_t>(ranks); ++r) {
    const auto key = key_of(r);
    if (key != std::pair<int, double>{-1, 1.0} && std::find(distinct.begin(), distinct.end(), key) == distinct.end())
      distinct.push_back(key);
  }
  out.others.reserve(distinct.size());  // the pointers below stay valid
  for (const auto& [gpu, speed] : distinct) {
    const config::GpuProfile& profile =
        gpu < 0 ? scenario.gpu : scenario.cluster.mixed_gpus[static_cast<std::size_t>(gpu)].gpu;
    out.others.emplace_back(profile, scenario.training.precision, compute_scale / speed);
  }
  out.of_rank.reserve(static_cast<std::size_t>(ranks));
  double peak_sum = 0.0;
  for (std::size_t r = 0; r < static_cast<std::size_t>(ranks); ++r) {
    const auto it = std::find(distinct.begin(), distinct.end(), key_of(r));
    const compute::ComputeModel* model =
        it == distinct.end() ? &compute : &out.others[static_cast<std::size_t>(it - distinct.begin())];
    out.of_rank.push_back(model);
    peak_sum += model->peak_flops_per_s();
  }
  out.mean_peak_flops_per_s = peak_sum / static_cast<double>(ranks);
  return out;
}

// The transformer pipeline with compute durations x compute_scale.
Result evaluate_transformer(const config::Scenario& scenario, const EvaluateOptions& options,
                            double compute_scale) {
  const auto started = std::chrono::steady_clock::now();
  if (auto reason = parallel::infeasibility(scenario)) return infeasible(scenario, std::move(*reason));
  Result result;
  result.scenario = scenario;
  result.memory = memory_of(scenario, parallel::memory_per_gpu(scenario));
  if (!result.memory.fits) {
    result.status = Status::infeasible;
    result.reason = out_of_memory_reason(result.memory);
  }

  const parallel::LoweredGraph lowered = parallel::lower(scenario, {.fuse_kernels = options.fuse_kernels,
                                                                    .layouts_cache = options.layouts_cache,
                                                                    .down_replicas = options.down_replicas});
  const compute::ComputeModel compute(scenario.gpu, scenario.training.precision, compute_scale);
  const auto network = network::make_network_model(scenario, options.flow_cache);
  engine::EngineOptions engine_options;
  engine_options.record_spans = options.trace;
  engine_options.overlap_slowdown = scenario.gpu.overlap_slowdown;
  // A measured one-GPU rate scales the host's issue with the kernels (compute_model.hpp, duration_scale).
  engine_options.host_issue_ns_per_kernel = scenario.training.host_issue_us_per_kernel * 1e3 * compute_scale;
  engine_options.host_issue_ns_per_tensor_op =
      scenario.training.host_issue_us_per_tensor_op * 1e3 * compute_scale;
  // Jittery GPUs: the iteration sampled simulation.jitter_iterations times, each with the speeds of its
  // draws (config/speed_factors.hpp), and its figures averaged; the first sample's run gives the trace.
  const auto& factors = scenario.cluster.speed_factors;
  const bool jitter = config::has_jitter(factors);
  const std::int64_t samples = jitter ? scenario.simulation.jitter_iterations : 1;
  std::optional<engine::EngineResult> first_run;
  std::vector<double> sample_s;
  Breakdown mean_breakdown;
  std::uint64_t events = 0;
  double peak = 0.0;
  for (std::int64_t k = 0; k < samples; ++k) {
    const RankComputeModels speeds = rank_compute_models(
        scenario, jitter ? config::jittered(factors, scenario.simulation.seed, k) : factors, compute, compute_scale);
    engine_options.rank_compute = speeds.of_rank;
    engine_options.record_spans = options.trace && k == 0;
    engine::EngineResult run = engine::simulate(lowered.graph, compute, *network, engine_options);
    sample_s.push_back(core::ns_to_seconds(run.makespan));
    mean_breakdown = add_scaled(mean_breakdown, breakdown_of(run), 1.0 / static_cast<double>(samples));
    events += run.events;
    peak = speeds.mean_peak_flops_per_s;  // the same in every sample (peaks do not jitter)
    if (k == 0) first_run = std::move(run);
  }
  const engine::EngineResult& run = *first_run;
  if (jitter) result.jitter = Jitter{samples, distribution_of(sample_s)};

  const double t = jitter ? result.jitter->iteration_s.mean : sample_s.front();
  const double gpus = static_cast<double>(scenario.gpu_count());
  const double batch = static_cast<double>(scenario.training.global_batch_size);
  result.iteration_time_s = t;
  result.throughput.samples_per_s = batch / t;
  result.throughput.tokens_per_s = batch * static_cast<double>(scenario.model.seq_length) / t;
  const double model_flops =
      models::model_flops_per_iteration(scenario.model, scenario.training.global_batch_size);
  result.flops.model_tflops_per_gpu = model_flops / (t * gpus) / core::kTera;
  result.flops.hardware_tflops_per_gpu = lowered.hardware_flops / (t * gpus) / core::kTera;
  result.flops.peak_tflops_per_gpu = peak / core::kTera;
  result.flops.mfu = model_flops / (t * gpus) / peak;
  result.flops.hfu = lowered.hardware_flops / (t * gpus) / peak;
  result.breakdown = jitter ? mean_breakdown : breakdown_of(run);
  result.engine.events = events;
  result.engine.tasks = lowered.graph.tasks().size();
  result.engine.simulated_ranks = lowered.graph.ranks();
  if (options.trace) result.trace = trace_of(lowered, run);
  // A re-routed iteration is asked for its time alone (results/reroute_pace.hpp).
  if (options.down_replicas.empty()) result.interval = calibration_interval(scenario, options.flow_cache);
  result.engine.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

// The input pipeline's rate beside a result that ran (its load is in the iteration already), and what it
// needs to keep up with the GPUs: the global batch over the iteration without its data stall.
void state_input(Result& result) {
  if (result.status != Status::ok || !result.scenario.input) return;
  result.input = models::input_rate(result.scenario);
  const double busy_s = result.iteration_time_s - result.breakdown.data_stall_s;
  if (busy_s > 0.0) {
    result.input_sizing = models::size_input(
        result.scenario, static_cast<double>(result.scenario.training.global_batch_size) / busy_s);
  }
}

// evaluate() but for plans found infeasible on the way (core::InfeasibleError).
Result evaluate_feasible(const config::Scenario& scenario, const EvaluateOptions& caller_options) {
  const auto started = std::chrono::steady_clock::now();
  // The runs of one evaluation (the scenario, a one-GPU calibration copy, the calibration interval's
  // two ends) share flow-level collective times, unless the caller shares a cache of its own.
  network::FlowCache own_cache;
  EvaluateOptions options = caller_options;
  if (options.flow_cache == nullptr) options.flow_cache = &own_cache;
  // A plan that cannot run is reported before anything is built for it (a one-GPU calibration copy
  // included). Layer-table workloads check their own rules (evaluate_data_parallel.hpp).
  if (scenario.dlrm) {
    Result result = evaluate_dlrm(scenario, options);
    if (result.status == Status::ok) result.interval = calibration_interval(scenario, options.flow_cache);
    state_input(result);
    estimate_goodput(result);
    return result;
  }
  if (!scenario.layer_model) {
    if (auto reason = parallel::infeasibility(scenario)) return infeasible(scenario, std::move(*reason));
  }
  const CalibrationOutcome calibrated = calibrate_compute(scenario, options);
  if (!calibrated.reason.empty()) return infeasible(scenario, calibrated.reason);
  const double scale = calibrated.calibration ? 1.0 / calibrated.calibration->factor : 1.0;
  Result result = scenario.layer_model ? evaluate_data_parallel(scenario, options, scale)
                                       : evaluate_transformer(scenario, options, scale);
  result.compute_calibration = calibrated.calibration;
  state_input(result);
  estimate_goodput(result);
  // The one-GPU copy's simulation is part of this evaluation's wall time.
  if (calibrated.calibration) {
    result.engine.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
  return result;
}

}  // namespace

Result evaluate(const config::Scenario& scenario, const EvaluateOptions& caller_options) {
  try {
    return evaluate_feasible(scenario, caller_options);
  } catch (const core::InfeasibleError& e) {
    return infeasible(scenario, e.what());
  }
}

void state_expected_error(Result& result, const std::vector<config::ValidatedRegime>& regimes) {
  if (result.status == Status::ok) result.expected_error = expected_error(result.scenario, regimes);
}

}  // namespace dtsim::results
