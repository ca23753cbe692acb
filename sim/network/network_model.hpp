// The network model behind one narrow interface (DESIGN.md, "Network model"): the duration of a
// communication op over its group's real layout on the cluster. Implementations:
//   analytic  alpha-beta with the topology's bottlenecks (analytic_model.hpp)
//   flow      the collective's transfers on SimGrid's flow-level model over the topology (flow_model.hpp)
//   packet    SimGrid's ns-3 model: not supported (InputError at /simulation/network): the ns-3 binding
//             of Debian's SimGrid 3.32 aborts on megabyte transfers ("total_bytes is not sent_bytes")
// The fidelity level is chosen by simulation.network; make_network_model() is the one factory.
#pragma once

#include <memory>

#include "config/scenario.hpp"
#include "core/units.hpp"
#include "graph/ops.hpp"

namespace dtsim::network {

class NetworkModel {
 public:
  virtual ~NetworkModel() = default;
  virtual core::TimeNs duration(const graph::CommOp& op) const = 0;
  virtual const char* name() const = 0;
};

class FlowCache;

// Throws InputError (pointing at /simulation/network) for a fidelity level this build cannot run.
// `flow_cache`: where a flow-level model keeps its collectives' times, shared with other models (not
// owned); null: a cache of the model's own. The analytic model needs none.
std::unique_ptr<NetworkModel> make_network_model(const config::Scenario& scenario,
                                                 FlowCache* flow_cache = nullptr);

}  // namespace dtsim::network
