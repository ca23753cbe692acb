// `--report FILE.html|.md|.csv` on run, sweep, compare, search and plan: the option (its extension is checked when
// the command line is parsed, so anything else is a usage error, exit 2) and the rendering of a
// ReportData into the file's format.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "results/report_data.hpp"

namespace dtsim::cli {

void add_report_option(CLI::App* cmd, std::string& path);

// The report's bytes in the format the path's extension names.
std::string render_report(const std::string& path, const results::ReportData& data);

// InputError naming the path when its folder does not exist: a command that streams other output first
// (sweep) calls this before it starts.
void check_report_folder(const std::string& path);

// render_report() written to path through write_files() (output_files.hpp).
void write_report_file(const std::string& path, const results::ReportData& data);

}  // namespace dtsim::cli
