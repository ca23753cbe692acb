// The kernel table of a PyTorch profiler trace (calibration/kernel_table.hpp) as JSON, written by
// dtsim import kineto (Output v1: the envelope of reports/output_envelope.hpp with inputs "trace" and
// "gpu", then the table's keys; schemas/output-import-kineto.schema.json): time per operator class,
// per kernel name (count, total, median, p10/p90 in microseconds) and the GEMM throughput rows in the hardware_profiles gemm.measured schema (m, n, k,
// precision, tflops), with the curve fitted to them when a GPU profile was given.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "calibration/fit_gemm.hpp"
#include "calibration/kernel_table.hpp"

namespace dtsim::reports {

struct GemmFitReport {
  std::string gpu;  // profile id whose peak and SM count the fit used
  config::Precision precision = config::Precision::bf16;
  calibration::GemmFit fit;
};

nlohmann::ordered_json kernel_table_json(const calibration::KernelTable& table,
                                         const std::optional<GemmFitReport>& fit);

}  // namespace dtsim::reports
