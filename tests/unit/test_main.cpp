// The test binaries' main: doctest's, with DTSIM_EXE (the dtsim built beside the tests, a compile
// definition) in the environment unless already set, so that the flow network model finds its SimGrid
// helper process (sim/network/flow_helper.hpp) although this program is not dtsim.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>

int main(int argc, char** argv) {
  ::setenv("DTSIM_EXE", DTSIM_EXE, /*overwrite=*/0);
  return doctest::Context(argc, argv).run();
}
