#include "calibration/fit_network.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/units.hpp"
#include "network/analytic_model.hpp"
#include "network/collective_cost.hpp"

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

namespace {

// (size, seconds) of every row, its time the faster of its two runs (nccl_log.hpp).
std::vector<std::pair<double, double>> row_times(const std::vector<NcclLog>& logs) {
  std::vector<std::pair<double, double>> points;
  for (const auto& log : logs) {
    for (const auto& row : log.rows) points.emplace_back(row.size_bytes, fastest_time_us(row) * 1e-6);
  }
  return points;
}

// The rows with a size in [lo, hi] and a time.
std::vector<std::pair<double, double>> rows_between(const std::vector<std::pair<double, double>>& points,
                                                    double lo, double hi) {
  std::vector<std::pair<double, double>> out;
  for (const auto& point : points) {
    if (point.first >= lo && point.first <= hi && point.first > 0.0 && point.second > 0.0) out.push_back(point);
  }
  return out;
}

// The network model's all-reduce time for the log's layout with the fabric at (efficiency, latency).
class FabricModel {
 public:
  FabricModel(const config::Scenario& cluster, int ranks_per_node) : cluster_(cluster) {
    cluster_.fabric.per_message_overhead_us = 0.0;
    op_.kind = graph::CollectiveKind::all_reduce;
    op_.group = graph::CommGroup{cluster.cluster.nodes * ranks_per_node, cluster.cluster.nodes, 1};
  }
  network::CollectiveCost cost(double efficiency, double latency_us, double bytes) {
    cluster_.fabric.efficiency = efficiency;
    cluster_.fabric.latency_us = latency_us;
    op_.bytes = bytes;
    return network::collective_cost(op_, network::path_params(cluster_));
  }
  // The relative error of the predicted time of each row.
  std::vector<double> errors(double efficiency, double latency_us, const std::vector<std::pair<double, double>>& rows) {
    std::vector<double> out;
    out.reserve(rows.size());
    for (const auto& [size, t] : rows) out.push_back((cost(efficiency, latency_us, size).time_s - t) / t);
    return out;
  }

 private:
  config::Scenario cluster_;
  graph::CommOp op_;
};

double sum_of_squares(const std::vector<double>& errors) {
  double sum = 0.0;
  for (const double e : errors) sum += e * e;
  return sum;
}

// Mean absolute error, in percent.
double mape(const std::vector<double>& errors) {
  double sum = 0.0;
  for (const double e : errors) sum += std::abs(e);
  return errors.empty() ? 0.0 : 100.0 * sum / static_cast<double>(errors.size());
}

// The x in [lo, hi] (searched on a log scale) minimizing f: golden-section search.
template <typename F>
double minimize_log(F f, double lo, double hi) {
  const double g = (std::sqrt(5.0) - 1.0) / 2.0;
  double a = std::log(lo);
  double b = std::log(hi);
  for (int i = 0; i < 80; ++i) {
    const double c = b - g * (b - a);
    const double d = a + g * (b - a);
    if (f(std::exp(c)) <= f(std::exp(d))) {
      b = d;
    } else {
      a = c;
    }
  }
  return std::exp((a + b) / 2.0);
}

constexpr double kLatencyBoundBytes = 64.0 * 1024;

}  // namespace

LinkFit fit_all_reduce(const std::vector<NcclLog>& logs, const config::Scenario& cluster, int ranks_per_node,
                       double min_bytes) {
  const std::vector<std::pair<double, double>> points = row_times(logs);
  LinkFit out;
  for (const auto& [size, t] : points) {
    if (size <= 0.0) continue;
    out.smallest_bytes = out.smallest_bytes > 0.0 ? std::min(out.smallest_bytes, size) : size;
    out.largest_bytes = std::max(out.largest_bytes, size);
  }
  const double nodes = static_cast<double>(cluster.cluster.nodes);
  const double r = static_cast<double>(ranks_per_node);
  const double n = nodes * r;
  if (nodes <= 1) {
    out.fit = fit_affine(points, min_bytes);
    if (out.fit.beta_s_per_byte <= 0) {
      throw core::InputError(logs.front().file, "", "the times do not grow with the size: nothing to fit");
    }
    out.target = FitTarget::intra_node;
    out.algorithm = "ring";
    const double bw = 2 * (n - 1) / n / out.fit.beta_s_per_byte;
    out.efficiency = bw / (cluster.node.intra_gbytes_per_s * core::kGiga);
    const double base_s = network::nccl_base_latency_us(network::AlgorithmFamily::ring, network::Protocol::simple) * 1e-6;
    out.latency_us = std::max(0.0, out.fit.alpha_s - base_s) / (2 * (n - 1)) * 1e6;
    return out;
  }
  out.target = FitTarget::fabric;
  const auto bandwidth_rows = rows_between(points, std::max(min_bytes, 1.0), std::numeric_limits<double>::infinity());
  const auto latency_rows = rows_between(points, 1.0, kLatencyBoundBytes);
  if (bandwidth_rows.size() < 2) {
    throw core::InputError("", "",
                           fmt::format("need at least 2 rows of {:.0f} bytes or more to fit, got {}", min_bytes,
                                       bandwidth_rows.size()));
  }
  FabricModel model(cluster, ranks_per_node);
  double efficiency = cluster.fabric.efficiency;
  double latency_us = cluster.fabric.latency_us + cluster.fabric.per_message_overhead_us;
  for (int round = 0; round < 3; ++round) {
    if (!latency_rows.empty()) {
      latency_us = minimize_log(
          [&](double l) { return sum_of_squares(model.errors(efficiency, l, latency_rows)); }, 0.01, 10000.0);
    }
    efficiency = minimize_log(
        [&](double e) { return sum_of_squares(model.errors(e, latency_us, bandwidth_rows)); }, 1e-4, 1.0);
  }
  out.efficiency = efficiency;
  out.latency_us = latency_us;
  out.fit.rows = static_cast<int>(bandwidth_rows.size());
  out.fit.mape = mape(model.errors(efficiency, latency_us, bandwidth_rows));
  out.latency_rows = static_cast<int>(latency_rows.size());
  out.latency_mape = mape(model.errors(efficiency, latency_us, latency_rows));
  out.algorithm = network::to_string(model.cost(efficiency, latency_us, out.largest_bytes).algorithm);
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
