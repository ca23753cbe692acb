// The subcommands of the dtsim command line. Each one declares its options on a CLI11 subcommand and
// runs from the parsed options; errors propagate to run_cli(), which alone catches them.
#pragma once

#include <iosfwd>
#include <string>

#include <CLI/CLI.hpp>

#include "config/scenario.hpp"

namespace dtsim::cli {

// A scenario from a file, or from `in` when the path is "-".
config::Scenario read_scenario(const std::string& path, std::istream& in);

struct RunOptions {
  std::string scenario;
  std::string format = "text";
  std::string out_path;    // "" writes the report to the output stream
  std::string trace_path;  // "" writes no trace
  bool no_timing = false;  // zero engine.wall_s so that repeated runs give identical bytes
};

CLI::App* add_run_command(CLI::App& app, RunOptions& options);
int run_command(const RunOptions& options, std::istream& in, std::ostream& out, std::ostream& err);

struct CheckOptions {
  std::string scenario;
};

CLI::App* add_check_command(CLI::App& app, CheckOptions& options);
int check_command(const CheckOptions& options, std::istream& in, std::ostream& out);

}  // namespace dtsim::cli
