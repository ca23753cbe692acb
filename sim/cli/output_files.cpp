#include "cli/output_files.hpp"

#include <filesystem>
#include <fstream>

#include "core/errors.hpp"

namespace dtsim::cli {

void write_files(const std::vector<OutputFile>& files) {
  // First every path is opened without truncating; if one fails, the files this call created are removed
  // and the existing ones are left as they were.
  std::vector<std::string> created;
  for (const OutputFile& file : files) {
    const bool existed = std::filesystem::exists(file.path);
    std::ofstream probe(file.path, std::ios::binary | std::ios::app);
    if (probe && !existed) created.push_back(file.path);
    if (!probe) {
      std::error_code ignored;
      for (const std::string& path : created) std::filesystem::remove(path, ignored);
      throw core::InputError(file.path, "", "cannot open the file for writing");
    }
  }
  for (const OutputFile& file : files) {
    std::ofstream stream(file.path, std::ios::binary | std::ios::trunc);
    stream << file.content;
    stream.close();
    if (!stream) throw core::InputError(file.path, "", "could not write the file");
  }
}

}  // namespace dtsim::cli
