#include "models/dlrm/remote_servers.hpp"

#include <algorithm>

#include "core/errors.hpp"
#include "core/units.hpp"
#include "models/dlrm/dlrm.hpp"
#include "models/dlrm/zipf.hpp"
#include "models/transformer/transformer.hpp"

namespace dtsim::models {

// Named, not anonymous: unity builds put several files in one translation unit.
namespace remote_costs {

// The rates every GPU's exchange meets (the header's three resources), in bytes per second.
struct Rates {
  double trainer = 0.0;        // one GPU's share of its node's NICs
  double server_nics = 0.0;    // all servers' NICs together
  double server_memory = 0.0;  // all servers' memory together
  double gpus = 0.0;
  double latency_s = 0.0;
};

Rates rates_of(const config::Scenario& s) {
  DTSIM_CHECK(s.parallelism.embeddings.servers.has_value(), "remote embedding rows without servers");
  const config::RemoteServers& srv = *s.parallelism.embeddings.servers;
  const double servers = static_cast<double>(srv.count);
  Rates r;
  r.gpus = static_cast<double>(s.gpu_count());
  r.trainer = s.node_nic_bytes_per_s() / static_cast<double>(s.node.gpus_per_node);
  if (s.fabric.per_flow_gbps) r.trainer = std::min(r.trainer, servers * core::gbps_to_bytes_per_s(*s.fabric.per_flow_gbps));
  r.server_nics = servers * core::gbps_to_bytes_per_s(srv.nic_gbps) * s.fabric.efficiency;
  r.server_memory = servers * srv.row_gbytes_per_s * core::kGiga;
  r.latency_s = (s.fabric.latency_us + s.fabric.per_message_overhead_us) * 1e-6;
  return r;
}

RemoteExchange exchange(const Rates& r, double wire_bytes, double memory_bytes, double messages) {
  RemoteExchange out;
  out.trainer_s = wire_bytes / r.trainer;
  const double nics_s = r.gpus * wire_bytes / r.server_nics;
  const double memory_s = r.gpus * memory_bytes / r.server_memory;
  double slowest = out.trainer_s;
  out.limited_by = "trainer NICs";
  if (nics_s > slowest) {
    slowest = nics_s;
    out.limited_by = "server NICs";
  }
  if (memory_s > slowest) {
    slowest = memory_s;
    out.limited_by = "server memory";
  }
  out.seconds = wire_bytes > 0.0 ? messages * r.latency_s + slowest : 0.0;
  return out;
}

}  // namespace remote_costs

RemoteTraffic remote_traffic(const config::Scenario& s) {
  using namespace remote_costs;
  DTSIM_CHECK(s.dlrm.has_value(), "remote embedding traffic of a model without tables");
  const config::EmbeddingPlan& plan = s.parallelism.embeddings;
  const double local = static_cast<double>(s.training.global_batch_size) / static_cast<double>(s.gpu_count());
  const double e = activation_bytes_per_element(s.dlrm->embedding_precision);
  const double f = optimizer_state_bytes_per_value(s.training.optimizer);
  RemoteTraffic out;
  out.table_rows.assign(s.dlrm->tables.size(), 0.0);
  const config::EmbeddingTable* last = nullptr;  // the last remote table, and its distinct rows
  double last_rows = 0.0;
  for (std::size_t i = 0; i < s.dlrm->tables.size(); ++i) {
    const config::EmbeddingTable& t = s.dlrm->tables[i];
    if (!plan.remote(t.name)) continue;
    const double rows = static_cast<double>(t.rows);
    const double d = static_cast<double>(t.dim);
    // A synthetic table set repeats one table: its sum is computed once.
    const bool same = last != nullptr && last->rows == t.rows && last->pooling == t.pooling &&
                      last->zipf_exponent == t.zipf_exponent;
    const double u = same ? last_rows : zipf_distinct_rows(rows, local * t.pooling, t.zipf_exponent);
    last = &t;
    last_rows = u;
    out.table_rows[i] = u;
    out.rows += u;
    out.pull_out_bytes += u * kEmbeddingIdBytes;
    out.pull_in_bytes += u * d * e;
    out.push_bytes += u * (d * e + kEmbeddingIdBytes);
    out.gather_bytes += u * d * e;
    out.update_bytes += 2.0 * u * d * (e + f);
    out.resident_bytes += embedding_table_state_bytes(t, s.dlrm->embedding_precision, s.training.optimizer);
  }
  return out;
}

RemoteTiming remote_timing(const config::Scenario& s, const RemoteTraffic& t) {
  using namespace remote_costs;
  const Rates r = rates_of(s);
  RemoteTiming out;
  out.pull = exchange(r, t.pull_wire_bytes(), t.gather_bytes, 2.0);
  out.push = exchange(r, t.push_bytes, t.update_bytes, 1.0);
  return out;
}

std::vector<ResourceNeed> size_remote_servers(const config::Scenario& s, const RemoteTraffic& t) {
  using namespace remote_costs;
  const config::RemoteServers& srv = *s.parallelism.embeddings.servers;
  const double count = static_cast<double>(srv.count);
  const Rates r = rates_of(s);
  // One server's rates: what the header's counts divide by.
  const double nic = r.server_nics / count;
  const double memory = r.server_memory / count;
  const double pull_wire = t.pull_wire_bytes();
  double for_nics = 0.0;
  double for_memory = 0.0;
  for (const auto& [wire, work] : {std::pair{pull_wire, t.gather_bytes}, std::pair{t.push_bytes, t.update_bytes}}) {
    if (wire <= 0.0) continue;
    const double trainer_s = wire / r.trainer;
    for_nics = std::max(for_nics, whole_count(r.gpus * wire / (nic * trainer_s)));
    for_memory = std::max(for_memory, whole_count(r.gpus * work / (memory * trainer_s)));
  }
  return {{"parameter servers (memory)", count, whole_count(t.resident_bytes / srv.memory_bytes)},
          {"parameter servers (NICs)", count, for_nics},
          {"parameter servers (memory bandwidth)", count, for_memory}};
}

}  // namespace dtsim::models
