// Where a sweep's lines go, written as they come and never lost:
//  - no --out: the output stream (each write flushed and checked);
//  - --out FILE that is written in place (a device such as /dev/stdout, core/atomic_files.hpp): FILE;
//  - --out FILE otherwise: FILE.partial, created for this sweep (an existing one is refused unless
//    resuming) and locked against a second sweep, every line written through; once the last line is
//    written it is synced and renamed to FILE, so FILE only ever holds a complete sweep.
// --resume carries on from FILE.partial (sweep_resume.hpp says what it must hold): a cut-short last line
// is cut off and the next point line is appended; without FILE.partial the sweep starts from its first
// point.
// On failure (abandon()), a FILE.partial that this run created and that holds no point line yet is
// removed; one with points is kept for --resume.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

#include "cli/sweep_resume.hpp"
#include "core/atomic_files.hpp"

namespace dtsim::cli {

struct SweepSinkOptions {
  std::string out_path;  // "" for the output stream
  bool resume = false;
  std::string header;  // the first line (JSON Lines) or the CSV header row
  const config::SweepSpace* space = nullptr;
  Shard shard;
  std::uint64_t count = 0;  // points of this sweep (shard)
};

// FILE.partial for --out FILE.
std::string partial_path(const std::string& out_path);

class SweepSink {
 public:
  // Opens (or, resuming, checks and reopens) the sink; InputError when it cannot.
  SweepSink(const SweepSinkOptions& options, std::ostream& out);

  std::uint64_t done() const { return done_; }  // point lines already there (resume)
  bool any_not_ok() const { return resumed_.any_not_ok; }
  // The header, unless already written (call before the first point line).
  void begin();
  void write_point(std::string_view line);
  // The last line; then FILE.partial becomes FILE.
  void finish(std::string_view last_line);
  void abandon();

 private:
  void write(std::string_view text);
  void lock(int fd);  // InputError when another sweep holds FILE.partial

  SweepSinkOptions options_;
  std::ostream& out_;
  std::optional<core::CheckedFile> file_;
  std::optional<core::CheckedFile> lock_;  // resuming: the read-only descriptor that holds the lock
  std::string partial_;                    // "" unless writing FILE.partial
  bool created_ = false;
  bool header_written_ = false;
  std::uint64_t done_ = 0;
  std::uint64_t written_ = 0;  // point lines written by this run
  PartialSweep resumed_;
};

}  // namespace dtsim::cli
