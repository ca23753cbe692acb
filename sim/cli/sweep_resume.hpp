// dtsim sweep --resume: what an unfinished sweep's FILE.partial already holds. The file must be the
// JSON Lines (sweep_lines.hpp) of this very sweep: its first line the same sweep as this one's (same
// scenario text, axes, scaling and shard; the scenario's path may differ), then point lines that are
// exactly this sweep's first points in order (index and "set" checked, the results taken as they
// are), and possibly the last line. A last line cut short (no newline: the process stopped while
// writing it) is dropped. Anything else is an InputError naming the file and line: nothing is
// changed then.
#pragma once

#include <cstdint>
#include <string>

#include "cli/sweep_lines.hpp"
#include "config/sweep_points.hpp"

namespace dtsim::cli {

struct PartialSweep {
  bool has_header = false;       // an empty file (stopped before its first line) has none
  std::uint64_t points = 0;      // point lines kept
  std::uint64_t keep_bytes = 0;  // the file's length once a cut-short last line is dropped
  bool complete = false;         // it ends with the sweep's last line
  bool any_not_ok = false;       // a kept point's result is not "ok" (exit status 3 at the end)
};

// `header_line`: this sweep's first line; `count`: the points of this sweep (of its shard).
PartialSweep read_partial_sweep(const std::string& path, const std::string& header_line,
                                const config::SweepSpace& space, const Shard& shard, std::uint64_t count);

}  // namespace dtsim::cli
