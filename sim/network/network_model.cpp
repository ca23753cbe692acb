#include "network/network_model.hpp"

#include "core/errors.hpp"
#include "network/analytic_model.hpp"

namespace dtsim::network {

std::unique_ptr<NetworkModel> make_network_model(const config::Scenario& scenario) {
  switch (scenario.simulation.network) {
    case config::NetworkFidelity::analytic:
      return std::make_unique<AnalyticModel>(scenario);
    case config::NetworkFidelity::flow:
    case config::NetworkFidelity::packet:
      throw core::InputError(scenario.source, "/simulation/network",
                             std::string("got \"") + config::to_string(scenario.simulation.network) +
                                 "\": this build of dtsim runs the \"analytic\" network model only");
  }
  throw core::InternalError("unknown network fidelity");
}

}  // namespace dtsim::network
