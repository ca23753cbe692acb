// Wall time of the whole-run failures simulation (models/failures/goodput.hpp), 200 runs each:
//   llama3_16k   the Llama 3 preset's four categories (7.76 failures a day) on 16,384 GPUs over 54 days,
//                a 2.84 s synchronous checkpoint at Daly's optimum (every ~4 minutes: ~18,000 per run)
//   rsc1_131k    the RSC-1 node rate on 131,072 GPUs (an interruption every 14 minutes), 30 days
//   elastic_16k  the first with elastic recovery over 128 replicas and 24 h repairs
// The checkpoint cycles between two events run as one step, so a run costs its failures and repairs, not
// its checkpoints. On the 2-core development machine: 14 ms, 108 ms and 34 ms.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "models/failures/goodput.hpp"

namespace {

using dtsim::config::FailureUnit;

struct Case {
  dtsim::config::FailureSpec spec;
  dtsim::models::GoodputInput in;
};

Case llama3_16k() {
  Case c;
  // hardware_profiles/failures/llama3-h100-2024.json
  c.spec.categories = {{"gpu", FailureUnit::gpu, 0.302915, {}},
                       {"network", FailureUnit::node, 0.44307, {}},
                       {"host", FailureUnit::node, 0.415943, {}},
                       {"software", FailureUnit::node, 0.506366, {}}};
  c.spec.restart_s = 600.0;
  c.in.failure_free_s = 54.0 * 86400.0;
  c.in.iteration_s = 8.3;
  c.in.gpus = 16384;
  c.in.nodes = 2048;
  c.in.replicas = 128;
  c.in.checkpoint.write_s = 2.84;
  c.in.checkpoint.read_s = 2.84;
  c.in.checkpoint.stall_s = 2.84;
  return c;
}

void run(benchmark::State& state, Case c) {
  c.in.spec = &c.spec;
  for (auto _ : state) {
    const auto g = dtsim::models::estimate_goodput(c.in);
    benchmark::DoNotOptimize(g.wall_s.p50);
    state.counters["goodput_p50"] = g.goodput.p50;
    state.counters["failures_p50"] = g.failures.p50;
  }
}

void BM_llama3_16k(benchmark::State& state) { run(state, llama3_16k()); }

void BM_rsc1_131k(benchmark::State& state) {
  Case c = llama3_16k();
  c.spec.categories = {{"node", FailureUnit::node, 6.5, {}}};
  c.spec.restart_s = 300.0;
  c.in.failure_free_s = 30.0 * 86400.0;
  c.in.gpus = 131072;
  c.in.nodes = 16384;
  run(state, c);
}

void BM_elastic_16k(benchmark::State& state) {
  Case c = llama3_16k();
  c.spec.recovery = dtsim::config::Recovery::elastic;
  c.spec.repair_hours = 24.0;
  c.spec.reconfigure_s = 60.0;
  c.in.replicas_hold_state = false;
  // TP 8 fills a node: one replica per node, 16 nodes per replica (PP 16).
  for (std::int32_t n = 0; n < 2048; ++n) c.in.node_replicas.push_back({n / 16});
  run(state, c);
}

}  // namespace

BENCHMARK(BM_llama3_16k)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_rsc1_131k)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_elastic_16k)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
