// Output files that are never lost or left half-written.
//
// A regular file is written to a temporary file in the same folder (".NAME.tmp-PID-N", created
// exclusively with the usual permissions, or with the mode of the file it replaces), flushed to disk
// (fsync), checked for every write error, and only then renamed over the target: a reader sees the
// old file or the whole new one, never a part, and a failure leaves the old file as it was and no
// temporary behind. A target that is a symbolic link replaces the file the link points to.
// Paths that cannot be renamed onto are written in place, every write checked: anything that exists
// and is not a regular file or a link to one (character devices such as /dev/full, FIFOs, sockets) and
// any path under /dev/ or /proc/ (/dev/stdout, /proc/self/fd/N: renaming onto the file they lead to
// would replace the file the shell opened). They are opened without truncating or creating, in
// append mode.
//
// Errors: a path that cannot be opened for writing because of where it points (no such folder, a
// folder, no permission, read-only file system) is bad input, InputError naming the path; a failure to
// write, flush or rename (disk full, I/O error) is OutputError "cannot write PATH: REASON".
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dtsim::core {

struct FileContent {
  std::string path;
  std::string content;
};

// Whether `path` is written in place rather than through a temporary file (above).
bool written_in_place(const std::string& path);

// Every file or none: all temporaries are written and synced first, then the in-place targets, then
// the temporaries are renamed one by one (only a failing rename, after the others, can leave some
// files new and some old). On failure the temporaries are removed.
void write_files(const std::vector<FileContent>& files);
inline void write_file(const std::string& path, const std::string& content) {
  write_files({{path, content}});
}

// A file written by descriptor, every write checked; closed (errors ignored) when destroyed without
// close(). Errors are OutputErrors naming `path`.
class CheckedFile {
 public:
  CheckedFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  CheckedFile(CheckedFile&& other) noexcept;
  CheckedFile& operator=(CheckedFile&& other) noexcept;
  CheckedFile(const CheckedFile&) = delete;
  CheckedFile& operator=(const CheckedFile&) = delete;
  ~CheckedFile();

  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  void write(std::string_view bytes);
  void sync();   // fsync; descriptors that cannot be synced (devices, pipes) are let be
  void close();  // checks the close too; sync() and close() of a closed file do nothing

 private:
  int fd_ = -1;
  std::string path_;
};

// One target opened for writing as described above: in place (temporary empty) or through a fresh
// temporary beside `target` (the file a link points to). InputError when it cannot be opened.
struct OpenedFile {
  CheckedFile file;
  std::string temporary;
  std::string target;
};
OpenedFile open_for_writing(const std::string& path);

// Syncs and closes the file, then renames its temporary over the target and syncs the folder;
// OutputError on failure (the temporary is removed then).
void commit(OpenedFile& opened);
// Closes the file and removes its temporary, ignoring errors (a failed command's cleanup).
void discard(OpenedFile& opened);

// open(2) of `path` for a caller that manages the file itself (flags: O_WRONLY, O_CREAT, O_EXCL, ...;
// O_CLOEXEC is added), failures classified as above: InputError or OutputError naming the path.
CheckedFile open_file(const std::string& path, int flags, unsigned mode = 0666);

// Renames `from` over `to` (same folder) and syncs the folder; OutputError on failure.
void rename_over(const std::string& from, const std::string& to);

}  // namespace dtsim::core
