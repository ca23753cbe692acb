// Reader of NVIDIA nccl-tests output logs (all_reduce_perf and friends), in the variants seen in the
// wild: current and pre-2.13 column layouts (with or without the `root` column, `#wrong` or `error`),
// numbers in fixed or scientific notation, `N/A` fields, and line prefixes added by launchers
// (`srun -l`: "0: ", Open MPI --tag-output: "[1,0]<stdout>:", or "host: "). Header lines give the
// ranks and hosts when present. A line that starts like a data row but does not parse is an
// InputError naming the file and line number.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtsim::calibration {

struct NcclLogMeasurement {
  double time_us = 0.0;
  double algbw_gbps = 0.0;
  double busbw_gbps = 0.0;
};

struct NcclLogRow {
  int line = 0;
  double size_bytes = 0.0;
  std::int64_t count = 0;
  std::string type;
  std::string redop;
  NcclLogMeasurement out_of_place;
  std::optional<NcclLogMeasurement> in_place;
};

struct NcclLog {
  std::string file;
  std::vector<NcclLogRow> rows;
  std::optional<int> ranks;            // "#  Rank  N Group ..." lines
  std::optional<int> hosts;            // distinct host names in those lines
  std::optional<std::string> program;  // e.g. "all_reduce_perf", when the log names it
};

NcclLog parse_nccl_log_text(const std::string& text, const std::string& file);
// The row's time in us: the faster of its out-of-place and in-place runs (single-row spikes of one of
// them are common in published logs); a run that printed no time (0) does not count.
double fastest_time_us(const NcclLogRow& row);

// Reads the log at `path` (at most 64 MiB; a larger or unreadable file is an InputError).
NcclLog read_nccl_log(const std::string& path);

}  // namespace dtsim::calibration
