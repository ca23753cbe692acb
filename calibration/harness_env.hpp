// What the calibration harnesses (calibration/cpu, calibration/cuda) share outside their
// measurements: the command-line value of an option, the host and the date a profile's sources name,
// and the writing of a profile file. Header-only: only the harness executables use it.
#pragma once

#include <unistd.h>

#include <array>
#include <ctime>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_files.hpp"
#include "core/errors.hpp"

namespace dtsim::calibration {

// The value after option argv[i] (i moves to it); InputError when the command line ends first.
inline std::string option_value(int argc, char** argv, int& i) {
  if (i + 1 >= argc) throw core::InputError("command line", "", fmt::format("{} needs a value", argv[i]));
  return argv[++i];
}

// The options every profile-writing harness takes: --out PROFILE_DIR (required), --id ID, --quick.
struct HarnessOptions {
  std::string out;
  std::string id;
  bool quick = false;
};

// Reads argv[i] into `o` when it is one of those options (i moves past its value) and says whether it
// was; a harness handles its own options when this returns false, and calls unknown_argument() last.
inline bool take_harness_option(HarnessOptions& o, int argc, char** argv, int& i) {
  const std::string a = argv[i];
  if (a == "--out") {
    o.out = option_value(argc, argv, i);
  } else if (a == "--id") {
    o.id = option_value(argc, argv, i);
  } else if (a == "--quick") {
    o.quick = true;
  } else {
    return false;
  }
  return true;
}

inline core::InputError unknown_argument(const char* arg) {
  return core::InputError("command line", "", fmt::format("unknown argument {}", arg));
}

// InputError when --out was not given.
inline void require_out(const HarnessOptions& o) {
  if (o.out.empty()) throw core::InputError("command line", "", "--out PROFILE_DIR is required");
}

inline std::string host_name() {
  std::array<char, 256> buf{};
  if (gethostname(buf.data(), buf.size() - 1) != 0) return "localhost";
  return buf.data();
}

inline std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::array<char, 32> buf{};
  std::strftime(buf.data(), buf.size(), "%Y-%m-%d %H:%M UTC", &tm);
  return buf.data();
}

// A file of a profile folder (a profile, a log), its folder created as needed, written whole or not at
// all (core/atomic_files.hpp): InputError naming a path that cannot be opened, OutputError when
// writing fails.
inline void write_output_file(const std::filesystem::path& path, const std::string& content) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  core::write_file(path.string(), content);
}

inline void write_profile_json(const std::filesystem::path& path, const nlohmann::ordered_json& j) {
  write_output_file(path, j.dump(2) + "\n");
}

}  // namespace dtsim::calibration
