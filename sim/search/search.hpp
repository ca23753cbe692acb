// Strategy search: enumerate the plans of a model on a cluster (space.hpp), prune those that break a
// rule or do not fit in memory, estimate the iteration of every remaining plan on a pool of threads
// (fast_evaluate.hpp by default, or the full simulation) and rank them: highest samples/s (so tokens/s) first, ties
// broken by the larger memory headroom (GPU memory minus the most loaded GPU's peak), then by
// enumeration order. The ranking does not depend on the number of threads.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "config/scenario.hpp"
#include "results/result.hpp"
#include "search/fast_evaluate.hpp"
#include "search/space.hpp"

namespace dtsim::network {
class FlowCache;
}

namespace dtsim::search {

struct SearchOptions {
  SpaceBounds bounds;
  std::size_t top = 10;          // entries kept, best first
  std::size_t jobs = 1;          // worker threads (>= 1)
  bool extrapolate = true;       // fast path (fast_evaluate.hpp); false: full simulation of each plan
  bool branch_and_bound = true;  // skip plans whose lower bound cannot make the list (below)
};

// Branch and bound: plans are estimated in batches of kBoundBatch in ascending order of their
// lower bound (lower_bound.hpp); once `window` plans are estimated (2 x top, at least kMinConfirmed,
// with the fast path; top without it), a batch is started only while the next plan's bound is at most
// the window's slowest iteration time. A plan left out has a bound, hence an iteration time, above
// that of every plan in the window, so it could not have been listed: the ranking is that of
// evaluating every plan. The stop test runs between batches, so results do not depend on --jobs.
inline constexpr std::size_t kBoundBatch = 64;

// With the fast path, the leading plans are confirmed by the full simulation before they are listed:
// the 2 x top best estimates (at least kMinConfirmed) are simulated in full and ranked again on those
// results, so every number a search prints is a full simulation and an extrapolation error (it is not
// exact on slow networks, fast_evaluate.hpp) can reorder plans only outside that window.
inline constexpr std::size_t kMinConfirmed = 8;

// One ranked plan: a plain record a report renderer can take.
struct SearchEntry {
  std::size_t rank = 0;  // 1 = best
  std::string label;     // strategy_label()
  double headroom_bytes = 0.0;
  results::Result result;
};

struct SearchOutcome {
  std::size_t enumerated = 0;  // combinations looked at
  std::size_t pruned = 0;      // rejected before simulation (sum over rejections)
  std::vector<RejectionClass> rejections;
  std::size_t evaluated = 0;  // plans whose iteration time was estimated
  std::size_t bounded = 0;    // plans left out by branch and bound (their bound exceeds the window)
  std::size_t jobs = 1;
  double enumerate_wall_s = 0.0;
  double evaluate_wall_s = 0.0;
  double evaluate_cpu_s = 0.0;  // CPU time of the worker threads while they estimated
  // evaluated / evaluate_cpu_s: estimated plans per CPU-second, i.e. per second on one core
  double configs_per_s_per_core = 0.0;
  double bound_cpu_s = 0.0;  // CPU time spent computing the lower bounds
  // (evaluated + bounded) / (evaluate_cpu_s + bound_cpu_s): plans decided per CPU-second
  double considered_per_s_per_core = 0.0;
  bool extrapolated = true;
  std::size_t confirmed = 0;       // leading estimates re-simulated in full (0 without the fast path)
  double confirm_cpu_s = 0.0;      // CPU time of those full simulations
  double max_confirm_error = 0.0;  // largest |estimate / full - 1| of iteration time among them
  // Flow network only: distinct collectives simulated on SimGrid, and lookups answered by the plans'
  // shared cache (network/flow_cache.hpp).
  std::int64_t flow_simulations = 0;
  std::int64_t flow_reused = 0;
  // DLRM: alternatives weighed table by table from the best family plan, and the tables they changed
  // (search/embedding_refinement.hpp); counted in enumerated and evaluated too.
  std::size_t refined_alternatives = 0;
  std::size_t refined_tables = 0;
  std::vector<SearchEntry> top;  // best first
};

SearchOutcome search(const config::Scenario& base, const SearchOptions& options);

// The evaluation step alone, for callers that enumerate themselves (the capacity planner) and for
// the benchmark: every candidate estimated on `jobs` threads, results in the candidates' order, and the
// CPU time the threads spent. An error in one candidate's evaluation (an InputError or InternalError)
// stops handing out candidates and is rethrown here once every thread has stopped: the lowest
// candidate index's, whatever the thread count (core/parallel_for.hpp).
struct Evaluated {
  std::vector<results::Result> results;
  double cpu_s = 0.0;
};
// `caches`: what the candidates share (fast_evaluate.hpp, PlanCaches).
Evaluated evaluate_candidates(const std::vector<Candidate>& candidates, std::size_t jobs, bool extrapolate,
                              const PlanCaches& caches = {});

// evaluate_candidates() with branch and bound (above): results in the candidates' order, those left
// out marked infeasible with the reason "bounded out ...".
struct BoundedEvaluation {
  std::vector<results::Result> results;
  std::size_t evaluated = 0;
  std::size_t bounded = 0;
  double cpu_s = 0.0;
  double bound_cpu_s = 0.0;
};
BoundedEvaluation evaluate_bounded(const std::vector<Candidate>& candidates, std::size_t window,
                                   std::size_t jobs, bool extrapolate, bool branch_and_bound,
                                   const PlanCaches& caches = {});

// Whether `a` ranks before `b`: more samples per second (within one search the same model and batch, so
// tokens per second rank alike), then more memory headroom.
bool ranks_before(const results::Result& a, const results::Result& b);

// Indexes of `results` ranked as above (only status ok), best first, at most `top`; ties keep their
// order. Also ranks a DLRM's embedding plans (embedding_search.hpp).
std::vector<std::size_t> rank_results(const std::vector<results::Result>& results, std::size_t top);

}  // namespace dtsim::search
