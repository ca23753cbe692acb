// Table by table from a DLRM's best embedding plan (docs/dlrm.md "Searching plans"): the family search
// (embedding_search.hpp) splits tables by size only; torchrec's planner proposes plans table by table.
// From the best plan the families found, the kRefinedTables largest tables (by weights and optimizer
// state; ties in table order) are revisited one after another: each alternative sharding of the table
// (table_wise, row_wise, table_row_wise; column_wise where the table is wider than a shard;
// data_parallel where it is small) in each placement the plan can use (HBM; with a host link, host
// memory behind the plan's cache and host memory alone; the parameter servers where the scenario has
// them), every other table as it stands, simulated in full; the fastest alternative (samples per
// second, then memory headroom, then this order) replaces the table's choice when it beats the plan so
// far. One pass: a coordinate descent, which ends in a plan at least as fast as its start, not
// necessarily the best of all combinations.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "config/scenario.hpp"
#include "results/result.hpp"
#include "search/space.hpp"

namespace dtsim::search {

inline constexpr std::size_t kRefinedTables = 8;

struct Refinement {
  Candidate plan;          // the refined plan, labelled "<start label> + N tables on their own"
  results::Result result;  // its result
  std::size_t changed = 0;  // tables whose sharding or placement changed (0: the start was kept)
  std::size_t evaluated = 0;  // alternatives simulated
  double cpu_s = 0.0;
};

// `start`: the best plan of the families and its result (status ok). `base`: the scenario searched
// (its parameter servers, if any). `jobs` threads evaluate each table's alternatives.
Refinement refine_embedding_plan(const config::Scenario& base, const Candidate& start,
                                 const results::Result& start_result, std::size_t jobs);

}  // namespace dtsim::search
