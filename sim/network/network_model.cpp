#include "network/network_model.hpp"

#include "core/errors.hpp"
#include "network/analytic_model.hpp"
#include "network/flow_model.hpp"

namespace dtsim::network {

std::unique_ptr<NetworkModel> make_network_model(const config::Scenario& scenario) {
  switch (scenario.simulation.network) {
    case config::NetworkFidelity::analytic:
      return std::make_unique<AnalyticModel>(scenario);
    case config::NetworkFidelity::flow:
      return std::make_unique<FlowModel>(scenario);
    case config::NetworkFidelity::packet:
      throw core::InputError(scenario.source, "/simulation/network",
                             "got \"packet\": the packet level (SimGrid's ns-3 model) is not implemented by "
                             "this build of dtsim; expected \"analytic\" or \"flow\"");
  }
  throw core::InternalError("unknown network fidelity");
}

}  // namespace dtsim::network
