#include "results/goodput.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/units.hpp"
#include "models/dlrm/dlrm.hpp"
#include "models/transformer/transformer.hpp"
#include "parallel/memory_model.hpp"
#include "parallel/mesh.hpp"
#include "results/evaluate.hpp"
#include "results/reroute_pace.hpp"

namespace dtsim::results {

// Named, not anonymous: unity builds put several files in one translation unit.
namespace goodput_inputs {

// The model state a checkpoint saves once: a DLRM's tables and dense part (models/dlrm/dlrm.hpp); else
// the parameters in the training precision with their optimizer states.
double checkpoint_state_bytes(const config::Scenario& s) {
  if (s.dlrm) return models::dlrm_state_bytes(*s.dlrm, s.training.optimizer);
  const parallel::ParameterBytes bytes = parallel::parameter_bytes(s.training);
  const double params = s.layer_model ? s.layer_model->params() : models::total_parameters(s.model);
  return params * (bytes.weights + bytes.optimizer);
}

// No data-parallel replica of a layer-table workload or a DLRM holds the whole state on its own
// (elastic recovery is refused for them).
bool replicated_model(const config::Scenario& s) { return !s.layer_model && !s.dlrm; }

// A goodput that is not simulated, for `reason`.
models::GoodputEstimate not_estimated(double failure_free_s, const models::CheckpointCost& checkpoint,
                                      std::string reason) {
  models::GoodputEstimate out;
  out.failure_free_s = failure_free_s;
  out.checkpoint = checkpoint;
  out.reason = std::move(reason);
  return out;
}

// The iteration time of the scenario with every GPU at `compute` of its speed (its peak rates and HBM
// bandwidth scaled; launch costs are the host's) and every NIC at `nic` of its bandwidth.
double slowed_iteration_s(const config::Scenario& base, double compute, double nic) {
  config::Scenario s = base;
  s.failures.reset();
  for (auto& peak : s.gpu.peak_tflops) {
    if (peak) *peak *= compute;
  }
  s.gpu.hbm_bandwidth_gbytes_per_s *= compute;
  s.cluster.network.nic_gbps *= nic;
  const Result slowed = evaluate(s, {});
  return slowed.status == Status::ok ? slowed.iteration_time_s : 0.0;
}

// Per category, the pace of the job while one of its slowdowns lasts: the iteration over the slowed
// iteration (1 for stopping categories; 0 when the slowed plan does not run).
std::vector<double> category_paces(const Result& result, const config::FailureSpec& spec) {
  std::vector<double> paces;
  for (const auto& c : spec.categories) {
    if (c.effect != config::FailureEffect::slow) {
      paces.push_back(1.0);
      continue;
    }
    const double slowed = slowed_iteration_s(result.scenario, c.compute, c.nic);
    paces.push_back(slowed > 0.0 ? std::min(1.0, result.iteration_time_s / slowed) : 0.0);
  }
  return paces;
}

}  // namespace goodput_inputs

std::vector<std::vector<std::int32_t>> node_replicas(const config::Scenario& s, bool per_stage) {
  std::vector<std::vector<std::int32_t>> out(static_cast<std::size_t>(s.cluster.nodes));
  const parallel::Mesh mesh = parallel::Mesh::of(s);
  const std::int64_t stages = per_stage ? s.parallelism.pipeline : 1;
  for (std::int64_t rank = 0; rank < mesh.size(); ++rank) {
    auto& replicas = out[static_cast<std::size_t>(mesh.node_of(rank))];
    const parallel::Coord c = mesh.coord_of(rank);
    const auto replica = static_cast<std::int32_t>(per_stage ? c.data * stages + c.stage : c.data);
    if (std::find(replicas.begin(), replicas.end(), replica) == replicas.end()) replicas.push_back(replica);
  }
  return out;
}

double failure_free_s(const Result& result, const config::FailureSpec& spec) {
  if (spec.train_days) return *spec.train_days * 86400.0;
  if (spec.train_steps) return *spec.train_steps * result.iteration_time_s;
  if (spec.train_tokens) return *spec.train_tokens / result.throughput.tokens_per_s;
  if (result.convergence) return result.convergence->time_to_target_s;
  throw core::InternalError("failure_free_s: no run length (the loader requires one)");
}

models::GoodputEstimate goodput_of(const Result& result, const config::FailureSpec& spec, double failure_free_s) {
  using namespace goodput_inputs;
  const config::Scenario& s = result.scenario;
  models::CheckpointInput ck;
  ck.state_bytes = checkpoint_state_bytes(s);
  ck.per_gpu_state_bytes = result.memory.weights_bytes + result.memory.optimizer_bytes;
  ck.peer_memory = spec.checkpoint.target == config::CheckpointTarget::peer_memory;
  ck.node_state_bytes = ck.per_gpu_state_bytes * static_cast<double>(s.node.gpus_per_node);
  // A DLRM node also holds its shards in host memory; tables on parameter servers are not the nodes'.
  if (result.embeddings) ck.node_state_bytes += result.embeddings->host_bytes_per_node_max;
  const bool on_servers = result.embeddings && result.embeddings->remote;
  // The node's NICs at the fabric's achievable fraction of their line rate (as its collectives).
  ck.node_link_gbytes_per_s = s.cluster.network.nic_gbps * static_cast<double>(s.cluster.network.nics_per_node) /
                              8.0 * s.fabric.efficiency;
  ck.write_gbytes_per_s = spec.checkpoint.write_gbytes_per_s;
  ck.read_gbytes_per_s = spec.checkpoint.read_gbytes_per_s;
  ck.asynchronous = spec.checkpoint.asynchronous;
  ck.snapshot_gbytes_per_s = spec.checkpoint.snapshot_gbytes_per_s;

  models::GoodputInput in;
  in.spec = &spec;
  in.failure_free_s = failure_free_s;
  in.iteration_s = result.iteration_time_s;
  in.gpus = s.gpu_count();
  in.nodes = s.cluster.nodes;
  in.replicas = replicated_model(s) ? s.parallelism.data : 1;
  if (spec.recovery == config::Recovery::elastic) {
    in.node_replicas =
        replicated_model(s)
            ? node_replicas(s, false)
            : std::vector<std::vector<std::int32_t>>(static_cast<std::size_t>(s.cluster.nodes));
  }
  in.replicas_hold_state =
      replicated_model(s) && s.parallelism.zero_stage == 0 && !s.parallelism.distributed_optimizer;
  in.checkpoint = models::checkpoint_cost(ck);
  in.category_pace = category_paces(result, spec);
  in.seed = s.simulation.seed;
  // A peer keeps each node's copy beside its own, in host memory; the parameter servers' tables are on
  // no GPU node.
  if (ck.peer_memory && (on_servers || 2.0 * ck.node_state_bytes > s.node.host_memory_bytes)) {
    return not_estimated(
        failure_free_s, in.checkpoint,
        on_servers
            ? std::string("a peer-memory checkpoint copies the GPU nodes' state, not the tables on the "
                          "parameter servers: checkpoint to storage")
            : fmt::format("a peer-memory checkpoint keeps two nodes' states ({:.1f} GiB) in each node's "
                          "host memory of {:.1f} GiB",
                          2.0 * ck.node_state_bytes / core::kGiB, s.node.host_memory_bytes / core::kGiB));
  }
  if (spec.recovery != config::Recovery::reroute) return models::estimate_goodput(in);
  if (std::optional<std::string> why = reroute_refusal(s))
    return not_estimated(failure_free_s, in.checkpoint, *why);
  ReroutePaces paces(result);
  in.stages = s.parallelism.pipeline;
  in.replicas = s.parallelism.data * in.stages;
  in.node_replicas = node_replicas(s, true);
  in.reroute_pace = [&paces](const std::vector<std::int64_t>& down) { return paces(down); };
  models::GoodputEstimate out = models::estimate_goodput(in);
  if (!paces.reason().empty()) return not_estimated(failure_free_s, in.checkpoint, paces.reason());
  out.reroute_paces = paces.cases();
  return out;
}

void estimate_goodput(Result& result) {
  if (result.status != Status::ok || !result.scenario.failures) return;
  const config::FailureSpec& spec = *result.scenario.failures;
  result.goodput = goodput_of(result, spec, failure_free_s(result, spec));
}

}  // namespace dtsim::results
