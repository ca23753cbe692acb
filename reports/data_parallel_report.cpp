#include "reports/data_parallel_report.hpp"

#include <fmt/format.h>

#include "config/layer_table_loader.hpp"

namespace dtsim::reports {

namespace {

constexpr int kLabelWidth = 14;
constexpr double kBytesPerMiB = 1024.0 * 1024.0;

void line(std::ostream& out, const char* label, const std::string& text) {
  out << fmt::format("{:<{}}{}\n", label, kLabelWidth, text);
}

std::string human_time(double s) {
  if (s >= 86400.0) return fmt::format("{:.2f} days", s / 86400.0);
  if (s >= 3600.0) return fmt::format("{:.2f} h", s / 3600.0);
  return fmt::format("{:.1f} s", s);
}

}  // namespace

nlohmann::ordered_json distribution_json(const results::Distribution& d) {
  nlohmann::ordered_json j;
  j["mean"] = d.mean;
  j["p50"] = d.p50;
  j["p99"] = d.p99;
  j["max"] = d.max;
  return j;
}

nlohmann::ordered_json layer_model_json(const config::LayerTable& t) {
  nlohmann::ordered_json j;
  j["layer_table"] = t.id;
  j["name"] = t.name;
  j["sample"] = t.sample;
  j["layers"] = t.layers.size();
  j["params"] = t.params();
  j["forward_flops_per_sample"] = t.forward_flops();
  return j;
}

nlohmann::ordered_json data_parallel_training_json(const config::DataParallelSpec& d) {
  nlohmann::ordered_json j;
  j["architecture"] = config::to_string(d.architecture);
  j["sync"] = config::to_string(d.sync);
  if (d.sync == config::SyncMode::bounded) j["staleness_bound"] = d.staleness_bound;
  if (d.architecture != config::Architecture::allreduce) {
    j["parameter_server"] = {{"servers", d.parameter_server.servers},
                             {"placement", config::to_string(d.parameter_server.placement)},
                             {"variable_placement", config::to_string(d.parameter_server.variable_placement)},
                             {"apply_gbytes_per_s", d.parameter_server.apply_gbytes_per_s},
                             {"partition_mb", d.parameter_server.partition_bytes / kBytesPerMiB},
                             {"local_aggregation", d.parameter_server.local_aggregation},
                             {"transport", d.parameter_server.transport.id}};
  }
  j["compute_variability"] = {{"distribution", config::to_string(d.variability)}, {"cv", d.variability_cv}};
  j["stragglers"] = {{"count", d.stragglers}, {"slowdown", d.straggler_slowdown}};
  j["simulated_steps"] = d.steps;
  j["fusion_mb"] = d.fusion_bytes / kBytesPerMiB;
  j["staleness_penalty"] = d.staleness_penalty;
  return j;
}

nlohmann::ordered_json data_parallel_json(const results::DataParallelStats& s) {
  nlohmann::ordered_json j;
  j["workers"] = s.workers;
  j["servers"] = s.servers;
  j["per_worker_batch"] = s.per_worker_batch;
  j["worker_steps_per_s"] = s.worker_steps_per_s;
  j["measured_window_s"] = s.measured_window_s;
  j["allreduce_bytes_per_step"] = s.allreduce_bytes_per_step;
  j["allreduce_buckets"] = s.allreduce_buckets;
  j["push_bytes_per_worker_step"] = s.push_bytes_per_worker_step;
  j["server_bytes"] = s.server_bytes;
  j["staleness"] = distribution_json(s.staleness);
  j["wait_s_per_step"] = distribution_json(s.wait_s_per_step);
  auto& workers = j["per_worker"] = nlohmann::ordered_json::array();
  for (const auto& w : s.per_worker) workers.push_back({{"compute_s", w.compute_s}, {"wait_s", w.wait_s}});
  return j;
}

nlohmann::ordered_json convergence_json(const results::ConvergenceResult& c) {
  nlohmann::ordered_json j;
  j["target"] = c.target;
  j["b_noise"] = c.b_noise;
  j["s_min"] = c.s_min;
  j["update_batch"] = c.update_batch;
  j["steps_without_staleness"] = c.steps_without_staleness;
  j["mean_staleness"] = c.mean_staleness;
  j["staleness_penalty"] = c.staleness_penalty;
  j["staleness_factor"] = c.staleness_factor;
  j["updates_to_target"] = c.updates_to_target;
  j["samples_to_target"] = c.samples_to_target;
  j["time_to_target_s"] = c.time_to_target_s;
  j["gpu_hours"] = c.gpu_hours;
  return j;
}

void write_layer_model_text(std::ostream& out, const config::Scenario& s) {
  const config::LayerTable& t = *s.layer_model;
  const config::DataParallelSpec& d = s.data_parallel;
  line(out, "scenario", s.name);
  line(out, "model",
       fmt::format("{} ({}): {} layers, {:.1f} M parameters, {:.2f} GFLOP forward per {}", t.id, t.name,
                   t.layers.size(), t.params() / 1e6, t.forward_flops() / 1e9, t.sample));
  const config::NetworkSpec& n = s.cluster.network;
  line(out, "cluster",
       fmt::format("{} x {} = {} GPUs ({}), {} {} x {} Gb/s per node", s.cluster.nodes, s.cluster.node_id,
                   s.gpu_count(), s.gpu.id, n.fabric, n.nics_per_node, n.nic_gbps));
  std::string arch = config::to_string(d.architecture);
  if (d.architecture != config::Architecture::allreduce) {
    arch += fmt::format(" ({} {} servers)", d.parameter_server.servers,
                        config::to_string(d.parameter_server.placement));
  }
  std::string sync = config::to_string(d.sync);
  if (d.sync == config::SyncMode::bounded) sync += fmt::format(" (staleness bound {})", d.staleness_bound);
  line(out, "training",
       fmt::format("{}, {}, global batch {} ({} per worker), {}", arch, sync, s.training.global_batch_size,
                   s.training.global_batch_size / s.gpu_count(), config::to_string(s.training.precision)));
  std::string jitter = fmt::format("compute variability {}", config::to_string(d.variability));
  if (d.variability != config::Variability::none) jitter += fmt::format(" cv {}", d.variability_cv);
  if (d.stragglers > 0) jitter += fmt::format(", {} stragglers x{}", d.stragglers, d.straggler_slowdown);
  line(out, "", jitter);
  line(out, "simulation",
       fmt::format("{} network (collectives; server transfers through the engine's ports), seed {}",
                   config::to_string(s.simulation.network), s.simulation.seed));
}

void write_data_parallel_text(std::ostream& out, const results::Result& r) {
  if (!r.data_parallel || !r.convergence) return;
  const results::DataParallelStats& s = *r.data_parallel;
  const results::ConvergenceResult& c = *r.convergence;
  out << '\n';
  line(out, "workers",
       fmt::format("{:.1f} steps/s over all workers; wait per step mean {:.3f} s, p99 {:.3f} s, max "
                   "{:.3f} s",
                   s.worker_steps_per_s, s.wait_s_per_step.mean, s.wait_s_per_step.p99,
                   s.wait_s_per_step.max));
  line(out, "staleness",
       fmt::format("mean {:.2f}, p50 {:.0f}, p99 {:.0f}, max {:.0f} updates", s.staleness.mean,
                   s.staleness.p50, s.staleness.p99, s.staleness.max));
  line(out, "traffic",
       fmt::format("all-reduce {:.1f} MiB in {} buckets, push {:.1f} MiB per worker step",
                   s.allreduce_bytes_per_step / kBytesPerMiB, s.allreduce_buckets,
                   s.push_bytes_per_worker_step / kBytesPerMiB));
  line(out, "converge",
       fmt::format("{:.0f} updates of {:.0f} samples (x{:.2f} for staleness) = {} ({:.0f} GPU-hours)",
                   c.updates_to_target, c.update_batch, c.staleness_factor, human_time(c.time_to_target_s),
                   c.gpu_hours));
}

}  // namespace dtsim::reports
