#include "reports/search_report.hpp"

#include <algorithm>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "core/units.hpp"
#include "reports/csv_report.hpp"
#include "reports/output_envelope.hpp"

namespace dtsim::reports {

namespace {

double gib(double bytes) { return bytes / core::kGiB; }

void write_text(std::ostream& out, const config::Scenario& base, const search::SearchOutcome& o) {
  const std::string model =
      base.dlrm
          ? (base.dlrm->preset.empty() ? std::string("DLRM") : base.dlrm->preset) + ", its embedding plans"
      : base.model.preset.empty() ? std::string("model")
                                  : base.model.preset;
  out << fmt::format("search  {} on {} x {} ({} GPUs), global batch {}\n", model, base.cluster.nodes,
                     base.node.id, base.gpu_count(), base.training.global_batch_size);
  out << fmt::format(
      "plans   {} enumerated, {} pruned before simulation, {} simulated ({}), {} bounded out\n", o.enumerated,
      o.pruned, o.evaluated, o.extrapolated ? "extrapolated from short simulations" : "full simulation",
      o.bounded);
  write_rejections_text(out, o, "  ");
  if (o.refined_alternatives > 0) {
    out << fmt::format("refine  {} of them table by table from the best plan: {} table{} changed\n",
                       o.refined_alternatives, o.refined_tables, o.refined_tables == 1 ? "" : "s");
  }
  out << fmt::format(
      "speed   {} plans in {:.3f} s on {} thread{}, {:.3f} CPU-s: {:.0f} plans per second per core "
      "(enumeration "
      "{:.3f} s)\n",
      o.evaluated, o.evaluate_wall_s, o.jobs, o.jobs == 1 ? "" : "s", o.evaluate_cpu_s,
      o.configs_per_s_per_core, o.enumerate_wall_s);
  if (o.bounded > 0 || o.bound_cpu_s > 0.0) {
    out << fmt::format(
        "bound   lower bounds in {:.3f} CPU-s; {} plans decided (simulated or bounded out): {:.0f} per "
        "second "
        "per core\n",
        o.bound_cpu_s, o.evaluated + o.bounded, o.considered_per_s_per_core);
  }
  if (o.confirmed > 0) {
    out << fmt::format(
        "confirm the {} best estimates re-simulated in full ({:.3f} CPU-s; largest estimate error {:.2f}%); "
        "the plans below are ranked on those\n",
        o.confirmed, o.confirm_cpu_s, 100.0 * o.max_confirm_error);
  }
  if (o.flow_simulations > 0) {
    out << fmt::format(
        "flow    {} distinct collectives simulated on the flow network, {} lookups reused them\n",
        o.flow_simulations, o.flow_reused);
  }
  if (o.top.empty()) {
    out << "no plan fits: every combination was rejected\n";
    return;
  }
  // Under the scenario's failures, each plan's median days to train and goodput (results/goodput.hpp).
  const bool failures = o.top.front().result.goodput.has_value();
  std::size_t width = 46;  // the plan column: as wide as the longest label
  for (const auto& e : o.top) width = std::max(width, e.label.size());
  out << fmt::format("\n{:>4}  {:<{}} {:>10} {:>11} {:>6} {:>9} {:>9}{}\n", "rank", "plan", width, "iter (s)",
                     compared_rate_label(base), "MFU", "mem GiB", "headroom",
                     failures ? "      days  goodput" : "");
  std::vector<std::string> reasons;  // why a plan has no days (the run does not finish, a refused recovery)
  for (const auto& e : o.top) {
    const auto& r = e.result;
    std::string outcome;
    if (const auto& g = r.goodput; g && g->reason.empty()) {
      outcome = fmt::format(" {:>9.2f} {:>7.1f}%", g->wall_s.p50 / 86400.0, 100.0 * g->goodput.p50);
    } else if (g) {
      auto it = std::find(reasons.begin(), reasons.end(), g->reason);
      if (it == reasons.end()) it = reasons.insert(reasons.end(), g->reason);
      outcome = fmt::format("  see ({})", it - reasons.begin() + 1);
    }
    out << fmt::format("{:>4}  {:<{}} {:>10.4f} {:>11.0f} {:>5.1f}% {:>9.1f} {:>9.1f}{}\n", e.rank, e.label,
                       width, r.iteration_time_s,
                       compared_rate(r), 100.0 * r.flops.mfu,
                       gib(r.memory.peak_bytes_per_gpu), gib(e.headroom_bytes), outcome);
  }
  for (std::size_t i = 0; i < reasons.size(); ++i)
    out << fmt::format("({}) no days: {}\n", i + 1, reasons[i]);
  // The plans share their GPU, scale and software, so one regime's band holds for all of them.
  if (const auto& b = o.top.front().result.expected_error; b && b->validated) {
    out << fmt::format(
        "\nerror band {} on each iteration time (p10 .. p90 of validated runs: {}, n = {}, same {})\n",
        results::band_range(*b), b->group, b->n, b->match);
  } else if (b) {
    out << fmt::format("\nerror band none: {}\n", b->reason);
  }
}

void write_json(std::ostream& out, const search::SearchOutcome& o, const nlohmann::ordered_json& inputs) {
  nlohmann::ordered_json j = output_envelope("search", inputs);
  j["search"] = search_counts_json(o);
  nlohmann::ordered_json top = nlohmann::ordered_json::array();
  for (const auto& e : o.top) {
    nlohmann::ordered_json row;
    row["rank"] = e.rank;
    row["label"] = e.label;
    row["headroom_bytes"] = e.headroom_bytes;
    row["result"] = result_json(e.result);
    top.push_back(std::move(row));
  }
  j["results"] = std::move(top);
  out << j.dump(2) << "\n";
}

void write_csv(std::ostream& out, const search::SearchOutcome& o) {
  out << "rank,label,headroom_bytes,";
  write_csv_header(out);
  for (const auto& e : o.top) {
    out << fmt::format("{},{},{},", e.rank, e.label, e.headroom_bytes);
    write_csv_row(out, e.result);
  }
}

}  // namespace

double compared_rate(const results::Result& r) {
  return r.scenario.dlrm ? r.throughput.samples_per_s : r.throughput.tokens_per_s;
}

const char* compared_rate_label(const config::Scenario& base) { return base.dlrm ? "samples/s" : "tokens/s"; }

nlohmann::ordered_json search_counts_json(const search::SearchOutcome& o) {
  nlohmann::ordered_json j;
  j["enumerated"] = o.enumerated;
  j["pruned"] = o.pruned;
  nlohmann::ordered_json rejections = nlohmann::ordered_json::array();
  for (const auto& r : o.rejections) rejections.push_back({{"reason", r.reason}, {"count", r.count}});
  j["rejections"] = std::move(rejections);
  j["evaluated"] = o.evaluated;
  j["method"] = o.extrapolated ? "extrapolated" : "full";
  j["jobs"] = o.jobs;
  j["evaluate_wall_s"] = o.evaluate_wall_s;
  j["evaluate_cpu_s"] = o.evaluate_cpu_s;
  j["configs_per_s_per_core"] = o.configs_per_s_per_core;
  j["bounded"] = o.bounded;
  j["bound_cpu_s"] = o.bound_cpu_s;
  j["considered_per_s_per_core"] = o.considered_per_s_per_core;
  j["confirmed"] = o.confirmed;
  j["confirm_cpu_s"] = o.confirm_cpu_s;
  j["max_confirm_error"] = o.max_confirm_error;
  j["flow_simulations"] = o.flow_simulations;
  j["flow_reused"] = o.flow_reused;
  return j;
}

void write_rejections_text(std::ostream& out, const search::SearchOutcome& o, const char* indent) {
  for (const auto& r : o.rejections) out << fmt::format("{}{:>9}  {}\n", indent, r.count, r.reason);
}

void write_search(std::ostream& out, const config::Scenario& base, const search::SearchOutcome& outcome,
                  Format format, const nlohmann::ordered_json& inputs) {
  switch (format) {
    case Format::text:
      write_text(out, base, outcome);
      return;
    case Format::json:
      write_json(out, outcome, inputs);
      return;
    case Format::csv:
      write_csv(out, outcome);
      return;
  }
}

}  // namespace dtsim::reports
