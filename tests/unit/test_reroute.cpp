// Re-routing a failed node's work to its data-parallel peers (parallel/reroute.hpp, the lowering with
// LowerOptions::down_replicas, results/reroute_pace.hpp): which rank runs each micro-batch, the order of
// each rank's steps, and the iteration the engine gives.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "config/plan_loader.hpp"
#include "core/errors.hpp"
#include "parallel/mesh.hpp"
#include "parallel/reroute.hpp"
#include "results/evaluate.hpp"
#include "results/reroute_pace.hpp"
#include "scenario_fixture.hpp"
#include "search/capacity_plan.hpp"
#include "search/space.hpp"

namespace reroute_test {

using dtsim::parallel::Coord;
using dtsim::parallel::Mesh;
using dtsim::parallel::Pass;
using dtsim::parallel::Reroute;

// The fixture (8 GPUs per node) with tensor 8, so that a node holds one stage replica: rank =
// t + 8 (d + data x s), node = d + data x s.
dtsim::config::Scenario layout(std::int64_t data, std::int64_t pipeline, std::int64_t micro_batches) {
  auto s = dtsim::testing::fixture_scenario();
  s.parallelism.tensor = 8;
  s.parallelism.data = data;
  s.parallelism.pipeline = pipeline;
  s.cluster.nodes = data * pipeline;
  s.training.micro_batch_size = 1;
  s.training.global_batch_size = data * micro_batches;
  return s;
}

std::vector<dtsim::parallel::StageCost> unit_costs(std::int64_t stages) {
  return std::vector<dtsim::parallel::StageCost>(static_cast<std::size_t>(stages));
}

// 1F1B's limit per stage: p - s.
std::vector<std::int64_t> one_f_one_b(std::int64_t stages) {
  std::vector<std::int64_t> out;
  for (std::int64_t s = 0; s < stages; ++s) out.push_back(stages - s);
  return out;
}

// Checks every live rank's order: each (owner, micro-batch) it runs has its forward before its B before
// its W; it never holds more micro-batches between forward and B than `limit`. Returns the steps per
// (owner, micro-batch) seen over all ranks.
std::map<std::pair<std::int64_t, std::int32_t>, int> check_orders(const Reroute& plan, const Mesh& mesh,
                                                                  const std::vector<std::int64_t>& limit) {
  std::map<std::pair<std::int64_t, std::int32_t>, int> seen;
  for (std::int64_t r = 0; r < mesh.size(); ++r) {
    std::map<std::pair<std::int64_t, std::int32_t>, int> state;  // 1 after F, 2 after B, 3 after W
    std::int64_t held = 0;
    std::int64_t most = 0;
    for (const auto& routed : plan.steps[static_cast<std::size_t>(r)]) {
      const auto key = std::pair{routed.owner, routed.step.micro_batch};
      int& at = state[key];
      const int expected = routed.step.pass == Pass::forward      ? 0
                           : routed.step.pass == Pass::input_grad ? 1
                                                                  : 2;
      CHECK(at == expected);
      at = expected + 1;
      held += routed.step.pass == Pass::forward ? 1 : routed.step.pass == Pass::input_grad ? -1 : 0;
      most = std::max(most, held);
      ++seen[key];
      // The owner is a rank of the same stage, tensor and context coordinates.
      const Coord c = mesh.coord_of(r);
      const Coord o = mesh.coord_of(routed.owner);
      CHECK(std::tie(c.stage, c.tensor, c.context) == std::tie(o.stage, o.tensor, o.context));
    }
    CHECK(most <= limit[static_cast<std::size_t>(mesh.coord_of(r).stage)]);
  }
  return seen;
}

}  // namespace reroute_test

TEST_CASE("re-routing: a down replica's micro-batches go to its stage's live peer, in a valid order") {
  using namespace reroute_test;
  // Data 2 x pipeline 2 on 4 nodes, 4 micro-batches; node 0 holds stage 0 of replica 0.
  const auto s = layout(2, 2, 4);
  const Mesh mesh = Mesh::of(s);
  const Reroute plan = dtsim::parallel::plan_reroute(mesh, 4, true, {{0, 0}}, one_f_one_b(2), unit_costs(2));
  const auto rank = [&](std::int64_t stage, std::int64_t t, std::int64_t d) {
    return mesh.rank_of(Coord{stage, t, 0, d});
  };
  for (std::int64_t t = 0; t < 8; ++t) {
    CHECK(plan.is_down(rank(0, t, 0)));
    CHECK(plan.steps[static_cast<std::size_t>(rank(0, t, 0))].empty());
    for (std::int64_t mb = 0; mb < 4; ++mb) {
      CHECK(plan.executor_of(rank(0, t, 0), mb) == rank(0, t, 1));  // the one live peer takes all
      CHECK(plan.executor_of(rank(1, t, 0), mb) == rank(1, t, 0));  // stage 1 of replica 0 runs its own
    }
    // The peer runs F, B and W of its 4 micro-batches and of the 4 adopted ones; stage 1's ranks their 4.
    CHECK(plan.steps[static_cast<std::size_t>(rank(0, t, 1))].size() == 24);
    CHECK(plan.steps[static_cast<std::size_t>(rank(1, t, 0))].size() == 12);
  }
  CHECK(plan.adopted == std::vector<std::int64_t>{4, 0});
  // Every micro-batch of every rank runs its three passes once, somewhere.
  const auto seen = check_orders(plan, mesh, one_f_one_b(2));
  CHECK(seen.size() == static_cast<std::size_t>(mesh.size() * 4));
  for (const auto& [key, count] : seen) CHECK(count == 3);
}

TEST_CASE("re-routing: adopted micro-batches spread evenly over the live peers") {
  using namespace reroute_test;
  // Data 4, one stage, 32 micro-batches; node 1 (replica 1) down: 32 over 3 peers = 11, 11, 10.
  const auto s = layout(4, 1, 32);
  const Mesh mesh = Mesh::of(s);
  const Reroute plan = dtsim::parallel::plan_reroute(mesh, 32, true, {{1, 0}}, {32}, unit_costs(1));
  std::map<std::int64_t, int> adopted;
  for (std::int64_t mb = 0; mb < 32; ++mb) ++adopted[plan.executor_of(mesh.rank_of(Coord{0, 0, 0, 1}), mb)];
  CHECK(adopted.size() == 3);
  CHECK(adopted[mesh.rank_of(Coord{0, 0, 0, 0})] == 11);
  CHECK(adopted[mesh.rank_of(Coord{0, 0, 0, 2})] == 11);
  CHECK(adopted[mesh.rank_of(Coord{0, 0, 0, 3})] == 10);
  CHECK(plan.adopted == std::vector<std::int64_t>{11});
  // One stage: no split backward, each micro-batch an F and a whole backward.
  const auto& steps = plan.steps[static_cast<std::size_t>(mesh.rank_of(Coord{0, 0, 0, 0}))];
  CHECK(steps.size() == 2 * (32 + 11));
  CHECK(std::none_of(steps.begin(), steps.end(),
                     [](const auto& r) { return r.step.pass == Pass::weight_grad; }));
}

TEST_CASE("re-routing: without failures each stage runs its own micro-batches like 1F1B") {
  using namespace reroute_test;
  // Four stages, 8 micro-batches, unit costs: the list schedule keeps stage s within p - s micro-batches
  // between forward and B, and the last stage alternates F and B (its limit is 1).
  const auto s = layout(1, 4, 8);
  const Mesh mesh = Mesh::of(s);
  const Reroute plan = dtsim::parallel::plan_reroute(mesh, 8, true, {}, one_f_one_b(4), unit_costs(4));
  check_orders(plan, mesh, one_f_one_b(4));
  const auto& last = plan.steps[static_cast<std::size_t>(mesh.rank_of(Coord{3, 0, 0, 0}))];
  std::vector<Pass> passes;
  for (const auto& r : last) {
    if (r.step.pass != Pass::weight_grad) passes.push_back(r.step.pass);
  }
  for (std::size_t i = 0; i < passes.size(); ++i)
    CHECK(passes[i] == (i % 2 == 0 ? Pass::forward : Pass::input_grad));
}

TEST_CASE("re-routing: a stage without a live replica cannot be re-routed") {
  using namespace reroute_test;
  // Nodes 0 and 1 hold both replicas of stage 0.
  const auto s = layout(2, 2, 4);
  const Mesh mesh = Mesh::of(s);
  CHECK_THROWS_WITH_AS(
      dtsim::parallel::plan_reroute(mesh, 4, true, {{0, 0}, {1, 0}}, one_f_one_b(2), unit_costs(2)),
      doctest::Contains("stage 0 has none of its 2 data-parallel replicas"), dtsim::core::InfeasibleError);
}

TEST_CASE("re-routing: the engine's iteration with a node down") {
  using namespace reroute_test;
  // Data 2 x pipeline 2, 8 micro-batches: the live replica of stage 0 runs 16 micro-batches, twice its
  // stage's work. Without failures 1F1B takes about (m + p - 1) = 9 stage-micro-batch times; re-routed,
  // stage 0's peer alone needs 16, so the iteration grows by about 16/9 (less where adopted work fills
  // bubbles, more for the transfers across nodes it adds); the other stage's ranks wait for it.
  auto s = layout(2, 2, 8);
  s.simulation.ranks = dtsim::config::RankMode::all;
  const auto fault_free = dtsim::results::evaluate(s, {});
  REQUIRE(fault_free.status == dtsim::results::Status::ok);
  dtsim::results::EvaluateOptions options;
  options.down_replicas = {{0, 0}};
  const auto rerouted = dtsim::results::evaluate(s, options);
  REQUIRE(rerouted.status == dtsim::results::Status::ok);
  const double ratio = rerouted.iteration_time_s / fault_free.iteration_time_s;
  CAPTURE(fault_free.iteration_time_s);
  CAPTURE(rerouted.iteration_time_s);
  CHECK(ratio > 1.5);
  CHECK(ratio < 2.0);
  // Deterministic.
  CHECK(dtsim::results::evaluate(s, options).iteration_time_s == rerouted.iteration_time_s);
  // Both stage-0 nodes down: no replica of stage 0 left.
  options.down_replicas = {{0, 0}, {1, 0}};
  const auto none = dtsim::results::evaluate(s, options);
  CHECK(none.status == dtsim::results::Status::infeasible);
  CHECK(none.reason.find("stage 0 has none") != std::string::npos);
}

TEST_CASE("re-routing: the pace with more peers, within what the busiest peer's work allows") {
  using namespace reroute_test;
  // Data 4 x pipeline 2, 12 micro-batches; a node down: its stage's 3 peers adopt 4 each. The busiest
  // peer runs 16 micro-batches where 1F1B without failures took about m + p - 1 = 13 stage-micro-batch
  // times: the pace is at most about 13/16 = 0.81, and adopted work that fills bubbles keeps it above
  // 12/16 = 0.75 less the added transfers.
  auto s = layout(4, 2, 12);
  const auto fault_free = dtsim::results::evaluate(s, {});
  REQUIRE(fault_free.status == dtsim::results::Status::ok);
  dtsim::results::ReroutePaces paces(fault_free);
  const double pace = paces(std::vector<std::int64_t>{5});  // node d + 4 s = 5: stage 1 of replica 1
  CAPTURE(pace);
  CHECK(pace <= 13.0 / 16.0 + 0.02);
  CHECK(pace > 0.7);
  // Any one replica down is the same case (simulated once, on stage 0 of replica 0), whichever node.
  CHECK(paces(std::vector<std::int64_t>{0}) == pace);
  CHECK(paces(std::vector<std::int64_t>{7}) == pace);
  // Two down on two stages, and two down on one stage (its 2 peers adopt 6 each: 18 micro-batches, a pace
  // of at most about 13/18 = 0.72).
  const double two_stages = paces(std::vector<std::int64_t>{0, 5});
  const double one_stage = paces(std::vector<std::int64_t>{0, 1});
  CHECK(one_stage <= 13.0 / 18.0 + 0.02);
  CHECK(one_stage < two_stages);
  const auto cases = paces.cases();
  REQUIRE(cases.size() == 3);
  CHECK(cases[0].down_per_stage == std::vector<std::int64_t>{1});
  CHECK(cases[1].down_per_stage == std::vector<std::int64_t>{1, 1});
  CHECK(cases[2].down_per_stage == std::vector<std::int64_t>{2});
  CHECK(cases[2].pace == one_stage);
  CHECK(paces.reason().empty());
  // The replicas on nodes.
  CHECK(dtsim::parallel::replicas_on_nodes(Mesh::of(s), {5, 0}) ==
        std::vector<dtsim::parallel::StageReplica>{{0, 0}, {1, 1}});
}

TEST_CASE("re-routing: plans it refuses, with the reason") {
  using namespace reroute_test;
  auto s = layout(2, 2, 4);
  CHECK_FALSE(dtsim::results::reroute_refusal(s).has_value());
  s.parallelism.zero_stage = 1;
  CHECK(dtsim::results::reroute_refusal(s).value_or("").find("ZeRO stage 1") != std::string::npos);
  s.parallelism.zero_stage = 0;
  s.parallelism.distributed_optimizer = true;
  CHECK(dtsim::results::reroute_refusal(s).value_or("").find("distributed optimizer") != std::string::npos);
  s.parallelism.distributed_optimizer = false;
  s.parallelism.virtual_stages = 2;
  CHECK(dtsim::results::reroute_refusal(s).value_or("").find("2 virtual stages") != std::string::npos);
  s = layout(1, 2, 4);
  CHECK(dtsim::results::reroute_refusal(s).value_or("").find("data is 1") != std::string::npos);
  s = layout(64, 9, 4);  // 4,608 GPUs
  CHECK(dtsim::results::reroute_refusal(s).value_or("").find("at most 4096 GPUs") != std::string::npos);
}

TEST_CASE("re-routing: under reroute, search proposes only plans it can re-route") {
  using namespace reroute_test;
  // Llama-like fixture on 4 nodes of 8 GPUs: every candidate keeps whole copies of the state (ZeRO 0
  // without a distributed optimizer), one chunk per stage and at least 2 data-parallel replicas.
  const auto s = layout(4, 2, 12);
  dtsim::search::SpaceBounds bounds;
  bounds.reroutable_only = true;
  const auto space = dtsim::search::enumerate_space(s, bounds);
  REQUIRE_FALSE(space.candidates.empty());
  for (const auto& c : space.candidates) {
    CAPTURE(c.label);
    CHECK_FALSE(dtsim::results::reroute_refusal(c.scenario).has_value());
  }
}

TEST_CASE("re-routing: a plan under reroute ranks strategies it can re-route") {
  // Llama 3 8B on 4 p5 nodes with Llama 3's failure rates: without the restriction the best strategy
  // shards its state (ZeRO-2) and re-routing refuses it, leaving no cluster.
  const std::string text = R"({"schema_version": 1, "name": "reroute plan", "model": {"preset": "llama3-8b"},
    "training": {"global_batch_size": 256, "precision": "bf16"}, "tokens": 1e9,
    "search": {"max_context": 1, "max_micro_batch": 2, "max_virtual_stages": 2},
    "failures": {"preset": "llama3-h100-2024", "restart_s": 600, "checkpoint": {"write_gbytes_per_s": 100},
                 "recovery": "reroute", "repair_hours": 24},
    "candidates": [{"node": "aws-p5", "nodes": [4]}]})";
  const auto plan = dtsim::config::load_plan_text(text, "test", dtsim::config::default_data_paths(), {});
  const auto outcome = dtsim::search::evaluate_plan(plan, 1);
  REQUIRE(outcome.rows.size() == 1);
  const auto& row = outcome.rows.front();
  CAPTURE(row.reason);
  REQUIRE(row.feasible);
  CHECK_FALSE(dtsim::results::reroute_refusal(row.best.scenario).has_value());
  REQUIRE(row.best.goodput.has_value());
  CHECK(row.best.goodput->reason.empty());
}
