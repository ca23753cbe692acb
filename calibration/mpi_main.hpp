// The main() of an MPI program of the calibration harnesses: MPI_Init, run the program, and map its
// outcome to the exit status the dtsim CLI uses (InputError 2, OutputError and any other exception 1, printed
// to stderr with the program's name); a failing rank aborts the whole job so that no rank waits forever in a
// collective. Header-only: only the harness executables link MPI.
#pragma once

#include <exception>
#include <iostream>
#include <string_view>

#include <mpi.h>

#include "core/errors.hpp"

namespace dtsim::calibration {

template <typename Program>
int mpi_main(std::string_view name, int argc, char** argv, Program&& program) {
  MPI_Init(&argc, &argv);
  int status = 0;
  try {
    status = program(argc, argv);
  } catch (const core::InputError& e) {
    std::cerr << name << ": error: " << e.what() << "\n";
    status = 2;
  } catch (const core::OutputError& e) {
    std::cerr << name << ": error: " << e.what() << "\n";
    status = 1;
  } catch (const std::exception& e) {
    std::cerr << name << ": internal error: " << e.what() << "\n";
    status = 1;
  }
  if (status != 0) MPI_Abort(MPI_COMM_WORLD, status);
  MPI_Finalize();
  return status;
}

}  // namespace dtsim::calibration
