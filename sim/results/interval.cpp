#include "results/interval.hpp"

#include "results/evaluate.hpp"

namespace dtsim::results {

namespace {

// The scenario with its calibrated throughputs at one end of the spread, spreads removed.
config::Scenario at_end(const config::Scenario& s, bool fast) {
  config::Scenario out = s;
  if (const auto& spread = s.gpu.spread) {
    const double compute = fast ? spread->compute_p90 : spread->compute_p10;
    for (auto& peak : out.gpu.peak_tflops) {
      if (peak) *peak *= compute;
    }
    out.gpu.hbm_bandwidth_gbytes_per_s *= fast ? spread->memory_p90 : spread->memory_p10;
  }
  const auto& link = fast ? s.node.intra_bandwidth_p90 : s.node.intra_bandwidth_p10;
  if (link) out.node.intra_gbytes_per_s *= *link;
  out.gpu.spread.reset();
  out.node.intra_bandwidth_p10.reset();
  out.node.intra_bandwidth_p90.reset();
  return out;
}

}  // namespace

std::optional<Interval> calibration_interval(const config::Scenario& scenario,
                                             network::FlowCache* flow_cache) {
  const bool link = scenario.node.intra_bandwidth_p10 || scenario.node.intra_bandwidth_p90;
  if (!scenario.gpu.spread && !link) return std::nullopt;
  const Result fast = evaluate(at_end(scenario, true), {.flow_cache = flow_cache});
  const Result slow = evaluate(at_end(scenario, false), {.flow_cache = flow_cache});
  if (fast.status != Status::ok || slow.status != Status::ok) return std::nullopt;
  return Interval{fast.iteration_time_s, slow.iteration_time_s};
}

}  // namespace dtsim::results
