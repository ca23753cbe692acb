// Where a DLRM's embedding tables go (config::EmbeddingPlan) and what each GPU then does with them in
// one iteration of B samples over N GPUs (b = B / N each, G GPUs per node, e bytes per element of the
// tables' precision, d the width of a table or column shard); docs/dlrm.md has the derivations.
//
// Shards (torchrec's sharding types; Mudigere et al., ISCA'22, Sec. 4; the reference's cost terms are
// torchrec's planner, planner/shard_estimators.py):
//   table_wise      one shard, on one GPU: looks up B x pooling ids, sends B x d pooled values
//   column_wise     shards of column_shard_dim columns, each placed as a table
//   row_wise        N shards of rows / N rows, one per GPU: B x pooling / N ids each (rows hashed evenly),
//                   B x d partial sums each, reduce-scattered over all GPUs (all-gathered backward)
//   table_row_wise  G shards on the GPUs of one node: B x pooling / G ids each, B x d partial sums
//                   reduce-scattered inside the node, then B x d / G values each into the all-to-all
//   data_parallel   a copy on every GPU: b x pooling ids, no exchange; its gradient (rows x d) is
//                   all-reduced with the dense gradients
// Placement: greedy, as torchrec's GreedyPerfPartitioner: shards by decreasing lookup work (ties: by
// size, then table order) each to the GPU (a table_row_wise table: the node) with the least work so far
// among those with room left in HBM for it (weights and optimizer state, or its cache); ties to the
// lowest rank. HBM left = capacity - the dense part's weights, gradients, optimizer states and
// activations - the data-parallel tables - the exchange buffers (all computed first). A shard that
// fits nowhere makes the plan infeasible, with the reason.
//
// Lookup bytes per id: max(d, 32) e (a row; fbgemm reads at least 32 elements) x the block penalty of
// fbgemm's kernels for narrow rows (1.15 for 64 <= d < 128, 1.75 for d < 64; torchrec planner
// constants.py, HALF_BLOCK_PENALTY and QUARTER_BLOCK_PENALTY), plus 8 bytes of id; plus the pooled
// output written once. Backward with the optimizer fused (fbgemm's table-batched embedding): the
// pooled gradient read once, and per id the row read and written and the optimizer state read and
// written (sgd none; adagrad d x 4 bytes; adam 2 d x 4 bytes), rows not deduplicated.
// Placement of the rows (config::EmbeddingPlacement): hbm, every byte in HBM; host, row bytes over the
// host link (ComputeOp::host_bytes); host_cached, the fraction h of ids that hit the HBM cache in HBM,
// the rest over the host link, with h = H(c R, s) / H(R, s) for a cache of c R of a shard's R rows
// under Zipf popularity with exponent s (H the generalized harmonic number; h = c for s = 0), an LRU
// cache that holds the most popular rows. Weights and optimizer states of host and host_cached shards
// live in the host's memory; the node's must fit in its host memory (NodeProfile::host_memory_bytes).
// Remote placement (models/dlrm/remote_servers.hpp): every table not data-parallel stays on the
// parameter servers, which must hold its rows and optimizer states; each GPU pools its own samples'
// lookups (b x pooling ids) from the distinct rows it pulled into HBM (a shard of those rows on every
// GPU, in the exchange buffers with their gradients), and backward accumulates each id's gradient into
// its row's (the row's gradient read and written per id; the servers run the optimizer). No ids or
// pooled values are exchanged between GPUs for these tables.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/scenario.hpp"
#include "graph/ops.hpp"
#include "models/dlrm/remote_servers.hpp"

namespace dtsim::parallel {

struct EmbeddingShard {
  std::size_t table = 0;  // index into DlrmSpec::tables
  config::EmbeddingSharding sharding = config::EmbeddingSharding::table_wise;
  std::int64_t rank = -1;  // its GPU; -1 for a data-parallel table (on every GPU)
  double rows = 0.0;
  double columns = 0.0;
  double ids = 0.0;  // ids it looks up per iteration
  bool remote = false;  // rows pulled from the parameter servers into its GPU's HBM (rows: the pulled ones)
};

// One GPU's embedding work and memory in one iteration.
struct RankEmbeddings {
  graph::ComputeOp forward;   // the lookups and pooling of all its shards (one kernel)
  graph::ComputeOp backward;  // their gradients and fused optimizer step (one kernel)
  double ids = 0.0;
  double hbm_weight_bytes = 0.0;     // its shards' rows (or their caches) in HBM
  double hbm_state_bytes = 0.0;      // their optimizer states in HBM
  double host_bytes = 0.0;           // its shards' weights and optimizer states in host memory
  double alltoall_send_bytes = 0.0;  // pooled values it sends to other GPUs' samples, forward
};

struct EmbeddingLayout {
  std::vector<EmbeddingShard> shards;
  std::vector<RankEmbeddings> ranks;  // indexed by rank
  // Exchanges, in CommOp's bytes convention (all_to_all: each rank sends (n - 1) / n of it; the busiest
  // sender or the receivers set it).
  double ids_alltoall_bytes = 0.0;            // the batch's ids to the tables' GPUs
  double pooled_alltoall_bytes = 0.0;         // pooled values to the samples' GPUs (and gradients back)
  double row_wise_bytes = 0.0;                // reduce-scatter forward, all-gather backward, over all GPUs
  std::vector<double> node_row_bytes;         // per node: table_row_wise reduce-scatter inside the node
  double data_parallel_gradient_bytes = 0.0;  // all-reduced with the dense gradients
  double data_parallel_hbm_bytes = 0.0;       // the data-parallel tables' weights and states, per GPU
  double buffer_bytes =
      0.0;  // per GPU: its b samples' ids sent and received, pooled values and their gradients
  double cache_hit_rate = 1.0;            // ids served from HBM, over all lookups (1 without a host tier)
  // The remote placement: each GPU's traffic with the parameter servers, and its pull and push.
  std::optional<models::RemoteTraffic> remote;
  models::RemoteTiming remote_timing;
  std::optional<std::string> infeasible;  // why the plan cannot run
};

// The most GPUs a DLRM simulates (every one of them), and the most shard placements the greedy
// placement weighs (shards x GPUs, or nodes for table-row-wise shards): beyond, the plan is too large to
// simulate (an infeasible result, as the transformer's kMaxSimulated).
inline constexpr std::int64_t kMaxDlrmGpus = std::int64_t{1} << 20;
inline constexpr double kMaxShardPlacements = 2e8;

// `reserved_hbm_bytes`: HBM each GPU needs besides its shards (the dense part's memory).
EmbeddingLayout shard_embeddings(const config::Scenario& scenario, double reserved_hbm_bytes);

}  // namespace dtsim::parallel
