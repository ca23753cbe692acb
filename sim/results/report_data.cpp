// Derived figures of a report: scaling series with efficiency, and a timeline excerpt (formulas in
// report_data.hpp).
#include "results/report_data.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace dtsim::results {

const char* to_string(ReportKind k) {
  switch (k) {
    case ReportKind::run:
      return "run";
    case ReportKind::sweep:
      return "sweep";
    case ReportKind::compare:
      return "compare";
    case ReportKind::plan:
      return "plan";
    case ReportKind::search:
      return "search";
  }
  return "?";
}

const char* to_string(ReportScaling s) {
  switch (s) {
    case ReportScaling::none:
      return "none";
    case ReportScaling::weak:
      return "weak";
    case ReportScaling::strong:
      return "strong";
  }
  return "?";
}

namespace report_data_detail {

// The names `name(item)` of every entry's `items(entry)`, each once, in first-seen order.
template <typename Items, typename Name>
std::vector<std::string> first_seen(const ReportData& data, Items items, Name name) {
  std::vector<std::string> names;
  for (const ReportEntry& e : data.entries) {
    for (const auto& item : items(e)) {
      const std::string& n = name(item);
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    }
  }
  return names;
}

}  // namespace report_data_detail

std::vector<std::string> knob_keys(const ReportData& data) {
  return report_data_detail::first_seen(
      data, [](const ReportEntry& e) -> const std::vector<Knob>& { return e.knobs; },
      [](const Knob& k) -> const std::string& { return k.key; });
}

const Figure* find_figure(const ReportEntry& entry, const std::string& name) {
  for (const Figure& f : entry.figures) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::vector<std::string> figure_names(const ReportData& data) {
  return report_data_detail::first_seen(
      data, [](const ReportEntry& e) -> const std::vector<Figure>& { return e.figures; },
      [](const Figure& f) -> const std::string& { return f.name; });
}

namespace {

const std::string* knob_value(const ReportEntry& e, const std::string& key) {
  for (const Knob& k : e.knobs) {
    if (k.key == key) return &k.value;
  }
  return nullptr;
}

// Whether the knob takes several values and each of its values fixes the GPU count.
bool sets_gpu_count(const ReportData& data, const std::string& key) {
  std::map<std::string, std::int64_t> gpus_of;
  for (const ReportEntry& e : data.entries) {
    const std::string* v = knob_value(e, key);
    const std::string value = v ? *v : std::string();
    const auto [it, inserted] = gpus_of.emplace(value, e.result.scenario.gpu_count());
    if (!inserted && it->second != e.result.scenario.gpu_count()) return false;
  }
  return gpus_of.size() > 1;
}

}  // namespace

std::vector<ScalingSeries> scaling_series(const ReportData& data) {
  std::vector<std::string> other_keys;
  for (const std::string& key : knob_keys(data)) {
    if (!sets_gpu_count(data, key)) other_keys.push_back(key);
  }
  std::vector<ScalingSeries> series;
  for (std::size_t i = 0; i < data.entries.size(); ++i) {
    const ReportEntry& e = data.entries[i];
    std::string name;
    for (const std::string& key : other_keys) {
      const std::string* v = knob_value(e, key);
      if (!name.empty()) name += ", ";
      const std::size_t slash = key.find_last_of('/');
      name += (slash == std::string::npos ? key : key.substr(slash + 1)) + "=" + (v ? *v : std::string("-"));
    }
    if (name.empty()) name = "all";
    auto it =
        std::find_if(series.begin(), series.end(), [&](const ScalingSeries& s) { return s.name == name; });
    if (it == series.end()) {
      series.push_back({name, {}});
      it = series.end() - 1;
    }
    if (e.result.status != Status::ok) continue;
    it->points.push_back({.gpus = e.result.scenario.gpu_count(),
                          .samples_per_s = e.result.throughput.samples_per_s,
                          .tokens_per_s = e.result.throughput.tokens_per_s,
                          .model_tflops_per_gpu = e.result.flops.model_tflops_per_gpu,
                          .mfu = e.result.flops.mfu,
                          .efficiency = 0.0,
                          .entry = i});
  }
  for (ScalingSeries& s : series) {
    std::stable_sort(s.points.begin(), s.points.end(),
                     [](const ScalingPoint& a, const ScalingPoint& b) { return a.gpus < b.gpus; });
    if (s.points.empty()) continue;
    const ScalingPoint& base = s.points.front();
    const double base_per_gpu = base.samples_per_s / static_cast<double>(base.gpus);
    for (ScalingPoint& p : s.points) {
      const double per_gpu = p.samples_per_s / static_cast<double>(p.gpus);
      p.efficiency = base_per_gpu > 0.0 ? per_gpu / base_per_gpu : 0.0;
    }
  }
  return series;
}

bool has_scaling(const std::vector<ScalingSeries>& series) {
  return std::any_of(series.begin(), series.end(), [](const ScalingSeries& s) {
    return s.points.size() >= 2 && s.points.front().gpus != s.points.back().gpus;
  });
}

TimelineExcerpt timeline_excerpt(const Trace& trace, std::size_t max_ranks) {
  // Lanes: the kept ranks' tracks that have at least one span, in track order.
  std::vector<bool> kept(trace.tracks.size(), false);
  std::vector<bool> used(trace.tracks.size(), false);
  for (std::size_t t = 0; t < trace.tracks.size(); ++t) kept[t] = trace.tracks[t].rank < max_ranks;
  core::TimeNs first = std::numeric_limits<core::TimeNs>::max();
  for (const TraceSpan& s : trace.spans) {
    if (s.track < kept.size() && kept[s.track]) {
      used[s.track] = true;
      first = std::min(first, s.start_ns);
    }
  }
  TimelineExcerpt out;
  std::vector<std::optional<std::size_t>> lane_of(trace.tracks.size());
  for (std::size_t t = 0; t < trace.tracks.size(); ++t) {
    if (!used[t]) continue;
    const TraceTrack& track = trace.tracks[t];
    const std::string rank_name = track.rank < trace.rank_names.size() ? trace.rank_names[track.rank]
                                                                       : "rank " + std::to_string(track.rank);
    lane_of[t] = out.lanes.size();
    out.lanes.push_back(rank_name + " / " + track.name);
  }
  out.busy_s.assign(out.lanes.size(), 0.0);
  out.span_count.assign(out.lanes.size(), 0);
  std::vector<std::optional<std::size_t>> last_of_lane(out.lanes.size());
  std::vector<core::TimeNs> last_end_ns(out.lanes.size(), 0);
  constexpr double kSPerNs = 1e-9;
  for (const TraceSpan& s : trace.spans) {
    if (s.track >= lane_of.size() || !lane_of[s.track]) continue;
    const std::size_t lane = *lane_of[s.track];
    const double start_s = static_cast<double>(s.start_ns - first) * kSPerNs;
    const double end_s = static_cast<double>(s.end_ns - first) * kSPerNs;
    out.end_s = std::max(out.end_s, end_s);
    out.busy_s[lane] += static_cast<double>(s.end_ns - s.start_ns) * kSPerNs;
    ++out.span_count[lane];
    const std::optional<std::size_t> last = last_of_lane[lane];
    if (last && out.spans[*last].category == s.category && last_end_ns[lane] == s.start_ns) {
      out.spans[*last].end_s = end_s;  // touching spans of one category: one mark
      ++out.spans[*last].merged;
    } else {
      last_of_lane[lane] = out.spans.size();
      out.spans.push_back({.lane = lane,
                           .start_s = start_s,
                           .end_s = end_s,
                           .category = s.category,
                           .label = s.label < trace.labels.size() ? trace.labels[s.label] : std::string(),
                           .merged = 1});
    }
    last_end_ns[lane] = s.end_ns;
  }
  for (const double busy : out.busy_s) out.busy_share.push_back(out.end_s > 0.0 ? busy / out.end_s : 0.0);
  return out;
}

}  // namespace dtsim::results
