#include "calibration/nccl_log.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "config/json_text.hpp"
#include "core/errors.hpp"

namespace dtsim::calibration {

namespace {

// Removes a launcher's prefix: "0: ", "12: ", "[1,0]<stdout>:", "host-1: ".
std::string_view strip_prefix(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
  if (i < line.size() && line[i] == '[') {
    const std::size_t close = line.find("]<", i);
    const std::size_t colon = close == std::string_view::npos ? close : line.find(">:", close);
    if (colon != std::string_view::npos) return line.substr(colon + 2);
  }
  const std::size_t colon = line.find(": ");
  if (colon != std::string_view::npos) {
    const std::string_view head = line.substr(i, colon - i);
    const bool word =
        !head.empty() && head.find(' ') == std::string_view::npos && head.find('#') == std::string_view::npos;
    if (word) return line.substr(colon + 2);
  }
  return line;
}

std::vector<std::string> tokens(std::string_view line) {
  std::vector<std::string> out;
  std::istringstream in{std::string(line)};
  std::string t;
  while (in >> t) out.push_back(t);
  return out;
}

bool is_integer(const std::string& t) {
  if (t.empty()) return false;
  std::size_t i = t[0] == '-' ? 1 : 0;
  if (i == t.size()) return false;
  for (; i < t.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(t[i]))) return false;
  }
  return true;
}

std::optional<double> number(const std::string& t) {
  if (t == "N/A") return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str() || *end != '\0') return std::nullopt;
  return v;
}

const std::set<std::string>& known_types() {
  static const std::set<std::string> types{"int8",   "uint8",  "int32", "uint32", "int64",
                                           "uint64", "half",   "float", "double", "bfloat16",
                                           "f8e4m3", "f8e5m2", "char",  "int",    "uint"};
  return types;
}

// Parses "time algbw busbw wrong" starting at `at`.
NcclLogMeasurement measurement(const std::vector<std::string>& t, std::size_t at, const std::string& file,
                               int line) {
  const auto time = number(t[at]);
  const auto algbw = number(t[at + 1]);
  const auto busbw = number(t[at + 2]);
  if (!time || !algbw || !busbw) {
    throw core::InputError(file, "",
                           fmt::format("line {}: expected time, algbw and busbw numbers, got \"{} {} {}\"",
                                       line, t[at], t[at + 1], t[at + 2]));
  }
  return {*time, *algbw, *busbw};
}

NcclLogRow data_row(const std::vector<std::string>& t, const std::string& file, int line) {
  // Current layout: size count type redop root  (time algbw busbw wrong) x2 = 13 fields; pre-2.13:
  // size count type redop (time algbw busbw error) x2 = 12 fields; an in-place half may be absent.
  std::size_t first = 0;
  if (t.size() == 13 || t.size() == 9) {
    first = 5;
  } else if (t.size() == 12 || t.size() == 8) {
    first = 4;
  } else {
    throw core::InputError(file, "",
                           fmt::format("line {}: a data row has 8, 9, 12 or 13 fields (size count type redop "
                                       "[root] time algbw busbw #wrong ...), got {}",
                                       line, t.size()));
  }
  if (!is_integer(t[1])) {
    throw core::InputError(file, "",
                           fmt::format("line {}: expected an element count, got \"{}\"", line, t[1]));
  }
  if (known_types().count(t[2]) == 0) {
    throw core::InputError(file, "", fmt::format("line {}: unknown data type \"{}\"", line, t[2]));
  }
  NcclLogRow row;
  row.line = line;
  row.size_bytes = std::strtod(t[0].c_str(), nullptr);
  row.count = std::strtoll(t[1].c_str(), nullptr, 10);
  row.type = t[2];
  row.redop = t[3];
  row.out_of_place = measurement(t, first, file, line);
  if (t.size() >= first + 8) row.in_place = measurement(t, first + 4, file, line);
  return row;
}

}  // namespace

NcclLog parse_nccl_log_text(const std::string& text, const std::string& file) {
  NcclLog log;
  log.file = file;
  std::set<std::string> hosts;
  int ranks = 0;
  std::istringstream in(text);
  std::string raw;
  int line_number = 0;
  while (std::getline(in, raw)) {
    ++line_number;
    const std::string_view line = strip_prefix(raw);
    const auto t = tokens(line);
    if (t.empty()) continue;
    if (t[0] == "#") {
      // "#  Rank  0 Group  0 Pid 1341852 on HOST device  0 [0x07] NVIDIA A100-SXM4-40GB"
      if (t.size() > 7 && t[1] == "Rank" && t[6] == "on") {
        ++ranks;
        hosts.insert(t[7]);
      }
      if (t.size() > 4 && t[1] == "Collective" && t[2] == "test" && t[3] == "starting:") log.program = t[4];
      continue;
    }
    if (!is_integer(t[0])) continue;  // banners, NCCL INFO lines, "..." elisions
    log.rows.push_back(data_row(t, file, line_number));
  }
  if (ranks > 0) {
    log.ranks = ranks;
    log.hosts = static_cast<int>(hosts.size());
  }
  if (log.rows.empty()) throw core::InputError(file, "", "no nccl-tests data rows found");
  return log;
}

double fastest_time_us(const NcclLogRow& row) {
  const double out = row.out_of_place.time_us;
  if (!row.in_place || row.in_place->time_us <= 0.0) return out;
  return out <= 0.0 ? row.in_place->time_us : std::min(out, row.in_place->time_us);
}

NcclLog read_nccl_log(const std::string& path) {
  // nccl-tests logs are kilobytes; 64 MiB bounds what a wrong path (/dev/zero, a dump) can take.
  constexpr config::JsonLimits kLogLimits{std::size_t{64} << 20U, 0, 0, "an nccl-tests log"};
  return parse_nccl_log_text(config::read_text_file(path, kLogLimits), path);
}

}  // namespace dtsim::calibration
