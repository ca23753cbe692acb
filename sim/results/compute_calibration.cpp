#include "results/compute_calibration.hpp"

#include <fmt/format.h>

#include "results/evaluate.hpp"

namespace dtsim::results {

config::Scenario single_gpu_copy(const config::Scenario& scenario) {
  config::Scenario copy = scenario;
  copy.name = scenario.name + " (one GPU)";
  copy.cluster.nodes = 1;
  copy.node.gpus_per_node = 1;
  copy.parallelism = config::ParallelismSpec{};
  copy.simulation.network = config::NetworkFidelity::analytic;  // nothing to send
  copy.training.measured_single_gpu.reset();
  copy.input.reset();  // the calibration is of compute: the copy's data is always ready
  if (scenario.layer_model) {
    copy.training.global_batch_size = scenario.training.global_batch_size / scenario.gpu_count();
    config::DataParallelSpec& dp = copy.data_parallel;
    dp.architecture = config::Architecture::allreduce;
    dp.sync = config::SyncMode::sync;
    dp.parameter_server = config::ParameterServerSpec{};
    dp.variability = config::Variability::none;
    dp.variability_cv = 0.0;
    dp.stragglers = 0;
    dp.straggler_slowdown = 1.0;
  } else {
    copy.training.global_batch_size = scenario.training.micro_batch_size;
  }
  return copy;
}

CalibrationOutcome calibrate_compute(const config::Scenario& scenario, const EvaluateOptions& options) {
  CalibrationOutcome out;
  const auto& measured = scenario.training.measured_single_gpu;
  if (!measured) return out;
  const config::Scenario copy = single_gpu_copy(scenario);
  EvaluateOptions copy_options = options;
  copy_options.trace = false;
  const Result one = evaluate(copy, copy_options);
  if (one.iteration_time_s <= 0.0) {
    out.reason = fmt::format("the one-GPU copy for training.measured_single_gpu cannot be simulated: {}",
                             one.reason.empty() ? "no iteration time" : one.reason);
    return out;
  }
  // f = T_pred / T_meas with T_meas = b / X, i.e. X over the copy's predicted rate b / T_pred.
  ComputeCalibration c;
  c.measured_samples_per_s = measured->samples_per_s;
  c.predicted_samples_per_s = one.throughput.samples_per_s;
  c.factor = c.measured_samples_per_s / c.predicted_samples_per_s;
  c.source = measured->source;
  out.calibration = c;
  return out;
}

}  // namespace dtsim::results
