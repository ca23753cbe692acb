// Wall time of one evaluate() (load excluded: lowering, simulation, metrics) of the largest shipped
// scenario, Llama 3 405B on 16,384 H100 (scenarios/llama3-405b-16k-h100.json), in both rank modes:
//   symmetric  one representative rank per pipeline stage (goal: <= 20 ms)
//   all        every one of the 16,384 ranks (goal: <= 10 s; one iteration, it takes seconds)
// main() prints both against their goals at the end, and the simulated iteration time of each: the
// two modes must agree.
//
// The scenario is --scenario=PATH, by default the source tree's (DTSIM_SOURCE_DIR when the build
// defines it, else a path relative to the working directory).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "config/scenario_loader.hpp"
#include "results/evaluate.hpp"

namespace {

#ifdef DTSIM_SOURCE_DIR
constexpr const char* kDefaultScenario = DTSIM_SOURCE_DIR "/scenarios/llama3-405b-16k-h100.json";
#else
constexpr const char* kDefaultScenario = "scenarios/llama3-405b-16k-h100.json";
#endif

struct Mode {
  const char* name;
  dtsim::config::RankMode ranks;
  double goal_s;
};

struct Outcome {
  double wall_s = 0.0;  // fastest evaluate()
  double iteration_s = 0.0;
  std::uint64_t tasks = 0;
};

void register_mode(const dtsim::config::Scenario& base, const Mode& mode, Outcome& outcome) {
  dtsim::config::Scenario scenario = base;
  scenario.simulation.ranks = mode.ranks;
  auto* b = benchmark::RegisterBenchmark(
      (std::string("evaluate/llama3-405b-16k/") + mode.name).c_str(),
      [scenario, &outcome](benchmark::State& state) {
        for (auto _ : state) {
          const auto started = std::chrono::steady_clock::now();
          const auto result = dtsim::results::evaluate(scenario, {});
          const double wall =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
          if (outcome.wall_s == 0.0 || wall < outcome.wall_s) outcome.wall_s = wall;
          outcome.iteration_s = result.iteration_time_s;
          outcome.tasks = result.engine.tasks;
          benchmark::DoNotOptimize(result.iteration_time_s);
        }
        state.counters["tasks"] = static_cast<double>(outcome.tasks);
      });
  b->Unit(benchmark::kMillisecond);
  if (mode.ranks == dtsim::config::RankMode::all) b->Iterations(1);
}

}  // namespace

int main(int argc, char** argv) {
  std::string path = kDefaultScenario;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--scenario=", 11) == 0) {
      path = argv[i] + 11;
    } else {
      args.push_back(argv[i]);
    }
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  const auto scenario = dtsim::config::load_scenario(path, dtsim::config::default_data_paths());
  const Mode modes[] = {{"symmetric", dtsim::config::RankMode::symmetric, 0.020},
                        {"all", dtsim::config::RankMode::all, 10.0}};
  Outcome outcomes[2];
  for (int m = 0; m < 2; ++m) register_mode(scenario, modes[m], outcomes[m]);
  benchmark::RunSpecifiedBenchmarks();
  std::printf("\n%s\n", path.c_str());
  for (int m = 0; m < 2; ++m) {
    if (outcomes[m].wall_s == 0.0) continue;  // filtered out
    std::printf("  %-9s evaluate() %9.3f s (goal <= %g s: %s), %llu tasks, iteration %.9f s\n", modes[m].name,
                outcomes[m].wall_s, modes[m].goal_s, outcomes[m].wall_s <= modes[m].goal_s ? "met" : "MISSED",
                static_cast<unsigned long long>(outcomes[m].tasks), outcomes[m].iteration_s);
  }
  benchmark::Shutdown();
  return 0;
}
