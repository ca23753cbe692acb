// dtsim plan PLAN.json: the cheapest and the fastest candidate clusters that meet a deadline and/or a
// budget, each with its best strategy (capacity_plan.hpp); --report writes them as a report.
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "cli/output_files.hpp"
#include "cli/positive_number.hpp"
#include "cli/report_option.hpp"
#include "config/accuracy.hpp"
#include "config/plan_loader.hpp"
#include "config/scenario_loader.hpp"
#include "core/units.hpp"
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
  add_report_option(cmd, o.report_path);
  return cmd;
}

namespace {

// The report of a plan: one entry per cluster (its best strategy's result), the node, fabric and node
// count as knobs (so the scaling charts draw one line per node type and fabric), and the plan's own
// figures: days and cost to train, GPU-hours, the strategy, whether it meets the plan and the picks.
results::ReportData plan_report_data(const config::Plan& plan, const search::PlanOutcome& outcome) {
  results::ReportData data{.title = plan.name, .kind = results::ReportKind::plan};
  for (std::size_t i = 0; i < outcome.rows.size(); ++i) {
    const search::PlanRow& row = outcome.rows[i];
    const config::PlanCluster& c = *row.cluster;
    results::ReportEntry entry{
        .label = fmt::format("{} x {} ({})", c.scenario.cluster.nodes, c.node_id, c.fabric),
        .knobs = {{"/cluster/node", c.node_id},
                  {"/cluster/network/fabric", c.fabric},
                  {"/cluster/nodes", std::to_string(c.scenario.cluster.nodes)}},
        .result = row.best};
    if (!row.feasible && row.search.top.empty()) {
      entry.result = results::Result{};
      entry.result.scenario = c.scenario;
      entry.result.status = results::Status::infeasible;
      entry.result.reason = row.reason;
      entry.result.memory.capacity_bytes_per_gpu = c.scenario.hbm_bytes_per_gpu();
    }
    const double nan = std::nan("");
    std::string pick;
    if (outcome.cheapest == i) pick = "cheapest";
    if (outcome.fastest == i) pick += pick.empty() ? "fastest" : ", fastest";
    if (row.feasible) {
      const double days = row.train_s / core::kSecondsPerDay;
      entry.figures = {{"days to train", days, fmt::format("{:.1f}", days)},
                       {"cost (USD)", row.cost_usd, fmt::format("{:.0f}", row.cost_usd)},
                       {"GPU-hours", row.gpu_hours, fmt::format("{:.0f}", row.gpu_hours)}};
    }
    entry.figures.push_back({"strategy", nan, row.feasible ? row.strategy : "-"});
    entry.figures.push_back({"meets the plan", nan, row.meets() ? "yes" : "no"});
    entry.figures.push_back({"pick", nan, pick.empty() ? "-" : pick});
    data.entries.push_back(std::move(entry));
  }
  return data;
}

}  // namespace

int plan_command(const PlanCommandOptions& o, std::istream& in, std::ostream& out) {
  check_outputs({{"--out", o.out_path}, {"--report", o.report_path}}, {o.plan});
  std::vector<config::PriceOverride> prices_given;
  for (const std::string& p : o.usd_per_gpu_hour)
    prices_given.push_back(config::parse_price_override(p, config::PriceBasis::gpu_hour));
  for (const std::string& p : o.usd_per_node_hour)
    prices_given.push_back(config::parse_price_override(p, config::PriceBasis::node_hour));
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
  // The report and --out are written together (all or none), as search writes them.
  std::vector<OutputFile> files;
  if (!o.report_path.empty())
    files.push_back({o.report_path, render_report(o.report_path, plan_report_data(plan, outcome))});
  if (!o.out_path.empty()) files.push_back({o.out_path, text.str()});
  write_files(files);
  if (o.out_path.empty()) write_stream(out, text.str());
  return outcome.cheapest || outcome.fastest ? kExitOk : kExitInfeasible;
}

}  // namespace dtsim::cli
