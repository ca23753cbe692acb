// Capacity planning: for each candidate cluster of a plan (config/plan.hpp), the fastest strategy found
// by the strategy search (search.hpp; for a DLRM, its embedding plans: embedding_search.hpp) and what
// training on it takes:
//   time to train  = tokens / tokens_per_s   (or samples / samples_per_s, or steps x iteration time)
//   GPU-hours      = GPUs x time to train / 3600 s
//   cost           = GPU-hours x price per GPU-hour (the plan's price, with its source)
// With the plan's failures (config/failures.hpp), the time to train is the median wall time of the
// whole-run simulation (results/goodput.hpp) of the failure-free time above, with its 10th and 90th
// percentiles beside it, and the GPU-hours count the spare nodes held for the run. A run that does not
// finish under its failures leaves the cluster infeasible with the reason.
// A cluster meets the plan when its time is within the deadline and its cost within the budget (each
// when given). The cheapest and the fastest clusters that meet it are picked (ties: fewer GPUs, then
// file order). A cluster on which no plan fits or runs is kept with the reason.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "config/plan.hpp"
#include "results/result.hpp"
#include "search/search.hpp"

namespace dtsim::search {

// Another of a cluster's ranked strategies (plan --top K), costed as the best one is.
struct PlanAlternative {
  std::size_t rank = 0;  // 2, 3, ... in the search's ranking
  std::string strategy;
  results::Result result;  // with its goodput under the plan's failures
  double train_s = 0.0;
  double gpu_hours = 0.0;
  double cost_usd = 0.0;
  std::string reason;  // why it does not finish under the plan's failures; empty when it does
};

struct PlanRow {
  const config::PlanCluster* cluster = nullptr;  // into the Plan
  std::int64_t gpus = 0;
  bool feasible = false;
  std::string reason;    // why no strategy runs here (when !feasible)
  std::string strategy;  // strategy_label() of the best plan
  results::Result best;  // its result (status ok when feasible)
  double train_s = 0.0;         // with failures: the median over the runs
  double failure_free_s = 0.0;  // tokens / tokens_per_s or steps x iteration time
  double gpu_hours = 0.0;       // spare nodes included
  double cost_usd = 0.0;
  bool meets_deadline = false;
  bool meets_budget = false;
  bool meets() const { return feasible && meets_deadline && meets_budget; }
  SearchOutcome search;  // counts of the cluster's search (its top: the ranked plans, best first)
  std::vector<PlanAlternative> alternatives;  // the next ranked strategies, up to top - 1
};

struct PlanOutcome {
  std::vector<PlanRow> rows;            // one per cluster, in the plan's order
  std::optional<std::size_t> cheapest;  // index into rows
  std::optional<std::size_t> fastest;
  std::size_t evaluated = 0;  // plans estimated over all clusters
  double evaluate_wall_s = 0.0;
};

// `top`: how many ranked strategies each cluster reports (the best, then top - 1 alternatives); the
// cheapest and the fastest cluster are picked on the best ones.
PlanOutcome evaluate_plan(const config::Plan& plan, std::size_t jobs, std::size_t top = 1);

}  // namespace dtsim::search
