#include "config/sweep_points.hpp"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/json_reader.hpp"
#include "core/errors.hpp"

namespace dtsim::config {

namespace {

using nlohmann::json;

json value_of(const std::string& text) {
  try {
    return json::parse(text);
  } catch (const json::parse_error&) {
    return json(text);  // a bare word: a string
  }
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    out.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// Scales an integer at `pointer` by factor, when present and the result is whole.
void scale(json& doc, const std::string& pointer, double factor, const std::string& source) {
  const json::json_pointer p(pointer);
  if (!doc.contains(p)) return;
  const json& v = doc.at(p);
  if (!v.is_number()) return;  // the loader reports the wrong type
  const double scaled = v.get<double>() * factor;
  if (std::abs(scaled - std::round(scaled)) > 1e-9) {
    throw core::InputError(
        source, pointer,
        fmt::format("got {}; scaling it by the node ratio {:g} does not give a whole number", v.dump(),
                    factor));
  }
  doc[p] = static_cast<std::int64_t>(std::llround(scaled));
}

}  // namespace

SweepAxis parse_sweep_axis(const std::string& option) {
  const std::size_t eq = option.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == option.size()) {
    throw core::InputError(
        "command line", "/set",
        fmt::format("got \"{}\"; expected POINTER=VALUE[,VALUE...], e.g. /cluster/nodes=2,4,8", option));
  }
  SweepAxis axis;
  std::string pointer = option.substr(0, eq);
  if (pointer.front() != '/') {
    for (char& c : pointer) c = c == '.' ? '/' : c;
    pointer = "/" + pointer;
  }
  axis.pointer = pointer;
  axis.values = split(option.substr(eq + 1), ',');
  return axis;
}

std::vector<SweepPoint> sweep_points(const std::string& scenario_text, const std::string& source,
                                     const std::vector<SweepAxis>& axes, Scaling scaling) {
  const json base = parse_json_text(scenario_text, source);
  const json::json_pointer nodes_ptr("/cluster/nodes");
  const double base_nodes =
      base.contains(nodes_ptr) && base.at(nodes_ptr).is_number() ? base.at(nodes_ptr).get<double>() : 0.0;
  std::size_t count = 1;
  for (const auto& axis : axes) count *= axis.values.size();
  std::vector<SweepPoint> points;
  points.reserve(count);
  for (std::size_t index = 0; index < count; ++index) {
    json doc = base;
    SweepPoint point;
    std::size_t rest = index;
    for (std::size_t a = axes.size(); a-- > 0;) {
      const SweepAxis& axis = axes[a];
      const std::string& text = axis.values[rest % axis.values.size()];
      rest /= axis.values.size();
      json::json_pointer p;
      try {
        p = json::json_pointer(axis.pointer);
      } catch (const json::exception&) {
        throw core::InputError(
            "command line", "/set",
            fmt::format("got \"{}\"; expected a JSON pointer such as /cluster/nodes", axis.pointer));
      }
      const json::json_pointer parent = p.parent_pointer();
      if (!doc.contains(parent) || !(doc.at(parent).is_object() || doc.at(parent).is_array())) {
        throw core::InputError(source, axis.pointer, "the scenario has no object to hold this key (--set)");
      }
      try {
        doc[p] = value_of(text);
      } catch (const json::exception&) {
        throw core::InputError(
            source, axis.pointer,
            fmt::format("cannot set \"{}\" here: {} is an array, expected an index 0..{} (--set)", text,
                        parent.to_string(), doc.at(parent).size()));
      }
      point.assignment.insert(point.assignment.begin(), fmt::format("{}={}", axis.pointer, text));
    }
    if (scaling != Scaling::none && base_nodes > 0 && doc.contains(nodes_ptr) &&
        doc.at(nodes_ptr).is_number()) {
      const double factor = doc.at(nodes_ptr).get<double>() / base_nodes;
      if (scaling == Scaling::weak) scale(doc, "/training/global_batch_size", factor, source);
      scale(doc, "/parallelism/data", factor, source);
    }
    point.scenario_text = doc.dump();
    points.push_back(std::move(point));
  }
  return points;
}

}  // namespace dtsim::config
