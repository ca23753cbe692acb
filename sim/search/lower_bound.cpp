#include "search/lower_bound.hpp"

#include <variant>

#include "compute/compute_model.hpp"
#include "parallel/feasibility.hpp"
#include "parallel/layer_ops.hpp"
#include "parallel/mesh.hpp"

namespace dtsim::search {

namespace {

// Kernel time of the compute ops of a program (communication ops are left out: they only add).
core::TimeNs compute_ns(const std::vector<parallel::OpRef>& ops, const graph::TaskGraph& graph,
                        const compute::ComputeModel& compute) {
  core::TimeNs total = 0;
  for (const parallel::OpRef& ref : ops) {
    if (const auto* op = std::get_if<graph::ComputeOp>(&graph.ops()[ref.op])) total += compute.duration(*op);
  }
  return total;
}

core::TimeNs program_ns(const parallel::Program& p, const graph::TaskGraph& graph,
                        const compute::ComputeModel& compute) {
  return compute_ns(p.forward, graph, compute) + compute_ns(p.backward, graph, compute);
}

}  // namespace

double iteration_lower_bound_s(const config::Scenario& scenario) {
  const parallel::Mesh mesh = parallel::Mesh::of(scenario);
  graph::TaskGraph graph(1);  // only its op table is used
  parallel::LabelTable labels;
  const parallel::LayerOps ops = parallel::intern_layer_ops(scenario, mesh, graph, labels);
  const compute::ComputeModel compute(scenario.gpu, scenario.training.precision);
  const double layer_s =
      core::ns_to_seconds(program_ns(ops.layer, graph, compute) + compute_ns(ops.recompute, graph, compute));
  const double ends_s =
      core::ns_to_seconds(program_ns(ops.embedding, graph, compute) + program_ns(ops.head, graph, compute));
  const double m = static_cast<double>(parallel::micro_batches(scenario));
  return m * (static_cast<double>(scenario.model.layers) * layer_s + ends_s) /
         static_cast<double>(scenario.parallelism.pipeline);
}

}  // namespace dtsim::search
