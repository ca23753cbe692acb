// dtsim calibrate: runs the calibration harnesses built for this machine and writes hardware profiles
// (hardware_profiles/ schema) under --out: gpus/ID.json, nodes/ID.json and the raw collective sweeps in
// logs/. Backends: `cpu` (dtsim_calibrate_cpu under mpirun: OpenBLAS GEMMs, STREAM memory kernels, MPI
// collectives), `cuda` (dtsim_calibrate_cuda: cuBLASLt GEMMs, HBM kernels, NCCL collectives). The
// harness executables sit next to the dtsim executable; a backend that was not built is a bad-input
// error (exit 2). The written profiles are read back with the strict profile loader before the
// command reports success.
#pragma once

#include <iosfwd>
#include <string>

#include <CLI/CLI.hpp>

namespace dtsim::cli {

struct CalibrateOptions {
  std::string backend;  // "cpu" or "cuda"; empty: cuda when built, else cpu
  std::string out_dir;
  std::string id;  // profile id; empty: the harness names it after the host
  bool quick = false;
  int ranks = 2;  // MPI ranks (devices of the node); cuda: one per GPU unless given
  bool ranks_given = false;
  std::string mpirun = "mpirun";
};

CLI::App* add_calibrate_command(CLI::App& app, CalibrateOptions& options);
int calibrate_command(const CalibrateOptions& options, std::ostream& out, std::ostream& err);

}  // namespace dtsim::cli
