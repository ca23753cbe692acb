#include "reports/profile_json.hpp"

#include "config/scenario.hpp"

namespace dtsim::reports {

namespace {

nlohmann::ordered_json sources_json(const Sources& sources) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [key, text] : sources) j[key] = text;
  return j;
}

}  // namespace

nlohmann::ordered_json fabric_profile_json(const config::FabricProfile& f, const Sources& sources) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["id"] = f.id;
  j["name"] = f.name;
  j["efficiency"] = f.efficiency;
  j["latency_us"] = f.latency_us;
  j["per_message_overhead_us"] = f.per_message_overhead_us;
  if (f.per_flow_gbps) j["per_flow_gbps"] = *f.per_flow_gbps;
  j["sources"] = sources_json(sources);
  return j;
}

nlohmann::ordered_json node_profile_json(const config::NodeProfile& n, const Sources& sources) {
  nlohmann::ordered_json j;
  j["schema_version"] = 1;
  j["id"] = n.id;
  j["name"] = n.name;
  j["gpu"] = n.gpu;
  j["gpus_per_node"] = n.gpus_per_node;
  nlohmann::ordered_json intra;
  intra["kind"] = config::to_string(n.intra_kind);
  intra["gbytes_per_s"] = n.intra_gbytes_per_s;
  intra["efficiency"] = n.intra_efficiency;
  intra["latency_us"] = n.intra_latency_us;
  if (n.nvls_busbw_gbytes_per_s) intra["nvls_busbw_gbytes_per_s"] = *n.nvls_busbw_gbytes_per_s;
  j["intra_node"] = intra;
  j["network"] = {{"fabric", n.fabric}, {"nic_gbps", n.nic_gbps}, {"nics_per_node", n.nics_per_node}};
  j["host_memory_bytes"] = n.host_memory_bytes;
  j["sources"] = sources_json(sources);
  return j;
}

}  // namespace dtsim::reports
