#include "cli/sweep_lines.hpp"

#include <istream>
#include <streambuf>

#include <fmt/format.h>

#include "config/json_text.hpp"

#include "core/errors.hpp"
#include "reports/output_envelope.hpp"

namespace dtsim::cli {

namespace {

using Json = nlohmann::ordered_json;

std::string fnv1a64(const std::string& text) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return fmt::format("{:016x}", hash);
}

}  // namespace

std::string sweep_header_line(const SweepIdentity& sweep) {
  Json axes = Json::array();
  for (const config::SweepAxis& axis : *sweep.axes)
    axes.push_back({{"pointer", axis.pointer}, {"values", axis.values}});
  Json s;
  s["scenario"] = sweep.scenario;
  s["scenario_fnv1a64"] = fnv1a64(sweep.scenario_text);
  s["scaling"] = sweep.scaling;
  s["axes"] = std::move(axes);
  s["points"] = sweep.points;
  if (sweep.shard) s["shard"] = fmt::format("{}/{}", sweep.shard->k + 1, sweep.shard->n);
  Json line = reports::output_envelope("sweep", {{"scenario", sweep.scenario}});
  line["sweep"] = std::move(s);
  return line.dump() + "\n";
}

std::string sweep_trailer_line(bool complete, std::uint64_t points) {
  Json line;
  line["sweep_complete"] = complete;
  line["points"] = points;
  return line.dump() + "\n";
}

std::string csv_trailer_line(std::uint64_t points) {
  return fmt::format("# sweep complete: {} points\n", points);
}

LineRead read_sweep_line(std::istream& in, std::string& line, const std::string& file, std::uint64_t number) {
  constexpr std::size_t kMax = config::JsonLimits::document().max_bytes;
  using Traits = std::char_traits<char>;
  line.clear();
  std::streambuf* buffer = in.rdbuf();
  for (Traits::int_type c = buffer->sbumpc(); !Traits::eq_int_type(c, Traits::eof()); c = buffer->sbumpc()) {
    if (Traits::to_char_type(c) == '\n') return LineRead::whole;
    if (line.size() == kMax) {
      throw core::InputError(
          file, "",
          fmt::format("line {}: longer than {} bytes; expected the lines of a sweep", number, kMax));
    }
    line.push_back(Traits::to_char_type(c));
  }
  in.setstate(std::ios::eofbit);
  return line.empty() ? LineRead::none : LineRead::cut;
}

SweepLine parse_sweep_line(const std::string& line, const std::string& file, std::uint64_t number) {
  try {
    config::check_json_limits(line, file);
  } catch (const core::InputError& e) {
    throw core::InputError(file, "", fmt::format("line {}: {}", number, e.message()));
  }
  SweepLine out;
  try {
    out.json = Json::parse(line);
  } catch (const Json::exception& e) {  // parse errors, and numbers beyond a double (1e400)
    throw core::InputError(file, "", fmt::format("line {}: not a JSON object ({})", number, e.what()));
  }
  const Json& j = out.json;
  // The first line: Output v1's envelope with "command": "sweep" and the sweep (or, as written before
  // the envelope, the "sweep" object alone).
  const bool envelope = j.is_object() && j.contains("command") && j["command"] == "sweep";
  if (j.is_object() && (j.size() == 1 || envelope) && j.contains("sweep") && j["sweep"].is_object()) {
    out.kind = SweepLineKind::header;
    return out;
  }
  if (j.is_object() && j.contains("sweep_complete") && j["sweep_complete"].is_boolean() &&
      j.contains("points") && j["points"].is_number_unsigned()) {
    out.kind = SweepLineKind::trailer;
    return out;
  }
  if (!j.is_object() || !j.contains("index") || !j["index"].is_number_integer() ||
      j["index"].get<std::int64_t>() < 0 || !j.contains("result")) {
    throw core::InputError(
        file, "",
        fmt::format(
            "line {}: expected a sweep line: {{\"index\", \"set\", \"result\"}}, or the sweep's first "
            "or last line",
            number));
  }
  out.kind = SweepLineKind::point;
  out.index = j["index"].get<std::int64_t>();
  return out;
}

nlohmann::ordered_json sweep_identity(const SweepLine& header) {
  Json s = header.json.at("sweep");
  s.erase("scenario");
  s.erase("shard");
  return s;
}

std::uint64_t header_points(const SweepLine& header, const std::string& file) {
  const Json& s = header.json.at("sweep");
  if (!s.contains("points") || !s["points"].is_number_unsigned()) {
    throw core::InputError(file, "", "line 1: the sweep's first line has no \"points\" count");
  }
  return s["points"].get<std::uint64_t>();
}

}  // namespace dtsim::cli
