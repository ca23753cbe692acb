// Wall time of the `flow` network model (SimGrid flow level) on one data-parallel gradient all-reduce
// episode of 1,024 GPUs (128 DGX A100 nodes, 8 x 200 Gb/s InfiniBand each, fat-tree with 16 nodes per
// leaf at 2:1): 2.6 GB of bf16 gradients (GPT 1.3B) in 40 MB buckets, as the data-parallel ring and
// as NCCL's automatic choice (NCCL's tree here). Each iteration builds a fresh model (empty cache):
// the distinct bucket sizes are simulated once each. Goal: <= 5 s per episode; main() prints the
// measured time against it.
//
// The scenario is scenarios/gpt-1.3b-1024-a100-fat-tree-flow.json from the source tree.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "config/scenario_loader.hpp"
#include "network/analytic_model.hpp"
#include "network/flow_model.hpp"
#include "parallel/group_layouts.hpp"

namespace {

#ifdef DTSIM_SOURCE_DIR
constexpr const char* kScenario = DTSIM_SOURCE_DIR "/scenarios/gpt-1.3b-1024-a100-fat-tree-flow.json";
#else
constexpr const char* kScenario = "scenarios/gpt-1.3b-1024-a100-fat-tree-flow.json";
#endif
constexpr double kGoalS = 5.0;
constexpr double kGradientBytes = 2.6e9;
constexpr double kBucketBytes = 40e6;

struct Episode {
  double wall_s = 0.0;
  double simulated_s = 0.0;
  double analytic_s = 0.0;  // the same episode on the analytic model, for comparison
};

Episode run_episode(const dtsim::config::Scenario& scenario) {
  const auto start = std::chrono::steady_clock::now();
  const dtsim::network::FlowModel model(scenario);
  const dtsim::network::AnalyticModel analytic(scenario);
  const auto mesh = dtsim::parallel::Mesh::of(scenario);
  const auto group =
      dtsim::parallel::GroupLayouts(mesh, false).stage_group(0, dtsim::parallel::GroupKind::data);
  Episode e;
  for (double left = kGradientBytes; left > 0.0; left -= kBucketBytes) {
    const dtsim::graph::CommOp op{dtsim::graph::CollectiveKind::all_reduce,
                                  left < kBucketBytes ? left : kBucketBytes, group};
    e.simulated_s += static_cast<double>(model.duration(op)) * 1e-9;
    e.analytic_s += static_cast<double>(analytic.duration(op)) * 1e-9;
  }
  e.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return e;
}

dtsim::config::Scenario load(dtsim::config::AllReduceAlgorithm algorithm) {
  auto s = dtsim::config::load_scenario(kScenario, dtsim::config::default_data_paths());
  s.cluster.network.all_reduce_algorithm = algorithm;
  return s;
}

Episode g_ring;
Episode g_auto;

void bm_flow_episode_ring(benchmark::State& state) {
  const auto s = load(dtsim::config::AllReduceAlgorithm::ring);
  for (auto _ : state) {
    g_ring = run_episode(s);
    state.SetIterationTime(g_ring.wall_s);
  }
}

void bm_flow_episode_auto(benchmark::State& state) {
  const auto s = load(dtsim::config::AllReduceAlgorithm::automatic);
  for (auto _ : state) {
    g_auto = run_episode(s);
    state.SetIterationTime(g_auto.wall_s);
  }
}

BENCHMARK(bm_flow_episode_ring)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK(bm_flow_episode_auto)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace

int main(int argc, char** argv) {
  // The flow model runs SimGrid in a dtsim helper process (network/flow_helper.hpp): this dtsim build's.
  ::setenv("DTSIM_EXE", DTSIM_EXE, /*overwrite=*/0);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::printf("flow, 1,024-GPU data-parallel all-reduce episode (%.1f GB in %.0f MB buckets):\n",
              kGradientBytes / 1e9, kBucketBytes / 1e6);
  std::printf("  ring          %.2f s wall (goal <= %.0f s), %.1f ms simulated (analytic %.1f ms)\n",
              g_ring.wall_s, kGoalS, g_ring.simulated_s * 1e3, g_ring.analytic_s * 1e3);
  std::printf("  auto (NCCL)   %.2f s wall (goal <= %.0f s), %.1f ms simulated (analytic %.1f ms)\n",
              g_auto.wall_s, kGoalS, g_auto.simulated_s * 1e3, g_auto.analytic_s * 1e3);
  return 0;
}
