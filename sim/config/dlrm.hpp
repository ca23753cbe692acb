// A deep-learning recommendation model (DLRM; Naumov et al. 2019, "Deep Learning Recommendation Model
// for Personalization and Recommendation Systems", arXiv 1906.00091) and how its embedding tables are
// split over the GPUs (docs/dlrm.md). Typed and validated by dlrm_loader; costed by models/dlrm and
// parallel/embedding_shards.
//
// The model: dense features -> bottom MLP (ReLU after every layer); each sparse feature -> the rows
// its ids name in its embedding table, summed (EmbeddingBag, pooling "sum"); the interaction of the
// bottom MLP's output with the pooled embeddings (dot: the pairwise dot products of the F = tables + 1
// vectors, concatenated with the dense vector, as torchrec's InteractionArch; dcn_v2: the DCN-v2 cross
// network over their concatenation, x_{l+1} = x_0 * (V (U x_l) + b) + x_l with low-rank U and V, as
// torchrec's InteractionDCNArch, Wang et al. 2021, arXiv 2008.13535) -> top MLP (ReLU between
// layers) -> one logit, binary cross-entropy.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/hardware.hpp"

namespace dtsim::config {

enum class Interaction { dot, dcn_v2 };

// How a table is split over the GPUs (torchrec's ShardingType; Mudigere et al., ISCA'22, "Software-
// Hardware Co-design for Fast and Scalable Training of Deep Learning Recommendation Models", Sec. 4):
//   table_wise      the whole table on one GPU, which looks up every sample's ids of it
//   row_wise        its rows cut evenly over all GPUs; each looks up the ids in its rows and the
//                   partial sums are reduce-scattered to the samples' GPUs (all-gathered backward)
//   column_wise     its columns cut into shards of column_shard_dim placed as tables
//   table_row_wise  the table on one node, its rows cut over that node's GPUs (reduce-scatter inside
//                   the node, then all-to-all across nodes)
//   data_parallel   a copy on every GPU, which looks up its own samples; its gradient all-reduced
enum class EmbeddingSharding { table_wise, row_wise, column_wise, table_row_wise, data_parallel };
// Where a shard's rows live: GPU memory; host memory, read by the GPU over its host link (unified
// memory, torchrec's UVM kernels); host memory with an HBM cache of cache_fraction of each shard's rows
// (UVM caching), the hits read from HBM; the memory of remote CPU parameter servers (RemoteServers),
// from which each GPU pulls the rows its own samples use and to which it pushes their gradients, as
// XDL (Jiang et al., DLP-KDD'19) and Persia (Lian et al., KDD'22) train: no table is sharded over the
// GPUs then, and no pooled values are exchanged between them.
enum class EmbeddingPlacement { hbm, host, host_cached, remote };

// The CPU parameter servers that hold the tables of the "remote" placement (key
// parallelism.embeddings.servers). Rows are spread evenly over them (hashed by id).
struct RemoteServers {
  std::int64_t count = 0;
  double memory_bytes = 0.0;  // each server's memory for rows and optimizer states
  double nic_gbps = 0.0;      // each server's network bandwidth, per direction
  // The rate at which a server reads the rows it sends and reads and writes the rows and states it
  // updates, in its memory (GB/s): random accesses of a row each, below the memory's peak.
  double row_gbytes_per_s = 0.0;
  // Each server's price per hour (USD): `plan` adds the servers to a plan's cost when its tables are on
  // them; absent, the servers cost nothing in the plan (it says so).
  std::optional<double> usd_per_hour;
};

struct EmbeddingTable {
  std::string name;
  std::int64_t rows = 0;
  std::int64_t dim = 0;
  double pooling = 1.0;  // ids looked up per sample (mean)
  // Popularity of the rows: the k-th most looked-up row is looked up in proportion to k^-s (Zipf);
  // 0: every row alike. Sets an HBM cache's hit rate (parallel/embedding_shards.hpp).
  double zipf_exponent = 0.0;
};

struct DlrmSpec {
  std::string preset;  // preset id, "" when given inline
  std::int64_t dense_features = 0;
  std::vector<std::int64_t> bottom_mlp;  // output widths; the last is the embedding dimension
  std::vector<std::int64_t> top_mlp;     // output widths; the last is 1 (the logit)
  Interaction interaction = Interaction::dot;
  std::int64_t dcn_layers = 0;    // dcn_v2: cross layers
  std::int64_t dcn_low_rank = 0;  // dcn_v2: rank of each layer's U and V
  std::vector<EmbeddingTable> tables;
  Precision embedding_precision = Precision::fp32;  // the rows and the exchanged pooled vectors

  std::int64_t embedding_dim() const { return bottom_mlp.empty() ? 0 : bottom_mlp.back(); }
  double embedding_rows() const;
  double lookups_per_sample() const;  // sum of the tables' pooling
};

// parallelism.embeddings: the plan for the tables.
struct EmbeddingPlan {
  EmbeddingSharding sharding = EmbeddingSharding::table_wise;
  std::vector<std::pair<std::string, EmbeddingSharding>> per_table;  // overrides, by table name
  EmbeddingPlacement placement = EmbeddingPlacement::hbm;
  // Overrides, by table name: a mix of placements (the large tables on parameter servers or in host
  // memory, the others in HBM). A data-parallel table stays in HBM whatever its placement says.
  std::vector<std::pair<std::string, EmbeddingPlacement>> per_table_placement;
  // host_cached: rows of each shard cached in HBM (torchrec's planner assumes 0.2 by default,
  // planner/constants.py, its caching ratio).
  double cache_fraction = 0.2;
  // column_wise: columns per shard (torchrec's minimum column-wise shard, 128).
  std::int64_t column_shard_dim = 128;
  // The next batch's ids are sent to the tables' GPUs while this batch trains (torchrec's
  // TrainPipelineSparseDist); false: each batch's ids first, then its lookups.
  bool pipelined = true;
  std::optional<RemoteServers> servers;  // placement "remote": required; otherwise absent

  EmbeddingSharding sharding_of(const std::string& table) const;
  EmbeddingPlacement placement_of(const std::string& table) const;
  // Where its rows live: its placement, or HBM for a data-parallel table (a replica on every GPU).
  EmbeddingPlacement rows_of(const std::string& table) const {
    return sharding_of(table) == EmbeddingSharding::data_parallel ? EmbeddingPlacement::hbm : placement_of(table);
  }
  // Its rows on the parameter servers.
  bool remote(const std::string& table) const { return rows_of(table) == EmbeddingPlacement::remote; }
  // Whether the rows of some table of `model` live at `where`.
  bool any_rows(const DlrmSpec& model, EmbeddingPlacement where) const;
};

inline constexpr std::array kInteractions{Interaction::dot, Interaction::dcn_v2};
inline constexpr std::array kEmbeddingShardings{
    EmbeddingSharding::table_wise, EmbeddingSharding::row_wise, EmbeddingSharding::column_wise,
    EmbeddingSharding::table_row_wise, EmbeddingSharding::data_parallel};
inline constexpr std::array kEmbeddingPlacements{EmbeddingPlacement::hbm, EmbeddingPlacement::host,
                                                 EmbeddingPlacement::host_cached, EmbeddingPlacement::remote};

const char* to_string(Interaction i);
const char* to_string(EmbeddingSharding s);
const char* to_string(EmbeddingPlacement p);

}  // namespace dtsim::config
