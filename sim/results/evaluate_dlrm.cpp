#include "results/evaluate_dlrm.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "compute/compute_model.hpp"
#include "engine/simulate.hpp"
#include "models/dlrm/dlrm.hpp"
#include "network/network_model.hpp"
#include "parallel/embedding_shards.hpp"
#include "parallel/feasibility.hpp"
#include "parallel/lower_dlrm.hpp"
#include "results/engine_outcome.hpp"

namespace dtsim::results {

// Named, not anonymous: unity builds put several files in one translation unit.
namespace dlrm_evaluation {

EmbeddingSummary summary_of(const config::Scenario& s, const parallel::EmbeddingLayout& layout) {
  EmbeddingSummary out;
  const config::EmbeddingPlan& plan = s.parallelism.embeddings;
  for (const config::EmbeddingTable& t : s.dlrm->tables) {
    if (plan.remote(t.name)) continue;  // counted with the servers below
    const auto how = plan.sharding_of(t.name);
    for (std::size_t k = 0; k < config::kEmbeddingShardings.size(); ++k) {
      if (config::kEmbeddingShardings[k] == how) ++out.tables[k];
    }
  }
  double ids = 0.0;
  for (const parallel::RankEmbeddings& r : layout.ranks) {
    out.ids_per_gpu_max = std::max(out.ids_per_gpu_max, r.ids);
    ids += r.ids;
    out.hbm_bytes_max = std::max(out.hbm_bytes_max, r.hbm_weight_bytes + r.hbm_state_bytes);
  }
  out.ids_per_gpu_mean = ids / static_cast<double>(layout.ranks.size());
  const std::int64_t g = s.node.gpus_per_node;
  for (std::int64_t node = 0; node < s.cluster.nodes; ++node) {
    double host = 0.0;
    for (std::int64_t r = node * g; r < (node + 1) * g; ++r)
      host += layout.ranks[static_cast<std::size_t>(r)].host_bytes;
    out.host_bytes_per_node_max = std::max(out.host_bytes_per_node_max, host);
  }
  out.cache_hit_rate = layout.cache_hit_rate;
  out.pooled_alltoall_bytes = layout.pooled_alltoall_bytes;
  if (layout.remote) {
    EmbeddingSummary::Remote remote;
    for (const config::EmbeddingTable& t : s.dlrm->tables) remote.tables += plan.remote(t.name) ? 1 : 0;
    remote.servers = plan.servers->count;
    remote.resident_bytes = layout.remote->resident_bytes;
    remote.traffic = *layout.remote;
    remote.timing = layout.remote_timing;
    remote.needs = models::size_remote_servers(s, *layout.remote);
    out.remote = std::move(remote);
  }
  return out;
}

}  // namespace dlrm_evaluation

Result evaluate_dlrm(const config::Scenario& scenario, const EvaluateOptions& options) {
  using namespace dlrm_evaluation;
  const auto started = std::chrono::steady_clock::now();
  const config::DlrmSpec& m = *scenario.dlrm;
  const config::Precision precision = scenario.training.precision;
  if (auto reason = parallel::per_gpu_data_parallel_infeasibility(scenario))
    return infeasible(scenario, std::move(*reason));
  if (!scenario.gpu.peak_tflops[static_cast<int>(precision)]) {
    return infeasible(scenario, fmt::format("{} has no {} support (no peak in its profile)", scenario.gpu.id,
                                            config::to_string(precision)));
  }
  const std::int64_t gpus = scenario.gpu_count();
  const std::int64_t local = scenario.training.global_batch_size / gpus;

  // The dense part on every GPU, then the shards in what is left.
  const double dense = models::dlrm_dense_parameters(m);
  const double state = models::optimizer_state_bytes_per_value(scenario.training.optimizer);
  Memory memory;
  memory.weights_bytes = dense * models::kDenseBytes;
  memory.gradients_bytes = dense * models::kDenseBytes;
  memory.optimizer_bytes = dense * state;
  memory.activations_bytes = models::dlrm_dense_activation_bytes(m, local, precision);
  const double reserved =
      memory.weights_bytes + memory.gradients_bytes + memory.optimizer_bytes + memory.activations_bytes;
  const parallel::EmbeddingLayout layout = parallel::shard_embeddings(scenario, reserved);

  // The GPU that needs the most (the first of them).
  const auto fullest = std::max_element(
      layout.ranks.begin(), layout.ranks.end(), [](const parallel::RankEmbeddings& a, const parallel::RankEmbeddings& b) {
        return a.hbm_weight_bytes + a.hbm_state_bytes < b.hbm_weight_bytes + b.hbm_state_bytes;
      });
  if (fullest != layout.ranks.end()) {
    const double dp_weights = layout.data_parallel_gradient_bytes;  // rows x dim x e of the replicated tables
    memory.weights_bytes += fullest->hbm_weight_bytes + dp_weights;
    memory.gradients_bytes += dp_weights;  // torchrec's data-parallel tables keep a dense gradient
    memory.optimizer_bytes += fullest->hbm_state_bytes + (layout.data_parallel_hbm_bytes - dp_weights);
    memory.buffers_bytes = layout.buffer_bytes;
  }
  memory.peak_bytes_per_gpu = memory.weights_bytes + memory.gradients_bytes + memory.optimizer_bytes +
                              memory.activations_bytes + memory.buffers_bytes;
  memory.capacity_bytes_per_gpu = scenario.hbm_bytes_per_gpu();
  memory.fits = memory.peak_bytes_per_gpu <= memory.capacity_bytes_per_gpu && !layout.infeasible;

  Result result;
  result.scenario = scenario;
  result.memory = memory;
  if (layout.ranks.empty()) {  // refused before any GPU's shards were placed (too large to simulate)
    result.status = Status::infeasible;
    result.reason = *layout.infeasible;
    return result;
  }
  result.embeddings = summary_of(scenario, layout);
  if (layout.infeasible || !memory.fits) {
    result.status = Status::infeasible;
    result.reason = layout.infeasible ? *layout.infeasible : out_of_memory_reason(memory);
    return result;
  }

  const parallel::LoweredGraph lowered = parallel::lower_dlrm(scenario, layout);
  const compute::ComputeModel compute(scenario.gpu, precision);
  const auto network = network::make_network_model(scenario, options.flow_cache);
  engine::EngineOptions engine_options;
  engine_options.record_spans = options.trace;
  engine_options.overlap_slowdown = scenario.gpu.overlap_slowdown;
  engine_options.host_issue_ns_per_kernel = scenario.training.host_issue_us_per_kernel * 1e3;
  engine_options.host_issue_ns_per_tensor_op = scenario.training.host_issue_us_per_tensor_op * 1e3;
  const engine::EngineResult run = engine::simulate(lowered.graph, compute, *network, engine_options);

  const double t = core::ns_to_seconds(run.makespan);
  const double g = static_cast<double>(gpus);
  const double peak = compute.peak_flops_per_s();
  const double model_flops = models::dlrm_model_flops_per_iteration(m, scenario.training.global_batch_size);
  result.iteration_time_s = t;
  result.throughput.samples_per_s = static_cast<double>(scenario.training.global_batch_size) / t;
  result.throughput.tokens_per_s = 0.0;
  result.flops.model_tflops_per_gpu = model_flops / (t * g) / core::kTera;
  result.flops.hardware_tflops_per_gpu = lowered.hardware_flops / (t * g) / core::kTera;
  result.flops.peak_tflops_per_gpu = peak / core::kTera;
  result.flops.mfu = model_flops / (t * g) / peak;
  result.flops.hfu = lowered.hardware_flops / (t * g) / peak;
  result.breakdown = breakdown_of(run);
  result.engine.events = run.events;
  result.engine.tasks = lowered.graph.tasks().size();
  result.engine.simulated_ranks = lowered.graph.ranks();
  if (options.trace) result.trace = trace_of(lowered, run);
  result.engine.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace dtsim::results
