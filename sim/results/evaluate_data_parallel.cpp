#include "results/evaluate_data_parallel.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "compute/compute_model.hpp"
#include "core/checked_math.hpp"
#include "core/errors.hpp"
#include "graph/ops.hpp"
#include "models/convergence/convergence.hpp"
#include "models/input/input_pipeline.hpp"
#include "models/layer_table/layer_ops.hpp"
#include "network/network_model.hpp"
#include "parallel/feasibility.hpp"
#include "parallel/lower_data_parallel.hpp"
#include "results/data_parallel_run.hpp"
#include "results/distribution.hpp"

namespace dtsim::results {

namespace {

constexpr double kSecondsPerHour = 3600.0;

double duration_s(const compute::ComputeModel& compute, const std::vector<graph::ComputeOp>& ops) {
  double t = 0.0;
  for (const auto& op : ops) t += compute.duration_s(op);
  return t;
}

}  // namespace

Result evaluate_data_parallel(const config::Scenario& scenario, const EvaluateOptions& options,
                              double compute_scale) {
  const auto started = std::chrono::steady_clock::now();
  const config::LayerTable& table = *scenario.layer_model;
  const config::DataParallelSpec& dp = scenario.data_parallel;
  Result result;
  result.scenario = scenario;
  if (auto reason = parallel::layer_table_infeasibility(scenario)) {
    result.status = Status::infeasible;
    result.reason = std::move(*reason);
    return result;
  }
  if (!scenario.gpu.peak_tflops[static_cast<int>(scenario.training.precision)]) {
    result.status = Status::infeasible;
    result.reason = fmt::format("{} has no {} support (no peak in its profile)", scenario.gpu.id,
                                config::to_string(scenario.training.precision));
    return result;
  }
  const std::int64_t workers = scenario.gpu_count();
  const std::int64_t batch = scenario.training.global_batch_size / workers;
  const config::Precision precision = scenario.training.precision;
  const compute::ComputeModel compute(scenario.gpu, precision, compute_scale);

  // Compute per worker and step.
  const std::vector<models::LayerOps> ops = models::layer_ops(table, batch, precision);
  double forward_s = 0.0;
  double backward_s = 0.0;
  std::vector<double> backward_layer_s(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    forward_s += duration_s(compute, ops[i].forward);
    backward_layer_s[i] = duration_s(compute, ops[i].backward);
    backward_s += backward_layer_s[i];
  }

  // Placement of variables: on servers (round-robin or greedy by size) or all-reduced.
  const std::vector<models::Variable> vars = models::variables(table, batch, precision);
  const bool has_servers = dp.architecture != config::Architecture::allreduce;
  const std::int64_t servers = has_servers ? dp.parameter_server.servers : 0;
  // Local aggregation: one parameter-server client per node (its GPUs' gradients summed first).
  const bool per_node_clients =
      dp.parameter_server.local_aggregation && servers > 0 && scenario.node.gpus_per_node > 1;
  const std::int64_t client_size = per_node_clients ? scenario.node.gpus_per_node : 1;
  // Before the per-server tables are allocated: a job whose task graph could not be simulated.
  if (auto reason = parallel::data_parallel_too_large(workers, workers / client_size, servers, 0, dp.steps)) {
    result.status = Status::infeasible;
    result.reason = std::move(*reason);
    return result;
  }
  DataParallelStats stats;
  stats.workers = workers;
  stats.servers = servers;
  stats.per_worker_batch = batch;
  stats.stragglers = dp.stragglers;
  stats.server_bytes.assign(static_cast<std::size_t>(servers), 0.0);
  parallel::DataParallelJob setup;
  setup.push_bytes.assign(static_cast<std::size_t>(servers), 0.0);
  setup.square_bytes.assign(static_cast<std::size_t>(servers), 0.0);
  std::vector<double> layer_allreduce_bytes(ops.size(), 0.0);
  double dense_params = 0.0;
  std::int64_t next_server = 0;
  const auto server_for_next_part = [&]() -> std::size_t {
    if (dp.parameter_server.variable_placement == config::VariablePlacement::greedy_by_size) {
      // The least loaded server by bytes held so far; min_element keeps the first of equals.
      return static_cast<std::size_t>(std::min_element(stats.server_bytes.begin(), stats.server_bytes.end()) -
                                      stats.server_bytes.begin());
    }
    const auto s = static_cast<std::size_t>(next_server);
    next_server = (next_server + 1) % servers;
    return s;
  };
  for (const auto& v : vars) {
    const bool on_server = dp.architecture == config::Architecture::parameter_server ||
                           (dp.architecture == config::Architecture::hybrid && v.sparse);
    if (on_server) {
      // Whole variables, or parts of at most partition_bytes, each on the server the placement picks.
      const double limit = dp.parameter_server.partition_bytes;
      const double parts = limit > 0.0 ? std::max(1.0, std::ceil(v.dense_bytes / limit)) : 1.0;
      for (double part = 0; part < parts; ++part) {
        const std::size_t s = server_for_next_part();
        setup.push_bytes[s] += v.step_bytes / parts;
        setup.square_bytes[s] += (v.step_bytes / parts) * (v.step_bytes / parts);
        stats.server_bytes[s] += v.dense_bytes / parts;
      }
      stats.push_bytes_per_worker_step += v.step_bytes;
    } else {
      layer_allreduce_bytes[v.layer] += v.dense_bytes;
      stats.allreduce_bytes_per_step += v.dense_bytes;
      dense_params += v.dense_bytes / models::bytes_per_value(precision);
    }
  }
  setup.pull_bytes = setup.push_bytes;

  // All-reduce fusion buckets along the backward pass (last layer first).
  // The scenario's network level (simulation.network) costs every collective: the analytic model, or
  // the flow level's simulation of each (the transfers to and from servers are the engine's ports).
  const std::unique_ptr<network::NetworkModel> network = network::make_network_model(scenario, options.flow_cache);
  const auto allreduce_ns = [&](double bytes) {
    graph::CommOp op;
    op.kind = graph::CollectiveKind::all_reduce;
    op.bytes = bytes;
    op.group = graph::CommGroup{workers, scenario.cluster.nodes, 1};
    return network->duration(op);
  };
  if (workers > 1 && stats.allreduce_bytes_per_step > 0.0) {
    double done_s = 0.0;
    double bucket = 0.0;
    for (std::size_t i = ops.size(); i-- > 0;) {
      done_s += backward_layer_s[i];
      bucket += layer_allreduce_bytes[i];
      const bool last = i == 0;
      if (bucket > 0.0 && (bucket >= dp.fusion_bytes || last)) {
        setup.bucket_ready_fraction.push_back(backward_s > 0.0 ? std::min(1.0, done_s / backward_s) : 1.0);
        setup.bucket_allreduce_ns.push_back(allreduce_ns(bucket));
        bucket = 0.0;
      }
    }
  }
  stats.allreduce_buckets = static_cast<std::int64_t>(setup.bucket_allreduce_ns.size());

  setup.client_size = client_size;
  if (per_node_clients) {
    // A reduce of the node's gradients to one GPU, and a broadcast of the pulled parameters back, over
    // the node's GPUs (network model, one node).
    graph::CommOp local;
    local.bytes = stats.push_bytes_per_worker_step;
    local.group = graph::CommGroup{scenario.node.gpus_per_node, 1, 1};
    local.kind = graph::CollectiveKind::reduce;
    setup.local_reduce_ns = network->duration(local);
    local.kind = graph::CollectiveKind::broadcast;
    setup.local_broadcast_ns = network->duration(local);
  }
  setup.workers = workers;
  setup.gpus_per_node = scenario.node.gpus_per_node;
  setup.forward_ns = core::seconds_to_ns(forward_s);
  setup.backward_ns = core::seconds_to_ns(backward_s);
  const double optimizer_s =
      dense_params > 0.0 ? compute.duration_s(models::optimizer_op(dense_params)) : 0.0;
  setup.optimizer_ns = core::seconds_to_ns(optimizer_s);
  for (std::int64_t s = 0; s < servers; ++s) {
    setup.server_node.push_back(
        dp.parameter_server.placement == config::ServerPlacement::colocated ? s : scenario.cluster.nodes + s);
  }
  setup.nic_bytes_per_s = scenario.node_nic_bytes_per_s();
  if (scenario.fabric.per_flow_gbps)
    setup.per_flow_bytes_per_s = core::gbps_to_bytes_per_s(*scenario.fabric.per_flow_gbps);
  const config::PsTransport& transport = dp.parameter_server.transport;
  if (transport.channel_gbytes_per_s)
    setup.channel_bytes_per_s = *transport.channel_gbytes_per_s * core::kGiga;
  if (transport.server_gbytes_per_s)
    setup.server_transport_bytes_per_s = *transport.server_gbytes_per_s * core::kGiga;
  setup.receive_s_per_square_byte = transport.receive_s_per_square_byte;
  setup.intra_bytes_per_s = scenario.node.intra_gbytes_per_s * core::kGiga * scenario.node.intra_efficiency;
  setup.message_latency_ns =
      core::seconds_to_ns((scenario.fabric.latency_us + scenario.fabric.per_message_overhead_us) * 1e-6);
  setup.apply_bytes_per_s = dp.parameter_server.apply_gbytes_per_s * core::kGiga;
  setup.sync = dp.sync;
  setup.staleness_bound = dp.staleness_bound;
  setup.variability = dp.variability;
  setup.variability_cv = dp.variability_cv;
  setup.stragglers = dp.stragglers;
  setup.straggler_slowdown = dp.straggler_slowdown;
  setup.steps = dp.steps;
  setup.seed = scenario.simulation.seed;
  if (scenario.input) {
    const models::InputRate input = models::input_rate(scenario);
    setup.input_load_ns = core::seconds_to_ns(input.load_s);
    setup.input_prefetch = input.prefetch;
    setup.input_prefetch_batches = std::max<std::int64_t>(input.prefetch_batches, 1);
  }

  if (auto reason = parallel::data_parallel_too_large(workers, setup.clients(), servers, stats.allreduce_buckets,
                                                      setup.steps)) {
    result.status = Status::infeasible;
    result.reason = std::move(*reason);
    return result;
  }
  DpTrainingResult run = simulate_data_parallel(setup, compute, *network, options.trace);
  result.trace = std::move(run.trace);

  // Throughput and the per-iteration view (an iteration = every worker doing one step).
  const double steps_per_s = run.worker_steps_per_s;
  const double iteration_s = static_cast<double>(workers) / steps_per_s;
  const double samples_per_s = steps_per_s * static_cast<double>(batch);
  result.iteration_time_s = iteration_s;
  result.throughput.samples_per_s = samples_per_s;
  if (table.sample == "sequence")
    result.throughput.tokens_per_s = samples_per_s * static_cast<double>(table.input_size);
  const double model_flops_per_sample = 3.0 * table.forward_flops();
  const double peak = compute.peak_flops_per_s();
  result.flops.peak_tflops_per_gpu = peak / core::kTera;
  result.flops.model_tflops_per_gpu =
      samples_per_s * model_flops_per_sample / static_cast<double>(workers) / core::kTera;
  result.flops.hardware_tflops_per_gpu = result.flops.model_tflops_per_gpu;
  result.flops.mfu = result.flops.model_tflops_per_gpu * core::kTera / peak;
  result.flops.hfu = result.flops.mfu;
  result.breakdown.forward_s = forward_s;
  result.breakdown.backward_s = backward_s;
  result.breakdown.optimizer_s = optimizer_s;
  double input_wait_s = 0.0;  // per step after the warm-up, mean over workers
  for (const auto& w : run.workers)
    input_wait_s += w.input_wait_s / static_cast<double>(std::max<std::int64_t>(w.steps - 1, 1));
  result.breakdown.data_stall_s = input_wait_s / static_cast<double>(run.workers.size());
  result.breakdown.exposed_data_comm_s =
      std::max(0.0, iteration_s - forward_s - backward_s - optimizer_s - result.breakdown.data_stall_s);

  const double value = models::bytes_per_value(precision);
  const double params = table.params();
  result.memory.weights_bytes = params * value;
  result.memory.gradients_bytes = params * value;
  result.memory.optimizer_bytes = dense_params * 4.0;  // momentum of the locally updated parameters
  result.memory.activations_bytes = models::activation_bytes(table, batch, precision);
  result.memory.peak_bytes_per_gpu = result.memory.weights_bytes + result.memory.gradients_bytes +
                                     result.memory.optimizer_bytes + result.memory.activations_bytes;
  result.memory.capacity_bytes_per_gpu = scenario.gpu.hbm_bytes;
  result.memory.fits = result.memory.peak_bytes_per_gpu <= result.memory.capacity_bytes_per_gpu;
  if (!result.memory.fits) {
    result.status = Status::infeasible;
    result.reason = fmt::format(
        "out of memory: needs {:.1f} GiB per GPU (activations of a batch of {} take "
        "{:.1f}) but the GPU has {:.1f} GiB",
        result.memory.peak_bytes_per_gpu / core::kGiB, batch, result.memory.activations_bytes / core::kGiB,
        scenario.gpu.hbm_bytes / core::kGiB);
  }

  // What the simulation measured.
  stats.worker_steps_per_s = steps_per_s;
  stats.measured_window_s = run.window_s;
  stats.staleness = distribution_of_counts(run.staleness);
  std::vector<double> waits;
  for (const auto& w : run.workers) {
    const double n = static_cast<double>(std::max<std::int64_t>(w.steps, 1));
    stats.per_worker.push_back({w.compute_s / n, w.wait_s / n});
    waits.push_back(w.wait_s / n);
  }
  stats.wait_s_per_step = distribution_of(std::move(waits));

  // Time to converge.
  models::ConvergenceInput in;
  in.preset = table.convergence;
  const bool synchronous = dp.sync == config::SyncMode::sync;
  in.update_batch = static_cast<double>(synchronous ? scenario.training.global_batch_size : batch);
  in.updates_per_s = synchronous ? 1.0 / iteration_s : steps_per_s;
  in.mean_staleness = stats.staleness.mean;
  in.staleness_penalty = dp.staleness_penalty;
  const models::ConvergenceEstimate e = models::estimate_convergence(in);
  ConvergenceResult c;
  c.target = table.convergence.target;
  c.b_noise = e.b_noise;
  c.s_min = e.s_min;
  c.update_batch = e.update_batch;
  c.mean_staleness = in.mean_staleness;
  c.staleness_penalty = in.staleness_penalty;
  c.staleness_factor = e.staleness_factor;
  c.steps_without_staleness = e.steps_without_staleness;
  c.updates_to_target = e.updates_to_target;
  c.samples_to_target = e.samples_to_target;
  c.time_to_target_s = e.time_to_target_s;
  c.gpu_hours = e.time_to_target_s * static_cast<double>(workers) / kSecondsPerHour;

  result.data_parallel = std::move(stats);
  result.convergence = c;
  result.engine.events = run.events;
  result.engine.tasks = run.tasks;
  result.engine.simulated_ranks = static_cast<std::uint32_t>(workers + servers);
  result.engine.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace dtsim::results
