// The three kinds of failure dtsim knows (DESIGN.md, "Contracts"):
//  - InputError: the user's input is wrong (file, JSON pointer, value, expectation); exit status 2.
//  - a valid but infeasible plan is not an error: it is a result with status "infeasible". Where a
//    stage deep in the pipeline finds one (an iteration too large to simulate, a time beyond the
//    engine's clock), it throws InfeasibleError and results::evaluate() turns it into that result.
//  - InternalError: a bug in dtsim (a broken invariant); exit status 1.
//  - OutputError: an output could not be written (disk full, an I/O error, a device that refuses the
//    bytes): neither the input's fault nor a bug; exit status 1, the message names the file.
// Library code throws; only sim/cli (and evaluate(), for InfeasibleError) catches.
#pragma once

#include <stdexcept>
#include <string>

namespace dtsim::core {

class InputError : public std::runtime_error {
 public:
  // file: the input's path ("-" for stdin, or "" when not from a file); pointer: RFC 6901 JSON
  // pointer of the offending value ("" for the whole document); message: what was found and what
  // was expected.
  InputError(std::string file, std::string pointer, std::string message);

  const std::string& file() const { return file_; }
  const std::string& pointer() const { return pointer_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  std::string pointer_;
  std::string message_;
};

// A valid scenario that cannot be simulated; the message is the result's reason.
class InfeasibleError : public std::runtime_error {
 public:
  explicit InfeasibleError(const std::string& reason) : std::runtime_error(reason) {}
};

class OutputError : public std::runtime_error {
 public:
  explicit OutputError(const std::string& what) : std::runtime_error(what) {}
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what) : std::logic_error(what) {}
};

[[noreturn]] void fail_check(const char* condition, const char* file, int line, const std::string& message);

}  // namespace dtsim::core

// Invariant check for conditions that only a bug can break (never for user input).
#define DTSIM_CHECK(cond, msg)                                                \
  do {                                                                        \
    if (!(cond)) ::dtsim::core::fail_check(#cond, __FILE__, __LINE__, (msg)); \
  } while (false)
