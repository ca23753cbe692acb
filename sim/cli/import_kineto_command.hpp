// dtsim import kineto TRACE --out TABLE [--gpu ID]: per-kernel durations of a PyTorch profiler (Kineto)
// Chrome trace mapped to operator classes, and the GEMM throughput rows they imply, written as JSON
// (reports/kernel_table_json.hpp). With --gpu, the GPU's GEMM curve is refitted to those rows (its peak,
// SM count and tile) for the precision with the most rows, so the table can replace the profile's curve.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace dtsim::cli {

struct ImportKinetoOptions {
  std::string trace;
  std::string out_path;
  std::string gpu;
};

// Adds `kineto` under the existing `import` subcommand.
CLI::App* add_import_kineto_command(CLI::App& import, ImportKinetoOptions& options);
int import_kineto_command(const ImportKinetoOptions& options, std::ostream& out);

}  // namespace dtsim::cli
