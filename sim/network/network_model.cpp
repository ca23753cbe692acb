#include "network/network_model.hpp"

#include "core/errors.hpp"
#include "network/analytic_model.hpp"
#include "network/flow_model.hpp"

namespace dtsim::network {

std::unique_ptr<NetworkModel> make_network_model(const config::Scenario& scenario, FlowCache* flow_cache) {
  switch (scenario.simulation.network) {
    case config::NetworkFidelity::analytic:
      return std::make_unique<AnalyticModel>(scenario);
    case config::NetworkFidelity::flow:
      return std::make_unique<FlowModel>(scenario, flow_cache);
    case config::NetworkFidelity::packet:
      throw core::InputError(
          scenario.source, "/simulation/network",
          "got \"packet\": the packet level (SimGrid's ns-3 model) is not supported: the ns-3 "
          "binding of SimGrid 3.32 as Debian builds it aborts on transfers of a megabyte; "
          "expected \"analytic\" or \"flow\"");
  }
  throw core::InternalError("unknown network fidelity");
}

}  // namespace dtsim::network
