#include "parallel/data_parallel_job.hpp"

#include <algorithm>

#include "core/random.hpp"

namespace dtsim::parallel {

double compute_factor(const DataParallelJob& job, std::int64_t worker, std::int64_t step) {
  double factor = 1.0;
  const double cv = job.variability_cv;
  switch (job.variability) {
    case config::Variability::none:
      break;
    case config::Variability::normal:
      factor = std::max(0.05, 1.0 + cv * core::standard_normal(job.seed, worker, step));
      break;
    case config::Variability::lognormal:
      factor = core::lognormal_factor(job.seed, worker, step, cv);
      break;
  }
  if (worker >= job.workers - job.stragglers) factor *= job.straggler_slowdown;
  return factor;
}

StepPasses step_passes(const DataParallelJob& job, std::int64_t worker, std::int64_t step) {
  const double factor = compute_factor(job, worker, step);
  return {core::seconds_to_ns(core::ns_to_seconds(job.forward_ns) * factor),
          core::seconds_to_ns(core::ns_to_seconds(job.backward_ns) * factor)};
}

}  // namespace dtsim::parallel
