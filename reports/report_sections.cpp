// Report sections: charts and tables from ReportData (see report_sections.hpp). Only formatting here:
// seconds, bytes shown as GiB (2^30 bytes), fractions as percent.
#include "reports/report_sections.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/units.hpp"
#include "reports/svg_chart.hpp"

namespace dtsim::reports {

namespace {

using results::ReportData;
using results::ReportEntry;
using results::Result;
using results::Status;

constexpr double kBytesPerGib = 1024.0 * 1024.0 * 1024.0;

std::string secs(double s) { return fmt::format("{:.4f}", s); }
std::string gb(double bytes) { return fmt::format("{:.2f}", bytes / kBytesPerGib); }
std::string pct(double fraction) { return fmt::format("{:.1f}%", 100.0 * fraction); }
std::string count(double v) { return fmt::format("{:.1f}", v); }
bool ok(const Result& r) { return r.status == Status::ok; }

std::string plan(const Result& r) {
  const auto& p = r.scenario.parallelism;
  return fmt::format("{}x{}x{}x{}", p.data, p.tensor, p.pipeline, p.context);
}

// The entry's figure `name` as the tables show it, "-" where it has none.
std::string figure_text(const ReportEntry& e, const std::string& name) {
  const results::Figure* f = results::find_figure(e, name);
  return f != nullptr ? f->text : "-";
}

// The bar label: the entry's label, marked when the plan did not run.
std::string bar_label(const ReportEntry& e) { return ok(e.result) ? e.label : e.label + " (infeasible)"; }

ReportSection results_section(const ReportData& data) {
  ReportSection s{.id = "results", .heading = "All results"};
  const std::vector<std::string> keys = results::knob_keys(data);
  s.table.header = {"entry"};
  s.table.header.insert(s.table.header.end(), keys.begin(), keys.end());
  const std::vector<std::string> figures = results::figure_names(data);
  s.table.header.insert(s.table.header.end(), figures.begin(), figures.end());
  // Goodput columns only where some entry states failures (results/goodput.hpp).
  const bool failures = std::any_of(data.entries.begin(), data.entries.end(),
                                    [](const ReportEntry& e) { return e.result.goodput.has_value(); });
  for (const char* h : {"GPUs", "DPxTPxPPxCP", "status", "iteration (s)", "error band", "samples/s", "tokens/s",
                        "MFU", "peak memory (GiB)"}) {
    s.table.header.emplace_back(h);
  }
  if (failures) {
    s.table.header.emplace_back("days with failures (p50)");
    s.table.header.emplace_back("goodput (p50)");
  }
  s.table.header.emplace_back("reason");
  for (const ReportEntry& e : data.entries) {
    const Result& r = e.result;
    std::vector<std::string> row{e.label};
    for (const std::string& key : keys) {
      std::string value = "-";
      for (const results::Knob& k : e.knobs) {
        if (k.key == key) value = k.value;
      }
      row.push_back(value);
    }
    for (const std::string& name : figures) row.push_back(figure_text(e, name));
    row.push_back(std::to_string(r.scenario.gpu_count()));
    row.push_back(plan(r));
    row.emplace_back(results::to_string(r.status));
    row.push_back(ok(r) ? secs(r.iteration_time_s) : "-");
    row.push_back(ok(r) && r.expected_error ? results::band_range(*r.expected_error) : "-");
    row.push_back(ok(r) ? count(r.throughput.samples_per_s) : "-");
    row.push_back(ok(r) ? fmt::format("{:.0f}", r.throughput.tokens_per_s) : "-");
    row.push_back(ok(r) ? pct(r.flops.mfu) : "-");
    row.push_back(gb(r.memory.peak_bytes_per_gpu));
    if (failures) {
      const auto& g = r.goodput;
      const bool finished = ok(r) && g && g->reason.empty();
      row.push_back(finished ? fmt::format("{:.1f}", g->wall_s.p50 / core::kSecondsPerDay) : "-");
      row.push_back(finished ? pct(g->goodput.p50) : "-");
    }
    row.push_back(r.reason);
    s.table.rows.push_back(std::move(row));
  }
  // Entries whose compute was scaled to a measured one-GPU throughput (training.measured_single_gpu).
  std::vector<std::string> calibrated;
  for (const ReportEntry& e : data.entries) {
    if (const auto& c = e.result.compute_calibration) {
      calibrated.push_back(
          fmt::format("{}: compute durations / {:.4f} ({:.2f} samples/s measured on one GPU, "
                      "{:.2f} modelled; {})",
                      e.label, c->factor, c->measured_samples_per_s, c->predicted_samples_per_s, c->source));
    }
  }
  if (!calibrated.empty()) {
    s.note =
        fmt::format("Compute calibrated to a measured one-GPU throughput: {}", fmt::join(calibrated, "; "));
  }
  return s;
}

ReportSection scaling_section(const ReportData& data, const std::vector<results::ScalingSeries>& series) {
  const std::string kind = data.scaling == results::ReportScaling::none
                               ? std::string()
                               : std::string(results::to_string(data.scaling)) + " ";
  ReportSection s{.id = "scaling",
                  .heading = "Scaling",
                  .note = kind +
                          "scaling; efficiency = (throughput / GPUs) relative to the series' smallest "
                          "GPU count"};
  // Tokens/s where every point has tokens (transformers), else samples/s; on log-log axes, where linear
  // scaling is a straight line of slope one and weak scaling does not look exponential.
  bool tokens = true;
  for (const results::ScalingSeries& line : series) {
    for (const results::ScalingPoint& p : line.points) tokens = tokens && p.tokens_per_s > 0.0;
  }
  const char* rate = tokens ? "tokens/s" : "samples/s";
  svg::LineChart throughput{.title = fmt::format("Throughput vs GPUs ({}, log-log)", rate),
                            .x_label = "GPUs",
                            .y_label = rate,
                            .log2_x = true,
                            .log10_y = true};
  svg::LineChart efficiency{.title = "Scaling efficiency vs GPUs",
                            .x_label = "GPUs",
                            .y_label = "efficiency (%)",
                            .log2_x = true,
                            .reference_y = 100.0,
                            .reference_label = "ideal"};
  svg::LineChart tflops{.title = "Model TFLOP/s per GPU vs GPUs",
                        .x_label = "GPUs",
                        .y_label = "model TFLOP/s per GPU",
                        .log2_x = true};
  svg::LineChart mfu{.title = "Model FLOPs utilization vs GPUs", .x_label = "GPUs", .y_label = "MFU (%)",
                     .log2_x = true};
  // One row per GPU count; per series its throughput, TFLOP/s per GPU, MFU and efficiency.
  std::set<std::int64_t> gpu_counts;
  s.table.header = {"GPUs"};
  for (const results::ScalingSeries& line : series) {
    svg::Series t{.name = line.name}, e{.name = line.name}, f{.name = line.name}, m{.name = line.name};
    for (const results::ScalingPoint& p : line.points) {
      const auto gpus = static_cast<double>(p.gpus);
      t.points.push_back({gpus, tokens ? p.tokens_per_s : p.samples_per_s});
      e.points.push_back({gpus, 100.0 * p.efficiency});
      f.points.push_back({gpus, p.model_tflops_per_gpu});
      m.points.push_back({gpus, 100.0 * p.mfu});
      gpu_counts.insert(p.gpus);
    }
    throughput.series.push_back(std::move(t));
    efficiency.series.push_back(std::move(e));
    tflops.series.push_back(std::move(f));
    mfu.series.push_back(std::move(m));
    const std::string prefix = series.size() == 1 ? std::string() : line.name + " ";
    s.table.header.push_back(prefix + rate);
    s.table.header.push_back(prefix + "TFLOP/s per GPU");
    s.table.header.push_back(prefix + "MFU");
    s.table.header.push_back(prefix + "efficiency");
  }
  for (const std::int64_t gpus : gpu_counts) {
    std::vector<std::string> row{std::to_string(gpus)};
    for (const results::ScalingSeries& line : series) {
      const auto at = std::find_if(line.points.begin(), line.points.end(),
                                   [&](const results::ScalingPoint& p) { return p.gpus == gpus; });
      const bool none = at == line.points.end();
      row.push_back(none ? "-" : tokens ? fmt::format("{:.0f}", at->tokens_per_s) : count(at->samples_per_s));
      row.push_back(none ? "-" : fmt::format("{:.1f}", at->model_tflops_per_gpu));
      row.push_back(none ? "-" : pct(at->mfu));
      row.push_back(none ? "-" : pct(at->efficiency));
    }
    s.table.rows.push_back(std::move(row));
  }
  s.svgs = {svg::render(throughput), svg::render(efficiency)};
  // FLOP rates where the workload counts them (transformers; not the layer-table workloads).
  const bool flops = std::any_of(series.begin(), series.end(), [](const results::ScalingSeries& line) {
    return std::any_of(line.points.begin(), line.points.end(),
                       [](const results::ScalingPoint& p) { return p.model_tflops_per_gpu > 0.0; });
  });
  if (flops) {
    s.svgs.push_back(svg::render(tflops));
    s.svgs.push_back(svg::render(mfu));
  }
  return s;
}

ReportSection strategy_section(const ReportData& data) {
  ReportSection s{.id = "strategies", .heading = "Strategy comparison"};
  svg::StackedBarChart chart{.title = "Throughput by plan", .y_label = "samples/s"};
  chart.stacks = {{.name = "samples/s"}};
  svg::StackedBarChart mfu{.title = "Model FLOPs utilization by plan", .y_label = "MFU (%)"};
  mfu.stacks = {{.name = "MFU"}};
  s.table.header = {"entry",     "DPxTPxPPxCP", "schedule",         "ZeRO",      "recompute",
                    "samples/s", "MFU",         "exposed comm (s)", "bubble (s)"};
  for (const ReportEntry& e : data.entries) {
    const Result& r = e.result;
    const auto& p = r.scenario.parallelism;
    chart.categories.push_back(bar_label(e));
    chart.stacks[0].values.push_back(ok(r) ? r.throughput.samples_per_s : 0.0);
    mfu.categories.push_back(bar_label(e));
    mfu.stacks[0].values.push_back(ok(r) ? 100.0 * r.flops.mfu : 0.0);
    s.table.rows.push_back({e.label, plan(r), config::to_string(p.schedule), config::zero_stage_label(p),
                            config::to_string(r.scenario.training.activation_recompute),
                            ok(r) ? count(r.throughput.samples_per_s) : "-", ok(r) ? pct(r.flops.mfu) : "-",
                            ok(r) ? secs(r.breakdown.exposed_comm_s()) : "-",
                            ok(r) ? secs(r.breakdown.pipeline_bubble_s) : "-"});
  }
  s.svgs = {svg::render(chart), svg::render(mfu)};
  return s;
}

ReportSection breakdown_section(const ReportData& data) {
  ReportSection s{.id = "breakdown",
                  .heading = "Iteration time breakdown",
                  .note = "mean over the simulated ranks; the parts sum to the iteration time"};
  std::vector<std::string> parts;
  for (const results::BreakdownPart& part : results::kBreakdownParts) parts.emplace_back(part.short_label);
  svg::StackedBarChart chart{.title = "Where an iteration's time goes", .y_label = "seconds"};
  for (const std::string& p : parts) chart.stacks.push_back({.name = p});
  s.table.header = {"entry"};
  for (const std::string& p : parts) s.table.header.push_back(p + " (s)");
  s.table.header.emplace_back("iteration (s)");
  for (const ReportEntry& e : data.entries) {
    const results::Breakdown& b = e.result.breakdown;
    std::vector<double> values;
    for (const results::BreakdownPart& part : results::kBreakdownParts) values.push_back(b.*part.value);
    chart.categories.push_back(bar_label(e));
    std::vector<std::string> row{e.label};
    for (std::size_t i = 0; i < values.size(); ++i) {
      chart.stacks[i].values.push_back(ok(e.result) ? values[i] : 0.0);
      row.push_back(ok(e.result) ? secs(values[i]) : "-");
    }
    row.push_back(ok(e.result) ? secs(e.result.iteration_time_s) : "-");
    s.table.rows.push_back(std::move(row));
  }
  s.svgs = {svg::render(chart)};
  return s;
}

ReportSection memory_section(const ReportData& data) {
  ReportSection s{.id = "memory",
                  .heading = "Memory per GPU",
                  .note = "the most loaded rank (first pipeline stage), against the GPU's capacity"};
  svg::StackedBarChart chart{.title = "Memory per GPU by part", .y_label = "GiB"};
  const std::vector<std::string> parts = {"weights", "gradients", "optimizer", "activations", "buffers"};
  for (const std::string& p : parts) chart.stacks.push_back({.name = p});
  s.table.header = {"entry"};
  for (const std::string& p : parts) s.table.header.push_back(p + " (GiB)");
  for (const char* h : {"peak (GiB)", "capacity (GiB)", "fits"}) s.table.header.emplace_back(h);
  std::optional<double> capacity;
  bool same_capacity = true;
  for (const ReportEntry& e : data.entries) {
    const results::Memory& m = e.result.memory;
    const std::vector<double> values = {m.weights_bytes, m.gradients_bytes, m.optimizer_bytes,
                                        m.activations_bytes, m.buffers_bytes};
    chart.categories.push_back(e.label);
    std::vector<std::string> row{e.label};
    for (std::size_t i = 0; i < values.size(); ++i) {
      chart.stacks[i].values.push_back(values[i] / kBytesPerGib);
      row.push_back(gb(values[i]));
    }
    row.push_back(gb(m.peak_bytes_per_gpu));
    row.push_back(gb(m.capacity_bytes_per_gpu));
    row.emplace_back(m.fits ? "yes" : "no");
    s.table.rows.push_back(std::move(row));
    if (capacity && *capacity != m.capacity_bytes_per_gpu) same_capacity = false;
    capacity = m.capacity_bytes_per_gpu;
  }
  if (capacity && same_capacity) {
    chart.reference_y = *capacity / kBytesPerGib;
    chart.reference_label = fmt::format("capacity {} GiB", gb(*capacity));
  } else {
    for (const ReportEntry& e : data.entries)
      chart.limits.push_back(e.result.memory.capacity_bytes_per_gpu / kBytesPerGib);
    chart.limits_label = "capacity";
  }
  s.svgs = {svg::render(chart)};
  return s;
}

ReportSection timeline_section(const ReportEntry& entry) {
  const results::TimelineExcerpt excerpt = results::timeline_excerpt(*entry.result.trace, kTimelineRanks);
  ReportSection s{.id = "timeline",
                  .heading = "Timeline",
                  .note = fmt::format("one iteration of {}: the streams of the first {} simulated ranks",
                                      entry.label, kTimelineRanks)};
  svg::TimelineChart chart{.title = "One iteration", .x_label = "seconds", .lanes = excerpt.lanes};
  for (int c = 0; c < graph::kCategoryCount; ++c) {
    chart.legend.emplace_back(graph::to_string(static_cast<graph::Category>(c)));
  }
  for (const results::TimelineSpan& span : excerpt.spans) {
    const char* category = graph::to_string(span.category);
    const double length_s = span.end_s - span.start_s;
    std::string tooltip = span.merged > 1 ? fmt::format("{} and {} more ({}): {:.6f} s", span.label,
                                                        span.merged - 1, category, length_s)
                                          : fmt::format("{} ({}): {:.6f} s", span.label, category, length_s);
    chart.spans.push_back({.lane = span.lane,
                           .start = span.start_s,
                           .end = span.end_s,
                           .color = static_cast<std::size_t>(span.category),
                           .tooltip = std::move(tooltip)});
  }
  s.svgs = {svg::render(chart)};
  s.table.header = {"stream", "spans", "busy (s)", "busy share"};
  for (std::size_t l = 0; l < excerpt.lanes.size(); ++l) {
    s.table.rows.push_back({excerpt.lanes[l], std::to_string(excerpt.span_count[l]), secs(excerpt.busy_s[l]),
                            pct(excerpt.busy_share[l])});
  }
  return s;
}

// What a study computed beyond the results (a capacity plan's days and cost per cluster): one bar chart
// per figure with a finite value, and the table of every figure.
ReportSection figures_section(const ReportData& data) {
  ReportSection s{.id = "figures",
                  .heading = data.kind == results::ReportKind::plan ? "Time and cost by cluster" : "Figures"};
  const std::vector<std::string> names = results::figure_names(data);
  s.table.header = {"entry"};
  s.table.header.insert(s.table.header.end(), names.begin(), names.end());
  for (const std::string& name : names) {
    svg::StackedBarChart chart{.title = name, .y_label = name};
    chart.stacks = {{.name = name}};
    bool any = false;
    for (const ReportEntry& e : data.entries) {
      const results::Figure* f = results::find_figure(e, name);
      const bool drawn = f != nullptr && std::isfinite(f->value);
      any = any || drawn;
      chart.categories.push_back(bar_label(e));
      chart.stacks[0].values.push_back(drawn ? f->value : 0.0);
    }
    if (any) s.svgs.push_back(svg::render(chart));
  }
  for (const ReportEntry& e : data.entries) {
    std::vector<std::string> row{e.label};
    for (const std::string& name : names) row.push_back(figure_text(e, name));
    s.table.rows.push_back(std::move(row));
  }
  return s;
}

// Layer-table workloads trained data-parallel (all-reduce or parameter servers): what sets their pace
// and how long they take to converge, where the transformer columns (schedule, bubble, MFU) say nothing.
ReportSection data_parallel_section(const ReportData& data) {
  ReportSection s{.id = "data-parallel",
                  .heading = "Data-parallel training",
                  .note = "architecture and synchronization of each layer-table workload; staleness in "
                          "updates over every applied gradient; time to target from the convergence model"};
  svg::StackedBarChart chart{.title = "Throughput by entry", .y_label = "samples/s"};
  chart.stacks = {{.name = "samples/s"}};
  s.table.header = {"entry",          "architecture",       "sync",           "staleness bound", "workers",
                    "servers",        "samples/s",          "mean staleness", "wait per step p50 (s)",
                    "time to target (h)", "GPU-hours to target"};
  for (const ReportEntry& e : data.entries) {
    const Result& r = e.result;
    if (!r.data_parallel) continue;
    const auto& spec = r.scenario.data_parallel;
    const auto& d = *r.data_parallel;
    const auto& c = r.convergence;
    chart.categories.push_back(bar_label(e));
    chart.stacks[0].values.push_back(ok(r) ? r.throughput.samples_per_s : 0.0);
    s.table.rows.push_back(
        {e.label, config::to_string(spec.architecture), config::to_string(spec.sync),
         spec.sync == config::SyncMode::bounded ? std::to_string(spec.staleness_bound) : "-",
         std::to_string(d.workers), std::to_string(d.servers), ok(r) ? count(r.throughput.samples_per_s) : "-",
         fmt::format("{:.2f}", d.staleness.mean), secs(d.wait_s_per_step.p50),
         c ? fmt::format("{:.2f}", c->time_to_target_s / 3600.0) : "-",
         c ? fmt::format("{:.0f}", c->gpu_hours) : "-"});
  }
  s.svgs = {svg::render(chart)};
  return s;
}

}  // namespace

std::vector<ReportSection> report_sections(const ReportData& data) {
  std::vector<ReportSection> sections;
  const std::vector<results::ScalingSeries> series = results::scaling_series(data);
  const bool study = data.kind == results::ReportKind::sweep || data.kind == results::ReportKind::plan;
  if (study && results::has_scaling(series)) sections.push_back(scaling_section(data, series));
  if (!results::figure_names(data).empty()) sections.push_back(figures_section(data));
  const bool transformers = std::any_of(data.entries.begin(), data.entries.end(),
                                        [](const ReportEntry& e) { return !e.result.data_parallel; });
  if (std::any_of(data.entries.begin(), data.entries.end(),
                  [](const ReportEntry& e) { return e.result.data_parallel.has_value(); })) {
    sections.push_back(data_parallel_section(data));
  }
  if (transformers && (data.kind == results::ReportKind::compare || data.kind == results::ReportKind::search ||
                       data.kind == results::ReportKind::plan)) {
    sections.push_back(strategy_section(data));
  }
  if (!data.entries.empty()) {
    sections.push_back(breakdown_section(data));
    sections.push_back(memory_section(data));
  }
  for (const ReportEntry& e : data.entries) {
    if (e.result.trace && !e.result.trace->spans.empty()) {
      sections.push_back(timeline_section(e));
      break;
    }
  }
  sections.push_back(results_section(data));
  return sections;
}

}  // namespace dtsim::reports
