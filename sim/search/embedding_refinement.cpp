#include "search/embedding_refinement.hpp"

#include <algorithm>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "network/flow_cache.hpp"
#include "search/embedding_search.hpp"
#include "search/search.hpp"

namespace dtsim::search {

// Named, not anonymous: unity builds put several files in one translation unit.
namespace embedding_refining {

using config::EmbeddingPlacement;
using config::EmbeddingSharding;

// `name`'s sharding and placement in `plan` (overrides only where they differ from the plan's own),
// with the scenario's servers while some table is on them.
void set_table(config::EmbeddingPlan& plan, const config::DlrmSpec& model, const std::string& name,
               EmbeddingSharding sharding, EmbeddingPlacement where,
               const std::optional<config::RemoteServers>& servers) {
  const auto named = [&](const auto& entry) { return entry.first == name; };
  std::erase_if(plan.per_table, named);
  if (sharding != plan.sharding) plan.per_table.emplace_back(name, sharding);
  std::erase_if(plan.per_table_placement, named);
  if (sharding != EmbeddingSharding::data_parallel && where != plan.placement)
    plan.per_table_placement.emplace_back(name, where);
  plan.servers = plan.any_rows(model, EmbeddingPlacement::remote) ? servers : std::nullopt;
}

}  // namespace embedding_refining

Refinement refine_embedding_plan(const config::Scenario& base, const Candidate& start,
                                 const results::Result& start_result, std::size_t jobs) {
  using namespace embedding_refining;
  const config::DlrmSpec& m = *base.dlrm;
  Refinement out{start, start_result, 0, 0, 0.0};
  // The largest tables first (ties in table order), at most kRefinedTables.
  std::vector<std::size_t> order(m.tables.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return embedding_table_bytes(base, m.tables[a]) > embedding_table_bytes(base, m.tables[b]);
  });
  order.resize(std::min(order.size(), kRefinedTables));

  std::vector<EmbeddingPlacement> placements{EmbeddingPlacement::hbm};
  if (base.gpu.has_host_link()) {
    placements.push_back(EmbeddingPlacement::host_cached);
    placements.push_back(EmbeddingPlacement::host);
  }
  const std::optional<config::RemoteServers>& servers = base.parallelism.embeddings.servers;
  if (servers) placements.push_back(EmbeddingPlacement::remote);

  network::FlowCache flow_cache;
  for (const std::size_t t : order) {
    const config::EmbeddingTable& table = m.tables[t];
    const config::EmbeddingPlan& now = out.plan.scenario.parallelism.embeddings;
    std::vector<Candidate> alternatives;
    for (const EmbeddingSharding sharding : config::kEmbeddingShardings) {
      if (sharding == EmbeddingSharding::column_wise && table.dim <= now.column_shard_dim) continue;
      if (sharding == EmbeddingSharding::data_parallel && embedding_table_bytes(base, table) >= kSmallTableBytes)
        continue;
      for (const EmbeddingPlacement where : placements) {
        // A replica is in HBM wherever the plan places the others: one alternative.
        if (sharding == EmbeddingSharding::data_parallel && where != EmbeddingPlacement::hbm) continue;
        if (sharding == now.sharding_of(table.name) && where == now.rows_of(table.name)) continue;
        Candidate c = out.plan;
        set_table(c.scenario.parallelism.embeddings, m, table.name, sharding, where, servers);
        alternatives.push_back(std::move(c));
      }
    }
    if (alternatives.empty()) continue;
    Evaluated evaluated =
        evaluate_candidates(alternatives, jobs, /*extrapolate=*/false, {.flow = &flow_cache});
    out.evaluated += alternatives.size();
    out.cpu_s += evaluated.cpu_s;
    const std::vector<std::size_t> best = rank_results(evaluated.results, 1);
    if (best.empty() || !ranks_before(evaluated.results[best.front()], out.result)) continue;
    out.plan = std::move(alternatives[best.front()]);
    out.result = std::move(evaluated.results[best.front()]);
  }

  const config::EmbeddingPlan& from = start.scenario.parallelism.embeddings;
  const config::EmbeddingPlan& to = out.plan.scenario.parallelism.embeddings;
  for (const config::EmbeddingTable& table : m.tables) {
    const bool same = from.sharding_of(table.name) == to.sharding_of(table.name) &&
                      from.rows_of(table.name) == to.rows_of(table.name);
    out.changed += same ? 0 : 1;
  }
  out.plan.label = fmt::format("{} + {} table{} on {} own", start.label, out.changed, out.changed == 1 ? "" : "s",
                               out.changed == 1 ? "its" : "their");
  out.plan.scenario.name = fmt::format("{}: {}", base.name, out.plan.label);
  out.result.scenario.name = out.plan.scenario.name;
  return out;
}

}  // namespace dtsim::search
