// The helper process of the flow model: SimGrid runs in a fresh process started from the dtsim
// executable (posix_spawn, never fork: the caller may be multi-threaded, and a forked copy of a
// multi-threaded process may deadlock on a lock another thread held), so that SimGrid's one engine per
// process starts clean every time and never lives in the caller.
//
// Protocol: the helper is started as `DTSIM_EXE --internal-flow-helper` with one end of a Unix socket
// pair as its file descriptor 3 (standard input and output on /dev/null, standard error inherited); the
// caller sends one message (a 64-bit length, then the bytes of an encoded FlowJob, flow_job.hpp), the
// helper answers one message (the encoded phase times) and exits with status 0; anything else is a
// failure of the helper.
//
// Which executable: the DTSIM_EXE environment variable when it is set (programs other than dtsim that
// simulate flows, such as the test and benchmark binaries, set it to the dtsim they were built with);
// else the running program itself when it is dtsim (/proc/self/exe named "dtsim"). Otherwise, or when
// that file is not an executable, InternalError saying so.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace dtsim::network {

inline constexpr std::string_view kFlowHelperArgument = "--internal-flow-helper";
inline constexpr int kFlowHelperFd = 3;

std::filesystem::path flow_helper_executable();

// Starts the helper, sends `request`, returns its answer; InternalError when the helper cannot be
// started, fails or answers nothing.
std::string call_flow_helper(const std::string& request);

// One message on a file descriptor: false on end of file or an error.
bool read_message(int fd, std::string& bytes);
bool write_message(int fd, const std::string& bytes);

}  // namespace dtsim::network
