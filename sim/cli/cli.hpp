// The dtsim command line. run_cli() is main() without the process: streams in, exit status out, so
// tests can drive every subcommand in-process. It is the only place that catches errors and picks the
// exit status: 0 ok, 1 internal error, 2 bad input, 3 valid but infeasible (result still written).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace dtsim::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInfeasible = 3;

int run_cli(const std::vector<std::string>& args, std::istream& in, std::ostream& out, std::ostream& err);

// `dtsim --internal-flow-helper`: the flow model's SimGrid helper process (network/flow_helper.hpp),
// started by dtsim itself; main() calls it instead of run_cli() for that one argument.
int flow_helper_main(std::ostream& err);

}  // namespace dtsim::cli
