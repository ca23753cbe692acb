// dtsim sweep SCENARIO --set PTR=V1,V2 ...: every combination of the values, evaluated on a pool of
// threads, each result written as one JSON line (or CSV row) in point order, as soon as it and every
// point before it are done.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "cli/positive_number.hpp"
#include "cli/report_option.hpp"
#include "config/json_reader.hpp"
#include "config/sweep_points.hpp"
#include "core/errors.hpp"
#include "network/flow_cache.hpp"
#include "reports/csv_report.hpp"
#include "reports/reports.hpp"
#include "results/evaluate.hpp"

namespace dtsim::cli {

CLI::App* add_sweep_command(CLI::App& app, SweepOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "sweep", "Evaluate a scenario over every combination of values set at JSON pointers");
  cmd->add_option("scenario", o.scenario, "Scenario v1 JSON file, or - for standard input")->required();
  cmd->add_option("--set", o.sets,
                  "POINTER=V1,V2,... (e.g. /cluster/nodes=1,2,4 or cluster.network.fabric=tcp,efa)")
      ->required();
  cmd->add_option("--scaling", o.scaling,
                  "Rescale with the node count: weak keeps the batch per GPU, strong the "
                  "global batch")
      ->check(CLI::IsMember({"none", "weak", "strong"}));
  cmd->add_option("--jobs,-j", o.jobs, "Worker threads (default: all cores)")->check(positive_number());
  cmd->add_option("--format", o.format, "jsonl: one JSON object per line; csv")
      ->check(CLI::IsMember({"jsonl", "csv"}));
  cmd->add_option("--out", o.out_path, "Write to FILE instead of standard output");
  cmd->add_flag("--no-timing", o.no_timing, "Report the engine's wall time as 0");
  cmd->add_option("--shard", o.shard, "K/N: evaluate only the points whose index % N == K - 1");
  add_report_option(cmd, o.report_path);
  return cmd;
}

namespace {

// "K/N" with 1 <= K <= N.
std::pair<std::size_t, std::size_t> parse_shard(const std::string& text) {
  const std::size_t slash = text.find('/');
  std::size_t k = 0, n = 0;
  try {
    if (slash != std::string::npos) {
      std::size_t used_k = 0, used_n = 0;
      k = std::stoul(text.substr(0, slash), &used_k);
      n = std::stoul(text.substr(slash + 1), &used_n);
      if (used_k != slash || used_n != text.size() - slash - 1) n = 0;
    }
  } catch (const std::exception&) {
    n = 0;
  }
  if (n == 0 || k == 0 || k > n) {
    throw core::InputError("command line", "/shard",
                           fmt::format("got \"{}\"; expected K/N with 1 <= K <= N", text));
  }
  return {k - 1, n};
}

// "Sweep of FILE over /a x /b".
std::string sweep_title(const std::string& source, const std::vector<config::SweepAxis>& axes) {
  std::string over;
  for (const config::SweepAxis& axis : axes) over += (over.empty() ? "" : " \u00d7 ") + axis.pointer;
  return fmt::format("Sweep of {} over {}", source == "-" ? "standard input" : source, over);
}

// A report entry per point: the --set assignments as knobs, labelled by their last pointer segment.
results::ReportEntry report_entry(const config::SweepPoint& point, results::Result result) {
  results::ReportEntry entry{.result = std::move(result)};
  for (const std::string& a : point.assignment) {
    const std::size_t eq = a.find('=');
    results::Knob knob{a.substr(0, eq), eq == std::string::npos ? std::string() : a.substr(eq + 1)};
    const std::size_t slash = knob.key.find_last_of('/');
    if (!entry.label.empty()) entry.label += ", ";
    entry.label += (slash == std::string::npos ? knob.key : knob.key.substr(slash + 1)) + "=" + knob.value;
    entry.knobs.push_back(std::move(knob));
  }
  return entry;
}

}  // namespace

int sweep_command(const SweepOptions& o, std::istream& in, std::ostream& out, std::ostream& err) {
  const std::string text = read_scenario_text(o.scenario, in);
  std::vector<config::SweepAxis> axes;
  for (const auto& s : o.sets) axes.push_back(config::parse_sweep_axis(s));
  const config::Scaling scaling = o.scaling == "weak"     ? config::Scaling::weak
                                  : o.scaling == "strong" ? config::Scaling::strong
                                                          : config::Scaling::none;
  std::vector<config::SweepPoint> points = config::sweep_points(text, o.scenario, axes, scaling);
  std::vector<std::size_t> indexes;
  if (o.shard.empty()) {
    for (std::size_t i = 0; i < points.size(); ++i) indexes.push_back(i);
  } else {
    const auto [k, n] = parse_shard(o.shard);
    for (std::size_t i = k; i < points.size(); i += n) indexes.push_back(i);
  }
  // Every point is read before any is evaluated: a bad value stops the sweep with nothing written.
  std::vector<config::Scenario> scenarios;
  for (const std::size_t index : indexes) {
    const config::SweepPoint& p = points[index];
    try {
      scenarios.push_back(
          config::load_scenario_text(p.scenario_text, o.scenario, config::default_data_paths()));
    } catch (const core::InputError& e) {
      std::string where;
      for (const auto& a : p.assignment) where += (where.empty() ? "" : ", ") + a;
      throw core::InputError(e.file(), e.pointer(), fmt::format("{} (sweep point {})", e.message(), where));
    }
  }

  // Both outputs are checked before any point is evaluated: the report is opened without truncating
  // (and removed again if this call created it and --out then fails), so a path that cannot be
  // written stops the sweep with nothing written.
  bool report_created = false;
  if (!o.report_path.empty()) {
    check_report_folder(o.report_path);
    report_created = !std::filesystem::exists(o.report_path);
    std::ofstream probe(o.report_path, std::ios::binary | std::ios::app);
    if (!probe) throw core::InputError(o.report_path, "", "cannot open the report file for writing");
  }
  std::ofstream file;
  if (!o.out_path.empty()) {
    file.open(o.out_path);
    if (!file) {
      std::error_code ignored;
      if (report_created) std::filesystem::remove(o.report_path, ignored);
      throw core::InputError(o.out_path, "", "cannot open the output file");
    }
  }
  std::ostream& sink = o.out_path.empty() ? out : file;
  const bool progress = &err == &std::cerr && ::isatty(STDERR_FILENO) != 0;
  std::mutex lock;
  std::atomic<std::size_t> next{0};
  std::size_t done = 0;
  std::vector<std::optional<std::string>> finished(scenarios.size());
  std::size_t next_to_write = 0;
  bool infeasible = false;
  const bool want_report = !o.report_path.empty();
  std::vector<std::optional<results::Result>> kept(want_report ? scenarios.size() : 0);
  if (o.format == "csv") reports::write_csv_header(sink);
  // Points on the flow network simulate each distinct collective once (network/flow_cache.hpp).
  network::FlowCache flow_cache;
  const results::EvaluateOptions options{.flow_cache = &flow_cache};
  const auto worker = [&] {
    for (std::size_t i = next++; i < scenarios.size(); i = next++) {
      results::Result r = results::evaluate(scenarios[i], options);
      if (o.no_timing) r.engine.wall_s = 0.0;
      const results::Status kept_status = r.status;
      std::ostringstream line;
      if (o.format == "csv") {
        reports::write_csv_row(line, r);
      } else {
        nlohmann::ordered_json j;
        j["index"] = indexes[i];
        j["set"] = points[indexes[i]].assignment;
        j["result"] = reports::result_json(r);
        line << j.dump() << "\n";
      }
      std::lock_guard<std::mutex> guard(lock);
      // Lines leave in point order (a point finished early waits for those before it), so the
      // output's bytes do not depend on --jobs.
      finished[i] = line.str();
      for (; next_to_write < finished.size() && finished[next_to_write]; ++next_to_write) {
        sink << *finished[next_to_write] << std::flush;
        finished[next_to_write].reset();
      }
      if (want_report) kept[i] = std::move(r);
      infeasible = infeasible || kept_status != results::Status::ok;
      ++done;
      if (progress) err << fmt::format("\rsweep: {}/{} points", done, scenarios.size()) << std::flush;
    }
  };
  const unsigned cores = std::max(1U, std::thread::hardware_concurrency());
  const std::size_t jobs =
      std::min<std::size_t>(o.jobs > 0 ? static_cast<std::size_t>(o.jobs) : cores, scenarios.size());
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < jobs; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (progress) err << "\n";
  if (want_report) {
    results::ReportData data{.title = sweep_title(o.scenario, axes),
                             .kind = results::ReportKind::sweep,
                             .scaling = scaling == config::Scaling::weak     ? results::ReportScaling::weak
                                        : scaling == config::Scaling::strong ? results::ReportScaling::strong
                                                                             : results::ReportScaling::none};
    for (std::size_t i = 0; i < kept.size(); ++i) {
      data.entries.push_back(report_entry(points[indexes[i]], std::move(*kept[i])));
    }
    write_report_file(o.report_path, data);
  }
  return infeasible ? kExitInfeasible : kExitOk;
}

}  // namespace dtsim::cli
