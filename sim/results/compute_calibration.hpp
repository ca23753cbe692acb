// Calibration of the compute model to a throughput measured on one GPU (training.measured_single_gpu,
// docs/data-parallel.md "Data-parallel classics"): "I measured my model on one GPU at X samples/s; predict the cluster".
//
// The one-GPU copy of a scenario runs the same model, precision, micro-batch (for layer-table models the
// per-worker batch), recompute and optimizer on one GPU of the same kind: one node of one GPU, every
// parallel degree 1, a global batch of one micro-batch (b), all-reduce without servers, no variability
// or stragglers, no input pipeline (the measurement is taken as the GPU's rate). It has no communication, so the engine's iteration time T_pred of the copy is pure
// compute. With the measured rate X, the measured one-GPU iteration takes T_meas = b / X and
//
//   factor f = T_pred / T_meas,      every compute duration of the real scenario x (1 / f)
//
// (compute::ComputeModel's duration scale). Communication, servers and NICs stay as modelled. The copy
// run with the scale reproduces X up to the rounding of each task's duration to whole nanoseconds. The
// copy's memory is not checked: the user ran it. Returns std::nullopt without the key; an error message
// in `reason` when the copy cannot be simulated (e.g. a GPU without a peak for the precision).
#pragma once

#include <optional>
#include <string>

#include "config/scenario.hpp"
#include "results/evaluate.hpp"
#include "results/result.hpp"

namespace dtsim::results {

// The one-GPU copy described above, without measured_single_gpu.
config::Scenario single_gpu_copy(const config::Scenario& scenario);

struct CalibrationOutcome {
  std::optional<ComputeCalibration> calibration;  // empty when the scenario has no measurement
  std::string reason;                             // non-empty: the copy could not be simulated
};

CalibrationOutcome calibrate_compute(const config::Scenario& scenario, const EvaluateOptions& options);

}  // namespace dtsim::results
