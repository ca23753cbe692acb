// The outputs of a command: checked against its inputs before anything runs, then written all or
// nothing, each file through a temporary renamed over it once complete (core/atomic_files.hpp).
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "core/atomic_files.hpp"

namespace dtsim::cli {

using OutputFile = core::FileContent;

// An output path and the option that named it ("--out", "--trace", "--report").
struct OutputPath {
  std::string option;
  std::string path;  // "" when the option was not given
};

// InputError (command line, /<option>) when an output names the same file as one of the inputs ("-" is
// standard input, not compared) or as another output: the same file when both exist (device and
// inode), else the same absolute path with links resolved. Outputs that are devices, FIFOs or sockets
// (/dev/null, a terminal) are not compared.
void check_outputs(const std::vector<OutputPath>& outputs, const std::vector<std::string>& inputs);

// Every file or none: InputError naming a path that cannot be opened for writing, OutputError
// ("cannot write PATH: ...", exit status 1) when writing fails.
using core::write_files;

// `text` on a command's output stream, flushed; OutputError when the stream fails (standard output
// on a full disk, /dev/full, a closed descriptor).
void write_stream(std::ostream& out, std::string_view text);

}  // namespace dtsim::cli
