#include "calibration/fit_network.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/units.hpp"

namespace dtsim::calibration {

AffineFit fit_affine(const std::vector<std::pair<double, double>>& points, double min_bytes) {
  // Minimize sum ((alpha + beta s - t) / t)^2: weighted least squares with weights 1 / t^2.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  AffineFit fit;
  for (const auto& [s, t] : points) {
    if (s < min_bytes || t <= 0) continue;
    const double w = 1.0 / (t * t);
    sw += w;
    sx += w * s;
    sy += w * t;
    sxx += w * s * s;
    sxy += w * s * t;
    ++fit.rows;
  }
  if (fit.rows < 2) {
    throw core::InputError(
        "", "",
        fmt::format("need at least 2 rows of {:.0f} bytes or more to fit, got {}", min_bytes, fit.rows));
  }
  const double det = sw * sxx - sx * sx;
  fit.beta_s_per_byte = (sw * sxy - sx * sy) / det;
  fit.alpha_s = std::max(0.0, (sy - fit.beta_s_per_byte * sx) / sw);
  double error = 0;
  for (const auto& [s, t] : points) {
    if (s < min_bytes || t <= 0) continue;
    error += std::abs(fit.alpha_s + fit.beta_s_per_byte * s - t) / t;
  }
  fit.mape = 100.0 * error / fit.rows;
  return fit;
}

LinkFit fit_all_reduce(const std::vector<NcclLog>& logs, const config::Scenario& cluster, int ranks_per_node,
                       double min_bytes) {
  std::vector<std::pair<double, double>> points;
  for (const auto& log : logs) {
    for (const auto& row : log.rows) points.emplace_back(row.size_bytes, row.out_of_place.time_us * 1e-6);
  }
  LinkFit out;
  out.fit = fit_affine(points, min_bytes);
  if (out.fit.beta_s_per_byte <= 0) {
    throw core::InputError(logs.front().file, "", "the times do not grow with the size: nothing to fit");
  }
  const double nodes = static_cast<double>(cluster.cluster.nodes);
  const double r = static_cast<double>(ranks_per_node);
  const double n = nodes * r;
  const double beta = out.fit.beta_s_per_byte;
  const double alpha = out.fit.alpha_s;
  if (nodes <= 1) {
    out.target = FitTarget::intra_node;
    out.algorithm = "ring";
    const double bw = 2 * (n - 1) / n / beta;
    out.efficiency = bw / (cluster.node.intra_gbytes_per_s * core::kGiga);
    out.latency_us = alpha / (2 * (n - 1)) * 1e6;
    return out;
  }
  out.target = FitTarget::fabric;
  const double line =
      core::gbps_to_bytes_per_s(cluster.cluster.network.nic_gbps) * cluster.cluster.network.nics_per_node;
  if (r <= 1) {
    out.algorithm = "ring";
    out.efficiency = 2 * (n - 1) / n / beta / line;
    out.latency_us = alpha / (2 * (n - 1)) * 1e6;
  } else {
    out.algorithm = "tree";
    out.efficiency = 2 * (nodes - 1) / nodes / beta / line;
    const double intra_part = (r - 1) * cluster.node.intra_latency_us * 1e-6;
    out.latency_us = std::max(0.0, (alpha / 2 - intra_part) / std::log2(nodes)) * 1e6;
  }
  return out;
}

LinkFit fit_intra_node_link(config::NodeProfile& node, const std::string& all_reduce_log,
                            const std::vector<CollectiveTiming>& timings, int ranks, double min_bytes) {
  config::Scenario cluster;
  cluster.cluster.nodes = 1;
  cluster.node.gpus_per_node = ranks;
  cluster.node.intra_gbytes_per_s = 1.0;  // reference: the fitted efficiency is then the bandwidth in GB/s
  const LinkFit fit = fit_all_reduce({read_nccl_log(all_reduce_log)}, cluster, ranks, min_bytes);
  std::vector<double> low;
  std::vector<double> high;
  for (const auto& t : timings) {
    low.push_back(t.seconds.median / t.seconds.p90);
    high.push_back(t.seconds.median / t.seconds.p10);
  }
  node.intra_gbytes_per_s = fit.efficiency;
  node.intra_efficiency = 1.0;
  node.intra_latency_us = std::max(fit.latency_us, 1e-3);
  node.intra_bandwidth_p10 = std::min(1.0, sample_stats(low).median);
  node.intra_bandwidth_p90 = std::max(1.0, sample_stats(high).median);
  return fit;
}

}  // namespace dtsim::calibration
