#include "search/search.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <numeric>

#include "core/parallel_for.hpp"
#include "network/flow_cache.hpp"
#include "parallel/layouts_cache.hpp"
#include "results/evaluate.hpp"
#include "results/goodput.hpp"
#include "search/fast_evaluate.hpp"
#include "search/lower_bound.hpp"

namespace dtsim::search {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double headroom(const results::Result& r) {
  return r.memory.capacity_bytes_per_gpu - r.memory.peak_bytes_per_gpu;
}

}  // namespace

Evaluated evaluate_candidates(const std::vector<Candidate>& candidates, std::size_t jobs, bool extrapolate,
                              const PlanCaches& caches) {
  const results::EvaluateOptions full = plan_evaluate_options(caches);
  Evaluated out;
  out.results.resize(candidates.size());
  // Each job's CPU time, summed in index order once all are done.
  std::vector<double> cpu(candidates.size(), 0.0);
  core::parallel_for(candidates.size(), jobs, [&](std::size_t i) {
    const double cpu_start = thread_cpu_s();
    out.results[i] = extrapolate ? evaluate_extrapolated(candidates[i].scenario, caches)
                                 : results::evaluate(candidates[i].scenario, full);
    cpu[i] = thread_cpu_s() - cpu_start;
  });
  for (const double c : cpu) out.cpu_s += c;
  return out;
}

bool ranks_before(const results::Result& a, const results::Result& b) {
  const double ta = a.throughput.samples_per_s, tb = b.throughput.samples_per_s;
  if (ta != tb) return ta > tb;
  return headroom(a) > headroom(b);
}

std::vector<std::size_t> rank_results(const std::vector<results::Result>& results, std::size_t top) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (results[i].status == results::Status::ok) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return ranks_before(results[a], results[b]); });
  if (order.size() > top) order.resize(top);
  return order;
}

BoundedEvaluation evaluate_bounded(const std::vector<Candidate>& candidates, std::size_t window,
                                   std::size_t jobs, bool extrapolate, bool branch_and_bound,
                                   const PlanCaches& caches) {
  BoundedEvaluation out;
  if (!branch_and_bound) {
    Evaluated all = evaluate_candidates(candidates, jobs, extrapolate, caches);
    out.results = std::move(all.results);
    out.cpu_s = all.cpu_s;
    out.evaluated = candidates.size();
    return out;
  }
  out.results.resize(candidates.size());
  const double bound_start = thread_cpu_s();
  std::vector<double> bound(candidates.size());
  parallel::LayoutsCache own_layouts;  // when the caller shares none
  StageGroupsCache stage_groups(caches.layouts != nullptr ? *caches.layouts : own_layouts);
  for (std::size_t i = 0; i < candidates.size(); ++i)
    bound[i] = iteration_lower_bound_s(candidates[i].scenario, stage_groups);
  out.bound_cpu_s = thread_cpu_s() - bound_start;
  std::vector<std::size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return bound[a] < bound[b]; });

  // Batches of a fixed size in bound order; the stop test runs between batches only, so the plans
  // simulated (and the results) do not depend on the thread count.
  std::vector<double> best;  // the `window` smallest iteration times so far, ascending
  std::size_t pos = 0;
  while (pos < order.size()) {
    if (best.size() >= window && bound[order[pos]] > best.back()) break;
    const std::size_t end = std::min(order.size(), pos + kBoundBatch);
    std::vector<Candidate> batch;
    for (std::size_t k = pos; k < end; ++k) batch.push_back(candidates[order[k]]);
    Evaluated done = evaluate_candidates(batch, jobs, extrapolate, caches);
    out.cpu_s += done.cpu_s;
    for (std::size_t k = pos; k < end; ++k) {
      results::Result& r = done.results[k - pos];
      if (r.status == results::Status::ok) {
        best.insert(std::upper_bound(best.begin(), best.end(), r.iteration_time_s), r.iteration_time_s);
        if (best.size() > window) best.pop_back();
      }
      out.results[order[k]] = std::move(r);
    }
    out.evaluated += end - pos;
    pos = end;
  }
  for (; pos < order.size(); ++pos) {
    results::Result& r = out.results[order[pos]];
    r.status = results::Status::infeasible;
    r.reason = "bounded out: compute alone takes longer than the listed plans";
    ++out.bounded;
  }
  return out;
}

namespace {

SearchOutcome search_plans(const config::Scenario& base, const SearchOptions& options) {
  SearchOutcome out;
  out.extrapolated = options.extrapolate;
  const auto enumerate_start = std::chrono::steady_clock::now();
  Space space = enumerate_space(base, options.bounds);
  out.enumerate_wall_s = seconds_since(enumerate_start);
  out.enumerated = space.enumerated;
  out.rejections = space.rejections;
  for (const auto& r : out.rejections) out.pruned += r.count;
  out.jobs = std::max<std::size_t>(1, std::min(options.jobs, space.candidates.size()));

  const auto evaluate_start = std::chrono::steady_clock::now();
  const std::size_t window = options.extrapolate ? std::max(2 * options.top, kMinConfirmed) : options.top;
  // Every plan runs on the same cluster: on the flow network they share the collectives' times, and
  // plans over the same rank mesh share its group layouts.
  network::FlowCache flow_cache;
  parallel::LayoutsCache layouts_cache;
  const PlanCaches caches{.flow = &flow_cache, .layouts = &layouts_cache};
  const auto flow_counts = [&] {
    out.flow_simulations = flow_cache.simulations();
    out.flow_reused = flow_cache.hits();
  };
  BoundedEvaluation evaluated = evaluate_bounded(space.candidates, window, out.jobs, options.extrapolate,
                                                 options.branch_and_bound, caches);
  std::vector<results::Result>& results = evaluated.results;
  out.evaluate_wall_s = seconds_since(evaluate_start);
  out.evaluate_cpu_s = evaluated.cpu_s;
  out.bound_cpu_s = evaluated.bound_cpu_s;
  out.evaluated = evaluated.evaluated;
  out.bounded = evaluated.bounded;
  if (out.evaluate_cpu_s > 0.0)
    out.configs_per_s_per_core = static_cast<double>(out.evaluated) / out.evaluate_cpu_s;
  if (out.evaluate_cpu_s + out.bound_cpu_s > 0.0) {
    out.considered_per_s_per_core =
        static_cast<double>(out.evaluated + out.bounded) / (out.evaluate_cpu_s + out.bound_cpu_s);
  }
  std::vector<std::size_t> leaders = rank_results(results, options.top);
  if (options.extrapolate) {
    leaders = rank_results(results, window);
    std::vector<Candidate> confirm;
    for (const std::size_t i : leaders) confirm.push_back(space.candidates[i]);
    Evaluated full =
        evaluate_candidates(confirm, std::max<std::size_t>(1, std::min(out.jobs, confirm.size())),
                            /*extrapolate=*/false, caches);
    out.confirmed = confirm.size();
    out.confirm_cpu_s = full.cpu_s;
    for (std::size_t k = 0; k < leaders.size(); ++k) {
      const results::Result& estimate = results[leaders[k]];
      const results::Result& exact = full.results[k];
      if (estimate.status == results::Status::ok && exact.status == results::Status::ok &&
          exact.iteration_time_s > 0.0) {
        out.max_confirm_error = std::max(out.max_confirm_error,
                                         std::abs(estimate.iteration_time_s / exact.iteration_time_s - 1.0));
      }
    }
    std::size_t rank = 0;
    for (const std::size_t k : rank_results(full.results, options.top)) {
      out.top.push_back({++rank, confirm[k].label, headroom(full.results[k]), std::move(full.results[k])});
    }
    flow_counts();
    return out;
  }
  std::size_t rank = 0;
  for (const std::size_t i : leaders) {
    out.top.push_back({++rank, space.candidates[i].label, headroom(results[i]), std::move(results[i])});
  }
  flow_counts();
  return out;
}

}  // namespace

SearchOutcome search(const config::Scenario& scenario, const SearchOptions& options) {
  // Plans are ranked by their iteration time: the failures outcome (a whole-run simulation per plan) is
  // estimated for the plans shown only.
  config::Scenario base = scenario;
  base.failures.reset();
  SearchOptions own = options;
  own.bounds.reroutable_only =
      own.bounds.reroutable_only ||
      (scenario.failures && scenario.failures->recovery == config::Recovery::reroute);
  SearchOutcome out = search_plans(base, own);
  if (scenario.failures) {
    for (SearchEntry& entry : out.top) {
      entry.result.scenario.failures = scenario.failures;
      results::estimate_goodput(entry.result);
    }
  }
  return out;
}

}  // namespace dtsim::search
