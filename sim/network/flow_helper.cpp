#include "network/flow_helper.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

#include <fmt/format.h>

#include "core/errors.hpp"

extern char** environ;

namespace dtsim::network {

namespace {

namespace fs = std::filesystem;

// Closes a file descriptor when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// Writes on a socket without SIGPIPE (a helper that died must not kill the caller).
bool send_all(int fd, const char* p, std::size_t size) {
  while (size > 0) {
    const ssize_t w = ::send(fd, p, size, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    size -= static_cast<std::size_t>(w);
  }
  return true;
}

bool write_all(int fd, const char* p, std::size_t size) {
  while (size > 0) {
    const ssize_t w = ::write(fd, p, size);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    size -= static_cast<std::size_t>(w);
  }
  return true;
}

bool read_all(int fd, char* p, std::size_t size) {
  while (size > 0) {
    const ssize_t r = ::read(fd, p, size);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    size -= static_cast<std::size_t>(r);
  }
  return true;
}

std::string framed(const std::string& bytes) {
  const auto size = static_cast<std::uint64_t>(bytes.size());
  std::string out(reinterpret_cast<const char*>(&size), sizeof size);
  return out + bytes;
}

// Spawn file actions, destroyed with the object.
class FileActions {
 public:
  FileActions() { ::posix_spawn_file_actions_init(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  ~FileActions() { ::posix_spawn_file_actions_destroy(&actions_); }
  posix_spawn_file_actions_t* get() { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
};

}  // namespace

fs::path flow_helper_executable() {
  std::error_code ec;
  if (const char* env = std::getenv("DTSIM_EXE"); env != nullptr && *env != '\0') {
    const fs::path path(env);
    if (!fs::is_regular_file(path, ec) || ::access(env, X_OK) != 0) {
      throw core::InternalError(fmt::format(
          "the flow network model runs SimGrid in a dtsim helper process, but DTSIM_EXE={} is not an "
          "executable file",
          env));
    }
    return path;
  }
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    throw core::InternalError(
        "the flow network model runs SimGrid in a dtsim helper process, but /proc/self/exe cannot be "
        "read to find the dtsim executable: set DTSIM_EXE to its path");
  }
  if (self.filename() != "dtsim") {
    throw core::InternalError(fmt::format(
        "the flow network model runs SimGrid in a dtsim helper process, and this program ({}) is not "
        "dtsim: set DTSIM_EXE to the dtsim executable's path",
        self.string()));
  }
  return self;
}

bool read_message(int fd, std::string& bytes) {
  std::uint64_t size = 0;
  if (!read_all(fd, reinterpret_cast<char*>(&size), sizeof size)) return false;
  if (size > (std::uint64_t{1} << 40)) return false;
  bytes.assign(static_cast<std::size_t>(size), '\0');
  return read_all(fd, bytes.data(), bytes.size());
}

bool write_message(int fd, const std::string& bytes) {
  const std::string message = framed(bytes);
  return write_all(fd, message.data(), message.size());
}

std::string call_flow_helper(const std::string& request) {
  const fs::path exe = flow_helper_executable();
  // Everything that may throw happens before the spawn: from then on the helper is always waited for.
  const std::string message = framed(request);
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    throw core::InternalError(fmt::format("flow model: socketpair() failed: {}", std::strerror(errno)));
  }
  Fd ours(pair[0]);
  // The helper's end, moved above the descriptors the helper maps, so that dup2 onto kFlowHelperFd
  // always makes a new descriptor (a dup2 onto itself would keep close-on-exec).
  Fd theirs(::fcntl(pair[1], F_DUPFD_CLOEXEC, kFlowHelperFd + 1));
  ::close(pair[1]);
  if (theirs.get() < 0) throw core::InternalError("flow model: fcntl(F_DUPFD_CLOEXEC) failed");

  FileActions actions;
  ::posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_addopen(actions.get(), STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  ::posix_spawn_file_actions_adddup2(actions.get(), theirs.get(), kFlowHelperFd);
  std::string program = exe.string();
  std::string argument(kFlowHelperArgument);
  char* argv[] = {program.data(), argument.data(), nullptr};
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, program.c_str(), actions.get(), nullptr, argv, environ);
  theirs.reset();
  if (spawned != 0) {
    throw core::InternalError(
        fmt::format("flow model: cannot start the helper {}: {}", program, std::strerror(spawned)));
  }
  const bool sent = send_all(ours.get(), message.data(), message.size());
  std::string answer;
  bool answered = false;
  try {
    answered = sent && read_message(ours.get(), answer);
  } catch (const std::exception&) {  // an answer too large to hold: a failed helper, still waited for
    answered = false;
  }
  ours.reset();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!answered || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw core::InternalError(fmt::format(
        "flow model: the SimGrid helper process ({} {}) failed ({})", program, kFlowHelperArgument,
        WIFSIGNALED(status) ? fmt::format("signal {}", WTERMSIG(status))
        : WIFEXITED(status)
            ? fmt::format("exit status {}{}", WEXITSTATUS(status), answered ? "" : ", no answer")
            : std::string("no answer")));
  }
  return answer;
}

}  // namespace dtsim::network
