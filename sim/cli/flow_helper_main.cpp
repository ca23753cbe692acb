// The helper process of the flow network model (network/flow_helper.hpp): `dtsim --internal-flow-helper`
// reads one flow job from its descriptor 3, runs it on SimGrid and answers the phase times.
#include <exception>
#include <ostream>
#include <string>

#include "cli/cli.hpp"
#include "network/flow_helper.hpp"
#include "network/flow_job.hpp"
#include "network/simgrid_run.hpp"

namespace dtsim::cli {

int flow_helper_main(std::ostream& err) {
  try {
    std::string request;
    if (!network::read_message(network::kFlowHelperFd, request)) {
      err << "dtsim " << network::kFlowHelperArgument << ": no flow job on descriptor "
          << network::kFlowHelperFd << " (this mode is for dtsim's own use)\n";
      return kExitInternal;
    }
    const std::vector<double> times = network::run_flow_job(network::decode_flow_job(request));
    if (!network::write_message(network::kFlowHelperFd, network::encode_phase_times(times))) {
      err << "dtsim " << network::kFlowHelperArgument << ": could not send the phase times\n";
      return kExitInternal;
    }
    return kExitOk;
  } catch (const std::exception& e) {
    err << "dtsim " << network::kFlowHelperArgument << ": " << e.what() << '\n';
    return kExitInternal;
  }
}

}  // namespace dtsim::cli
