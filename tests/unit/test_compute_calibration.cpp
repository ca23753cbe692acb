// Compute calibrated to a measured one-GPU throughput (training.measured_single_gpu,
// results/compute_calibration.hpp). Expected values are derived in the comments from
//   f = T_pred / T_meas = X / (b / T_pred),   every compute duration x 1 / f,
// where T_pred is the one-GPU copy's predicted iteration, b its batch and X the measured rate. The
// engine rounds each task's duration to whole nanoseconds, so a sum of n scaled tasks may differ from
// the scaled sum by n x 0.5 ns x (1 + 1/f) (each task rounded once as profiled and once scaled).
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "compute/compute_model.hpp"
#include "config/scenario_loader.hpp"
#include "reports/report_writer.hpp"
#include "reports/reports.hpp"
#include "results/compute_calibration.hpp"
#include "results/evaluate.hpp"
#include "scenario_fixture.hpp"

namespace {

using dtsim::config::Scenario;
using dtsim::results::evaluate;
using dtsim::results::Result;

// Rounding slack of n tasks (see the header comment), in seconds.
double rounding_s(double tasks, double f) { return tasks * 0.5e-9 * (1.0 + 1.0 / f); }

Scenario one_gpu_fixture() {
  Scenario s = dtsim::testing::fixture_scenario();
  s.cluster.nodes = 1;
  s.node.gpus_per_node = 1;
  s.parallelism.data = 1;
  s.training.global_batch_size = 2;
  s.training.micro_batch_size = 2;
  return s;
}

// ResNet-50 (shipped layer table and profiles), 2 nodes of 4 P100, all-reduce; one fusion bucket for
// the whole model, so every worker's step is forward + backward + one all-reduce + optimizer.
Scenario resnet_allreduce(const std::string& measured) {
  const std::string text = R"({"schema_version": 1, "name": "r50",
    "model": {"layer_table": "resnet-50"}, "cluster": {"node": "horovod-p100x4", "nodes": 2},
    "training": {"global_batch_size": 256, "precision": "fp32", "architecture": "allreduce",
                 "fusion_mb": 100000, "simulated_steps": 4)" +
                           measured + R"(}, "simulation": {"ranks": "all"}})";
  return dtsim::config::load_scenario_text(text, "r50", dtsim::config::default_data_paths());
}

}  // namespace

TEST_CASE("compute model: the duration scale multiplies every duration") {
  const Scenario s = dtsim::testing::fixture_scenario();
  dtsim::graph::ComputeOp memory_op;
  memory_op.cls = dtsim::graph::ComputeClass::memory;
  memory_op.bytes = 1e9;  // 1e9 B / (2000e9 B/s x 0.5) = 1 ms
  memory_op.kernels = 1;
  const dtsim::compute::ComputeModel as_profiled(s.gpu, dtsim::config::Precision::bf16);
  const dtsim::compute::ComputeModel scaled(s.gpu, dtsim::config::Precision::bf16, 0.25);
  CHECK(as_profiled.duration_s(memory_op) == doctest::Approx(1e-3));
  CHECK(scaled.duration_s(memory_op) == doctest::Approx(0.25e-3));
  CHECK(scaled.duration(memory_op) == 250'000);
}

TEST_CASE("measured one-GPU rate: the one-GPU scenario reproduces it, in both rank modes") {
  for (const auto ranks : {dtsim::config::RankMode::symmetric, dtsim::config::RankMode::all}) {
    Scenario s = one_gpu_fixture();
    s.simulation.ranks = ranks;
    const Result profiled = evaluate(s, {});
    REQUIRE(profiled.iteration_time_s > 0.0);
    // Measured 1.7 x the profiled rate: f = X / (b / T_pred) = 1.7 and the iteration is T_pred / 1.7,
    // i.e. b / X: the rate is X.
    const double x = 1.7 * profiled.throughput.samples_per_s;
    s.training.measured_single_gpu = dtsim::config::MeasuredSingleGpu{x, "unit test"};
    const Result calibrated = evaluate(s, {});
    REQUIRE(calibrated.compute_calibration.has_value());
    CHECK(calibrated.compute_calibration->factor == doctest::Approx(1.7).epsilon(1e-12));
    CHECK(calibrated.compute_calibration->predicted_samples_per_s ==
          doctest::Approx(profiled.throughput.samples_per_s).epsilon(1e-12));
    CHECK(calibrated.compute_calibration->source == "unit test");
    const double t_meas = 2.0 / x;
    CHECK(std::abs(calibrated.iteration_time_s - t_meas) <=
          rounding_s(static_cast<double>(calibrated.engine.tasks), 1.7));
    CHECK(calibrated.throughput.samples_per_s == doctest::Approx(x).epsilon(1e-6));
    // Nothing but compute: no exposed communication either way.
    CHECK(calibrated.breakdown.exposed_comm_s() == 0.0);
  }
}

TEST_CASE("measured one-GPU rate: data-parallel transformer scales compute, not communication") {
  for (const auto ranks : {dtsim::config::RankMode::symmetric, dtsim::config::RankMode::all}) {
    Scenario s = dtsim::testing::fixture_scenario();  // 32 GPUs on 4 nodes, data parallel
    s.simulation.ranks = ranks;
    s.training.overlap_grad_reduce = false;  // the all-reduce follows the backward pass: all exposed
    const Result profiled = evaluate(s, {});
    // The one-GPU copy: same model and micro-batch (1) on one GPU.
    const Result one = evaluate(dtsim::results::single_gpu_copy(s), {});
    const double x = 0.8 * one.throughput.samples_per_s;  // measured 20% slower than profiled: f = 0.8
    s.training.measured_single_gpu = dtsim::config::MeasuredSingleGpu{x, "unit test"};
    const Result calibrated = evaluate(s, {});
    REQUIRE(calibrated.compute_calibration.has_value());
    const double f = calibrated.compute_calibration->factor;
    CHECK(f == doctest::Approx(0.8).epsilon(1e-12));
    // Iteration = (forward + backward + optimizer + waiting for the host) / f + exposed data comm
    // (unchanged): the host's issue scales with the kernels.
    const auto& b = profiled.breakdown;
    const double compute = b.forward_s + b.backward_s + b.recompute_s + b.optimizer_s + b.host_wait_s;
    const double expected = compute / f + b.exposed_data_comm_s;
    CHECK(std::abs(calibrated.iteration_time_s - expected) <=
          rounding_s(static_cast<double>(calibrated.engine.tasks), f));
    CHECK(calibrated.breakdown.exposed_data_comm_s == doctest::Approx(b.exposed_data_comm_s).epsilon(1e-9));
    CHECK(calibrated.breakdown.forward_s == doctest::Approx(b.forward_s / f).epsilon(1e-6));
  }
}

TEST_CASE("measured one-GPU rate: layer-table model, one GPU and data parallel") {
  const Result profiled = evaluate(resnet_allreduce(""), {});
  const Scenario copy = dtsim::results::single_gpu_copy(resnet_allreduce(""));
  CHECK(copy.gpu_count() == 1);
  CHECK(copy.training.global_batch_size == 32);  // the per-worker batch, 256 / 8
  const Result one = evaluate(copy, {});
  // The one-GPU step is forward + backward + optimizer: its rate is 32 / T_pred.
  const auto& ob = one.breakdown;
  CHECK(one.throughput.samples_per_s ==
        doctest::Approx(32.0 / (ob.forward_s + ob.backward_s + ob.optimizer_s)).epsilon(1e-6));

  // Measured 110 images/s: f = 110 / (32 / T_pred).
  const Result calibrated = evaluate(
      resnet_allreduce(R"(, "measured_single_gpu": {"samples_per_s": 110, "source": "unit test"})"), {});
  REQUIRE(calibrated.compute_calibration.has_value());
  const double f = calibrated.compute_calibration->factor;
  CHECK(f == doctest::Approx(110.0 / one.throughput.samples_per_s).epsilon(1e-12));

  // The copy with the key runs at 110 images/s: its step (three durations rounded to ns) is 32 / 110 s.
  Scenario one_measured = copy;
  one_measured.training.measured_single_gpu = dtsim::config::MeasuredSingleGpu{110.0, "unit test"};
  const Result one_calibrated = evaluate(one_measured, {});
  CHECK(std::abs(one_calibrated.iteration_time_s - 32.0 / 110.0) <= rounding_s(3.0, f));

  // Eight workers, one bucket after backward: step = (F + B + O) / f + all-reduce, the all-reduce as
  // before (the profiled run's exposed data comm).
  const auto& b = profiled.breakdown;
  const double expected = (b.forward_s + b.backward_s + b.optimizer_s) / f + b.exposed_data_comm_s;
  CHECK(b.exposed_data_comm_s > 0.0);
  CHECK(std::abs(calibrated.iteration_time_s - expected) <= rounding_s(6.0, f));

  // The factor is in the JSON report and the text summary.
  const auto j = dtsim::reports::result_json(calibrated);
  CHECK(j["compute_calibration"]["factor"].get<double>() == doctest::Approx(f));
  CHECK(j["compute_calibration"]["source"] == "unit test");
  CHECK(j["scenario"]["training"]["measured_single_gpu"]["samples_per_s"].get<double>() == 110.0);
  std::ostringstream text;
  dtsim::reports::write_text(text, calibrated);
  CHECK(text.str().find("calibrated to 110.00 samples/s measured on one GPU (unit test)") !=
        std::string::npos);
  // And in the CSV's last column (empty for the profiled run).
  std::ostringstream csv;
  dtsim::reports::write_csv(csv, {profiled, calibrated});
  std::istringstream lines(csv.str());
  std::string header, first, second;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  CHECK(header.substr(header.rfind(',') + 1) == "compute_calibration_factor");
  CHECK(first.substr(first.rfind(',') + 1).empty());
  CHECK(std::stod(second.substr(second.rfind(',') + 1)) == doctest::Approx(f));
  // And as a note under the results table of the HTML and Markdown reports.
  dtsim::results::ReportData data;
  data.entries.push_back({.label = "profiled", .knobs = {}, .result = profiled});
  data.entries.push_back({.label = "calibrated", .knobs = {}, .result = calibrated});
  std::ostringstream md;
  dtsim::reports::write_markdown_report(md, data);
  CHECK(md.str().find(fmt::format("Compute calibrated to a measured one-GPU throughput: calibrated: compute "
                                  "durations / {:.4f} (110.00 samples/s measured on one GPU",
                                  f)) != std::string::npos);
  CHECK(md.str().find("profiled: compute durations") == std::string::npos);
}

TEST_CASE("measured one-GPU rate: parameter servers keep their transfers, compute is scaled") {
  const std::string text = R"({"schema_version": 1, "name": "vgg-ps",
    "model": {"layer_table": "vgg-16"}, "cluster": {"node": "horovod-p100x4", "nodes": 2},
    "training": {"global_batch_size": 256, "precision": "fp32", "architecture": "parameter_server",
                 "parameter_server": {"servers": 2}, "simulated_steps": 4 MEASURED},
    "simulation": {"ranks": "all"}})";
  const auto load = [&](const std::string& measured) {
    std::string t = text;
    t.replace(t.find("MEASURED"), 8, measured);
    return dtsim::config::load_scenario_text(t, "vgg-ps", dtsim::config::default_data_paths());
  };
  const Result profiled = evaluate(load(""), {});
  const Result calibrated =
      evaluate(load(R"(, "measured_single_gpu": {"samples_per_s": 50, "source": "unit test"})"), {});
  REQUIRE(calibrated.compute_calibration.has_value());
  const double f = calibrated.compute_calibration->factor;
  // Compute per step / f; pure PS has no local optimizer step.
  CHECK(calibrated.breakdown.forward_s == doctest::Approx(profiled.breakdown.forward_s / f).epsilon(1e-9));
  CHECK(calibrated.breakdown.backward_s == doctest::Approx(profiled.breakdown.backward_s / f).epsilon(1e-9));
  CHECK(calibrated.breakdown.optimizer_s == 0.0);
  // Pushes and pulls are the same bytes over the same NICs and transport.
  CHECK(calibrated.data_parallel->push_bytes_per_worker_step ==
        profiled.data_parallel->push_bytes_per_worker_step);
  CHECK(calibrated.status == profiled.status);
}
