// The dtsim executable: the process around run_cli().
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return dtsim::cli::run_cli(args, std::cin, std::cout, std::cerr);
}
