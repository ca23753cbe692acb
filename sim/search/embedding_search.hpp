// Search over a DLRM's embedding plans (config::EmbeddingPlan, docs/dlrm.md "Searching plans"): every
// candidate simulated in full on the engine (search.hpp's evaluate_candidates), ranked as search ranks
// (samples per second, then memory headroom, then enumeration order), with the infeasible ones counted
// by reason. The candidates, in this order:
//   uniform   every table sharded alike: table_wise, row_wise, column_wise, table_row_wise,
//             data_parallel
//   split     the large tables (weights and optimizer state above a quarter of a GPU's HBM, which
//             table-wise placement can hardly pack) row_wise, table_row_wise or column_wise, the rest
//             table_wise; and each of these, and uniform table_wise, with the small tables (under
//             kSmallTableBytes) data_parallel, as torchrec's planner replicates tables that cost less
//             to replicate than to exchange
// each in every placement the GPU can use: HBM; with a host link also host memory with an HBM cache
// of kCacheFractions of each shard's rows, and host memory alone. Plans that could not differ are left
// out: a split without large or small tables, column shards when no table is wider than a shard,
// replicated tables anywhere but HBM. With the scenario's parameter servers (the remote placement),
// last: every table on the servers, and the small ones replicated with the rest on the servers. Every
// plan keeps the scenario's column_shard_dim and pipelining. search_embedding_plans() then refines the
// best of them table by table (embedding_refinement.hpp) and ranks the refined plan with the others
// when it changed a table.
#pragma once

#include <array>
#include <vector>

#include "config/scenario.hpp"
#include "search/search.hpp"
#include "search/space.hpp"

namespace dtsim::search {

inline constexpr double kSmallTableBytes = 64.0 * 1024 * 1024;
inline constexpr std::array kCacheFractions{0.05, 0.2, 0.5};

// A table's weights and optimizer state (what the families call large or small).
double embedding_table_bytes(const config::Scenario& s, const config::EmbeddingTable& t);

// The candidates for a DLRM scenario, each labelled ("row_wise > 40.0 GiB, table_wise, small data_parallel;
// host_cached 20%").
std::vector<Candidate> embedding_plan_candidates(const config::Scenario& base);

// Requires a DLRM scenario. options.bounds and options.extrapolate do not apply.
SearchOutcome search_embedding_plans(const config::Scenario& base, const SearchOptions& options);

}  // namespace dtsim::search
