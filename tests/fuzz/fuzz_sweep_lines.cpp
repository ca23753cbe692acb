// libFuzzer target: the reader of sweep output (cli/sweep_lines.hpp) as `dtsim merge` runs it
// (cli::merge_command). The first byte splits the rest into two shard files (at its value's share of
// the length) and, by its low bit, adds --allow-incomplete; each file is written once per input to a
// temporary folder. The merge must succeed or refuse the input with an InputError.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "fuzz_target.hpp"

namespace {

const std::filesystem::path& folder() {
  static const std::filesystem::path path = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "dtsim-fuzz-sweep-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    return std::filesystem::path(pattern);
  }();
  return path;
}

std::string write(const std::string& name, const std::string& content) {
  const std::filesystem::path path = folder() / name;
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << content;
  if (!file) std::abort();
  return path.string();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text = dtsim::fuzz::as_text(data + 1, size - 1);
  const std::size_t cut = text.size() * data[0] / 256;
  dtsim::cli::MergeOptions options;
  options.inputs = {write("a.jsonl", text.substr(0, cut)), write("b.jsonl", text.substr(cut))};
  options.allow_incomplete = (data[0] & 1) != 0;
  std::ostringstream out;
  return dtsim::fuzz::accept_or_refuse([&] { dtsim::cli::merge_command(options, out); });
}
