#include "results/expected_error.hpp"

#include <array>

#include <fmt/format.h>

namespace dtsim::results {

namespace {

config::RegimeScale scale_of(const config::Scenario& s) {
  if (s.gpu_count() == 1) return config::RegimeScale::one_gpu;
  return s.cluster.nodes == 1 ? config::RegimeScale::one_node : config::RegimeScale::multi_node;
}

std::string family_of(const std::string& gpu_id) { return gpu_id.substr(0, gpu_id.find('-')); }

// A rate's signed error in % as the iteration time's: t ~ 1 / rate.
double as_time_error(double rate_error_pct) { return 100.0 * (1.0 / (1.0 + rate_error_pct / 100.0) - 1.0); }

}  // namespace

ExpectedError expected_error(const config::Scenario& scenario, const std::vector<config::ValidatedRegime>& regimes) {
  // A mixture of experts has groups of its own: the dense groups' errors say nothing of the expert layers.
  const config::RegimeWorkload workload = scenario.layer_model ? config::RegimeWorkload::layer_table
                                          : scenario.dlrm      ? config::RegimeWorkload::dlrm
                                          : scenario.model.moe ? config::RegimeWorkload::moe
                                                               : config::RegimeWorkload::transformer;
  const std::string family = family_of(scenario.gpu.id);
  if (!scenario.cluster.mixed_gpus.empty()) {
    ExpectedError none;
    none.reason = "no validated runs on mixed GPU generations";
    return none;
  }
  const config::RegimeScale scale = scale_of(scenario);
  constexpr std::array<const char*, 3> kMatch{"GPU, scale and software", "GPU and scale", "GPU"};
  for (std::size_t level = 0; level < kMatch.size(); ++level) {
    const config::ValidatedRegime* best = nullptr;
    for (const config::ValidatedRegime& r : regimes) {
      if (r.workload != workload || r.gpu != family) continue;
      if (level <= 1 && r.scale != scale) continue;
      if (level == 0 && r.software != scenario.software) continue;
      if (best == nullptr || r.n > best->n) best = &r;
    }
    if (best == nullptr) continue;
    ExpectedError e;
    e.validated = true;
    e.n = best->n;
    e.group = best->group;
    e.source = best->source;
    e.match = kMatch[level];
    if (best->metric == config::RegimeMetric::time) {
      e.low_pct = best->p10_signed_pct;
      e.high_pct = best->p90_signed_pct;
      e.median_pct = best->median_signed_pct;
    } else {
      e.low_pct = as_time_error(best->p90_signed_pct);
      e.high_pct = as_time_error(best->p10_signed_pct);
      e.median_pct = as_time_error(best->median_signed_pct);
    }
    return e;
  }
  ExpectedError none;
  constexpr std::array<const char*, 4> kWorkloadNames{"transformer", "layer-table", "DLRM",
                                                      "mixture-of-experts"};
  none.reason =
      fmt::format("no validated {} runs on {} GPUs", kWorkloadNames[static_cast<std::size_t>(workload)], family);
  return none;
}

std::string band_range(const ExpectedError& e) {
  return e.validated ? fmt::format("{:+.0f}% .. {:+.0f}%", e.low_pct, e.high_pct) : std::string("-");
}

}  // namespace dtsim::results
