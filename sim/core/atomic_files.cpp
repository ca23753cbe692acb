#include "core/atomic_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace dtsim::core {

namespace {

namespace fs = std::filesystem;

std::string reason(int error) { return std::strerror(error); }

[[noreturn]] void throw_write_error(const std::string& path, int error) {
  throw OutputError(fmt::format("cannot write {}: {}", path, reason(error)));
}

// An open() that failed: bad input when the path cannot hold a file we may write, else an output error.
[[noreturn]] void throw_open_error(const std::string& path, int error) {
  switch (error) {
    case ENOENT:
    case ENOTDIR:
    case EISDIR:
    case EACCES:
    case EPERM:
    case EROFS:
    case ENAMETOOLONG:
    case ELOOP:
    case ENXIO:
      throw InputError(path, "", fmt::format("cannot open the file for writing: {}", reason(error)));
    default:
      throw_write_error(path, error);
  }
}

bool starts_with(const std::string& text, std::string_view prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

void sync_folder(const fs::path& file) {
  const fs::path folder = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);  // best effort: the rename is done; this only makes it durable sooner
  ::close(fd);
}

}  // namespace

bool written_in_place(const std::string& path) {
  std::error_code ec;
  const std::string absolute = fs::absolute(path, ec).lexically_normal().string();
  if (starts_with(absolute, "/dev/") || starts_with(absolute, "/proc/")) return true;
  const fs::file_status status = fs::status(path, ec);  // follows links
  return !ec && fs::exists(status) && !fs::is_regular_file(status) && !fs::is_directory(status);
}

CheckedFile::CheckedFile(CheckedFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

CheckedFile& CheckedFile::operator=(CheckedFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

CheckedFile::~CheckedFile() {
  if (fd_ >= 0) ::close(fd_);
}

void CheckedFile::write(std::string_view bytes) {
  const char* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t w = ::write(fd_, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) throw_write_error(path_, errno);
    if (w == 0) throw_write_error(path_, EIO);
    p += w;
    left -= static_cast<std::size_t>(w);
  }
}

void CheckedFile::sync() {
  if (fd_ < 0) return;
  if (::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS && errno != ENOTSUP) {
    throw_write_error(path_, errno);
  }
}

void CheckedFile::close() {
  const int fd = std::exchange(fd_, -1);
  if (fd >= 0 && ::close(fd) != 0 && errno != EINTR) throw_write_error(path_, errno);
}

OpenedFile open_for_writing(const std::string& path) {
  if (written_in_place(path)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) throw_open_error(path, errno);
    return {CheckedFile(fd, path), "", path};
  }
  std::error_code ec;
  fs::path target(path);
  if (fs::is_symlink(target, ec)) {
    const fs::path resolved = fs::weakly_canonical(target, ec);
    if (!ec) target = resolved;
  }
  if (fs::is_directory(target, ec)) {
    throw InputError(path, "", "cannot open the file for writing: it is a folder");
  }
  struct stat existing {};
  const bool replaces = ::stat(target.c_str(), &existing) == 0;
  const fs::path folder = target.parent_path();
  const std::string stem = fmt::format(".{}.tmp-{}-", target.filename().string(), ::getpid());
  for (int n = 0;; ++n) {
    const fs::path temporary = folder / (stem + std::to_string(n));
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST && n < 10000) continue;
    if (fd < 0) throw_open_error(path, errno);
    if (replaces) ::fchmod(fd, existing.st_mode & 07777);  // keep the replaced file's permissions
    return {CheckedFile(fd, path), temporary.string(), target.string()};
  }
}

CheckedFile open_file(const std::string& path, int flags, unsigned mode) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC, static_cast<mode_t>(mode));
  if (fd < 0) throw_open_error(path, errno);
  return CheckedFile(fd, path);
}

void rename_over(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) throw_write_error(to, errno);
  sync_folder(to);
}

void commit(OpenedFile& opened) {
  try {
    opened.file.sync();
    opened.file.close();
    if (!opened.temporary.empty()) rename_over(opened.temporary, opened.target);
  } catch (...) {
    discard(opened);
    throw;
  }
  opened.temporary.clear();
}

void discard(OpenedFile& opened) {
  opened.file = CheckedFile(-1, opened.file.path());
  if (!opened.temporary.empty()) ::unlink(opened.temporary.c_str());
  opened.temporary.clear();
}

void write_files(const std::vector<FileContent>& files) {
  std::vector<OpenedFile> opened;
  try {
    for (const FileContent& f : files) opened.push_back(open_for_writing(f.path));
    // Temporaries first (nothing visible changes if one fails), then the in-place targets.
    for (const bool in_place : {false, true}) {
      for (std::size_t i = 0; i < files.size(); ++i) {
        if (opened[i].temporary.empty() != in_place) continue;
        opened[i].file.write(files[i].content);
        opened[i].file.sync();
        opened[i].file.close();
      }
    }
    for (OpenedFile& o : opened) commit(o);
  } catch (...) {
    for (OpenedFile& o : opened) discard(o);
    throw;
  }
}

}  // namespace dtsim::core
