// dtsim compare A.json B.json ...: evaluates each scenario and prints them side by side.
#include <sstream>
#include <string>

#include "cli/cli.hpp"
#include "config/accuracy.hpp"
#include "config/scenario_loader.hpp"
#include "cli/commands.hpp"
#include "cli/output_files.hpp"
#include "cli/report_option.hpp"
#include "network/flow_cache.hpp"
#include "reports/compare_report.hpp"
#include "reports/reports.hpp"
#include "results/evaluate.hpp"

namespace dtsim::cli {

CLI::App* add_compare_command(CLI::App& app, CompareOptions& o) {
  CLI::App* cmd = app.add_subcommand("compare", "Evaluate several scenarios and compare them side by side");
  cmd->add_option("scenarios", o.scenarios, "Scenario v1 JSON files (at most one may be -)")->required();
  cmd->add_option("--format", o.format, "Output format")->check(CLI::IsMember({"text", "json", "csv"}));
  cmd->add_flag("--no-timing", o.no_timing, "Report the engine's wall time as 0");
  add_report_option(cmd, o.report_path);
  return cmd;
}

int compare_command(const CompareOptions& o, std::istream& in, std::ostream& out) {
  check_outputs({{"--report", o.report_path}}, o.scenarios);
  // Read every scenario first: a bad one stops the command before anything is evaluated or written.
  std::vector<config::Scenario> scenarios;
  for (const auto& path : o.scenarios) scenarios.push_back(read_scenario(path, in));
  std::vector<results::Result> all;
  bool any_infeasible = false;
  // Scenarios on the flow network simulate each distinct collective once (network/flow_cache.hpp).
  network::FlowCache flow_cache;
  const auto regimes = config::load_accuracy(config::default_data_paths().hardware_profiles);
  for (const auto& s : scenarios) {
    all.push_back(results::evaluate(s, {.flow_cache = &flow_cache}));
    results::state_expected_error(all.back(), regimes);
    if (o.no_timing) all.back().engine.wall_s = 0.0;
    any_infeasible = any_infeasible || all.back().status != results::Status::ok;
  }
  std::ostringstream text;
  if (o.format == "json") {
    reports::write_compare_json(text, all, o.scenarios);
  } else if (o.format == "csv") {
    reports::write_csv(text, all);
  } else {
    reports::write_compare_text(text, all);
  }
  if (!o.report_path.empty()) {
    results::ReportData data{.title = "Comparison of " + std::to_string(all.size()) + " plans",
                             .kind = results::ReportKind::compare};
    for (std::size_t i = 0; i < all.size(); ++i) {
      const std::string label = all[i].scenario.name.empty() ? o.scenarios[i] : all[i].scenario.name;
      data.entries.push_back({.label = label, .knobs = {{"scenario", o.scenarios[i]}}, .result = all[i]});
    }
    write_report_file(o.report_path, data);
  }
  write_stream(out, text.str());
  return any_infeasible ? kExitInfeasible : kExitOk;
}

}  // namespace dtsim::cli
