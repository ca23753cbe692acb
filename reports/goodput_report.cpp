#include "reports/goodput_report.hpp"

#include <algorithm>

#include <string>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dtsim::reports {

// Named, not anonymous: unity builds put several files in one translation unit.
namespace goodput_text {

constexpr int kLabelWidth = 13;

void line(std::ostream& out, std::string_view label, const std::string& text) {
  out << fmt::format("{:<{}}{}\n", label, kLabelWidth, text);
}

nlohmann::ordered_json spread_json(const models::Spread& s) {
  return {{"p10", s.p10}, {"p50", s.p50}, {"p90", s.p90}, {"mean", s.mean}};
}

// A duration in the largest unit that keeps it at or above 1 (s, min, h, days).
std::string duration(double s) {
  if (s >= 86400.0) return fmt::format("{:.3g} days", s / 86400.0);
  if (s >= 3600.0) return fmt::format("{:.3g} h", s / 3600.0);
  if (s >= 60.0) return fmt::format("{:.3g} min", s / 60.0);
  return fmt::format("{:.3g} s", s);
}

std::string percent(double fraction) { return fmt::format("{:.1f}%", fraction * 100.0); }

}  // namespace goodput_text

nlohmann::ordered_json failures_json(const config::FailureSpec& f) {
  using namespace goodput_text;
  nlohmann::ordered_json j;
  if (!f.preset.empty()) j["preset"] = f.preset;
  nlohmann::ordered_json categories = nlohmann::ordered_json::array();
  for (const auto& c : f.categories) {
    nlohmann::ordered_json e = {{"name", c.name},
                                {"per", config::to_string(c.per)},
                                {"failures_per_1000_days", c.failures_per_1000_days}};
    if (c.restart_s) e["restart_s"] = *c.restart_s;
    if (c.effect == config::FailureEffect::slow) {
      e["effect"] = config::to_string(c.effect);
      e["compute"] = c.compute;
      e["nic"] = c.nic;
      e["hours"] = c.hours;
    }
    categories.push_back(std::move(e));
  }
  j["categories"] = std::move(categories);
  j["restart_s"] = f.restart_s;
  nlohmann::ordered_json ck;
  if (f.checkpoint.interval_s) ck["interval_s"] = *f.checkpoint.interval_s;
  ck["target"] = config::to_string(f.checkpoint.target);
  if (f.checkpoint.target == config::CheckpointTarget::storage) {
    ck["write_gbytes_per_s"] = f.checkpoint.write_gbytes_per_s;
    ck["read_gbytes_per_s"] = f.checkpoint.read_gbytes_per_s;
  }
  ck["asynchronous"] = f.checkpoint.asynchronous;
  if (f.checkpoint.asynchronous) ck["snapshot_gbytes_per_s"] = f.checkpoint.snapshot_gbytes_per_s;
  j["checkpoint"] = std::move(ck);
  j["recovery"] = config::to_string(f.recovery);
  if (f.spare_nodes) j["spare_nodes"] = *f.spare_nodes;
  if (f.repair_hours) j["repair_hours"] = *f.repair_hours;
  if (f.recovery != config::Recovery::restart) j["reconfigure_s"] = f.reconfigure_s;
  if (f.train_days) j["train_days"] = *f.train_days;
  if (f.train_steps) j["train_steps"] = *f.train_steps;
  if (f.train_tokens) j["train_tokens"] = *f.train_tokens;
  j["runs"] = f.runs;
  return j;
}

nlohmann::ordered_json goodput_json(const models::GoodputEstimate& g) {
  using namespace goodput_text;
  nlohmann::ordered_json j;
  j["finished"] = g.reason.empty();
  if (g.reason.empty()) {
    j["reason"] = nullptr;
  } else {
    j["reason"] = g.reason;
  }
  j["failure_free_s"] = g.failure_free_s;
  j["failures_per_day"] = g.failures_per_day;
  j["mtbf_s"] = g.mtbf_s;
  j["restart_s"] = g.restart_s;
  j["checkpoint"] = {{"state_bytes", g.checkpoint.state_bytes},
                     {"write_s", g.checkpoint.write_s},
                     {"read_s", g.checkpoint.read_s},
                     {"stall_s", g.checkpoint.stall_s},
                     {"interval_s", g.interval_s},
                     {"interval_optimal", g.interval_optimal}};
  j["closed_form_ettr"] = g.closed_form_ettr;
  j["runs"] = g.runs;
  if (!g.reason.empty()) return j;
  j["wall_s"] = spread_json(g.wall_s);
  j["goodput"] = spread_json(g.goodput);
  j["failures"] = spread_json(g.failures);
  j["mean_wall_parts_s"] = {{"failure_free", g.failure_free_s},        {"lost_work", g.lost_work_s},
                            {"degraded", g.degraded_s},                {"restart", g.restart_total_s},
                            {"waiting_for_spares", g.spare_wait_s},    {"checkpoint", g.checkpoint_total_s},
                            {"reconfigure", g.reconfigure_total_s}};
  nlohmann::ordered_json by = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < g.category_names.size(); ++i) by[g.category_names[i]] = g.category_failures[i];
  j["mean_failures_by_category"] = std::move(by);
  nlohmann::ordered_json paces = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < g.category_names.size(); ++i) {
    if (g.category_pace[i] < 1.0) paces[g.category_names[i]] = g.category_pace[i];
  }
  j["slowdown_pace"] = std::move(paces);
  // Re-routing: the job's pace in each case of down stage replicas that the runs reached.
  nlohmann::ordered_json rerouted = nlohmann::ordered_json::array();
  for (const models::ReroutedCase& c : g.reroute_paces) {
    rerouted.push_back({{"down_per_stage", c.down_per_stage}, {"pace", c.pace}});
  }
  j["reroute_pace"] = std::move(rerouted);
  return j;
}

void write_goodput_text(std::ostream& out, const config::FailureSpec& f, const models::GoodputEstimate& g,
                        std::int64_t gpus) {
  using namespace goodput_text;
  out << '\n';
  line(out, "failures",
       fmt::format("{}{} categor{}: {:.3g} per day, MTBF {} (stops); restart {} incl. reading the checkpoint",
                   f.preset.empty() ? std::string() : f.preset + ", ", g.category_names.size(),
                   g.category_names.size() == 1 ? "y" : "ies",
                   g.failures_per_day, g.mtbf_s > 0.0 ? duration(g.mtbf_s) : std::string("none"),
                   duration(g.restart_s)));
  std::string recovery = config::to_string(f.recovery);
  if (f.recovery == config::Recovery::restart) {
    recovery += f.spare_nodes ? fmt::format(" on {} spare nodes (repair {} h)", *f.spare_nodes, *f.repair_hours)
                              : std::string(" on a ready spare");
  } else if (f.recovery == config::Recovery::elastic) {
    recovery += fmt::format(": drop data-parallel replicas until repaired ({} h), pause {}", *f.repair_hours,
                            duration(f.reconfigure_s));
  } else {
    recovery += fmt::format(
        ": data-parallel peers take the down nodes' micro-batches until repaired ({} h), pause {}",
        *f.repair_hours, duration(f.reconfigure_s));
  }
  line(out, "recovery", recovery);
  if (!g.reroute_paces.empty()) {
    // Each case: its down replicas per stage ("1+1": one replica of each of two stages), then the pace.
    std::string paces;
    for (const models::ReroutedCase& c : g.reroute_paces) {
      paces += fmt::format("{}{} {}", paces.empty() ? "" : ", ", fmt::join(c.down_per_stage, "+"),
                           c.pace > 0.0 ? percent(c.pace) : std::string("cannot run"));
    }
    line(out, "re-routed",
         "stage replicas down (per stage) and the pace: " + paces + " (engine, every rank)");
  }
  for (std::size_t i = 0; i < f.categories.size(); ++i) {
    const config::FailureCategory& c = f.categories[i];
    if (c.effect != config::FailureEffect::slow) continue;
    std::string what;
    if (c.compute < 1.0) what += fmt::format("GPU x{:g}", c.compute);
    if (c.nic < 1.0) what += fmt::format("{}NICs x{:g}", what.empty() ? "" : ", ", c.nic);
    line(out, "slowdown", fmt::format("{}: {} for {} h, the job at {} of its pace (engine)", c.name, what,
                                      c.hours, percent(g.category_pace[i])));
  }
  line(out, "checkpoint",
       fmt::format("{:.3g} GB{}, write {} ({}), every {} of training{}", g.checkpoint.state_bytes / 1e9,
                   f.checkpoint.target == config::CheckpointTarget::peer_memory ? " to peers' host memory" : "",
                   duration(g.checkpoint.write_s),
                   f.checkpoint.asynchronous ? fmt::format("asynchronous, stall {}", duration(g.checkpoint.stall_s))
                                             : std::string("synchronous"),
                   duration(g.interval_s), g.interval_optimal ? " (Daly's optimum)" : ""));
  if (!g.reason.empty()) {
    line(out, "goodput", g.reason);
    return;
  }
  const double hours = static_cast<double>(gpus) / 3600.0;
  line(out, "train time",
       fmt::format("{} failure-free; with failures {} (p10 {} .. p90 {}, {} runs)", duration(g.failure_free_s),
                   duration(g.wall_s.p50), duration(g.wall_s.p10), duration(g.wall_s.p90), g.runs));
  line(out, "goodput",
       fmt::format("{} (p10 {} .. p90 {}); closed form for the stops {} (Kokolis et al. 2025)", percent(g.goodput.p50),
                   percent(g.goodput.p10), percent(g.goodput.p90), percent(g.closed_form_ettr)));
  line(out, "", fmt::format("{:.4g} failures per run (p10 {:.4g} .. p90 {:.4g}); GPU-hours {:.4g} (p50)",
                            g.failures.p50, g.failures.p10, g.failures.p90, g.wall_s.p50 * hours));
  line(out, "",
       fmt::format("mean lost: work {}, restarts {}, checkpoints {}, waiting {}, degraded {}, reconfiguring {}",
                   duration(g.lost_work_s), duration(g.restart_total_s), duration(g.checkpoint_total_s),
                   duration(g.spare_wait_s), duration(g.degraded_s), duration(g.reconfigure_total_s)));
}

}  // namespace dtsim::reports
