// Validation of the network model against real nccl-tests all-reduce logs (tests/validation/nccl_logs,
// sources in each file and in manifest.json): predicted bus bandwidth within 10% of the measured one
// for every message of 64 MiB or more; the error is printed for every size. Both the analytic and the
// flow (SimGrid) network models are held to it. Below 64 MiB (latency and protocol bound) the mean
// absolute error of the time is printed, not checked.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "calibration/nccl_log.hpp"
#include "config/scenario_loader.hpp"
#include "network/nccl_tests.hpp"

namespace {

void validate_against_logs(dtsim::config::NetworkFidelity fidelity) {
  const std::string dir = std::string(DTSIM_TESTS_DIR) + "/validation/nccl_logs/";
  const auto manifest = nlohmann::json::parse(std::ifstream(dir + "manifest.json"));
  for (const auto& entry : manifest["logs"]) {
    const std::string file = entry["file"];
    CAPTURE(file);
    const auto log = dtsim::calibration::read_nccl_log(dir + file);
    dtsim::config::ClusterRequest request;
    request.node = entry["node"];
    request.nodes = entry["nodes"];
    if (entry.contains("fabric")) request.fabric = entry["fabric"].get<std::string>();
    auto cluster = dtsim::config::load_cluster(request, "manifest", dtsim::config::default_data_paths());
    cluster.simulation.network = fidelity;
    const std::int64_t per_node = entry["ranks_per_node"];
    const dtsim::graph::CommGroup group{cluster.cluster.nodes * per_node, cluster.cluster.nodes, 1};
    const auto model = dtsim::network::make_network_model(cluster);
    std::vector<double> sizes;
    for (const auto& row : log.rows) sizes.push_back(row.size_bytes);
    const auto predicted = dtsim::network::predict_nccl_tests(
        *model, dtsim::graph::CollectiveKind::all_reduce, group, sizes, 4.0);
    std::printf("\n%s (%lld ranks, %s model)\n  %14s %12s %12s %8s\n", file.c_str(),
                static_cast<long long>(group.size), model->name(), "size (B)", "measured", "predicted",
                "error");
    int checked = 0;
    double small_error_sum = 0.0;
    int small_rows = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] > 0 && sizes[i] < 64.0 * 1024 * 1024 && log.rows[i].out_of_place.time_us > 0) {
        const double measured_us = log.rows[i].out_of_place.time_us;
        small_error_sum += std::abs(predicted[i].time_us - measured_us) / measured_us;
        ++small_rows;
      }
      const double measured = log.rows[i].out_of_place.busbw_gbps;
      const double error = measured > 0 ? (predicted[i].busbw_gbps - measured) / measured : 0.0;
      std::printf("  %14.0f %12.2f %12.2f %7.1f%%%s\n", sizes[i], measured, predicted[i].busbw_gbps,
                  100 * error, sizes[i] >= 64.0 * 1024 * 1024 ? "" : "  (below 64 MiB: not checked)");
      if (sizes[i] < 64.0 * 1024 * 1024) continue;
      CAPTURE(sizes[i]);
      CHECK(std::abs(error) <= 0.10);
      ++checked;
    }
    std::printf("  below 64 MiB: mean |time error| %.1f%% over %d sizes (not checked)\n",
                100 * small_error_sum / std::max(1, small_rows), small_rows);
    CHECK(checked >= 5);
  }
}

}  // namespace

TEST_CASE("validation: predicted nccl-tests all-reduce bus bandwidth against real logs") {
  validate_against_logs(dtsim::config::NetworkFidelity::analytic);
}

TEST_CASE("validation: flow-level nccl-tests all-reduce bus bandwidth against real logs") {
  validate_against_logs(dtsim::config::NetworkFidelity::flow);
}
