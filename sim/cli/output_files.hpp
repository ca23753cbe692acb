// Output files of one command, written all or nothing: every path is opened (without truncating) before
// any is written, so a path that cannot be opened stops the command with no file created or changed.
#pragma once

#include <string>
#include <vector>

namespace dtsim::cli {

struct OutputFile {
  std::string path;
  std::string content;
};

// Checks every path, then writes the files; InputError naming the first path that cannot be opened
// (nothing written) or written.
void write_files(const std::vector<OutputFile>& files);

}  // namespace dtsim::cli
