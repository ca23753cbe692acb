// ZeRO-2 with gradient accumulation (parallel/lowering.hpp, reduces_each_micro_batch_): a rank keeps
// only its shard of the gradients, so each micro-batch's gradients are reduce-scattered as its backward
// ends (DeepSpeed's engine, deepspeed/runtime/engine.py allreduce_gradients), where ZeRO-1 and the
// distributed optimizer reduce the accumulated gradients once, after the last micro-batch.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "config/scenario_loader.hpp"
#include "parallel/lower.hpp"
#include "parallel/memory_model.hpp"
#include "results/evaluate.hpp"
#include "scenario_fixture.hpp"

namespace zero2_test {

using nlohmann::json;

// GPT-1.3B, data parallel over 16 A100 (2 DGX nodes), micro-batch 2: global batch 32 x micro-batches.
json scenario(int zero_stage, std::int64_t micro_batches) {
  json s = json::parse(R"({
    "schema_version": 1, "name": "zero2",
    "model": {"preset": "gpt-1.3b"},
    "cluster": {"node": "dgx-a100", "nodes": 2},
    "parallelism": {"data": 16},
    "training": {"micro_batch_size": 2, "precision": "bf16"}
  })");
  s["parallelism"]["zero_stage"] = zero_stage;
  s["training"]["global_batch_size"] = 32 * micro_batches;
  return s;
}

dtsim::config::Scenario load(const json& s) {
  return dtsim::config::load_scenario_text(s.dump(), "test", dtsim::config::default_data_paths());
}

// Bytes of the data-parallel gradient reduce-scatters the simulated rank runs, and how many there are.
struct Reductions {
  double bytes = 0.0;
  int calls = 0;
};

Reductions gradient_reductions(const dtsim::config::Scenario& s) {
  const auto lowered = dtsim::parallel::lower(s, {});
  const auto& g = lowered.graph;
  Reductions out;
  for (const auto& t : g.tasks()) {
    if (g.labels()[t.label] != "grad_reduce_scatter") continue;
    out.bytes += std::get<dtsim::graph::CommOp>(g.ops()[t.op]).bytes;
    ++out.calls;
  }
  return out;
}

}  // namespace zero2_test

TEST_CASE("ZeRO-2 reduce-scatters every micro-batch's gradients, ZeRO-1 the accumulated ones once") {
  // One stage, so the rank's gradient bytes are G = parameters x gradient bytes per parameter
  // (memory_model.hpp); each micro-batch's are reduced once: ZeRO-1 moves G, ZeRO-2 m x G.
  const auto zero1 = zero2_test::load(zero2_test::scenario(1, 4));
  const auto zero2 = zero2_test::load(zero2_test::scenario(2, 4));
  const double g = dtsim::parallel::stage_parameters_per_gpu(zero1, 0).dense *
                   dtsim::parallel::parameter_bytes(zero1.training).gradients;
  const auto once = zero2_test::gradient_reductions(zero1);
  const auto each = zero2_test::gradient_reductions(zero2);
  CHECK(once.bytes == doctest::Approx(g));
  CHECK(each.bytes == doctest::Approx(4 * g));
  CHECK(each.calls >= 4 * 1);
  MESSAGE("G = " << g / 1e9 << " GB; ZeRO-1 " << once.calls << " reduce-scatters, ZeRO-2 " << each.calls);
}

TEST_CASE("ZeRO-2 with one micro-batch runs as ZeRO-1, with several it costs communication, not memory") {
  // With one micro-batch there is nothing to accumulate: the same reductions and gathers, the same time.
  const auto one1 = dtsim::testing::evaluate_json(zero2_test::scenario(1, 1));
  const auto one2 = dtsim::testing::evaluate_json(zero2_test::scenario(2, 1));
  REQUIRE(one2.status == dtsim::results::Status::ok);
  CHECK(one2.iteration_time_s == one1.iteration_time_s);
  CHECK(one2.memory.gradients_bytes < one1.memory.gradients_bytes);

  // With 8, ZeRO-2 reduces 8 times the bytes over the same 16 ranks and two nodes' NICs. Here each
  // micro-batch's reductions hide behind the next micro-batch's forward pass, which they slow (the
  // compute model's overlap slowdown), so the iteration grows through the forward, not the exposed
  // communication; the gradients in memory stay the shard.
  const auto many1 = dtsim::testing::evaluate_json(zero2_test::scenario(1, 8));
  const auto many2 = dtsim::testing::evaluate_json(zero2_test::scenario(2, 8));
  REQUIRE(many2.status == dtsim::results::Status::ok);
  MESSAGE("8 micro-batches: ZeRO-1 " << many1.iteration_time_s << " s (exposed data comm "
                                     << many1.breakdown.exposed_data_comm_s << " s), ZeRO-2 "
                                     << many2.iteration_time_s << " s ("
                                     << many2.breakdown.exposed_data_comm_s << " s)");
  CHECK(many2.iteration_time_s > many1.iteration_time_s);
  CHECK(many2.breakdown.exposed_data_comm_s >= many1.breakdown.exposed_data_comm_s);
  CHECK(many2.breakdown.forward_s > many1.breakdown.forward_s);
  CHECK(many2.memory.gradients_bytes == one2.memory.gradients_bytes);
}

TEST_CASE("ZeRO-2's reductions of a micro-batch wait for its backward on every pipeline stage") {
  // Pipeline 2, interleaved with 2 virtual stages, 4 micro-batches: each stage reduces each
  // micro-batch's gradients of both its chunks, so m x G per stage again (embedding and head included).
  nlohmann::json j = zero2_test::scenario(2, 4);
  j["parallelism"] = {
      {"data", 8}, {"pipeline", 2}, {"virtual_stages", 2}, {"schedule", "interleaved"}, {"zero_stage", 2}};
  j["training"]["global_batch_size"] = 8 * 2 * 4;
  const auto s = zero2_test::load(j);
  const auto lowered = dtsim::parallel::lower(s, {});
  const auto& g = lowered.graph;
  const double grad = dtsim::parallel::parameter_bytes(s.training).gradients;
  for (std::int64_t stage = 0; stage < 2; ++stage) {
    double bytes = 0.0;
    for (const auto& t : g.tasks()) {
      if (g.labels()[t.label] != "grad_reduce_scatter" || g.streams()[t.stream].rank != stage) continue;
      bytes += std::get<dtsim::graph::CommOp>(g.ops()[t.op]).bytes;
    }
    CHECK(bytes == doctest::Approx(4 * dtsim::parallel::stage_parameters_per_gpu(s, stage).dense * grad));
  }
  const auto r = dtsim::results::evaluate(s, {});
  REQUIRE_MESSAGE(r.status == dtsim::results::Status::ok, r.reason);
}
