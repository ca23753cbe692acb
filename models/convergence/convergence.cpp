#include "models/convergence/convergence.hpp"

#include "core/errors.hpp"

namespace dtsim::models {

double steps_to_target(const config::ConvergencePreset& preset, double batch) {
  DTSIM_CHECK(batch > 0.0, "steps_to_target needs a positive batch");
  return preset.s_min * (1.0 + preset.b_noise / batch);
}

ConvergenceEstimate estimate_convergence(const ConvergenceInput& in) {
  ConvergenceEstimate e;
  e.b_noise = in.preset.b_noise;
  e.s_min = in.preset.s_min;
  e.update_batch = in.update_batch;
  e.steps_without_staleness = steps_to_target(in.preset, in.update_batch);
  e.staleness_factor = 1.0 + in.staleness_penalty * in.mean_staleness;
  e.updates_to_target = e.steps_without_staleness * e.staleness_factor;
  e.samples_to_target = e.updates_to_target * in.update_batch;
  e.time_to_target_s = in.updates_per_s > 0.0 ? e.updates_to_target / in.updates_per_s : 0.0;
  return e;
}

}  // namespace dtsim::models
