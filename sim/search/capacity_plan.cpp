#include "search/capacity_plan.hpp"

#include <algorithm>

#include "core/units.hpp"
#include "results/goodput.hpp"
#include "search/embedding_search.hpp"

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
  out.keep_expert = b.keep_expert;
  out.keep_schedule = b.keep_schedule;
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

// What training with `r` (a ranked strategy of `cluster`) takes: time, GPU-hours, cost; under the plan's
// failures the median wall time of the whole-run simulation (r gets its goodput), or the reason it does
// not finish.
struct Costed {
  double failure_free_s = 0.0;
  double train_s = 0.0;
  double gpu_hours = 0.0;
  double cost_usd = 0.0;
  std::string reason;
};

Costed cost_of(const config::Plan& plan, const config::PlanCluster& cluster, results::Result& r) {
  Costed c;
  c.failure_free_s = plan.tokens    ? *plan.tokens / r.throughput.tokens_per_s
                     : plan.samples ? *plan.samples / r.throughput.samples_per_s
                                    : static_cast<double>(*plan.steps) * r.iteration_time_s;
  c.train_s = c.failure_free_s;
  double held_gpus = static_cast<double>(cluster.scenario.gpu_count());
  if (plan.failures) {
    r.scenario.failures = plan.failures;
    r.goodput = results::goodput_of(r, *plan.failures, c.failure_free_s);
    if (!r.goodput->reason.empty()) {
      c.reason = r.goodput->reason;
      return c;
    }
    c.train_s = r.goodput->wall_s.p50;
    held_gpus += static_cast<double>(plan.failures->spare_nodes.value_or(0) * cluster.scenario.node.gpus_per_node);
  }
  c.gpu_hours = held_gpus * c.train_s / kSecondsPerHour;
  c.cost_usd = c.gpu_hours * cluster.usd_per_gpu_hour;
  // A DLRM plan's parameter servers, for as long as the GPUs, when its tables are on them.
  if (r.embeddings && r.embeddings->remote) {
    const config::RemoteServers& servers = *r.scenario.parallelism.embeddings.servers;
    c.cost_usd += static_cast<double>(servers.count) * servers.usd_per_hour.value_or(0.0) * c.train_s / kSecondsPerHour;
  }
  return c;
}

}  // namespace

PlanOutcome evaluate_plan(const config::Plan& plan, std::size_t jobs, std::size_t top) {
  PlanOutcome out;
  SearchOptions options;
  options.bounds = bounds_of(plan.search);
  // A plan's failures are not the clusters' scenarios' (search() would restrict the space itself).
  options.bounds.reroutable_only = plan.failures && plan.failures->recovery == config::Recovery::reroute;
  options.top = std::max<std::size_t>(top, 1);
  options.jobs = jobs;
  for (const config::PlanCluster& cluster : plan.clusters) {
    PlanRow row;
    row.cluster = &cluster;
    row.gpus = cluster.scenario.gpu_count();
    // A DLRM's cluster by its best embedding plan, a transformer's by its best parallel plan.
    row.search = cluster.scenario.dlrm ? search_embedding_plans(cluster.scenario, options)
                                       : search(cluster.scenario, options);
    out.evaluated += row.search.evaluated;
    out.evaluate_wall_s += row.search.evaluate_wall_s;
    if (row.search.top.empty()) {
      row.reason = row.search.evaluated == 0 ? "no strategy passes the divisibility rules and fits in memory"
                                             : "no strategy runs";
      out.rows.push_back(std::move(row));
      continue;
    }
    for (std::size_t k = 1; k < row.search.top.size(); ++k) {
      PlanAlternative alt;
      alt.rank = k + 1;
      alt.strategy = row.search.top[k].label;
      alt.result = row.search.top[k].result;
      const Costed c = cost_of(plan, cluster, alt.result);
      alt.train_s = c.train_s;
      alt.gpu_hours = c.gpu_hours;
      alt.cost_usd = c.cost_usd;
      alt.reason = c.reason;
      row.alternatives.push_back(std::move(alt));
    }
    const SearchEntry& best = row.search.top.front();
    row.feasible = true;
    row.strategy = best.label;
    row.best = best.result;
    const Costed c = cost_of(plan, cluster, row.best);
    row.failure_free_s = c.failure_free_s;
    if (!c.reason.empty()) {
      row.feasible = false;
      row.reason = c.reason;
      out.rows.push_back(std::move(row));
      continue;
    }
    row.train_s = c.train_s;
    row.gpu_hours = c.gpu_hours;
    row.cost_usd = c.cost_usd;
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
