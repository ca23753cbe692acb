// `dtsim run SCENARIO`: load -> evaluate -> render. The output paths are checked against the scenario
// first; everything is rendered in memory and written only once all of it succeeded, all files or
// none (output_files.hpp), so an error leaves no partial report or trace behind.
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli.hpp"
#include "config/accuracy.hpp"
#include "config/scenario_loader.hpp"
#include "cli/commands.hpp"
#include "cli/output_files.hpp"
#include "cli/report_option.hpp"
#include "core/errors.hpp"
#include "reports/reports.hpp"
#include "results/evaluate.hpp"

namespace dtsim::cli {

namespace {

reports::Format parse_format(const std::string& name) {
  if (name == "text") return reports::Format::text;
  if (name == "json") return reports::Format::json;
  if (name == "csv") return reports::Format::csv;
  throw core::InternalError("unknown report format '" + name + "' passed option validation");
}

}  // namespace

CLI::App* add_run_command(CLI::App& app, RunOptions& options) {
  CLI::App* run = app.add_subcommand("run", "Simulate one training iteration of a scenario and report it");
  run->add_option("scenario", options.scenario, "Scenario v1 JSON file, or - to read standard input")
      ->required()
      ->type_name("FILE");
  run->add_option("--format", options.format, "Report format")
      ->type_name("FORMAT")
      ->check(CLI::IsMember({"text", "json", "csv"}))
      ->capture_default_str();
  run->add_option("--out", options.out_path, "Write the report to FILE instead of standard output")
      ->type_name("FILE");
  run->add_option("--trace", options.trace_path, "Write a Chrome trace (Perfetto, chrome://tracing) to FILE")
      ->type_name("FILE");
  add_report_option(run, options.report_path);
  run->add_flag("--no-timing", options.no_timing,
                "Report the engine's wall time as 0, so that repeated runs give identical bytes");
  return run;
}

int run_command(const RunOptions& options, std::istream& in, std::ostream& out, std::ostream& err) {
  const reports::Format format = parse_format(options.format);
  const bool want_trace = !options.trace_path.empty();
  check_outputs(
      {{"--out", options.out_path}, {"--trace", options.trace_path}, {"--report", options.report_path}},
      {options.scenario});
  const config::Scenario scenario = read_scenario(options.scenario, in);

  const bool want_report = !options.report_path.empty();
  // A report shows a timeline excerpt, so it asks for the trace too where the workload records one
  // (layer-table workloads run their own every-worker simulation, without a trace).
  const bool report_trace = want_report && !scenario.layer_model;
  const auto regimes = config::load_accuracy(config::default_data_paths().hardware_profiles);
  results::Result result = results::evaluate(scenario, {.trace = want_trace || report_trace});
  results::state_expected_error(result, regimes);
  if (options.no_timing) result.engine.wall_s = 0.0;
  const bool infeasible = result.status == results::Status::infeasible;

  std::ostringstream report;
  reports::write_result(report, result, format, {{"scenario", options.scenario}});

  std::vector<OutputFile> files;
  if (!options.out_path.empty()) files.push_back({options.out_path, report.str()});
  if (want_trace && result.trace) {
    std::ostringstream trace;
    reports::write_chrome_trace(trace, result);
    files.push_back({options.trace_path, trace.str()});
  } else if (want_trace && !infeasible) {
    throw core::InternalError("a trace was asked for but the result has none");
  }
  if (want_report) {
    results::ReportData data{.title = scenario.name.empty() ? options.scenario : scenario.name,
                             .kind = results::ReportKind::run};
    data.entries.push_back(
        {.label = scenario.name.empty() ? options.scenario : scenario.name, .result = result});
    files.push_back({options.report_path, render_report(options.report_path, data)});
  }

  write_files(files);
  if (options.out_path.empty()) write_stream(out, report.str());
  if (infeasible) {
    err << "infeasible: " << result.reason << '\n';
    if (want_trace && !result.trace) err << "no trace written to " << options.trace_path << '\n';
  }
  return infeasible ? kExitInfeasible : kExitOk;
}

}  // namespace dtsim::cli
