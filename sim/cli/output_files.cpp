#include "cli/output_files.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <ostream>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace dtsim::cli {

namespace {

namespace fs = std::filesystem;

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {};
  struct stat sb {};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0) {
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  }
  std::error_code ea, eb;
  const fs::path ca = fs::weakly_canonical(fs::absolute(a, ea), ea);
  const fs::path cb = fs::weakly_canonical(fs::absolute(b, eb), eb);
  return !ea && !eb && ca == cb;
}

// Devices, FIFOs and sockets (/dev/null, a terminal): not files an output could destroy.
bool is_device(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  return !ec && fs::exists(status) && !fs::is_regular_file(status) && !fs::is_directory(status);
}

std::string pointer_of(const std::string& option) {
  std::string pointer(1, '/');
  pointer.append(option, option.find_first_not_of('-'));
  return pointer;
}

}  // namespace

void check_outputs(const std::vector<OutputPath>& outputs, const std::vector<std::string>& inputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const OutputPath& o = outputs[i];
    if (o.path.empty() || is_device(o.path)) continue;
    for (const std::string& input : inputs) {
      if (input.empty() || input == "-" || !same_file(o.path, input)) continue;
      throw core::InputError(
          "command line", pointer_of(o.option),
          fmt::format("got \"{}\", the same file as the input {}; expected another file (writing {} "
                      "would replace its input)",
                      o.path, input, o.option));
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (outputs[j].path.empty() || !same_file(o.path, outputs[j].path)) continue;
      throw core::InputError(
          "command line", pointer_of(o.option),
          fmt::format("got \"{}\", the same file as {}; expected another file", o.path, outputs[j].option));
    }
  }
}

void write_stream(std::ostream& out, std::string_view text) {
  out << text << std::flush;
  if (!out) throw core::OutputError("cannot write to standard output");
}

}  // namespace dtsim::cli
