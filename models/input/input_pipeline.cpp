#include "models/input/input_pipeline.hpp"

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"
#include "core/units.hpp"

namespace dtsim::models {

namespace input_costs {

// What one sample costs each resource, deduplication applied (the header's s (1 - cache_hit), c, t).
struct SampleCost {
  double storage_bytes = 0.0;  // read from storage: the reads the cache misses
  double core_s = 0.0;
  double tensor_bytes = 0.0;  // from a reader server to a trainer
};

SampleCost sample_cost(const config::InputPipelineSpec& in) {
  return {in.sample_bytes / in.dedup_factor * (1.0 - in.cache_hit), in.preprocess_core_s / in.dedup_factor,
          in.tensor_bytes / in.dedup_factor};
}

// The CPU cores of one trainer node: the input block's, else the node profile's.
double host_cores(const config::Scenario& scenario) {
  const std::int64_t cores = scenario.input->host_cpu_cores.value_or(scenario.node.host_cpu_cores.value_or(0));
  DTSIM_CHECK(cores > 0, "preprocessing on trainer hosts without host cores");
  return static_cast<double>(cores);
}

}  // namespace input_costs

InputRate input_rate(const config::Scenario& scenario) {
  using namespace input_costs;
  DTSIM_CHECK(scenario.input.has_value(), "input_rate needs an input pipeline");
  const config::InputPipelineSpec& in = *scenario.input;
  const double nodes = static_cast<double>(scenario.cluster.nodes);
  const SampleCost cost = sample_cost(in);
  InputRate out;
  const auto limit = [&](const char* resource, double capacity, double per_sample) {
    if (per_sample > 0.0) out.limits.push_back({resource, capacity / per_sample});
  };
  if (in.storage_gbytes_per_s) limit("storage", *in.storage_gbytes_per_s * core::kGiga, cost.storage_bytes);
  if (in.reader_servers) {
    const config::ReaderServers& r = *in.reader_servers;
    const double servers = static_cast<double>(r.count);
    limit("preprocessing", servers * static_cast<double>(r.cores), cost.core_s);
    limit("reader NICs", servers * core::gbps_to_bytes_per_s(r.nic_gbps), cost.tensor_bytes);
    const config::NetworkSpec& net = scenario.cluster.network;
    limit("trainer NICs", nodes * net.nics_per_node * core::gbps_to_bytes_per_s(net.nic_gbps), cost.tensor_bytes);
  } else if (cost.core_s > 0.0) {
    const double processes =
        static_cast<double>(std::max<std::int64_t>(in.workers_per_gpu, 1) * scenario.node.gpus_per_node);
    limit("preprocessing", nodes * std::min(processes, host_cores(scenario)), cost.core_s);
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

InputSizing size_input(const config::Scenario& scenario, double demand_samples_per_s) {
  using namespace input_costs;
  DTSIM_CHECK(scenario.input.has_value(), "size_input needs an input pipeline");
  const config::InputPipelineSpec& in = *scenario.input;
  const double demand = demand_samples_per_s;
  const double nodes = static_cast<double>(scenario.cluster.nodes);
  const SampleCost cost = sample_cost(in);
  InputSizing out;
  out.demand_samples_per_s = demand;
  if (in.storage_gbytes_per_s && cost.storage_bytes > 0.0)
    out.needs.push_back({"storage GB/s", *in.storage_gbytes_per_s, demand * cost.storage_bytes / core::kGiga});
  if (in.reader_servers) {
    const config::ReaderServers& r = *in.reader_servers;
    const double servers = static_cast<double>(r.count);
    if (cost.core_s > 0.0)
      out.needs.push_back({"reader servers (cores)", servers, whole_count(demand * cost.core_s / static_cast<double>(r.cores))});
    out.needs.push_back(
        {"reader servers (NICs)", servers, whole_count(demand * cost.tensor_bytes / core::gbps_to_bytes_per_s(r.nic_gbps))});
    const config::NetworkSpec& net = scenario.cluster.network;
    out.needs.push_back({"trainer NIC Gb/s per node", net.nics_per_node * net.nic_gbps,
                         demand * cost.tensor_bytes * 8.0 / nodes / core::kGiga});
  } else if (cost.core_s > 0.0) {
    const double cores = demand * cost.core_s / nodes;
    const double gpus_per_node = static_cast<double>(scenario.node.gpus_per_node);
    out.needs.push_back({"data-loader workers per GPU", static_cast<double>(in.workers_per_gpu),
                         std::max(1.0, whole_count(cores / gpus_per_node))});
    out.needs.push_back({"host CPU cores per node", host_cores(scenario), whole_count(cores)});
  }
  return out;
}

}  // namespace dtsim::models
