// Part of a node (cluster.gpus): a job on 2 or 4 GPUs of an 8-GPU node sees a node of that many GPUs,
// with the NICs of those GPUs (config/scenario.hpp, ClusterSpec).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "config/scenario_loader.hpp"
#include "scenario_fixture.hpp"

namespace {

nlohmann::json gpt_on(const nlohmann::json& cluster, int data, int tensor) {
  return {{"schema_version", 1},
          {"name", "partial-node"},
          {"model",
           {{"kind", "transformer"},
            {"layers", 12},
            {"hidden_size", 1024},
            {"heads", 16},
            {"vocab_size", 50257},
            {"seq_length", 1024}}},
          {"cluster", cluster},
          {"parallelism", {{"data", data}, {"tensor", tensor}}},
          {"training", {{"global_batch_size", 8 * data}, {"micro_batch_size", 1}, {"precision", "fp16"}}}};
}

dtsim::config::Scenario load(const nlohmann::json& s) {
  return dtsim::config::load_scenario_text(s.dump(), "test", dtsim::config::default_data_paths());
}

}  // namespace

TEST_CASE("cluster.gpus uses part of each node, with the NICs of the GPUs in use") {
  // dgx-a100: 8 GPUs, 8 NICs (one per GPU); aws-p4d: 8 GPUs, 4 EFA NICs (one per two GPUs).
  const auto two = load(gpt_on({{"node", "dgx-a100"}, {"nodes", 1}, {"gpus", 2}}, 2, 1));
  CHECK(two.gpu_count() == 2);
  CHECK(two.node.gpus_per_node == 2);
  CHECK(two.cluster.node_gpus == 8);
  CHECK(two.cluster.network.nics_per_node == 2);  // 8 NICs x 2 / 8
  // 12 GPUs over 2 nodes: 6 of each node; p4d's 4 NICs x 6 / 8 = 3.
  const auto p4d = load(gpt_on({{"node", "aws-p4d"}, {"nodes", 2}, {"gpus", 12}}, 12, 1));
  CHECK(p4d.gpu_count() == 12);
  CHECK(p4d.node.gpus_per_node == 6);
  CHECK(p4d.cluster.network.nics_per_node == 3);
  // One GPU of a p4d node still has a NIC: ceil(4 x 1 / 8) = 1.
  const auto one = load(gpt_on({{"node", "aws-p4d"}, {"nodes", 1}, {"gpus", 1}}, 1, 1));
  CHECK(one.cluster.network.nics_per_node == 1);
  // A NIC count the scenario states wins over the derived one.
  const auto stated = load(gpt_on(
      {{"node", "dgx-a100"}, {"nodes", 2}, {"gpus", 8}, {"network", {{"nics_per_node", 4}}}}, 8, 1));
  CHECK(stated.cluster.network.nics_per_node == 4);
  // Without "gpus", the whole node.
  const auto whole = load(gpt_on({{"node", "dgx-a100"}, {"nodes", 1}}, 8, 1));
  CHECK(whole.node.gpus_per_node == 8);
  CHECK_FALSE(whole.cluster.gpus.has_value());
}

TEST_CASE("a job on part of a node runs as on a node of that many GPUs") {
  // Tensor parallelism 4 on 4 of 8 GPUs against tensor 4 x data 2 on the whole node, micro-batch 1 and
  // 8 micro-batches per data-parallel rank in both: the same per-GPU work and the same tensor-parallel
  // collectives inside the node, plus, on the whole node, the gradient all-reduce between the two
  // replicas, so the 4-GPU iteration is not longer, and its GPU count is 4.
  const auto four =
      dtsim::testing::evaluate_json(gpt_on({{"node", "dgx-a100"}, {"nodes", 1}, {"gpus", 4}}, 1, 4));
  const auto eight = dtsim::testing::evaluate_json(gpt_on({{"node", "dgx-a100"}, {"nodes", 1}}, 2, 4));
  REQUIRE(four.iteration_time_s > 0.0);
  REQUIRE(eight.iteration_time_s > 0.0);
  CHECK(four.iteration_time_s <= eight.iteration_time_s);
  CHECK(four.scenario.gpu_count() == 4);
}
