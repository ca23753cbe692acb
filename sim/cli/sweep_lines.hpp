// The lines of a sweep's output, as dtsim sweep writes them and dtsim merge and sweep --resume read them.
//
// JSON Lines (--format jsonl):
//   {"schema_version":1,"dtsim_version":V,"command":"sweep","inputs":{"scenario":PATH},
//    "sweep":{"scenario":PATH,"scenario_fnv1a64":HEX,"scaling":S,"axes":[{"pointer":P,"values":[...]}...],
//             "points":N[,"shard":"K/M"]}}      first line: Output v1's envelope and which sweep (N: all
//                                              its points); a first line of the "sweep" object alone,
//                                              as written before the envelope, is read too
//   {"index":I,"set":{"P":V,...},"result":{...}}  one per point, in index order (V: the value as JSON)
//   {"sweep_complete":true,"points":C}            last line, written once every point of the file is
//                                                 (C: the point lines above it)
// A file without the last line is an unfinished sweep. Two files are of the same sweep when their
// first lines agree on everything but the scenario's path and the shard.
// CSV (--format csv): the header row, one row per point, and a last line "# sweep complete: C points".
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/sweep_points.hpp"

namespace dtsim::cli {

struct Shard {
  std::uint64_t k = 0;  // 0-based
  std::uint64_t n = 1;
  // Points of a sweep of `size` points whose index % n == k.
  std::uint64_t count(std::uint64_t size) const { return size > k ? (size - k - 1) / n + 1 : 0; }
  std::uint64_t index(std::uint64_t position) const { return k + position * n; }
};

struct SweepIdentity {
  std::string scenario;       // the path as given ("-": standard input)
  std::string scenario_text;  // hashed (FNV-1a, 64 bits)
  std::string scaling;        // none, weak or strong
  const std::vector<config::SweepAxis>* axes = nullptr;
  std::uint64_t points = 0;
  std::optional<Shard> shard;  // only when --shard was given
};

std::string sweep_header_line(const SweepIdentity& sweep);  // each line ends in '\n'
std::string sweep_trailer_line(bool complete, std::uint64_t points);
std::string csv_trailer_line(std::uint64_t points);

// A line read back: which kind, and its parsed JSON (key order kept).
enum class SweepLineKind { header, point, trailer };
struct SweepLine {
  SweepLineKind kind = SweepLineKind::point;
  nlohmann::ordered_json json;
  std::int64_t index = 0;  // point lines
};

// InputError naming the file and the line (1-based) when the line is not JSON or none of the three,
// or breaks the limits of JSON input (config/json_text.hpp: 64 MiB, nesting, string length).
SweepLine parse_sweep_line(const std::string& line, const std::string& file, std::uint64_t number);

// std::getline() that stops with an InputError naming the file and line once a line passes the
// 64 MiB of a JSON input (a file without line breaks, /dev/zero), instead of reading it whole: none at
// the end of the input, whole for a line that ends in '\n', cut for a last line without one.
enum class LineRead { none, whole, cut };
LineRead read_sweep_line(std::istream& in, std::string& line, const std::string& file, std::uint64_t number);

// The header's "sweep" object without what may differ between files of one sweep (the scenario's
// path and the shard).
nlohmann::ordered_json sweep_identity(const SweepLine& header);
// The header's total points; InputError when it has none.
std::uint64_t header_points(const SweepLine& header, const std::string& file);

}  // namespace dtsim::cli
