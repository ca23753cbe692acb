#include "models/input/input_pipeline.hpp"

#include <algorithm>

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

}  // namespace dtsim::models
