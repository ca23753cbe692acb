// Strategy-search speed for GPT-3 175B on 1,024 A100 (scenarios/gpt3-175b-1024-a100.json), on one
// core. The goal is >= 1,000 configurations per second per core. The headline is the whole search of
// the default space as `dtsim search --jobs 1` runs it: every combination enumerated, pruned by the
// rules and the memory model, and every plan left decided, either estimated or left out by branch and
// bound (a plan left out provably could not be listed: search.hpp), by the CPU time it took. Below
// it, what one plan costs: a fixed stride of 64 of the plans left after pruning, each with the
// micro-batch extrapolation (the search's default) and with the full simulation, and pruning alone
// (enumeration of the whole space, combinations looked at per second).
//
// The scenario is --scenario=PATH, by default the source tree's (DTSIM_SOURCE_DIR).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "config/scenario_loader.hpp"
#include "results/evaluate.hpp"
#include "search/fast_evaluate.hpp"
#include "search/search.hpp"
#include "search/space.hpp"

namespace {

#ifdef DTSIM_SOURCE_DIR
constexpr const char* kDefaultScenario = DTSIM_SOURCE_DIR "/scenarios/gpt3-175b-1024-a100.json";
#else
constexpr const char* kDefaultScenario = "scenarios/gpt3-175b-1024-a100.json";
#endif

constexpr std::size_t kSample = 64;
constexpr double kGoalPerS = 1000.0;

std::vector<dtsim::search::Candidate> sample(const dtsim::search::Space& space) {
  std::vector<dtsim::search::Candidate> out;
  const std::size_t n = space.candidates.size();
  const std::size_t step = n > kSample ? n / kSample : 1;
  for (std::size_t i = 0; i < n && out.size() < kSample; i += step) out.push_back(space.candidates[i]);
  return out;
}

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  std::string path = kDefaultScenario;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--scenario=", 11) == 0) path = argv[i] + 11;
  }
  const auto base = dtsim::config::load_scenario(path, dtsim::config::default_data_paths());
  const dtsim::search::SpaceBounds bounds;
  const dtsim::search::Space space = dtsim::search::enumerate_space(base, bounds);
  const std::vector<dtsim::search::Candidate> plans = sample(space);
  std::printf("space: %zu enumerated, %zu candidates after pruning; timing %zu of them\n", space.enumerated,
              space.candidates.size(), plans.size());
  {
    // Where the work is: plans of the sample by schedule, events the extrapolation simulates and CPU time.
    std::size_t count[2] = {0, 0};
    double events[2] = {0, 0}, cpu[2] = {0, 0};
    for (const auto& c : plans) {
      const std::size_t k = c.scenario.parallelism.virtual_stages > 1 ? 1 : 0;
      const double t0 = thread_cpu_s();
      events[k] += static_cast<double>(dtsim::search::evaluate_extrapolated(c.scenario).engine.events);
      cpu[k] += thread_cpu_s() - t0;
      ++count[k];
    }
    for (std::size_t k = 0; k < 2; ++k) {
      if (count[k] == 0) continue;
      std::printf("%-11s %2zu plans: %8.0f events and %.2f ms CPU per plan (%.0f plans per CPU-second)\n",
                  k ? "interleaved" : "1f1b/gpipe", count[k], events[k] / static_cast<double>(count[k]),
                  1e3 * cpu[k] / static_cast<double>(count[k]), static_cast<double>(count[k]) / cpu[k]);
    }
  }

  benchmark::RegisterBenchmark(
      "search/gpt3-175b-1024/extrapolated",
      [&](benchmark::State& state) {
        for (auto _ : state) {
          for (const auto& c : plans)
            benchmark::DoNotOptimize(dtsim::search::evaluate_extrapolated(c.scenario));
        }
        state.counters["plans_per_s"] = benchmark::Counter(
            static_cast<double>(state.iterations() * plans.size()), benchmark::Counter::kIsRate);
      })
      ->Unit(benchmark::kMillisecond)
      ->Iterations(1)
      ->Repetitions(1);
  benchmark::RegisterBenchmark("search/gpt3-175b-1024/full",
                               [&](benchmark::State& state) {
                                 for (auto _ : state) {
                                   for (const auto& c : plans)
                                     benchmark::DoNotOptimize(dtsim::results::evaluate(c.scenario, {}));
                                 }
                                 state.counters["plans_per_s"] = benchmark::Counter(
                                     static_cast<double>(state.iterations() * plans.size()),
                                     benchmark::Counter::kIsRate);
                               })
      ->Unit(benchmark::kMillisecond)
      ->Iterations(1);
  benchmark::RegisterBenchmark("search/gpt3-175b-1024/enumerate_and_prune", [&](benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(dtsim::search::enumerate_space(base, bounds));
    state.counters["looked_at_per_s"] = benchmark::Counter(
        static_cast<double>(state.iterations() * space.enumerated), benchmark::Counter::kIsRate);
  })->Unit(benchmark::kMillisecond);

  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();

  // The whole search on this thread, timed by its CPU time (the machine may be shared), against the goal.
  dtsim::search::SearchOptions options;
  options.top = 10;
  const double cpu_start = thread_cpu_s();
  const auto outcome = dtsim::search::search(base, options);
  const double cpu = thread_cpu_s() - cpu_start;
  const std::size_t decided = outcome.evaluated + outcome.bounded;
  std::printf(
      "whole search (top %zu) on one core: %.2f CPU-s; %zu combinations looked at (%.0f per CPU-second), "
      "%zu plans decided after pruning (%zu estimated, %zu bounded out): %.0f per CPU-second\n",
      options.top, cpu, outcome.enumerated, static_cast<double>(outcome.enumerated) / cpu, decided,
      outcome.evaluated, outcome.bounded, static_cast<double>(decided) / cpu);
  const double per_s = static_cast<double>(decided) / cpu;
  std::printf("configurations decided per CPU-second (goal >= %.0f): %.0f: %s\n", kGoalPerS, per_s,
              per_s >= kGoalPerS ? "met" : "NOT met");
  return 0;
}
