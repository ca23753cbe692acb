// dtsim plan PLAN.json: the cheapest and the fastest candidate clusters that meet a deadline and/or a
// budget, each with its best strategy (capacity_plan.hpp).
#include <sstream>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "cli/output_files.hpp"
#include "cli/positive_number.hpp"
#include "config/accuracy.hpp"
#include "config/plan_loader.hpp"
#include "config/scenario_loader.hpp"
#include "results/evaluate.hpp"
#include "reports/plan_report.hpp"
#include "search/capacity_plan.hpp"

namespace dtsim::cli {

CLI::App* add_plan_command(CLI::App& app, PlanCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand("plan", "Size a cluster for a token budget, a deadline and a budget");
  cmd->add_option("plan", o.plan, "Plan v1 JSON file, or - for standard input")->required();
  cmd->add_option("--jobs,-j", o.jobs, "Worker threads (default: all cores)")->check(positive_number());
  cmd->add_option("--top", o.top, "Ranked strategies per cluster: the best, then the next ones")
      ->capture_default_str()
      ->check(positive_number());
  cmd->add_option("--usd-per-gpu-hour", o.usd_per_gpu_hour,
                  "NODE=USD: price the candidates of node profile NODE per GPU-hour (over the plan's prices)")
      ->allow_extra_args(false);
  cmd->add_option("--usd-per-node-hour", o.usd_per_node_hour,
                  "NODE=USD: price the candidates of node profile NODE per node-hour (over the plan's prices)")
      ->allow_extra_args(false);
  cmd->add_option("--format", o.format, "Output format")->check(CLI::IsMember({"text", "json", "csv"}));
  cmd->add_option("--out", o.out_path, "Write to FILE instead of standard output");
  cmd->add_flag("--no-timing", o.no_timing,
                "Report wall times, speed and thread count as 0 (identical bytes on every run)");
  return cmd;
}

int plan_command(const PlanCommandOptions& o, std::istream& in, std::ostream& out) {
  check_outputs({{"--out", o.out_path}}, {o.plan});
  std::vector<config::PriceOverride> prices_given;
  for (const std::string& p : o.usd_per_gpu_hour)
    prices_given.push_back(config::parse_price_override(p, config::PriceBasis::gpu_hour, "usd-per-gpu-hour"));
  for (const std::string& p : o.usd_per_node_hour)
    prices_given.push_back(config::parse_price_override(p, config::PriceBasis::node_hour, "usd-per-node-hour"));
  const config::Plan plan =
      config::load_plan_text(read_scenario_text(o.plan, in), o.plan, config::default_data_paths(), prices_given);
  search::PlanOutcome outcome =
      search::evaluate_plan(plan, worker_threads(o.jobs), static_cast<std::size_t>(o.top));
  const auto regimes = config::load_accuracy(config::default_data_paths().hardware_profiles);
  for (auto& row : outcome.rows) {
    if (row.feasible) results::state_expected_error(row.best, regimes);
    for (auto& alt : row.alternatives) results::state_expected_error(alt.result, regimes);
  }
  if (o.no_timing) {
    outcome.evaluate_wall_s = 0.0;
    for (auto& row : outcome.rows) {
      zero_timing(row.search);
      row.best.engine.wall_s = 0.0;
      for (auto& alt : row.alternatives) alt.result.engine.wall_s = 0.0;
    }
  }
  std::ostringstream text;
  nlohmann::ordered_json prices = nlohmann::ordered_json::array();
  for (const config::PriceOverride& p : prices_given) prices.push_back(p.option);
  reports::write_plan(text, plan, outcome, output_format(o.format),
                      {{"plan", o.plan}, {"top", o.top}, {"prices", std::move(prices)}});
  write_output(text.str(), o.out_path, out);
  return outcome.cheapest || outcome.fastest ? kExitOk : kExitInfeasible;
}

}  // namespace dtsim::cli
