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
  check_json_limits(text, "command line");  // a value nested too deep or too long is bad input
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
        fmt::format("got {}; scaling it by the node ratio {:g} does not give a whole number",
                    describe_value(v), factor));
  }
  if (!(std::abs(scaled) < 0x1p63)) {
    throw core::InputError(source, pointer,
                           fmt::format("got {}; scaling it by the node ratio {:g} gives {:g}, beyond a "
                                       "64-bit integer",
                                       describe_value(v), factor, scaled));
  }
  doc[p] = static_cast<std::int64_t>(std::llround(scaled));
}

// Creates the objects along `parent` that the scenario lacks (--set /cluster/network/topology/kind on a
// scenario without a topology block), inside objects only; the loader then checks their keys as in any
// scenario. A step through a value that is neither an object nor an array is bad input.
void make_objects(json& doc, const json::json_pointer& parent, const std::string& source,
                  const std::string& pointer) {
  std::vector<json::json_pointer> prefixes;  // parent, its parent, ... up to (not including) the root
  for (json::json_pointer q = parent; !q.empty(); q = q.parent_pointer()) prefixes.push_back(q);
  for (auto it = prefixes.rbegin(); it != prefixes.rend(); ++it) {
    const json& holder = doc.at(it->parent_pointer());  // exists: made or checked one step before
    if (!holder.is_object()) {
      if (holder.is_array() && doc.contains(*it)) continue;
      throw core::InputError(source, pointer,
                             fmt::format("the scenario has no object at {} to hold this key (--set: {} is {})",
                                         it->to_string(), it->parent_pointer().to_string(),
                                         holder.is_array() ? "an array without that index" : describe_value(holder)));
    }
    if (!doc.contains(*it)) doc[*it] = json::object();
  }
  const json& target = doc.at(parent);
  if (!target.is_object() && !target.is_array()) {
    throw core::InputError(source, pointer,
                           fmt::format("the scenario's {} is {}, not an object to hold this key (--set)",
                                       parent.to_string(), describe_value(target)));
  }
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

namespace {

// "Sweep of FILE over /a × /b" for error messages.
std::string sweep_name(const std::string& source, const std::vector<SweepAxis>& axes) {
  std::string over;
  for (const SweepAxis& axis : axes) over += (over.empty() ? "" : " \u00d7 ") + axis.pointer;
  return fmt::format("the sweep of {} over {}", source == "-" ? "standard input" : source, over);
}

}  // namespace

SweepSpace::SweepSpace(const std::string& scenario_text, const std::string& source,
                       std::vector<SweepAxis> axes, Scaling scaling)
    : base_(parse_json_text(scenario_text, source)),
      source_(source),
      axes_(std::move(axes)),
      scaling_(scaling) {
  const json::json_pointer nodes_ptr("/cluster/nodes");
  base_nodes_ =
      base_.contains(nodes_ptr) && base_.at(nodes_ptr).is_number() ? base_.at(nodes_ptr).get<double>() : 0.0;
  std::string counts;
  for (const SweepAxis& axis : axes_) {
    try {
      pointers_.emplace_back(axis.pointer);
    } catch (const json::exception&) {
      throw core::InputError(
          "command line", "/set",
          fmt::format("got \"{}\"; expected a JSON pointer such as /cluster/nodes", axis.pointer));
    }
    if (axis.values.empty()) throw core::InternalError("a sweep axis without values");
    counts += fmt::format("{}{}", counts.empty() ? "" : " \u00d7 ", axis.values.size());
  }
  for (const SweepAxis& axis : axes_) {
    if (size_ > kMaxSweepPoints / axis.values.size()) {
      throw core::InputError(
          "command line", "/set",
          fmt::format("{} has {} points, more than {} (2^63 - 1), the most a sweep can number; "
                      "expected fewer values",
                      sweep_name(source_, axes_), counts, kMaxSweepPoints));
    }
    size_ *= axis.values.size();
  }
}

std::vector<std::size_t> SweepSpace::digits(std::uint64_t index) const {
  if (index >= size_) throw core::InternalError("a sweep point index beyond the sweep");
  std::vector<std::size_t> out(axes_.size());
  for (std::size_t a = axes_.size(); a-- > 0;) {
    const std::uint64_t n = axes_[a].values.size();
    out[a] = static_cast<std::size_t>(index % n);
    index /= n;
  }
  return out;
}

std::vector<std::string> SweepSpace::assignment(std::uint64_t index) const {
  const std::vector<std::size_t> d = digits(index);
  std::vector<std::string> out;
  out.reserve(axes_.size());
  for (std::size_t a = 0; a < axes_.size(); ++a) {
    out.push_back(fmt::format("{}={}", axes_[a].pointer, axes_[a].values[d[a]]));
  }
  return out;
}

nlohmann::ordered_json SweepSpace::assignment_object(std::uint64_t index) const {
  const std::vector<std::size_t> d = digits(index);
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (std::size_t a = 0; a < axes_.size(); ++a) {
    out[axes_[a].pointer] = nlohmann::ordered_json::parse(value_of(axes_[a].values[d[a]]).dump());
  }
  return out;
}

SweepPoint SweepSpace::point(std::uint64_t index) const {
  const std::vector<std::size_t> d = digits(index);
  json doc = base_;
  SweepPoint point;
  // Set from the last axis to the first, as the points were always made.
  for (std::size_t a = axes_.size(); a-- > 0;) {
    const SweepAxis& axis = axes_[a];
    const std::string& text = axis.values[d[a]];
    const json::json_pointer& p = pointers_[a];
    const json::json_pointer parent = p.parent_pointer();
    make_objects(doc, parent, source_, axis.pointer);
    try {
      doc[p] = value_of(text);
    } catch (const json::exception&) {
      throw core::InputError(
          source_, axis.pointer,
          fmt::format("cannot set \"{}\" here: {} is an array, expected an index 0..{} (--set)", text,
                      parent.to_string(), doc.at(parent).size()));
    }
  }
  point.assignment = assignment(index);
  const json::json_pointer nodes_ptr("/cluster/nodes");
  if (scaling_ != Scaling::none && base_nodes_ > 0 && doc.contains(nodes_ptr) &&
      doc.at(nodes_ptr).is_number()) {
    const double factor = doc.at(nodes_ptr).get<double>() / base_nodes_;
    if (scaling_ == Scaling::weak) scale(doc, "/training/global_batch_size", factor, source_);
    scale(doc, "/parallelism/data", factor, source_);
  }
  point.scenario_text = doc.dump();
  return point;
}

}  // namespace dtsim::config
