#include "parallel/embedding_shards.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "core/units.hpp"
#include "models/dlrm/dlrm.hpp"
#include "models/dlrm/zipf.hpp"
#include "models/transformer/transformer.hpp"

namespace dtsim::parallel {

// Named, not anonymous: unity builds put several files in one translation unit.
namespace shard_costs {

using config::EmbeddingPlacement;
using config::EmbeddingSharding;

constexpr double kMinRowElements = 32.0;  // fbgemm reads at least this many elements of a row

double block_penalty(double columns) {
  if (columns < 64) return 1.75;
  if (columns < 128) return 1.15;
  return 1.0;
}

struct Work {
  double hbm_bytes = 0.0;   // lookup bytes in HBM, forward
  double host_bytes = 0.0;  // lookup bytes over the host link, forward
  double backward_hbm = 0.0;
  double backward_host = 0.0;
  double hits = 0.0;  // ids served from HBM
};

}  // namespace shard_costs

EmbeddingLayout shard_embeddings(const config::Scenario& s, double reserved_hbm_bytes) {
  using namespace shard_costs;
  const config::DlrmSpec& m = *s.dlrm;
  const config::EmbeddingPlan& plan = s.parallelism.embeddings;
  const std::int64_t n = s.gpu_count();
  const std::int64_t per_node = s.node.gpus_per_node;
  const std::int64_t nodes = s.cluster.nodes;
  const double batch = static_cast<double>(s.training.global_batch_size);
  const double local = batch / static_cast<double>(n);
  const double e = models::activation_bytes_per_element(m.embedding_precision);
  const double state = models::optimizer_state_bytes_per_value(s.training.optimizer);
  const double nd = static_cast<double>(n);
  const double gd = static_cast<double>(per_node);
  EmbeddingLayout out;
  // Too large to simulate: refused before anything per GPU or per shard is allocated.
  // Shards placed greedily (weighed against every GPU) and shards in place (row-wise: one per GPU).
  double to_place = 0.0;
  double in_place = 0.0;
  for (const config::EmbeddingTable& table : m.tables) {
    const EmbeddingSharding how = plan.sharding_of(table.name);
    if (how == EmbeddingSharding::row_wise || plan.remote(table.name)) {
      in_place += nd;
    } else if (how == EmbeddingSharding::column_wise) {
      to_place += std::ceil(static_cast<double>(table.dim) / static_cast<double>(plan.column_shard_dim));
    } else {
      to_place += 1.0;
    }
  }
  if (n > kMaxDlrmGpus || to_place * nd > kMaxShardPlacements || in_place > kMaxShardPlacements) {
    out.infeasible = fmt::format(
        "too large to simulate: {} GPUs, {:.0f} embedding shards to place and {:.0f} row-wise shards (a DLRM "
        "simulates every GPU, at most {}, and weighs at most {:.0e} shard placements)",
        n, to_place, in_place, kMaxDlrmGpus, kMaxShardPlacements);
    return out;
  }
  out.ranks.assign(static_cast<std::size_t>(n), {});
  out.node_row_bytes.assign(static_cast<std::size_t>(nodes), 0.0);
  std::vector<Work> work(static_cast<std::size_t>(n));

  if (plan.any_rows(m, EmbeddingPlacement::remote)) {
    out.remote = models::remote_traffic(s);
    out.remote_timing = models::remote_timing(s, *out.remote);
  }

  // The shards of every table.
  double ids_to_owners = 0.0;    // ids per sample sent to the tables' GPUs
  double pooled_received = 0.0;  // pooled values per sample each GPU receives (all-to-all)
  for (std::size_t t = 0; t < m.tables.size(); ++t) {
    const config::EmbeddingTable& table = m.tables[t];
    const double rows = static_cast<double>(table.rows);
    const double d = static_cast<double>(table.dim);
    const EmbeddingSharding how = plan.sharding_of(table.name);
    if (plan.remote(table.name)) {
      // Every GPU pulls the distinct rows its own samples use (models/dlrm/remote_servers.hpp) and
      // pools them in HBM: a shard of those rows on each GPU.
      const double pulled = out.remote->table_rows[t];
      for (std::int64_t r = 0; r < n; ++r) out.shards.push_back({t, how, r, pulled, d, local * table.pooling, true});
      continue;
    }
    if (how != EmbeddingSharding::data_parallel) ids_to_owners += table.pooling;
    switch (how) {
      case EmbeddingSharding::table_wise:
        out.shards.push_back({t, how, -1, rows, d, batch * table.pooling});
        pooled_received += d;
        break;
      case EmbeddingSharding::column_wise: {
        const double width = static_cast<double>(plan.column_shard_dim);
        for (double c = 0.0; c < d; c += width) {
          out.shards.push_back({t, how, -1, rows, std::min(width, d - c), batch * table.pooling});
        }
        pooled_received += d;
        break;
      }
      case EmbeddingSharding::row_wise:
        for (std::int64_t r = 0; r < n; ++r) {
          out.shards.push_back({t, how, r, rows / nd, d, batch * table.pooling / nd});
        }
        out.row_wise_bytes += batch * d * e;
        break;
      case EmbeddingSharding::table_row_wise:
        // One shard per GPU of the node the table goes to (placed below).
        out.shards.push_back({t, how, -1, rows / gd, d, batch * table.pooling / gd});
        pooled_received += d;
        break;
      case EmbeddingSharding::data_parallel:
        out.shards.push_back({t, how, -1, rows, d, local * table.pooling});
        out.data_parallel_gradient_bytes += rows * d * e;
        out.data_parallel_hbm_bytes += rows * d * (e + state);
        break;
    }
  }

  // A cache's hit rate per (shard rows, exponent), computed once: the shards are costed several times.
  std::vector<std::array<double, 3>> hit_rates;  // rows, exponent, hit rate
  const auto cached_hit_rate = [&](double rows, double exponent) {
    for (const auto& [r, x, h] : hit_rates) {
      if (r == rows && x == exponent) return h;
    }
    const double h = models::zipf_cache_hit_rate(rows, plan.cache_fraction, exponent);
    hit_rates.push_back({rows, exponent, h});
    return h;
  };
  // Bytes of one shard: lookups forward and backward, weights and states, and where they live.
  const auto cost_of = [&](const EmbeddingShard& sh, double& hbm_resident, double& host_resident,
                           double* hbm_state = nullptr) {
    const config::EmbeddingTable& table = m.tables[sh.table];
    const double row = std::max(sh.columns, kMinRowElements) * e;
    const double penalty = block_penalty(sh.columns);
    // A data-parallel or remote table's GPU pools its own samples' lookups; a sharded table's, the batch's.
    const bool own_samples = sh.sharding == EmbeddingSharding::data_parallel || sh.remote;
    const double outputs = (own_samples ? local : batch) * sh.columns * e;
    const double weights = sh.rows * sh.columns * (e + state);
    const bool dp = sh.sharding == EmbeddingSharding::data_parallel;
    // Pulled rows are in HBM, in the exchange buffers; the servers update them and their states.
    const EmbeddingPlacement where = dp || sh.remote ? EmbeddingPlacement::hbm : plan.placement_of(table.name);
    double hit = 1.0;
    if (where == EmbeddingPlacement::host) hit = 0.0;
    if (where == EmbeddingPlacement::host_cached) hit = cached_hit_rate(sh.rows, table.zipf_exponent);
    hbm_resident = sh.remote                                   ? 0.0
                   : where == EmbeddingPlacement::hbm           ? weights
                   : where == EmbeddingPlacement::host_cached ? plan.cache_fraction * sh.rows * sh.columns * e
                                                              : 0.0;
    host_resident = where == EmbeddingPlacement::hbm ? 0.0 : weights;
    if (hbm_state != nullptr)
      *hbm_state = where == EmbeddingPlacement::hbm && !sh.remote ? sh.rows * sh.columns * state : 0.0;
    Work w;
    w.hbm_bytes = sh.ids * (hit * row * penalty + models::kEmbeddingIdBytes) + outputs;
    w.host_bytes = sh.ids * (1.0 - hit) * row;
    // Per id, the row's gradient read and written, and with the optimizer fused its state (a remote
    // table's optimizer runs on the servers: its gradients only accumulate per pulled row).
    const double per_id_backward =
        2.0 * row + (sh.remote ? 0.0 : 2.0 * std::max(sh.columns, kMinRowElements) * state);
    w.backward_hbm = outputs + sh.ids * (hit * per_id_backward * penalty + models::kEmbeddingIdBytes);
    w.backward_host = sh.ids * (1.0 - hit) * per_id_backward;
    w.hits = sh.ids * hit;
    return w;
  };
  const auto add = [&](std::int64_t r, const EmbeddingShard& sh) {
    double hbm = 0.0;
    double host = 0.0;
    double hbm_state = 0.0;
    const Work w = cost_of(sh, hbm, host, &hbm_state);
    Work& total = work[static_cast<std::size_t>(r)];
    total.hbm_bytes += w.hbm_bytes;
    total.host_bytes += w.host_bytes;
    total.backward_hbm += w.backward_hbm;
    total.backward_host += w.backward_host;
    total.hits += w.hits;
    RankEmbeddings& rank = out.ranks[static_cast<std::size_t>(r)];
    rank.ids += sh.ids;
    if (sh.sharding != EmbeddingSharding::data_parallel) {
      rank.hbm_weight_bytes += hbm - hbm_state;
      rank.hbm_state_bytes += hbm_state;
      rank.host_bytes += host;
    }
    if (sh.remote) return;
    if (sh.sharding == EmbeddingSharding::table_wise || sh.sharding == EmbeddingSharding::column_wise) {
      rank.alltoall_send_bytes += batch * sh.columns * e * (nd - 1.0) / nd;
    } else if (sh.sharding == EmbeddingSharding::table_row_wise) {
      rank.alltoall_send_bytes += batch * sh.columns * e / gd * (nd - 1.0) / nd;
    }
  };

  // HBM each GPU has for its shards, and the exchange buffers.
  // Ids sent and received, and the pooled values received forward and their gradients backward.
  out.buffer_bytes = local * ids_to_owners * models::kEmbeddingIdBytes * 2.0 + local * pooled_received * e * 2.0;
  // The rows pulled from the parameter servers and their gradients.
  if (out.remote) out.buffer_bytes += 2.0 * out.remote->pull_in_bytes;
  const double budget =
      s.hbm_bytes_per_gpu() - reserved_hbm_bytes - out.data_parallel_hbm_bytes - out.buffer_bytes;
  const auto lookup_work = [&](const EmbeddingShard& sh) {
    double hbm = 0.0;
    double host = 0.0;
    const Work w = cost_of(sh, hbm, host);
    return w.hbm_bytes + w.host_bytes + w.backward_hbm + w.backward_host;
  };

  // Row-wise and data-parallel shards are where they are; place the others, heaviest first.
  std::vector<double> load(static_cast<std::size_t>(n), 0.0);
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < out.shards.size(); ++i) {
    EmbeddingShard& sh = out.shards[i];
    if (sh.sharding == EmbeddingSharding::row_wise || sh.remote) {
      add(sh.rank, sh);
      load[static_cast<std::size_t>(sh.rank)] += lookup_work(sh);
    } else if (sh.sharding == EmbeddingSharding::data_parallel) {
      for (std::int64_t r = 0; r < n; ++r) add(r, sh);
    } else {
      order.push_back(i);
    }
  }
  std::vector<double> work_of(out.shards.size(), 0.0);
  for (const std::size_t i : order) work_of[i] = lookup_work(out.shards[i]);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (work_of[a] != work_of[b]) return work_of[a] > work_of[b];
    return out.shards[a].rows * out.shards[a].columns > out.shards[b].rows * out.shards[b].columns;
  });
  std::vector<double> hbm_used(static_cast<std::size_t>(n), 0.0);
  std::vector<EmbeddingShard> placed;
  for (const std::size_t i : order) {
    EmbeddingShard sh = out.shards[i];
    double hbm = 0.0;
    double host = 0.0;
    cost_of(sh, hbm, host);
    const bool whole_node = sh.sharding == EmbeddingSharding::table_row_wise;
    std::int64_t best = -1;
    const std::int64_t candidates = whole_node ? nodes : n;
    for (std::int64_t c = 0; c < candidates; ++c) {
      const std::int64_t first = whole_node ? c * per_node : c;
      const std::int64_t last = whole_node ? first + per_node : first + 1;
      bool room = true;
      double candidate_load = 0.0;
      for (std::int64_t r = first; r < last; ++r) {
        room = room && hbm_used[static_cast<std::size_t>(r)] + hbm <= budget;
        candidate_load = std::max(candidate_load, load[static_cast<std::size_t>(r)]);
      }
      if (!room) continue;
      double best_load = 0.0;
      if (best >= 0) {
        const std::int64_t bf = whole_node ? best * per_node : best;
        for (std::int64_t r = bf; r < bf + (whole_node ? per_node : 1); ++r) {
          best_load = std::max(best_load, load[static_cast<std::size_t>(r)]);
        }
      }
      if (best < 0 || candidate_load < best_load) best = c;
    }
    const config::EmbeddingTable& table = m.tables[sh.table];
    if (best < 0) {
      out.infeasible = fmt::format(
          "embedding table \"{}\" ({} shard of {:.2f} GiB in HBM) fits no GPU: {:.2f} GiB of HBM per GPU are "
          "left "
          "for embedding shards after the dense part, the data-parallel tables and the exchange buffers; "
          "shard it "
          "row_wise or table_row_wise, or place the tables in host memory",
          table.name, config::to_string(sh.sharding), hbm / core::kGiB, std::max(0.0, budget) / core::kGiB);
      return out;
    }
    const std::int64_t first = whole_node ? best * per_node : best;
    for (std::int64_t r = first; r < first + (whole_node ? per_node : 1); ++r) {
      EmbeddingShard on = sh;
      on.rank = r;
      add(r, on);
      hbm_used[static_cast<std::size_t>(r)] += hbm;
      load[static_cast<std::size_t>(r)] += work_of[i];
      placed.push_back(on);
    }
    if (whole_node) out.node_row_bytes[static_cast<std::size_t>(best)] += batch * sh.columns * e;
  }
  // The shards as placed: row-wise and data-parallel first, then the others in placement order.
  std::vector<EmbeddingShard> shards;
  for (const EmbeddingShard& sh : out.shards) {
    if (sh.sharding == EmbeddingSharding::row_wise || sh.sharding == EmbeddingSharding::data_parallel ||
        sh.remote) {
      shards.push_back(sh);
    }
  }
  shards.insert(shards.end(), placed.begin(), placed.end());
  out.shards = std::move(shards);

  // The kernels and the exchanges.
  double most_sent = 0.0;
  double hits = 0.0;
  double lookups = 0.0;
  for (std::int64_t r = 0; r < n; ++r) {
    RankEmbeddings& rank = out.ranks[static_cast<std::size_t>(r)];
    const Work& w = work[static_cast<std::size_t>(r)];
    rank.forward.cls = graph::ComputeClass::memory;
    rank.forward.bytes = w.hbm_bytes;
    rank.forward.host_bytes = w.host_bytes;
    rank.backward.cls = graph::ComputeClass::memory;
    rank.backward.bytes = w.backward_hbm;
    rank.backward.host_bytes = w.backward_host;
    most_sent = std::max(most_sent, rank.alltoall_send_bytes);
    lookups += rank.ids;
    hits += w.hits;
  }
  out.cache_hit_rate = lookups > 0.0 ? hits / lookups : 1.0;
  const double received = local * pooled_received * e * (nd - 1.0) / nd;
  out.pooled_alltoall_bytes = n > 1 ? std::max(most_sent, received) * nd / (nd - 1.0) : 0.0;
  out.ids_alltoall_bytes = n > 1 ? local * ids_to_owners * models::kEmbeddingIdBytes : 0.0;
  if (n == 1) out.row_wise_bytes = 0.0;

  // Host tiers: each node's shards in its host memory.
  for (std::int64_t node = 0; node < nodes; ++node) {
    double host = 0.0;
    for (std::int64_t r = node * per_node; r < (node + 1) * per_node; ++r) {
      host += out.ranks[static_cast<std::size_t>(r)].host_bytes;
    }
    if (host > s.node.host_memory_bytes) {
      out.infeasible = fmt::format(
          "node {} keeps {:.1f} GiB of embedding shards (weights and optimizer states) in host memory, more "
          "than its "
          "{:.1f} GiB; use more nodes, shards in HBM, or a smaller optimizer state",
          node, host / core::kGiB, s.node.host_memory_bytes / core::kGiB);
      return out;
    }
  }
  if (out.remote) {
    const config::RemoteServers& servers = *plan.servers;
    const double capacity = static_cast<double>(servers.count) * servers.memory_bytes;
    if (out.remote->resident_bytes > capacity) {
      out.infeasible = fmt::format(
          "the remote tables' rows and optimizer states take {:.1f} GiB, more than the {} parameter servers' {:.1f} "
          "GiB; use {:.0f} servers or more, or a smaller optimizer state",
          out.remote->resident_bytes / core::kGiB, servers.count, capacity / core::kGiB,
          models::whole_count(out.remote->resident_bytes / servers.memory_bytes));
      return out;
    }
  }
  return out;
}

}  // namespace dtsim::parallel
