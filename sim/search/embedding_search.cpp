#include "search/embedding_search.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "core/units.hpp"
#include "models/dlrm/dlrm.hpp"
#include "models/transformer/transformer.hpp"
#include "network/flow_cache.hpp"
#include "parallel/embedding_shards.hpp"
#include "search/embedding_refinement.hpp"

namespace dtsim::search {

// Named, not anonymous: unity builds put several files in one translation unit.
namespace embedding_candidates {

using config::EmbeddingPlacement;
using config::EmbeddingSharding;

struct Placement {
  EmbeddingPlacement where = EmbeddingPlacement::hbm;
  double cache_fraction = 0.0;
};

std::string placement_label(const Placement& p) {
  switch (p.where) {
    case EmbeddingPlacement::hbm:
      return "HBM";
    case EmbeddingPlacement::host:
      return "host memory";
    case EmbeddingPlacement::host_cached:
      return fmt::format("host, {:.0f}% cached", 100.0 * p.cache_fraction);
    case EmbeddingPlacement::remote:
      return "parameter servers";
  }
  return "";
}

// A plan: `large` for the tables above the large threshold (none: like the rest), `rest` for the
// others, the small ones replicated when `small_replicated`.
struct Shape {
  std::optional<EmbeddingSharding> large;
  EmbeddingSharding rest = EmbeddingSharding::table_wise;
  bool small_replicated = false;
};

}  // namespace embedding_candidates

double embedding_table_bytes(const config::Scenario& s, const config::EmbeddingTable& t) {
  return models::embedding_table_state_bytes(t, s.dlrm->embedding_precision, s.training.optimizer);
}

std::vector<Candidate> embedding_plan_candidates(const config::Scenario& base) {
  using namespace embedding_candidates;
  const config::DlrmSpec& m = *base.dlrm;
  const double large_bytes = base.hbm_bytes_per_gpu() / 4.0;
  bool any_large = false;
  bool all_large = true;
  bool any_small = false;
  for (const config::EmbeddingTable& t : m.tables) {
    any_large = any_large || embedding_table_bytes(base, t) > large_bytes;
    all_large = all_large && embedding_table_bytes(base, t) > large_bytes;
    any_small = any_small || embedding_table_bytes(base, t) < kSmallTableBytes;
  }
  // Column shards differ from whole tables only for tables wider than a shard.
  bool any_wide = false;
  for (const config::EmbeddingTable& t : m.tables)
    any_wide = any_wide || t.dim > base.parallelism.embeddings.column_shard_dim;
  std::vector<Shape> shapes;
  for (const EmbeddingSharding s : config::kEmbeddingShardings) {
    if (s != EmbeddingSharding::column_wise || any_wide) shapes.push_back({std::nullopt, s, false});
  }
  if (any_large && !all_large) {
    for (const EmbeddingSharding s :
         {EmbeddingSharding::row_wise, EmbeddingSharding::table_row_wise, EmbeddingSharding::column_wise}) {
      if (s != EmbeddingSharding::column_wise || any_wide)
        shapes.push_back({s, EmbeddingSharding::table_wise, false});
    }
  }
  if (any_small) {
    const std::size_t before = shapes.size();
    for (std::size_t i = 0; i < before; ++i) {
      const Shape& sh = shapes[i];
      if (sh.rest == EmbeddingSharding::table_wise) shapes.push_back({sh.large, sh.rest, true});
    }
  }
  std::vector<Placement> placements{{EmbeddingPlacement::hbm, 0.0}};
  if (base.gpu.has_host_link()) {
    for (const double f : kCacheFractions) placements.push_back({EmbeddingPlacement::host_cached, f});
    placements.push_back({EmbeddingPlacement::host, 0.0});
  }

  std::vector<Candidate> out;
  for (const Shape& shape : shapes) {
    for (const Placement& where : placements) {
      // Replicated tables live in HBM whatever the placement: one candidate.
      const bool replicated = !shape.large && shape.rest == EmbeddingSharding::data_parallel;
      if (replicated && where.where != EmbeddingPlacement::hbm) continue;
      config::Scenario s = base;
      config::EmbeddingPlan& plan = s.parallelism.embeddings;
      plan.sharding = shape.rest;
      plan.per_table.clear();
      for (const config::EmbeddingTable& t : m.tables) {
        const double bytes = embedding_table_bytes(base, t);
        if (shape.large && bytes > large_bytes) plan.per_table.emplace_back(t.name, *shape.large);
        if (shape.small_replicated && bytes < kSmallTableBytes) {
          plan.per_table.emplace_back(t.name, EmbeddingSharding::data_parallel);
        }
      }
      plan.placement = where.where;
      plan.per_table_placement.clear();
      plan.servers.reset();  // parameter servers hold the remote placement's tables only
      if (where.where == EmbeddingPlacement::host_cached) plan.cache_fraction = where.cache_fraction;
      std::string label = config::to_string(shape.rest);
      if (shape.large) {
        label = fmt::format("{} > {:.1f} GiB, {}", config::to_string(*shape.large), large_bytes / core::kGiB,
                            label);
      }
      if (shape.small_replicated) label += ", small data_parallel";
      s.name = fmt::format("{}: {}; {}", base.name, label, placement_label(where));
      out.push_back({fmt::format("{}; {}", label, placement_label(where)), std::move(s)});
    }
  }
  // The scenario's parameter servers (the remote placement): every table on them, or the small ones
  // replicated; how the others would be sharded over the GPUs does not apply.
  if (base.parallelism.embeddings.servers) {
    for (const bool small_replicated : {false, true}) {
      if (small_replicated && !any_small) continue;
      config::Scenario s = base;
      config::EmbeddingPlan& plan = s.parallelism.embeddings;
      plan.sharding = EmbeddingSharding::table_wise;
      plan.per_table.clear();
      for (const config::EmbeddingTable& t : m.tables) {
        if (small_replicated && embedding_table_bytes(base, t) < kSmallTableBytes)
          plan.per_table.emplace_back(t.name, EmbeddingSharding::data_parallel);
      }
      plan.placement = EmbeddingPlacement::remote;
      plan.per_table_placement.clear();
      const std::string label = fmt::format("{}; {}", small_replicated ? "small data_parallel" : "every table",
                                            placement_label({EmbeddingPlacement::remote, 0.0}));
      s.name = fmt::format("{}: {}", base.name, label);
      out.push_back({label, std::move(s)});
    }
  }
  return out;
}

SearchOutcome search_embedding_plans(const config::Scenario& base, const SearchOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  std::vector<Candidate> candidates = embedding_plan_candidates(base);
  SearchOutcome out;
  out.enumerated = candidates.size();
  out.extrapolated = false;
  out.jobs = std::max<std::size_t>(1, std::min(options.jobs, candidates.size()));
  out.enumerate_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const auto evaluate_start = std::chrono::steady_clock::now();
  network::FlowCache flow_cache;
  Evaluated evaluated =
      evaluate_candidates(candidates, out.jobs, /*extrapolate=*/false, {.flow = &flow_cache});
  out.evaluate_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - evaluate_start).count();
  out.evaluate_cpu_s = evaluated.cpu_s;
  // The plans that cannot run, by the kind of reason (the reasons name tables and nodes).
  for (const results::Result& r : evaluated.results) {
    if (r.status == results::Status::ok) continue;
    const std::string kind = r.reason.rfind("embedding table", 0) == 0 ? "a table's shard fits no GPU's HBM"
                             : r.reason.find("host memory") != std::string::npos
                                 ? "the shards in host memory exceed a node's"
                             : r.reason.rfind("the remote tables", 0) == 0
                                 ? "the tables exceed the parameter servers' memory"
                                 : "out of memory (the dense part and replicated tables)";
    const auto it = std::find_if(out.rejections.begin(), out.rejections.end(),
                                 [&](const RejectionClass& c) { return c.reason == kind; });
    if (it == out.rejections.end()) {
      out.rejections.push_back({kind, 1});
    } else {
      ++it->count;
    }
  }
  // Placement refuses them before the engine runs: pruned; the others simulated.
  for (const RejectionClass& c : out.rejections) out.pruned += c.count;
  out.evaluated = candidates.size() - out.pruned;
  // The best family plan, refined table by table (embedding_refinement.hpp), ranked with the others
  // when it changed a table.
  const std::vector<std::size_t> best = rank_results(evaluated.results, 1);
  if (!best.empty()) {
    const auto refine_start = std::chrono::steady_clock::now();
    Refinement refined =
        refine_embedding_plan(base, candidates[best.front()], evaluated.results[best.front()], out.jobs);
    out.refined_alternatives = refined.evaluated;
    out.refined_tables = refined.changed;
    out.enumerated += refined.evaluated;
    out.evaluated += refined.evaluated;
    out.evaluate_cpu_s += refined.cpu_s;
    out.evaluate_wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - refine_start).count();
    if (refined.changed > 0) {
      candidates.push_back(std::move(refined.plan));
      evaluated.results.push_back(std::move(refined.result));
    }
  }
  if (out.evaluate_cpu_s > 0.0) {
    out.configs_per_s_per_core = static_cast<double>(out.evaluated + out.pruned) / out.evaluate_cpu_s;
    out.considered_per_s_per_core = out.configs_per_s_per_core;
  }
  std::size_t rank = 0;
  for (const std::size_t i : rank_results(evaluated.results, options.top)) {
    const results::Result& r = evaluated.results[i];
    const double headroom = r.memory.capacity_bytes_per_gpu - r.memory.peak_bytes_per_gpu;
    out.top.push_back({++rank, candidates[i].label, headroom, std::move(evaluated.results[i])});
  }
  out.flow_simulations = flow_cache.simulations();
  out.flow_reused = flow_cache.hits();
  return out;
}

}  // namespace dtsim::search
