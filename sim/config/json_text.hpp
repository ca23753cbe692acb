// Reading JSON text under limits and parsing it into a DOM in time linear in its length.
//
// Every JSON input (a file, or "-" for standard input) is bounded before it becomes a DOM, so that a
// hostile or broken input is an InputError and never a crash, a hang or an exhausted memory:
//  - size: at most JsonLimits::max_bytes are read; the reader stops after max_bytes + 1 bytes, so
//    /dev/zero or a huge file fails at once ("input is larger than ...").
//  - nesting: at most max_depth nested arrays and objects ("nesting deeper than ... at line L,
//    column C"). Checked by a linear scan of the text before the DOM is built: what consumes a DOM
//    (nlohmann's dump, the loaders) recurses once per level.
//  - strings: at most max_string_bytes between a string's quotes as written ("string longer than
//    ... at line L, column C"), keys included.
// The limits are checked before the grammar: a text that breaks a limit is reported for it even when
// it is also malformed further on.
//
// Limits (the largest shipped input in brackets, measured over every .json file of the tree):
//  - depth 256 for every input [7, a Kineto trace]: deep enough for any real configuration or trace,
//    shallow enough that a recursive consumer uses at most a few hundred kB of stack even under
//    AddressSanitizer (about 0.8 kB a level; 10,000 levels overflowed an 8 MiB stack).
//  - document() for scenarios, plans, profiles, presets and layer tables: 64 MiB [100 kB], strings
//    of 64 KiB [3.3 kB]. A DOM takes about 8 times its text in memory.
//  - trace() for Kineto traces: 1 GiB (torch.profiler traces of a few steps reach hundreds of MB; a
//    1 M-event trace is 300 MB), strings of 1 MiB (templated kernel names reach a few kB).
//
// Parsing: malformed JSON is reported with its line and column (1-based, counted in bytes from the
// start of the line), duplicate keys in an object are rejected with the key's JSON pointer, an empty
// input says so. The DOM is built by a SAX handler in one pass, in time linear in the text (times the
// logarithm of an object's key count, for the duplicate check); nlohmann's callback parser, which the
// check used before, rescans the enclosing array at every object's end: quadratic.
#pragma once

#include <cstddef>
#include <istream>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace dtsim::config {

struct JsonLimits {
  std::size_t max_bytes = 0;
  std::size_t max_depth = 0;
  std::size_t max_string_bytes = 0;
  const char* kind = "";  // what the input is, for messages: "a scenario, plan or profile file"

  static constexpr std::size_t kMaxDepth = 256;

  static constexpr JsonLimits document() {
    return {std::size_t{64} << 20U, kMaxDepth, std::size_t{64} << 10U, "a scenario, plan or profile file"};
  }
  static constexpr JsonLimits trace() {
    return {std::size_t{1} << 30U, kMaxDepth, std::size_t{1} << 20U, "a Kineto trace"};
  }
};

// Parses `text`; `source` names it in errors (a path, "-" for stdin).
nlohmann::json parse_json_text(const std::string& text, const std::string& source,
                               const JsonLimits& limits = JsonLimits::document());

// The limits alone (size, nesting, strings), in one linear pass; parse_json_text() starts with it.
// For text that another parser reads, e.g. a value given on the command line.
void check_json_limits(const std::string& text, const std::string& source,
                       const JsonLimits& limits = JsonLimits::document());

// Reads a whole file as text, at most limits.max_bytes of it; a missing, unreadable or directory
// path is an InputError ("cannot open file: ...").
std::string read_text_file(const std::string& path, const JsonLimits& limits = JsonLimits::document());

// Reads `in` to its end, at most limits.max_bytes of it; `source` names it in errors ("-").
std::string read_text_stream(std::istream& in, const std::string& source,
                             const JsonLimits& limits = JsonLimits::document());

// read_text_file() then parse_json_text().
nlohmann::json read_json_file(const std::string& path, const JsonLimits& limits = JsonLimits::document());

}  // namespace dtsim::config
