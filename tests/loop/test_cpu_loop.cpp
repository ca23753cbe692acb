// The calibration loop proven on this machine's CPU: dtsim calibrate (CPU backend, --quick) writes a
// device and node profile; dtsim_mlp_train, a real data-parallel MLP training program (2 MPI ranks,
// OpenBLAS GEMMs, MPI_Allreduce of the gradients, SGD), measures its step time; dtsim predicts the
// same configuration (tests/loop/mlp_dp2.json) from the calibrated profiles. The test checks that the
// pipeline runs and that the numbers are sane, and prints the prediction error; the 15% goal holds
// on a quiet machine only (a busy one perturbs calibration and training differently), so that check
// may fail without failing the suite.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <unistd.h>

#include "config/scenario_loader.hpp"
#include "results/evaluate.hpp"
#include "../unit/json_schema_check.hpp"

namespace fs = std::filesystem;

namespace {

struct Loop {
  bool ran = false;
  double measured_s = 0.0;
  double measured_p10_s = 0.0;
  double measured_p90_s = 0.0;
  double loss_first = 0.0;
  double loss_last = 0.0;
  double predicted_s = 0.0;
  double low_s = 0.0;
  double high_s = 0.0;
};

double field(const std::string& line, const std::string& key) {
  const auto at = line.find(key + "=");
  if (at == std::string::npos) return std::nan("");
  return std::stod(line.substr(at + key.size() + 1));
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const Loop& run_loop() {
  static Loop loop = [] {
    Loop l;
    const fs::path dir = fs::path(DTSIM_LOOP_WORK_DIR);
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fs::path profiles = dir / "hardware_profiles";
    const std::string root = geteuid() == 0 ? " --allow-run-as-root" : "";
    const std::string calibrate =
        fmt::format("'{}' calibrate --backend cpu --quick --id cpu-loop --out '{}' > '{}' 2>&1", DTSIM_EXE,
                    profiles.string(), (dir / "calibrate.txt").string());
    const int calibrated = std::system(calibrate.c_str());
    std::cout << read_all(dir / "calibrate.txt");
    REQUIRE_MESSAGE(calibrated == 0, calibrate);
    // The calibrated node names the shipped tcp fabric for multi-node use.
    fs::create_directories(profiles / "fabrics");
    fs::copy_file(fs::path(DTSIM_SOURCE_DIR) / "hardware_profiles" / "fabrics" / "tcp.json",
                  profiles / "fabrics" / "tcp.json", fs::copy_options::overwrite_existing);

    const std::string train = fmt::format(
        "mpirun --oversubscribe{} -np 2 -x OPENBLAS_NUM_THREADS=1 '{}' --input 512 --hidden 1024 --layers 2 "
        "--output 64 --batch 128 --steps 30 --warmup 3 > '{}' 2>&1",
        root, DTSIM_MLP_TRAIN_EXE, (dir / "train.txt").string());
    const int trained = std::system(train.c_str());
    const std::string out = read_all(dir / "train.txt");
    std::cout << out;
    REQUIRE_MESSAGE(trained == 0, train);
    l.measured_s = field(out, "median");
    l.measured_p10_s = field(out, "p10");
    l.measured_p90_s = field(out, "p90");
    l.loss_first = field(out, "loss_first");
    l.loss_last = field(out, "loss_last");

    const dtsim::config::DataPaths data{profiles.string(),
                                        (fs::path(DTSIM_SOURCE_DIR) / "models" / "presets").string(),
                                        (fs::path(DTSIM_SOURCE_DIR) / "schemas").string()};
    const auto scenario =
        dtsim::config::load_scenario((fs::path(DTSIM_TESTS_DIR) / "loop" / "mlp_dp2.json").string(), data);
    const auto result = dtsim::results::evaluate(scenario, {});
    REQUIRE(result.status == dtsim::results::Status::ok);
    l.predicted_s = result.iteration_time_s;
    if (result.interval) {
      l.low_s = result.interval->low_s;
      l.high_s = result.interval->high_s;
    }
    const double error = (l.predicted_s - l.measured_s) / l.measured_s;
    std::cout << fmt::format(
        "cpu loop: measured step {:.4f} s (p10 {:.4f}, p90 {:.4f}), predicted {:.4f} s (interval {:.4f} .. "
        "{:.4f}), "
        "error {:+.1f}%\n",
        l.measured_s, l.measured_p10_s, l.measured_p90_s, l.predicted_s, l.low_s, l.high_s, 100 * error);
    l.ran = true;
    return l;
  }();
  return loop;
}

}  // namespace

TEST_CASE("cpu loop: calibrate, train and predict run, and the numbers are sane") {
  const Loop& l = run_loop();
  REQUIRE(l.ran);
  CHECK(l.measured_s > 0.0);
  CHECK(l.predicted_s > 0.0);
  CHECK(l.loss_last < l.loss_first);  // the program really trains
  CHECK(l.low_s <= l.predicted_s);    // the calibrated profile carries a spread
  CHECK(l.high_s >= l.predicted_s);
  // Sane: within a factor of 5 either way even on a loaded machine.
  CHECK(l.predicted_s / l.measured_s > 0.2);
  CHECK(l.predicted_s / l.measured_s < 5.0);
}

TEST_CASE("cpu loop: the profiles calibrate writes validate against the profile schemas") {
  REQUIRE(run_loop().ran);
  dtsim::test::SchemaChecker checker(fs::path(DTSIM_SOURCE_DIR) / "schemas");
  const fs::path profiles = fs::path(DTSIM_LOOP_WORK_DIR) / "hardware_profiles";
  for (const auto& kind : {std::pair<std::string, std::string>{"gpus", "profile-gpu"},
                           std::pair<std::string, std::string>{"nodes", "profile-node"}}) {
    std::ifstream in(profiles / kind.first / "cpu-loop.json");
    REQUIRE(in);
    const auto errors = checker.check(nlohmann::json::parse(in), kind.second + ".schema.json");
    std::string all = kind.first + ": ";
    for (const auto& e : errors) all += e + "\n";
    CHECK_MESSAGE(errors.empty(), all);
  }
}

TEST_CASE("cpu loop: prediction within 15% of the measured step time (quiet machine)" * doctest::may_fail()) {
  const Loop& l = run_loop();
  REQUIRE(l.ran);
  const double error = std::abs(l.predicted_s - l.measured_s) / l.measured_s;
  MESSAGE(fmt::format("prediction error {:.1f}% (goal <= 15%)", 100 * error));
  CHECK(error <= 0.15);
}
