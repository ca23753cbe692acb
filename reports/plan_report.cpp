#include "reports/plan_report.hpp"

#include <string>

#include <fmt/format.h>

#include "core/units.hpp"
#include "reports/goodput_report.hpp"
#include "reports/input_report.hpp"
#include "reports/output_envelope.hpp"
#include "reports/search_report.hpp"

namespace dtsim::reports {

namespace {


std::string yes_no(bool v) { return v ? "yes" : "no"; }

std::string goal_text(const config::Plan& p) {
  std::string work = p.tokens    ? fmt::format("{:.4g} tokens", *p.tokens)
                     : p.samples ? fmt::format("{:.4g} samples", *p.samples)
                                 : fmt::format("{} steps", *p.steps);
  std::string limits;
  if (p.deadline_days) limits += fmt::format("deadline {:g} days", *p.deadline_days);
  if (p.budget_usd) limits += fmt::format("{}budget ${:.0f}", limits.empty() ? "" : ", ", *p.budget_usd);
  if (limits.empty()) limits = "no deadline or budget: every cluster that runs is compared";
  return work + "; " + limits;
}

// The plan's batch rule, when the global batch varies between clusters.
std::string batch_text(const config::Plan& p) {
  if (p.batch.rule == config::BatchRule::fixed) return {};
  return fmt::format("batch     global batch per GPU held from {} GPUs{}\n", p.batch.reference_gpus,
                     p.batch.max_global_batch_size
                         ? fmt::format(", at most {}", *p.batch.max_global_batch_size)
                         : std::string());
}

double usd_per_node_hour(const config::PlanCluster& c) {
  return c.usd_per_gpu_hour * static_cast<double>(c.scenario.node.gpus_per_node);
}

std::string price_text(const config::PlanCluster& c) {
  if (c.price_basis == config::PriceBasis::node_hour) {
    return fmt::format("${:.2f} per node-hour (${:.2f} per GPU-hour)", c.stated_usd, c.usd_per_gpu_hour);
  }
  return fmt::format("${:.2f} per GPU-hour", c.usd_per_gpu_hour);
}

void write_pick(std::ostream& out, const char* what, const search::PlanOutcome& o,
                const std::optional<std::size_t>& index) {
  if (!index) {
    out << fmt::format("{:<9} none meets the plan\n", what);
    return;
  }
  const search::PlanRow& r = o.rows[*index];
  // Days, or hours for a run shorter than a day; then the range the closest validated regime's band implies.
  const double days = r.train_s / core::kSecondsPerDay;
  const bool in_days = days >= 1.0;
  const double time = in_days ? days : r.train_s / 3600.0;
  std::string band;
  if (const auto& e = r.best.expected_error; e && e->validated) {
    band = fmt::format(" (likely {:.1f} .. {:.1f}: error band {})", e->measured_low(time), e->measured_high(time),
                       results::band_range(*e));
  }
  // With failures: the spread of the whole-run simulation and its goodput.
  std::string failures;
  if (const auto& g = r.best.goodput) {
    // In the unit of the time beside it (days, or hours for a run shorter than a day).
    const double unit_s = in_days ? core::kSecondsPerDay : 3600.0;
    failures = fmt::format(" (failures: p10 {:.1f} .. p90 {:.1f}, goodput {:.1f}%)", g->wall_s.p10 / unit_s,
                           g->wall_s.p90 / unit_s, g->goodput.p50 * 100.0);
  }
  const std::string duration = fmt::format("{:.1f} {}", time, in_days ? "days" : "hours");
  out << fmt::format("{:<9} {} x {} ({}, {} GPUs): {}{}{}, ${:.0f}, {}\n", what, r.cluster->scenario.cluster.nodes,
                     r.cluster->node_id, r.cluster->fabric, r.gpus, duration, band, failures, r.cost_usd, r.strategy);
  // The readers it needs (the plan's input pipeline): what limits them and what feeds the GPUs.
  if (r.best.input && r.best.input_sizing && !r.best.input->limited_by.empty()) {
    out << fmt::format("{:<9} input {:.0f} samples/s, limited by {}; to feed the GPUs: {}\n", "",
                       r.best.input->samples_per_s, r.best.input->limited_by, needs_text(r.best.input_sizing->needs));
  }
  // The parameter servers its embedding plan needs (the remote placement).
  if (r.best.embeddings && r.best.embeddings->remote) {
    out << fmt::format("{:<9} parameter servers: {}\n", "", needs_text(r.best.embeddings->remote->needs));
  }
}

void write_text(std::ostream& out, const config::Plan& p, const search::PlanOutcome& o) {
  out << fmt::format("plan      {}: {}\n", p.name, goal_text(p));
  out << batch_text(p);
  if (const auto& f = p.failures) {
    out << fmt::format("failures  {}{} categor{}, {} recovery; days are the median of {} simulated runs{}\n",
                       f->preset.empty() ? std::string() : f->preset + ", ", f->categories.size(),
                       f->categories.size() == 1 ? "y" : "ies",
                       config::to_string(f->recovery), f->runs,
                       f->spare_nodes ? fmt::format(", cost includes {} spare nodes", *f->spare_nodes) : "");
  }
  write_pick(out, "cheapest", o, o.cheapest);
  write_pick(out, "fastest", o, o.fastest);
  const bool scaled = p.batch.rule != config::BatchRule::fixed;
  // With a batch rule, each cluster's global batch after its GPU count.
  const auto batch_of = [&](const config::PlanCluster& c) {
    return scaled ? fmt::format(" {:>6}", c.scenario.training.global_batch_size) : std::string();
  };
  out << fmt::format("\n{:<10} {:<11} {:>5} {:>6}{} {:>7} {:<44} {:>9} {:>6} {:>7} {:>8} {:>8} {:>12} {:>8} {:>6}{}\n",
                     "node", "fabric", "nodes", "GPUs", scaled ? fmt::format(" {:>6}", "batch") : "", "$/GPU-h",
                     "best strategy", compared_rate_label(p.clusters.front().scenario), "MFU", "mem GiB", "headroom", "days", "cost ($)", "deadline",
                     "budget", p.failures ? "  goodput" : "");
  for (const search::PlanRow& r : o.rows) {
    const auto& c = *r.cluster;
    if (!r.feasible) {
      out << fmt::format("{:<10} {:<11} {:>5} {:>6}{} {:>7.2f} infeasible: {}\n", c.node_id, c.fabric,
                         c.scenario.cluster.nodes, r.gpus, batch_of(c), c.usd_per_gpu_hour, r.reason);
      continue;
    }
    const auto& memory = r.best.memory;
    out << fmt::format("{:<10} {:<11} {:>5} {:>6}{} {:>7.2f} {:<44} {:>9.0f} {:>5.1f}% {:>7.1f} {:>8.1f} {:>8.1f} "
                       "{:>12.0f} {:>8} {:>6}{}\n",
                       c.node_id, c.fabric, c.scenario.cluster.nodes, r.gpus, batch_of(c), c.usd_per_gpu_hour,
                       r.strategy,
                       compared_rate(r.best), r.best.flops.mfu * 100.0, memory.peak_bytes_per_gpu / core::kGiB,
                       (memory.capacity_bytes_per_gpu - memory.peak_bytes_per_gpu) / core::kGiB,
                       r.train_s / core::kSecondsPerDay, r.cost_usd,
                       p.deadline_days ? yes_no(r.meets_deadline) : "-", p.budget_usd ? yes_no(r.meets_budget) : "-",
                       r.best.goodput ? fmt::format(" {:>7.1f}%", r.best.goodput->goodput.p50 * 100.0) : "");
    // The cluster's next ranked strategies (--top), under its row.
    for (const search::PlanAlternative& a : r.alternatives) {
      if (!a.reason.empty()) {
        out << fmt::format("{:>{}} #{:<2} {:<44} does not finish: {}\n", "", scaled ? 46 : 39, a.rank, a.strategy,
                         a.reason);
        continue;
      }
      const auto& m = a.result.memory;
      out << fmt::format("{:>{}} #{:<2} {:<44} {:>9.0f} {:>5.1f}% {:>7.1f} {:>8.1f} {:>8.1f} {:>12.0f}{}\n", "",
                         scaled ? 46 : 39, a.rank,
                         a.strategy, compared_rate(a.result), a.result.flops.mfu * 100.0,
                         m.peak_bytes_per_gpu / core::kGiB, (m.capacity_bytes_per_gpu - m.peak_bytes_per_gpu) / core::kGiB,
                         a.train_s / core::kSecondsPerDay, a.cost_usd,
                         a.result.goodput ? fmt::format(" {:>23.1f}%", a.result.goodput->goodput.p50 * 100.0) : "");
    }
  }
  out << fmt::format("\n{} strategies estimated in {:.3f} s\nprices:\n", o.evaluated, o.evaluate_wall_s);
  std::size_t last = static_cast<std::size_t>(-1);
  for (const search::PlanRow& r : o.rows) {
    if (r.cluster->candidate == last) continue;
    last = r.cluster->candidate;
    out << fmt::format("  {} ({}): {}, {}\n", r.cluster->node_id, r.cluster->fabric, price_text(*r.cluster),
                       r.cluster->price_source);
  }
  // A DLRM's parameter servers (the plan's embeddings), counted in the cost of the plans that use them.
  const auto& servers_of = p.clusters.empty() ? std::optional<config::RemoteServers>()
                                              : p.clusters.front().scenario.parallelism.embeddings.servers;
  if (servers_of) {
    const config::RemoteServers& servers = *servers_of;
    out << (servers.usd_per_hour
                ? fmt::format("  parameter servers: ${:.2f} per server-hour, {} servers, in the cost of the plans "
                              "with tables on them\n",
                              *servers.usd_per_hour, servers.count)
                : fmt::format("  parameter servers: no usd_per_hour stated: the {} servers are not in the cost\n",
                              servers.count));
  }
}

nlohmann::ordered_json row_json(const config::Plan& p, const search::PlanRow& r) {
  const auto& c = *r.cluster;
  nlohmann::ordered_json j;
  j["node"] = c.node_id;
  j["fabric"] = c.fabric;
  j["nodes"] = c.scenario.cluster.nodes;
  j["gpus"] = r.gpus;
  j["global_batch_size"] = c.scenario.training.global_batch_size;
  j["usd_per_gpu_hour"] = c.usd_per_gpu_hour;
  j["usd_per_node_hour"] = usd_per_node_hour(c);
  j["price_basis"] = config::to_string(c.price_basis);
  j["price_source"] = c.price_source;
  j["status"] = r.feasible ? "ok" : "infeasible";
  j["reason"] = r.reason;
  j["strategy"] = r.strategy;
  j["train_s"] = r.train_s;
  j["train_days"] = r.train_s / core::kSecondsPerDay;
  j["failure_free_s"] = r.failure_free_s;
  j["gpu_hours"] = r.gpu_hours;
  j["cost_usd"] = r.cost_usd;
  j["meets_deadline"] = p.deadline_days ? nlohmann::ordered_json(r.meets_deadline) : nlohmann::ordered_json();
  j["meets_budget"] = p.budget_usd ? nlohmann::ordered_json(r.meets_budget) : nlohmann::ordered_json();
  j["search"] = search_counts_json(r.search);
  if (r.feasible) j["result"] = result_json(r.best);
  nlohmann::ordered_json alternatives = nlohmann::ordered_json::array();
  for (const search::PlanAlternative& a : r.alternatives) {
    nlohmann::ordered_json alt;
    alt["rank"] = a.rank;
    alt["strategy"] = a.strategy;
    alt["status"] = a.reason.empty() ? "ok" : "infeasible";
    alt["reason"] = a.reason;
    alt["train_s"] = a.train_s;
    alt["train_days"] = a.train_s / core::kSecondsPerDay;
    alt["gpu_hours"] = a.gpu_hours;
    alt["cost_usd"] = a.cost_usd;
    alt["result"] = result_json(a.result);
    alternatives.push_back(std::move(alt));
  }
  j["alternatives"] = std::move(alternatives);
  return j;
}

void write_json(std::ostream& out, const config::Plan& p, const search::PlanOutcome& o,
                const nlohmann::ordered_json& inputs) {
  nlohmann::ordered_json j = output_envelope("plan", inputs);
  j["name"] = p.name;
  j["tokens"] = p.tokens ? nlohmann::ordered_json(*p.tokens) : nlohmann::ordered_json();
  j["samples"] = p.samples ? nlohmann::ordered_json(*p.samples) : nlohmann::ordered_json();
  j["steps"] = p.steps ? nlohmann::ordered_json(*p.steps) : nlohmann::ordered_json();
  j["deadline_days"] = p.deadline_days ? nlohmann::ordered_json(*p.deadline_days) : nlohmann::ordered_json();
  j["budget_usd"] = p.budget_usd ? nlohmann::ordered_json(*p.budget_usd) : nlohmann::ordered_json();
  nlohmann::ordered_json batch;
  batch["rule"] = config::to_string(p.batch.rule);
  batch["reference_gpus"] =
      p.batch.rule == config::BatchRule::fixed ? nlohmann::ordered_json() : nlohmann::ordered_json(p.batch.reference_gpus);
  batch["max_global_batch_size"] = p.batch.max_global_batch_size
                                       ? nlohmann::ordered_json(*p.batch.max_global_batch_size)
                                       : nlohmann::ordered_json();
  j["batch"] = std::move(batch);
  j["failures"] = p.failures ? failures_json(*p.failures) : nlohmann::ordered_json();
  j["cheapest"] = o.cheapest ? nlohmann::ordered_json(*o.cheapest) : nlohmann::ordered_json();
  j["fastest"] = o.fastest ? nlohmann::ordered_json(*o.fastest) : nlohmann::ordered_json();
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& r : o.rows) rows.push_back(row_json(p, r));
  j["results"] = std::move(rows);
  out << j.dump(2) << "\n";
}

void write_csv(std::ostream& out, const config::Plan& p, const search::PlanOutcome& o) {
  out << "node,fabric,nodes,gpus,global_batch_size,usd_per_gpu_hour,usd_per_node_hour,status,strategy,tokens_per_s,iteration_s,mfu,peak_memory_gib,"
         "headroom_gib,train_days,gpu_hours,cost_usd,meets_deadline,meets_budget,cheapest,fastest,samples_per_s,reason,rank\n";
  // One line per ranked strategy of a cluster (rank 1 its best, which the picks are made on).
  const auto line = [&](const search::PlanRow& r, std::string_view status, std::string_view strategy,
                        const results::Result& res, double train_s, double gpu_hours, double cost_usd,
                        bool meets_deadline, bool meets_budget, std::string_view cheapest, std::string_view fastest,
                        std::string_view reason, std::size_t rank) {
    const auto& c = *r.cluster;
    const auto& memory = res.memory;
    const bool ok = status == "ok";
    out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},\"{}\",{}\n", c.node_id,
                       c.fabric, c.scenario.cluster.nodes, r.gpus, c.scenario.training.global_batch_size,
                       c.usd_per_gpu_hour, usd_per_node_hour(c), status, strategy,
                       res.throughput.tokens_per_s, res.iteration_time_s, res.flops.mfu,
                       memory.peak_bytes_per_gpu / core::kGiB,
                       ok ? (memory.capacity_bytes_per_gpu - memory.peak_bytes_per_gpu) / core::kGiB : 0.0,
                       train_s / core::kSecondsPerDay, gpu_hours, cost_usd,
                       p.deadline_days ? yes_no(meets_deadline) : "", p.budget_usd ? yes_no(meets_budget) : "",
                       cheapest, fastest, res.throughput.samples_per_s, reason,
                       rank == 0 ? std::string() : std::to_string(rank));
  };
  for (std::size_t i = 0; i < o.rows.size(); ++i) {
    const auto& r = o.rows[i];
    line(r, r.feasible ? "ok" : "infeasible", r.strategy, r.best, r.train_s, r.gpu_hours, r.cost_usd, r.meets_deadline,
         r.meets_budget, o.cheapest == i ? "yes" : "no", o.fastest == i ? "yes" : "no", r.reason,
         r.search.top.empty() ? 0 : 1);
    for (const search::PlanAlternative& a : r.alternatives) {
      const bool ok = a.reason.empty();
      line(r, ok ? "ok" : "infeasible", a.strategy, a.result, a.train_s, a.gpu_hours, a.cost_usd,
           ok && (!p.deadline_days || a.train_s <= *p.deadline_days * core::kSecondsPerDay),
           ok && (!p.budget_usd || a.cost_usd <= *p.budget_usd), "no", "no", a.reason, a.rank);
    }
  }
}

}  // namespace

void write_plan(std::ostream& out, const config::Plan& plan, const search::PlanOutcome& outcome,
                Format format, const nlohmann::ordered_json& inputs) {
  switch (format) {
    case Format::text:
      write_text(out, plan, outcome);
      return;
    case Format::json:
      write_json(out, plan, outcome, inputs);
      return;
    case Format::csv:
      write_csv(out, plan, outcome);
      return;
  }
}

}  // namespace dtsim::reports
