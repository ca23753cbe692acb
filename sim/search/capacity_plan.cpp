#include "search/capacity_plan.hpp"

#include "core/units.hpp"
#include "results/goodput.hpp"

namespace dtsim::search {

namespace {

constexpr double kSecondsPerHour = 3600.0;

SpaceBounds bounds_of(const config::PlanSearchBounds& b) {
  SpaceBounds out;
  out.max_tensor = b.max_tensor;
  out.max_pipeline = b.max_pipeline;
  out.max_context = b.max_context;
  out.max_micro_batch = b.max_micro_batch;
  out.max_virtual_stages = b.max_virtual_stages;
  out.keep_recompute = b.keep_recompute;
  out.keep_sharding = b.keep_sharding;
  out.keep_sequence_parallel = b.keep_sequence_parallel;
  out.min_headroom_gib = b.min_headroom_gib;
  return out;
}

// Index of the best row by `better` among rows that meet the plan.
template <typename Better>
std::optional<std::size_t> pick(const std::vector<PlanRow>& rows, Better better) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].meets()) continue;
    if (!best || better(rows[i], rows[*best])) best = i;
  }
  return best;
}

}  // namespace

PlanOutcome evaluate_plan(const config::Plan& plan, std::size_t jobs) {
  PlanOutcome out;
  SearchOptions options;
  options.bounds = bounds_of(plan.search);
  options.top = 1;
  options.jobs = jobs;
  for (const config::PlanCluster& cluster : plan.clusters) {
    PlanRow row;
    row.cluster = &cluster;
    row.gpus = cluster.scenario.gpu_count();
    row.search = search(cluster.scenario, options);
    out.evaluated += row.search.evaluated;
    out.evaluate_wall_s += row.search.evaluate_wall_s;
    if (row.search.top.empty()) {
      row.reason = row.search.evaluated == 0 ? "no strategy passes the divisibility rules and fits in memory"
                                             : "no strategy runs";
      out.rows.push_back(std::move(row));
      continue;
    }
    const SearchEntry& best = row.search.top.front();
    row.feasible = true;
    row.strategy = best.label;
    row.best = best.result;
    row.failure_free_s = plan.tokens ? *plan.tokens / row.best.throughput.tokens_per_s
                                     : static_cast<double>(*plan.steps) * row.best.iteration_time_s;
    row.train_s = row.failure_free_s;
    double held_gpus = static_cast<double>(row.gpus);
    if (plan.failures) {
      row.best.scenario.failures = plan.failures;
      row.best.goodput = results::goodput_of(row.best, *plan.failures, row.failure_free_s);
      if (!row.best.goodput->reason.empty()) {
        row.feasible = false;
        row.reason = row.best.goodput->reason;
        out.rows.push_back(std::move(row));
        continue;
      }
      row.train_s = row.best.goodput->wall_s.p50;
      held_gpus += static_cast<double>(plan.failures->spare_nodes.value_or(0) *
                                       cluster.scenario.node.gpus_per_node);
    }
    row.gpu_hours = held_gpus * row.train_s / kSecondsPerHour;
    row.cost_usd = row.gpu_hours * cluster.usd_per_gpu_hour;
    row.meets_deadline = !plan.deadline_days || row.train_s <= *plan.deadline_days * core::kSecondsPerDay;
    row.meets_budget = !plan.budget_usd || row.cost_usd <= *plan.budget_usd;
    out.rows.push_back(std::move(row));
  }
  out.cheapest = pick(out.rows, [](const PlanRow& a, const PlanRow& b) {
    return a.cost_usd != b.cost_usd ? a.cost_usd < b.cost_usd : a.gpus < b.gpus;
  });
  out.fastest = pick(out.rows, [](const PlanRow& a, const PlanRow& b) {
    return a.train_s != b.train_s ? a.train_s < b.train_s : a.gpus < b.gpus;
  });
  return out;
}

}  // namespace dtsim::search
