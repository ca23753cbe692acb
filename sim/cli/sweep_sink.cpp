#include "cli/sweep_sink.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>

#include "cli/output_files.hpp"
#include "core/errors.hpp"

namespace dtsim::cli {

std::string partial_path(const std::string& out_path) { return out_path + ".partial"; }

SweepSink::SweepSink(const SweepSinkOptions& options, std::ostream& out) : options_(options), out_(out) {
  const std::string& path = options_.out_path;
  if (path.empty()) return;
  if (core::written_in_place(path)) {
    if (options_.resume) {
      throw core::InputError("command line", "/resume",
                             "--resume carries on from FILE.partial of --out FILE; " + path +
                                 " is written in place (a device), which cannot be resumed");
    }
    file_ = core::open_for_writing(path).file;
    return;
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw core::InputError(path, "", "cannot open the file for writing: it is a folder");
  }
  partial_ = partial_path(path);
  const bool exists = std::filesystem::exists(partial_, ec);
  if (exists && !options_.resume) {
    throw core::InputError(
        partial_, "",
        "an unfinished sweep is in this file; pass --resume to carry on from it, or remove it "
        "to start over");
  }
  if (!exists) {
    file_ = core::open_file(partial_, O_WRONLY | O_APPEND | O_CREAT | O_EXCL);
    created_ = true;
    lock(file_->fd());
    return;
  }
  // Resuming: locked and checked through a read-only descriptor first, so that a file that is not
  // this sweep's is refused without being opened for writing.
  lock_ = core::open_file(partial_, O_RDONLY);
  lock(lock_->fd());
  resumed_ = read_partial_sweep(partial_, options_.header, *options_.space, options_.shard, options_.count);
  file_ = core::open_file(partial_, O_WRONLY | O_APPEND);
  if (::ftruncate(file_->fd(), static_cast<off_t>(resumed_.keep_bytes)) != 0) {
    throw core::OutputError("cannot write " + partial_ + ": cannot cut off its unfinished last line");
  }
  header_written_ = resumed_.has_header;
  done_ = resumed_.points;
}

void SweepSink::lock(int fd) {
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    throw core::InputError(partial_, "", "another dtsim sweep is writing this file");
  }
}

void SweepSink::write(std::string_view text) {
  if (file_) {
    file_->write(text);
  } else {
    write_stream(out_, text);
  }
}

void SweepSink::begin() {
  if (header_written_) return;
  write(options_.header);
  header_written_ = true;
}

void SweepSink::write_point(std::string_view line) {
  begin();
  write(line);
  ++written_;
}

void SweepSink::finish(std::string_view last_line) {
  begin();
  if (!resumed_.complete) write(last_line);
  if (!file_) return;
  file_->sync();
  file_->close();
  lock_.reset();
  if (!partial_.empty()) core::rename_over(partial_, options_.out_path);
  partial_.clear();
}

void SweepSink::abandon() {
  file_.reset();
  lock_.reset();
  if (!partial_.empty() && created_ && written_ == 0) ::unlink(partial_.c_str());
}

}  // namespace dtsim::cli
