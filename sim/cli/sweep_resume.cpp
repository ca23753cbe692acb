#include "cli/sweep_resume.hpp"

#include <fstream>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace dtsim::cli {

namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kExpect =
    "expected the unfinished output of this same sweep (or remove the file to start over)";

// The first key on which two sweep headers differ, for the message.
std::string first_difference(const Json& ours, const Json& theirs) {
  for (const auto& [key, value] : ours.items()) {
    if (!theirs.contains(key) || theirs[key] != value) return key;
  }
  for (const auto& [key, value] : theirs.items()) {
    if (!ours.contains(key)) return key;
  }
  return "";
}

}  // namespace

PartialSweep read_partial_sweep(const std::string& path, const std::string& header_line,
                                const config::SweepSpace& space, const Shard& shard, std::uint64_t count) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw core::InputError(path, "", "cannot read the unfinished sweep to resume it");
  const SweepLine ours = parse_sweep_line(header_line.substr(0, header_line.size() - 1), "", 1);
  PartialSweep out;
  std::uint64_t number = 0;
  std::uint64_t offset = 0;
  std::string line;
  for (LineRead read; (read = read_sweep_line(in, line, path, number + 1)) != LineRead::none;) {
    const bool whole = read == LineRead::whole;
    ++number;
    if (!whole) break;  // cut short: dropped
    const std::uint64_t next = offset + line.size() + 1;
    if (out.complete) {
      throw core::InputError(path, "",
                             fmt::format("line {}: a line after the sweep's last line; {}", number, kExpect));
    }
    const SweepLine parsed = parse_sweep_line(line, path, number);
    if (number == 1) {
      if (parsed.kind != SweepLineKind::header) {
        throw core::InputError(path, "", fmt::format("line 1: not the first line of a sweep; {}", kExpect));
      }
      const Json theirs = parsed.json.at("sweep");
      const Json& mine = ours.json.at("sweep");
      Json a = mine, b = theirs;
      a.erase("scenario");
      b.erase("scenario");
      if (a != b) {
        throw core::InputError(path, "",
                               fmt::format("line 1: another sweep (its \"{}\" differs from this one's); {}",
                                           first_difference(a, b), kExpect));
      }
      out.has_header = true;
    } else if (parsed.kind == SweepLineKind::trailer) {
      if (!parsed.json["sweep_complete"].get<bool>() ||
          parsed.json["points"].get<std::uint64_t>() != out.points || out.points != count) {
        throw core::InputError(
            path, "",
            fmt::format("line {}: a last line that does not close this sweep; {}", number, kExpect));
      }
      out.complete = true;
    } else if (parsed.kind == SweepLineKind::point) {
      const std::uint64_t index = out.points < count ? shard.index(out.points) : 0;
      const Json expected_set = space.assignment_object(index);
      if (out.points >= count || static_cast<std::uint64_t>(parsed.index) != index ||
          !parsed.json.contains("set") || parsed.json["set"] != expected_set) {
        throw core::InputError(path, "",
                               fmt::format("line {}: not this sweep's point {} (index {}, set {}); {}",
                                           number, out.points + 1, index, expected_set.dump(), kExpect));
      }
      const Json& result = parsed.json["result"];
      if (!result.is_object() || !result.contains("status") || result["status"] != "ok")
        out.any_not_ok = true;
      ++out.points;
    } else {
      throw core::InputError(path, "", fmt::format("line {}: a second first line; {}", number, kExpect));
    }
    offset = next;
  }
  if (in.bad()) throw core::InputError(path, "", "cannot read the unfinished sweep to resume it");
  out.keep_bytes = offset;
  return out;
}

}  // namespace dtsim::cli
