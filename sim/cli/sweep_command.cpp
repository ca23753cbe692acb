// dtsim sweep SCENARIO --set PTR=V1,V2 ...: every combination of the values (config/sweep_points.hpp),
// made one at a time from its index and evaluated in windows of kSweepWindow points on a pool of
// threads (core/parallel_for.hpp): every point of a window is read before any of it is evaluated, and
// each result is written as one JSON line (or CSV row) in point order as soon as it and every point
// before it are done (sweep_sink.hpp), so memory does not grow with the number of points and the bytes
// do not depend on --jobs. The output begins and ends with the lines of sweep_lines.hpp.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "config/accuracy.hpp"
#include "config/scenario_loader.hpp"
#include "cli/commands.hpp"
#include "cli/output_files.hpp"
#include "cli/positive_number.hpp"
#include "cli/report_option.hpp"
#include "cli/sweep_lines.hpp"
#include "cli/sweep_sink.hpp"
#include "config/sweep_points.hpp"
#include "core/errors.hpp"
#include "core/parallel_for.hpp"
#include "network/flow_cache.hpp"
#include "reports/csv_report.hpp"
#include "reports/reports.hpp"
#include "reports/sweep_table.hpp"
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
  cmd->add_option("--format", o.format, "jsonl: one JSON object per line; csv; text: a table")
      ->check(CLI::IsMember({"jsonl", "csv", "text"}));
  cmd->add_option("--out", o.out_path,
                  "Write to FILE instead of standard output (FILE.partial until the sweep is complete)");
  cmd->add_flag("--no-timing", o.no_timing, "Report the engine's wall time as 0");
  cmd->add_option("--shard", o.shard, "K/N: evaluate only the points whose index % N == K - 1");
  cmd->add_flag("--resume", o.resume, "Carry on from the unfinished sweep in --out's FILE.partial");
  add_report_option(cmd, o.report_path);
  return cmd;
}

namespace {

// "K/N" with 1 <= K <= N.
Shard parse_shard(const std::string& text) {
  const std::size_t slash = text.find('/');
  std::uint64_t k = 0, n = 0;
  try {
    if (slash != std::string::npos) {
      std::size_t used_k = 0, used_n = 0;
      k = std::stoull(text.substr(0, slash), &used_k);
      n = std::stoull(text.substr(slash + 1), &used_n);
      if (used_k != slash || used_n != text.size() - slash - 1 || text[0] == '-' || text[slash + 1] == '-')
        n = 0;
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

std::string axes_text(const std::vector<config::SweepAxis>& axes) {
  std::string over;
  for (const config::SweepAxis& axis : axes) over += (over.empty() ? "" : " \u00d7 ") + axis.pointer;
  return over;
}

// "Sweep of FILE over /a x /b", for messages.
std::string sweep_title(const std::string& source, const std::vector<config::SweepAxis>& axes) {
  return fmt::format("Sweep of {} over {}", source == "-" ? "standard input" : source, axes_text(axes));
}

// The report's title: "NAME: sweep over /a x /b", NAME the scenario's name (its file where it has none).
std::string report_title(const std::string& source, const std::string& text,
                         const std::vector<config::SweepAxis>& axes) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  const bool named = doc.is_object() && doc.contains("name") && doc["name"].is_string() &&
                     !doc["name"].get<std::string>().empty();
  if (!named) return sweep_title(source, axes);
  return fmt::format("{}: sweep over {}", doc["name"].get<std::string>(), axes_text(axes));
}

// A report entry per point: the --set assignments as knobs, labelled by their last pointer segment.
results::ReportEntry report_entry(const std::vector<std::string>& assignment, results::Result result) {
  results::ReportEntry entry{.result = std::move(result)};
  for (const std::string& a : assignment) {
    const std::size_t eq = a.find('=');
    results::Knob knob{a.substr(0, eq), eq == std::string::npos ? std::string() : a.substr(eq + 1)};
    const std::size_t slash = knob.key.find_last_of('/');
    if (!entry.label.empty()) entry.label += ", ";
    entry.label += (slash == std::string::npos ? knob.key : knob.key.substr(slash + 1)) + "=" + knob.value;
    entry.knobs.push_back(std::move(knob));
  }
  return entry;
}

// The refusals that need no evaluation: --report on too many points, --resume without a file to resume.
void check_options(const SweepOptions& o, std::uint64_t count, const std::string& name) {
  if (!o.report_path.empty() && count > kMaxReportPoints) {
    throw core::InputError(
        "command line", "/report",
        fmt::format("{} has {} points; a report keeps and charts every point, at most {}: drop --report, or "
                    "sweep fewer values (or a --shard of them)",
                    name, count, kMaxReportPoints));
  }
  if (o.resume && o.out_path.empty()) {
    throw core::InputError("command line", "/resume", "--resume carries on from --out FILE; expected --out");
  }
  if (o.resume && o.format != "jsonl") {
    throw core::InputError("command line", "/resume",
                           "--resume reads back which points are done, which CSV rows and table lines do not say; expected "
                           "--format jsonl");
  }
  if (o.resume && !o.report_path.empty()) {
    throw core::InputError("command line", "/report",
                           "a resumed sweep has the earlier points only on disk, not for a report; expected "
                           "--resume without --report");
  }
}

}  // namespace

int sweep_command(const SweepOptions& o, std::istream& in, std::ostream& out, std::ostream& err) {
  const std::string text = read_scenario_text(o.scenario, in);
  std::vector<config::SweepAxis> axes;
  for (const auto& s : o.sets) axes.push_back(config::parse_sweep_axis(s));
  const config::Scaling scaling = o.scaling == "weak"     ? config::Scaling::weak
                                  : o.scaling == "strong" ? config::Scaling::strong
                                                          : config::Scaling::none;
  const config::SweepSpace space(text, o.scenario, axes, scaling);
  const std::optional<Shard> given_shard =
      o.shard.empty() ? std::nullopt : std::optional(parse_shard(o.shard));
  const Shard shard = given_shard.value_or(Shard{});
  const std::uint64_t count = shard.count(space.size());
  const std::string title = sweep_title(o.scenario, axes);
  check_options(o, count, title);
  const std::string partial = o.out_path.empty() ? "" : partial_path(o.out_path);
  check_outputs({{"--out", o.out_path}, {"--out", partial}, {"--report", o.report_path}}, {o.scenario});

  const reports::SweepTable table(axes);
  std::string header;
  if (o.format == "text") {
    header = table.header();
  } else if (o.format == "csv") {
    // Every swept key is a column of its own, named by its JSON pointer, before the result's columns.
    std::vector<std::string> swept;
    for (const config::SweepAxis& a : axes) swept.push_back(a.pointer);
    std::ostringstream row;
    reports::write_csv_header(row, swept);
    header = row.str();
  } else {
    header = sweep_header_line({.scenario = o.scenario,
                                .scenario_text = text,
                                .scaling = o.scaling,
                                .axes = &axes,
                                .points = space.size(),
                                .shard = given_shard});
  }
  // Both outputs are checked before any point is evaluated: a path that cannot be written stops the
  // sweep with nothing written. The report is opened (and let go) now and written at the end.
  const bool want_report = !o.report_path.empty();
  if (want_report) {
    check_report_folder(o.report_path);
    core::OpenedFile probe = core::open_for_writing(o.report_path);
    core::discard(probe);
  }
  SweepSink sink(SweepSinkOptions{.out_path = o.out_path,
                                  .resume = o.resume,
                                  .header = header,
                                  .space = &space,
                                  .shard = shard,
                                  .count = count},
                 out);

  const bool progress = &err == &std::cerr && ::isatty(STDERR_FILENO) != 0;
  std::vector<std::optional<results::Result>> kept(want_report ? count : 0);
  std::vector<std::vector<std::string>> kept_sets(want_report ? count : 0);
  bool any_not_ok = sink.any_not_ok();
  // Points on the flow network simulate each distinct collective once (network/flow_cache.hpp).
  network::FlowCache flow_cache;
  const auto regimes = config::load_accuracy(config::default_data_paths().hardware_profiles);
  const results::EvaluateOptions options{.flow_cache = &flow_cache};
  const std::size_t jobs = worker_threads(o.jobs);
  try {
    for (std::uint64_t start = sink.done(); start < count; start += kSweepWindow) {
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(kSweepWindow, count - start));
      // Read the window's points: a bad value stops the sweep before any of them is evaluated.
      std::vector<std::optional<config::Scenario>> scenarios(n);
      std::vector<std::vector<std::string>> sets(n);
      core::parallel_for(n, jobs, [&](std::size_t i) {
        config::SweepPoint p = space.point(shard.index(start + i));
        try {
          scenarios[i] =
              config::load_scenario_text(p.scenario_text, o.scenario, config::default_data_paths());
        } catch (const core::InputError& e) {
          std::string where;
          for (const auto& a : p.assignment) where += (where.empty() ? "" : ", ") + a;
          throw core::InputError(e.file(), e.pointer(),
                                 fmt::format("{} (sweep point {})", e.message(), where));
        }
        sets[i] = std::move(p.assignment);
      });
      sink.begin();
      std::mutex lock;
      std::vector<std::optional<std::string>> finished(n);
      std::size_t next_to_write = 0;
      core::parallel_for(n, jobs, [&](std::size_t i) {
        const std::uint64_t index = shard.index(start + i);
        results::Result r = results::evaluate(*scenarios[i], options);
        results::state_expected_error(r, regimes);
        scenarios[i].reset();
        if (o.no_timing) r.engine.wall_s = 0.0;
        std::ostringstream line;
        // The value of each "pointer=value" assignment, in axis order.
        std::vector<std::string> values;
        for (const std::string& a : sets[i]) values.push_back(a.substr(a.find('=') + 1));
        if (o.format == "text") {
          line << table.row(values, r);
        } else if (o.format == "csv") {
          reports::write_csv_row(line, r, values);
        } else {
          nlohmann::ordered_json j;
          j["index"] = index;
          j["set"] = space.assignment_object(index);
          j["result"] = reports::result_json(r);
          line << j.dump() << "\n";
        }
        const std::lock_guard<std::mutex> guard(lock);
        any_not_ok = any_not_ok || r.status != results::Status::ok;
        if (want_report) {
          kept[start + i] = std::move(r);
          kept_sets[start + i] = sets[i];
        }
        // Lines leave in point order (a point finished early waits for those before it).
        finished[i] = line.str();
        for (; next_to_write < n && finished[next_to_write]; ++next_to_write) {
          sink.write_point(*finished[next_to_write]);
          finished[next_to_write].reset();
          if (progress)
            err << fmt::format("\rsweep: {}/{} points", start + next_to_write + 1, count) << std::flush;
        }
      });
    }
    if (progress) err << "\n";
    std::string report_text;
    if (want_report) {
      results::ReportData data{.title = report_title(o.scenario, text, axes),
                               .kind = results::ReportKind::sweep,
                               .scaling = scaling == config::Scaling::weak ? results::ReportScaling::weak
                                          : scaling == config::Scaling::strong
                                              ? results::ReportScaling::strong
                                              : results::ReportScaling::none};
      for (std::size_t i = 0; i < kept.size(); ++i) {
        data.entries.push_back(report_entry(kept_sets[i], std::move(*kept[i])));
      }
      report_text = render_report(o.report_path, data);
    }
    sink.finish(o.format == "jsonl" ? sweep_trailer_line(true, count) : csv_trailer_line(count));
    if (want_report) write_files({{o.report_path, report_text}});
  } catch (...) {
    sink.abandon();
    throw;
  }
  return any_not_ok ? kExitInfeasible : kExitOk;
}

}  // namespace dtsim::cli
