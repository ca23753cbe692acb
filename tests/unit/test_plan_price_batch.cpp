// Plan prices (per GPU-hour, per node-hour, from the node profile, from the command line) and the plan's
// global batch rule (config/plan.hpp): what each cluster is charged and trains with.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/plan_loader.hpp"
#include "config/profile_loader.hpp"
#include "search/capacity_plan.hpp"
#include "search/embedding_search.hpp"

namespace {

using dtsim::config::PriceBasis;

dtsim::config::Plan load(const std::string& candidates, const std::string& extra = "",
                         const std::vector<dtsim::config::PriceOverride>& prices = {}) {
  const std::string text = R"({"schema_version": 1, "name": "t", "model": {"preset": "gpt-1.3b"},
    "training": {"global_batch_size": 64}, "tokens": 1e9,)" + extra + R"(
    "search": {"max_context": 1, "max_micro_batch": 1, "max_virtual_stages": 1, "keep_sharding": true,
               "keep_recompute": true, "keep_sequence_parallel": true},
    "candidates": )" + candidates + "}";
  return dtsim::config::load_plan_text(text, "test", dtsim::config::default_data_paths(), prices);
}

}  // namespace

TEST_CASE("plan prices: per node-hour is divided by the node's GPUs, the node profile's price fills in") {
  const auto data = dtsim::config::default_data_paths();
  const auto p4d = dtsim::config::load_node_profile(data.hardware_profiles, "aws-p4d", {});
  REQUIRE(p4d.usd_per_node_hour);
  const auto plan = load(R"([{"node": "dgx-a100", "usd_per_node_hour": 20.0, "price_source": "quote", "nodes": [1]},
                             {"node": "aws-p4d", "nodes": [1]}])");
  REQUIRE(plan.clusters.size() == 2);
  // $20 per node-hour over 8 GPUs = $2.50 per GPU-hour.
  CHECK(plan.clusters[0].price_basis == PriceBasis::node_hour);
  CHECK(plan.clusters[0].usd_per_gpu_hour == doctest::Approx(2.5));
  CHECK(plan.clusters[0].price_source == "quote");
  // No price in the candidate: the profile's per node-hour, over its 8 GPUs, with the profile's source.
  CHECK(plan.clusters[1].usd_per_gpu_hour == doctest::Approx(*p4d.usd_per_node_hour / 8.0));
  CHECK(plan.clusters[1].price_source.find("node profile aws-p4d") == 0);

  // Cost = GPU-hours x price per GPU-hour = node-hours x price per node-hour.
  const auto outcome = dtsim::search::evaluate_plan(plan, 1);
  const auto& row = outcome.rows[0];
  REQUIRE(row.feasible);
  CHECK(row.cost_usd == doctest::Approx(row.train_s / 3600.0 * 20.0));
}

TEST_CASE("plan prices: a command-line price wins over the candidate's and the profile's") {
  const std::vector<dtsim::config::PriceOverride> prices = {
      dtsim::config::parse_price_override("aws-p4d=16", PriceBasis::node_hour),
      dtsim::config::parse_price_override("dgx-a100=1.5", PriceBasis::gpu_hour)};
  const auto plan = load(R"([{"node": "dgx-a100", "usd_per_gpu_hour": 9.0, "price_source": "list", "nodes": [1]},
                             {"node": "aws-p4d", "nodes": [1]}])",
                         "", prices);
  CHECK(plan.clusters[0].usd_per_gpu_hour == doctest::Approx(1.5));
  CHECK(plan.clusters[0].price_source == "command line: --usd-per-gpu-hour dgx-a100=1.5");
  // $16 per node-hour / 8 GPUs.
  CHECK(plan.clusters[1].usd_per_gpu_hour == doctest::Approx(2.0));
  CHECK(plan.clusters[1].price_basis == PriceBasis::node_hour);
}

TEST_CASE("plan batch rule per_gpu: global batch = stated x GPUs / reference, capped") {
  // Stated 64 at 16 GPUs, at most 96: 1 node (8 GPUs) 64 x 8 / 16 = 32; 2 nodes 64; 4 nodes 128 -> 96.
  const auto plan = load(R"([{"node": "dgx-a100", "usd_per_gpu_hour": 2.0, "price_source": "t", "nodes": [1, 2, 4]}])",
                         R"("batch": {"rule": "per_gpu", "reference_gpus": 16, "max_global_batch_size": 96},)");
  REQUIRE(plan.clusters.size() == 3);
  CHECK(plan.clusters[0].scenario.training.global_batch_size == 32);
  CHECK(plan.clusters[1].scenario.training.global_batch_size == 64);
  CHECK(plan.clusters[2].scenario.training.global_batch_size == 96);
  // The default holds the stated batch on every cluster.
  const auto fixed = load(R"([{"node": "dgx-a100", "usd_per_gpu_hour": 2.0, "price_source": "t", "nodes": [1, 4]}])");
  CHECK(fixed.batch.rule == dtsim::config::BatchRule::fixed);
  for (const auto& c : fixed.clusters) CHECK(c.scenario.training.global_batch_size == 64);
}

TEST_CASE("plan of a DLRM: each cluster's best embedding plan, time = samples / samples per second") {
  const std::string text = R"({"schema_version": 1, "name": "dlrm", "model": {"kind": "dlrm",
    "preset": "torchrec-dlrm-criteo-1tb"}, "training": {"global_batch_size": 16384, "precision": "fp32"},
    "input": {"sample_bytes": 160, "workers_per_gpu": 2, "storage_gbytes_per_s": 1},
    "samples": 4e9, "batch": {"rule": "per_gpu", "reference_gpus": 8},
    "candidates": [{"node": "aws-p4d", "nodes": [1, 2]}]})";
  const auto plan = dtsim::config::load_plan_text(text, "test", dtsim::config::default_data_paths(), {});
  REQUIRE(plan.clusters.size() == 2);
  CHECK(plan.clusters[1].scenario.training.global_batch_size == 32768);  // 16384 x 16 / 8
  const auto outcome = dtsim::search::evaluate_plan(plan, 1);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& row = outcome.rows[i];
    REQUIRE(row.feasible);
    // The search is the embedding plans' (search_embedding_plans), whose best the row takes.
    const auto searched =
        dtsim::search::search_embedding_plans(plan.clusters[i].scenario, dtsim::search::SearchOptions{});
    REQUIRE_FALSE(searched.top.empty());
    CHECK(row.strategy == searched.top.front().label);
    CHECK(row.best.throughput.samples_per_s == doctest::Approx(searched.top.front().result.throughput.samples_per_s));
    // 4e9 samples at the best rate; GPU-hours = GPUs x hours.
    CHECK(row.train_s == doctest::Approx(4e9 / row.best.throughput.samples_per_s));
    CHECK(row.gpu_hours == doctest::Approx(static_cast<double>(row.gpus) * row.train_s / 3600.0));
    // The readers: storage at 1 GB/s for 160-byte samples is 6.25e6 samples/s.
    REQUIRE(row.best.input.has_value());
    CHECK(row.best.input->limited_by == "storage");
    CHECK(row.best.input->samples_per_s == doctest::Approx(1e9 / 160.0));
  }
}
