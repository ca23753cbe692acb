#include "models/input/input_pipeline.hpp"

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"
#include "core/units.hpp"

namespace dtsim::models {

InputRate input_rate(const config::Scenario& scenario) {
  DTSIM_CHECK(scenario.input.has_value(), "input_rate needs an input pipeline");
  const config::InputPipelineSpec& in = *scenario.input;
  const double nodes = static_cast<double>(scenario.cluster.nodes);
  const double per_sample_bytes = in.sample_bytes / in.dedup_factor;
  const double per_sample_core_s = in.preprocess_core_s / in.dedup_factor;
  const double per_sample_tensor = in.tensor_bytes / in.dedup_factor;
  InputRate out;
  const auto limit = [&](const char* resource, double capacity, double cost) {
    if (cost > 0.0) out.limits.push_back({resource, capacity / cost});
  };
  if (in.storage_gbytes_per_s)
    limit("storage", *in.storage_gbytes_per_s * core::kGiga, per_sample_bytes * (1.0 - in.cache_hit));
  if (in.reader_servers) {
    const config::ReaderServers& r = *in.reader_servers;
    const double servers = static_cast<double>(r.count);
    limit("preprocessing", servers * static_cast<double>(r.cores), per_sample_core_s);
    limit("reader NICs", servers * core::gbps_to_bytes_per_s(r.nic_gbps), per_sample_tensor);
    const config::NetworkSpec& net = scenario.cluster.network;
    limit("trainer NICs", nodes * net.nics_per_node * core::gbps_to_bytes_per_s(net.nic_gbps), per_sample_tensor);
  } else if (per_sample_core_s > 0.0) {
    const std::int64_t host_cores = in.host_cpu_cores.value_or(scenario.node.host_cpu_cores.value_or(0));
    DTSIM_CHECK(host_cores > 0, "preprocessing on trainer hosts without host cores");
    const std::int64_t processes = std::max<std::int64_t>(in.workers_per_gpu, 1) * scenario.node.gpus_per_node;
    limit("preprocessing", nodes * static_cast<double>(std::min(processes, host_cores)), per_sample_core_s);
  }
  out.prefetch = in.workers_per_gpu >= 1;
  out.prefetch_batches = in.prefetch_factor * in.workers_per_gpu;
  for (const InputLimit& l : out.limits) {
    if (out.limited_by.empty() || l.samples_per_s < out.samples_per_s) {
      out.samples_per_s = l.samples_per_s;
      out.limited_by = l.resource;
    }
  }
  if (!out.limited_by.empty())
    out.load_s = static_cast<double>(scenario.training.global_batch_size) / out.samples_per_s;
  return out;
}

namespace input_sizing {

// The whole count that covers x, ignoring rounding noise in x (8.000000001 servers is 8).
double whole(double x) { return std::ceil(x * (1.0 - 1e-9)); }

}  // namespace input_sizing

InputSizing size_input(const config::Scenario& scenario, double demand_samples_per_s) {
  using input_sizing::whole;
  DTSIM_CHECK(scenario.input.has_value(), "size_input needs an input pipeline");
  const config::InputPipelineSpec& in = *scenario.input;
  const double demand = demand_samples_per_s;
  const double nodes = static_cast<double>(scenario.cluster.nodes);
  const double gpus_per_node = static_cast<double>(scenario.node.gpus_per_node);
  const double per_sample_core_s = in.preprocess_core_s / in.dedup_factor;
  const double per_sample_tensor = in.tensor_bytes / in.dedup_factor;
  InputSizing out;
  out.demand_samples_per_s = demand;
  const double read_bytes = in.sample_bytes / in.dedup_factor * (1.0 - in.cache_hit);
  if (in.storage_gbytes_per_s && read_bytes > 0.0)
    out.needs.push_back({"storage GB/s", *in.storage_gbytes_per_s, demand * read_bytes / core::kGiga});
  if (in.reader_servers) {
    const config::ReaderServers& r = *in.reader_servers;
    const double servers = static_cast<double>(r.count);
    if (per_sample_core_s > 0.0) {
      out.needs.push_back(
          {"reader servers (cores)", servers, whole(demand * per_sample_core_s / static_cast<double>(r.cores))});
    }
    out.needs.push_back(
        {"reader servers (NICs)", servers, whole(demand * per_sample_tensor / core::gbps_to_bytes_per_s(r.nic_gbps))});
    const config::NetworkSpec& net = scenario.cluster.network;
    out.needs.push_back({"trainer NIC Gb/s per node", net.nics_per_node * net.nic_gbps,
                         demand * per_sample_tensor * 8.0 / nodes / core::kGiga});
  } else if (per_sample_core_s > 0.0) {
    const double cores = demand * per_sample_core_s / nodes;
    const double host_cores =
        static_cast<double>(in.host_cpu_cores.value_or(scenario.node.host_cpu_cores.value_or(0)));
    out.needs.push_back({"data-loader workers per GPU", static_cast<double>(in.workers_per_gpu),
                         std::max(1.0, whole(cores / gpus_per_node))});
    out.needs.push_back({"host CPU cores per node", host_cores, whole(cores)});
  }
  return out;
}

}  // namespace dtsim::models
