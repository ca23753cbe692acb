// dtsim merge FILE...: joins the JSON Lines of sweep shards (sweep_lines.hpp) into one sweep, ordered by
// point index. The files are read twice, line by line, never whole: once to check everything (each
// line, the order of each file's points, no point twice, the same sweep in every file, and whether
// the files make a complete sweep), then to write the merged lines, so memory does not grow with the
// points and a bad input stops the merge with nothing written. Unfinished sweeps (a file without the
// last line, or points of the sweep in none of the files) are refused unless --allow-incomplete; the
// merged output's last line then says "sweep_complete": false.
#include <fstream>
#include <optional>
#include <queue>

#include <fmt/format.h>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "cli/output_files.hpp"
#include "cli/sweep_lines.hpp"
#include "core/errors.hpp"

namespace dtsim::cli {

CLI::App* add_merge_command(CLI::App& app, MergeOptions& o) {
  CLI::App* cmd = app.add_subcommand("merge", "Join the JSON Lines of sweep shards, ordered by point index");
  cmd->add_option("inputs", o.inputs, "Files written by dtsim sweep --shard K/N --format jsonl")->required();
  cmd->add_option("--out", o.out_path, "Write to FILE instead of standard output");
  cmd->add_flag("--allow-incomplete", o.allow_incomplete,
                "Merge unfinished sweeps too (the output's last line says it is incomplete)");
  return cmd;
}

namespace {

constexpr const char* kOrAllow = "expected the files of a finished sweep, or --allow-incomplete";

// One input file's point lines in order, checked as they are read.
class SweepFileReader {
 public:
  explicit SweepFileReader(std::string path) : path_(std::move(path)), in_(path_, std::ios::binary) {
    if (!in_) throw core::InputError(path_, "", "cannot read the file");
    read_line();
  }

  const std::string& path() const { return path_; }
  const std::optional<SweepLine>& header() const { return header_; }
  // The current point line (text and index), if any: next() moves on.
  bool has_point() const { return line_.has_value(); }
  std::int64_t index() const { return line_->index; }
  const std::string& text() const { return text_; }
  void next() { read_line(); }
  // At the end: whether the file closed with the last line of a complete sweep file.
  bool complete() const { return complete_; }
  std::uint64_t points() const { return points_; }

 private:
  void read_line() {
    line_.reset();
    while (read_sweep_line(in_, text_, path_, number_ + 1) != LineRead::none) {
      ++number_;
      if (text_.empty()) continue;
      if (ended_) {
        throw core::InputError(path_, "",
                               fmt::format("line {}: a line after the sweep's last line", number_));
      }
      SweepLine line = parse_sweep_line(text_, path_, number_);
      const bool first = !seen_line_;
      seen_line_ = true;
      if (line.kind == SweepLineKind::header && first) {
        points_in_sweep_ = header_points(line, path_);
        header_ = std::move(line);
        continue;
      }
      if (line.kind == SweepLineKind::header) {
        throw core::InputError(
            path_, "", fmt::format("line {}: a sweep's first line in the middle of the file", number_));
      }
      if (line.kind == SweepLineKind::trailer) {
        ended_ = true;
        complete_ =
            line.json["sweep_complete"].get<bool>() && line.json["points"].get<std::uint64_t>() == points_;
        continue;
      }
      if (last_index_ && line.index <= *last_index_) {
        throw core::InputError(
            path_, "",
            fmt::format("line {}: point {} after point {}; expected the lines in index order, as dtsim sweep "
                        "writes them",
                        number_, line.index, *last_index_));
      }
      if (header_ && static_cast<std::uint64_t>(line.index) >= points_in_sweep_) {
        throw core::InputError(
            path_, "",
            fmt::format("line {}: point {} of a sweep of {} points", number_, line.index, points_in_sweep_));
      }
      last_index_ = line.index;
      ++points_;
      line_ = std::move(line);
      return;
    }
    if (in_.bad()) throw core::InputError(path_, "", "cannot read the file");
  }

  std::string path_;
  std::ifstream in_;
  std::string text_;
  std::uint64_t number_ = 0;
  std::optional<SweepLine> header_;
  std::uint64_t points_in_sweep_ = 0;
  std::optional<SweepLine> line_;
  std::optional<std::int64_t> last_index_;
  std::uint64_t points_ = 0;
  bool seen_line_ = false;
  bool ended_ = false;
  bool complete_ = false;
};

// Walks the files' points in index order (a k-way merge), calling emit(reader) for each; InputError
// when a point is in two files.
template <typename Emit>
void merge_points(std::vector<SweepFileReader>& readers, Emit&& emit) {
  const auto later = [&](std::size_t a, std::size_t b) { return readers[a].index() > readers[b].index(); };
  std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(later)> heads(later);
  for (std::size_t r = 0; r < readers.size(); ++r) {
    if (readers[r].has_point()) heads.push(r);
  }
  std::optional<std::int64_t> last;
  std::string last_path;
  while (!heads.empty()) {
    const std::size_t r = heads.top();
    heads.pop();
    SweepFileReader& reader = readers[r];
    if (last && reader.index() == *last) {
      throw core::InputError(reader.path(), "",
                             fmt::format("point {} appears twice (also in {})", reader.index(), last_path));
    }
    last = reader.index();
    last_path = reader.path();
    emit(reader);
    reader.next();
    if (reader.has_point()) heads.push(r);
  }
}

std::vector<SweepFileReader> open_all(const std::vector<std::string>& paths) {
  std::vector<SweepFileReader> readers;
  readers.reserve(paths.size());
  for (const std::string& path : paths) readers.emplace_back(path);
  return readers;
}

// The merged output's first line: the files' sweep without a shard; "" when no file names its sweep.
std::string merged_header(const std::vector<SweepFileReader>& readers) {
  const SweepFileReader* first = nullptr;
  for (const SweepFileReader& r : readers) {
    if (!r.header()) continue;
    if (first == nullptr) {
      first = &r;
    } else if (sweep_identity(*r.header()) != sweep_identity(*first->header())) {
      throw core::InputError(r.path(), "",
                             fmt::format("line 1: another sweep than {} (scenario, axes, scaling or points "
                                         "differ); expected the shards of one sweep",
                                         first->path()));
    }
  }
  if (first == nullptr) return "";
  nlohmann::ordered_json line = first->header()->json;
  line["sweep"].erase("shard");
  return line.dump() + "\n";
}

}  // namespace

int merge_command(const MergeOptions& o, std::ostream& out) {
  check_outputs({{"--out", o.out_path}}, o.inputs);
  // Pass 1: check every line and count; nothing is written.
  std::vector<SweepFileReader> readers = open_all(o.inputs);
  const std::string header = merged_header(readers);
  std::uint64_t points = 0;
  std::optional<std::int64_t> gap;  // the first point of the sweep in none of the files
  merge_points(readers, [&](const SweepFileReader& r) {
    if (!gap && r.index() != static_cast<std::int64_t>(points)) gap = static_cast<std::int64_t>(points);
    ++points;
  });
  if (points == 0 && header.empty()) {
    throw core::InputError(
        o.inputs.front(), "",
        "no sweep lines in the input; expected the JSON Lines written by dtsim sweep --format jsonl");
  }
  bool complete = !header.empty();
  for (const SweepFileReader& r : readers) {
    if (r.header() && r.complete()) continue;
    complete = false;
    if (o.allow_incomplete) continue;
    throw core::InputError(
        r.path(), "",
        r.header()
            ? fmt::format("an unfinished sweep (no last line {{\"sweep_complete\": true}} after its {} "
                          "points); {}",
                          r.points(), kOrAllow)
            : fmt::format("no first line naming the sweep (not written by this dtsim sweep); {}", kOrAllow));
  }
  if (complete) {
    const std::uint64_t all = header_points(*readers.front().header(), readers.front().path());
    if (points != all) {
      complete = false;
      if (!o.allow_incomplete) {
        throw core::InputError(
            o.inputs.front(), "",
            fmt::format("the files hold {} of the sweep's {} points (point {} is in none of them: a shard "
                        "missing?); {}",
                        points, all, gap.value_or(static_cast<std::int64_t>(points)), kOrAllow));
      }
    }
  }

  // Pass 2: the merged lines, to a temporary renamed over --out at the end (or to the output stream).
  std::optional<core::OpenedFile> file;
  if (!o.out_path.empty()) file = core::open_for_writing(o.out_path);
  try {
    std::string chunk = header;
    const auto flush = [&] {
      if (file) {
        file->file.write(chunk);
      } else {
        write_stream(out, chunk);
      }
      chunk.clear();
    };
    readers = open_all(o.inputs);
    merge_points(readers, [&](const SweepFileReader& r) {
      chunk += r.text();
      chunk += '\n';
      if (chunk.size() >= (1U << 20)) flush();
    });
    chunk += sweep_trailer_line(complete, points);
    flush();
    if (file) core::commit(*file);
  } catch (...) {
    if (file) core::discard(*file);
    throw;
  }
  return kExitOk;
}

}  // namespace dtsim::cli
