// Embedding tables on remote CPU parameter servers (config::EmbeddingPlacement::remote; docs/dlrm.md
// "Remote parameter servers"): what one iteration moves between N GPUs (G per node, b samples each)
// and S servers, how long each exchange takes, and how many servers a plan needs.
//
// Each GPU pulls, before its lookups, the rows its own samples use and pushes their gradients after
// its backward pass; the servers apply the optimizer (XDL, Jiang et al., DLP-KDD'19; Persia, Lian et
// al., KDD'22). Ids are deduplicated per GPU before the pull, as both do: a table of R rows, width d,
// Zipf exponent s and pooling P sends U = zipf_distinct_rows(R, b P, s) rows (models/dlrm/zipf.hpp).
// Per GPU and iteration, e bytes per element, f bytes of optimizer state per element, 8 bytes per id:
//   pull   U x 8 bytes of ids to the servers, U d e bytes of rows back;     server memory: U d e read
//   push   U (d e + 8) bytes of gradients and ids to the servers;          server memory: U d (e + f)
//          read and written (the row and its states, updated in place)
// Rows are spread evenly over the servers (hashed by id), so each server serves N / S of every GPU's
// traffic. An exchange takes its messages' latency plus the slowest of three resources, each busy
// with every GPU's exchange at once:
//   trainer NICs    the larger direction's bytes / min(the node's NICs x nic_gbps / 8 x 1e9 x the fabric's
//                   efficiency / oversubscription / G, S x the fabric's per-flow cap where it has one)
//   server NICs     N x the larger direction's bytes / (S x nic_gbps / 8 x 1e9 x efficiency)
//   server memory   N x its memory bytes / (S x row_gbytes_per_s x 1e9)
// with latency 2 L for a pull (a request, then its answer) and L for a push, L = the fabric's
// latency_us + per_message_overhead_us. The engine runs each exchange as a task of its GPU through its
// node's NICs (graph::RemoteOp), sharing them with the GPU's other transfers running beside it.
//
// Sizing, at a plan's exchanges: the servers whose memory holds every remote table's rows and optimizer
// states, ceil(sum R d (e + f) / memory_bytes); and the servers at which neither their NICs nor their
// memory are slower than the trainers' NICs, for the pull and the push alike:
//   NICs    ceil(N x the larger direction's bytes / (nic rate x the trainer time))
//   memory  ceil(N x memory bytes / (row rate x the trainer time))
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/scenario.hpp"
#include "models/resource_need.hpp"

namespace dtsim::models {

// One GPU's traffic with the servers in one iteration, and the servers' work for it.
struct RemoteTraffic {
  std::vector<double> table_rows;  // per table of the model: the distinct rows pulled (0 if not remote)
  double rows = 0.0;            // distinct rows pulled (and their gradients pushed), all tables
  double pull_out_bytes = 0.0;  // ids sent
  double pull_in_bytes = 0.0;   // rows received
  double push_bytes = 0.0;      // gradients and ids sent
  double gather_bytes = 0.0;    // server memory read for the pull
  double update_bytes = 0.0;    // server memory read and written for the push
  double resident_bytes = 0.0;  // every remote table's rows and optimizer states, on all servers together
  // A pull on the wire: its larger direction (the rows back, unless rows are narrower than ids).
  double pull_wire_bytes() const { return pull_out_bytes > pull_in_bytes ? pull_out_bytes : pull_in_bytes; }
};

// Requires a DLRM scenario: the tables its plan places on the servers (none: all zero).
RemoteTraffic remote_traffic(const config::Scenario& scenario);

struct RemoteExchange {
  double seconds = 0.0;
  std::string limited_by;  // "trainer NICs", "server NICs", "server memory"
  double trainer_s = 0.0;  // the trainers' NICs alone (no latency)
};

struct RemoteTiming {
  RemoteExchange pull;
  RemoteExchange push;
};

// Requires the plan's servers (placement remote).
RemoteTiming remote_timing(const config::Scenario& scenario, const RemoteTraffic& traffic);

// "parameter servers (memory)", "parameter servers (NICs)", "parameter servers (memory bandwidth)", each
// with the stated count.
std::vector<ResourceNeed> size_remote_servers(const config::Scenario& scenario, const RemoteTraffic& traffic);

}  // namespace dtsim::models
