// nccl-tests tables and logs: bus-bandwidth factors, the log reader's variants and errors (data-driven
// bad logs in tests/invalid/nccl_logs with the message each must produce), and a round trip of the
// table `dtsim nccl-tests` prints through the reader.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "calibration/fit_network.hpp"
#include "calibration/nccl_log.hpp"
#include "cli/cli.hpp"
#include "core/errors.hpp"
#include "config/scenario_loader.hpp"
#include "network/nccl_tests.hpp"

using dtsim::graph::CollectiveKind;

TEST_CASE("bus bandwidth factors follow nccl-tests PERFORMANCE.md") {
  CHECK(dtsim::network::bus_factor(CollectiveKind::all_reduce, 8) == doctest::Approx(2.0 * 7 / 8));
  CHECK(dtsim::network::bus_factor(CollectiveKind::all_gather, 16) == doctest::Approx(15.0 / 16));
  CHECK(dtsim::network::bus_factor(CollectiveKind::broadcast, 16) == doctest::Approx(1.0));
}

TEST_CASE("the log reader accepts launcher prefixes and both column layouts") {
  const std::string text =
      "0: #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "0:      1048576        262144     float     sum      -1    78.77   13.31   23.29      0    81.31   12.90   22.57      0\n"
      "[1,0]<stdout>:     2097152        524288     float     sum      -1    108.8   19.28   33.73      0    108.2   19.38   33.91      0\n"
      "     4194304       1048576     float     sum    131.1   31.98   55.97  0e+00    131.0   32.01   56.02  0e+00\n"
      "some-host:22:22 [0] NCCL INFO Using network Socket\n"
      "...\n";
  const auto log = dtsim::calibration::parse_nccl_log_text(text, "inline");
  REQUIRE(log.rows.size() == 3);
  CHECK(log.rows[0].size_bytes == 1048576);
  CHECK(log.rows[1].out_of_place.busbw_gbps == doctest::Approx(33.73));
  CHECK(log.rows[2].out_of_place.time_us == doctest::Approx(131.1));  // pre-2.13 layout, no root column
  CHECK(log.rows[2].in_place->busbw_gbps == doctest::Approx(56.02));
}

TEST_CASE("bad nccl-tests logs give the error their case states") {
  const std::filesystem::path dir = std::filesystem::path(DTSIM_TESTS_DIR) / "invalid" / "nccl_logs";
  int cases = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".log") continue;
    std::ifstream expected_file(std::filesystem::path(entry.path()).replace_extension(".error"));
    std::string expected;
    std::getline(expected_file, expected);
    CAPTURE(entry.path().string());
    try {
      dtsim::calibration::read_nccl_log(entry.path().string());
      FAIL("no error");
    } catch (const dtsim::core::InputError& e) {
      CHECK(e.file() == entry.path().string());
      CHECK(std::string(e.what()).find(expected) != std::string::npos);
    }
    ++cases;
  }
  CHECK(cases >= 4);
}

TEST_CASE("dtsim nccl-tests prints a table the log reader reads back") {
  std::istringstream in;
  std::ostringstream out, err;
  const int status = dtsim::cli::run_cli(
      {"nccl-tests", "--node", "dgx-a100", "--nodes", "2", "--min-bytes", "1M", "--max-bytes", "64M"}, in, out, err);
  REQUIRE(status == 0);
  const auto log = dtsim::calibration::parse_nccl_log_text(out.str(), "table");
  REQUIRE(log.rows.size() == 7);  // 1, 2, 4, ..., 64 MiB
  CHECK(log.rows.back().size_bytes == 64.0 * 1024 * 1024);
  // busbw = algbw x 2(n-1)/n with n = 16.
  CHECK(log.rows.back().out_of_place.busbw_gbps ==
        doctest::Approx(log.rows.back().out_of_place.algbw_gbps * 30.0 / 16).epsilon(0.01));
  std::ostringstream bad_out, bad_err;
  CHECK(dtsim::cli::run_cli({"nccl-tests", "--node", "dgx-a100", "--nodes", "1", "--max-bytes", "lots"}, in, bad_out,
                            bad_err) == 2);
  CHECK(bad_err.str().find("expected a positive size in bytes") != std::string::npos);
}

TEST_CASE("fitting recovers the parameters of a synthetic log") {
  // t = 20 us + S / 100 GB/s: the fit returns alpha 20e-6 s and beta 1e-11 s/B exactly.
  std::vector<std::pair<double, double>> points;
  for (double s = 1 << 20; s <= (1 << 30); s *= 2) points.emplace_back(s, 20e-6 + s / 100e9);
  const auto fit = dtsim::calibration::fit_affine(points, 0);
  CHECK(fit.alpha_s == doctest::Approx(20e-6));
  CHECK(fit.beta_s_per_byte == doctest::Approx(1e-11));
  CHECK(fit.mape < 1e-6);
}

TEST_CASE("an imported fabric profile loads and reproduces its log") {
  // dtsim import nccl-tests on the 2x p4de log writes a fabric profile; a copy of the shipped data
  // with that profile added loads it, and the 1 GiB all-reduce it predicts is within 10% of the log's.
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / "dtsim_import_test";
  fs::remove_all(root);
  fs::create_directories(root / "models");
  const auto shipped = dtsim::config::default_data_paths();
  fs::copy(shipped.hardware_profiles, root / "hardware_profiles", fs::copy_options::recursive);
  fs::copy(shipped.model_presets, root / "models" / "presets", fs::copy_options::recursive);
  const std::string log = std::string(DTSIM_TESTS_DIR) + "/validation/nccl_logs/aws_p4de_2node_efa400_allreduce.log";
  const std::string profile = (root / "hardware_profiles" / "fabrics" / "efa-p4de.json").string();
  std::istringstream in;
  std::ostringstream out, err;
  REQUIRE(dtsim::cli::run_cli({"import", "nccl-tests", log, "--node", "aws-p4d", "--nodes", "2", "--min-bytes", "64M",
                               "--id", "efa-p4de", "--out", profile},
                              in, out, err) == 0);
  CHECK(out.str().find("fabric profile \"efa-p4de\"") != std::string::npos);
  const dtsim::config::DataPaths data{(root / "hardware_profiles").string(), (root / "models" / "presets").string(),
                                      (root / "schemas").string()};
  dtsim::config::ClusterRequest request;
  request.node = "aws-p4d";
  request.nodes = 2;
  request.fabric = "efa-p4de";
  const auto cluster = dtsim::config::load_cluster(request, "test", data);
  const auto model = dtsim::network::make_network_model(cluster);
  const auto rows = dtsim::network::predict_nccl_tests(*model, CollectiveKind::all_reduce, dtsim::graph::CommGroup{16, 2, 1},
                                                       {1073741824.0}, 4.0);
  CHECK(rows.front().busbw_gbps == doctest::Approx(76.79).epsilon(0.10));  // the log's 1 GiB row
  // The profile records what it was fitted on: 2 nodes, the log's 8 B to 2 GiB rows; a prediction
  // inside that says nothing, one at 128 nodes or past 2 GiB says it extrapolates.
  REQUIRE(cluster.fabric.fitted_on);
  CHECK(cluster.fabric.fitted_on->min_nodes == 2);
  CHECK(cluster.fabric.fitted_on->max_nodes == 2);
  CHECK(cluster.fabric.fitted_on->min_bytes == 8.0);
  CHECK(cluster.fabric.fitted_on->max_bytes == 2147483648.0);
  CHECK(dtsim::config::extrapolation_note(cluster.fabric, 2, 1024.0, 1073741824.0).empty());
  CHECK(dtsim::config::extrapolation_note(cluster.fabric, 128, 1024.0, 1073741824.0) ==
        "extrapolated: fabric efa-p4de was fitted on 2 nodes and 8 B to 2 GiB; 128 nodes leave that range");
  CHECK(dtsim::config::extrapolation_note(cluster.fabric, 2, 1024.0, 8589934592.0) ==
        "extrapolated: fabric efa-p4de was fitted on 2 nodes and 8 B to 2 GiB; sizes 1 KiB to 8 GiB leave that "
        "range");
  fs::remove_all(root);
}
