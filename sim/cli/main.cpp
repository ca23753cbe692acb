// The dtsim executable: the process around run_cli(), or the flow model's helper process when started
// as such by dtsim itself (network/flow_helper.hpp).
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/cli.hpp"
#include "network/flow_helper.hpp"

int main(int argc, char** argv) {
  if (argc == 2 && std::string_view(argv[1]) == dtsim::network::kFlowHelperArgument) {
    return dtsim::cli::flow_helper_main(std::cerr);
  }
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return dtsim::cli::run_cli(args, std::cin, std::cout, std::cerr);
}
