// Reading the data files of the invalid-input cases (tests/invalid/*cases/).
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace dtsim::testing {

// The first line of a case file (e.g. the text an error message must contain), without a trailing CR.
inline std::string first_line(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

}  // namespace dtsim::testing
