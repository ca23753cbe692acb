// DLRM models (config/dlrm.hpp, models/dlrm/dlrm.hpp) and their embedding shards
// (parallel/embedding_shards.hpp): parameter and FLOP counts of the shipped preset, the greedy placement,
// the bytes each GPU's lookups move, the exchanges, the host tiers and the cache's hit rate, each derived
// in a comment from the model's equations; and a whole iteration on the engine.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "config/scenario_loader.hpp"
#include "models/dlrm/dlrm.hpp"
#include "models/dlrm/zipf.hpp"
#include "parallel/embedding_shards.hpp"
#include "results/evaluate.hpp"
#include "dlrm_fixture.hpp"
#include "scenario_fixture.hpp"
#include "search/embedding_refinement.hpp"
#include "search/embedding_search.hpp"

using dtsim::config::EmbeddingPlacement;
using dtsim::config::EmbeddingSharding;


TEST_CASE("DLRM: the torchrec Criteo 1TB preset's parameters and FLOPs") {
  const auto s = dtsim::config::load_scenario_text(
      R"({"schema_version": 1, "name": "p", "model": {"kind": "dlrm", "preset": "torchrec-dlrm-criteo-1tb"},
          "cluster": {"node": "aws-p4d", "nodes": 1}, "training": {"global_batch_size": 16384, "precision": "fp32"}})",
      "p.json", dtsim::config::default_data_paths());
  const auto& m = *s.dlrm;
  // Bottom 13-512-256-128: 13x512+512 + 512x256+256 + 256x128+128 = 171,392.
  CHECK(dtsim::models::dlrm_bottom_parameters(m) == 171392.0);
  // Dot interaction of F = 27 vectors of 128: the top MLP's input 128 + 27x26/2 = 479.
  CHECK(dtsim::models::dlrm_interaction_width(m) == 479);
  // Top 479-1024-1024-512-256-1: 490,496+1024 + 1,048,576+1024 + 524,288+512 + 131,072+256 + 256+1.
  CHECK(dtsim::models::dlrm_top_parameters(m) == 2197505.0);
  // 204,184,588 rows of 128 (torchrec_dlrm/README.MD: 97.36 GiB of FP32 rows).
  CHECK(dtsim::models::dlrm_embedding_parameters(m) == 204184588.0 * 128.0);
  // Forward per sample: 2 x (13x512 + 512x256 + 256x128) = 340,992; 2 x (479x1024 + 1024x1024 + 1024x512 +
  // 512x256 + 256) = 4,389,376; 2 x 27^2 x 128 = 186,624; x3 for forward and backward.
  CHECK(dtsim::models::dlrm_model_flops_per_iteration(m, 1) == 3.0 * (340992.0 + 4389376.0 + 186624.0));
  CHECK(s.training.optimizer == dtsim::config::Optimizer::adagrad);  // a DLRM's default
}

TEST_CASE("DLRM: table-wise shards go greedily to the GPU with the least lookup work") {
  auto s = dlrm_test::two_gpus();
  const auto layout = dtsim::parallel::shard_embeddings(s, 0.0);
  REQUIRE_FALSE(layout.infeasible);
  // Per shard: B x pooling ids; forward bytes ids x (128 x 4 + 8) + the pooled output 1000 x 128 x 4 =
  // 512,000; backward the pooled gradient 512,000 + ids x (2 x 512 + 8) (SGD: no state). Work, forward
  // and backward: 4000 x 1552 + 1,024,000 = 7,232,000 (t0), 5,680,000, 4,128,000, 2,576,000 (t3).
  // Greedy: t0 -> GPU 0, t1 -> GPU 1, t2 -> GPU 1 (5.68e6 < 7.23e6), t3 -> GPU 0 (7.23e6 < 9.81e6).
  CHECK(layout.ranks[0].ids == 5000.0);
  CHECK(layout.ranks[1].ids == 5000.0);
  // GPU 0: t0 4000 x 520 + 512,000 = 2,592,000 and t3 1000 x 520 + 512,000 = 1,032,000.
  CHECK(layout.ranks[0].forward.bytes == doctest::Approx(3624000.0));
  CHECK(layout.ranks[0].forward.host_bytes == 0.0);
  // Each GPU sends two tables' pooled values for the other's 500 samples: 2 x 1000 x 128 x 4 x 1/2 =
  // 512,000, and receives 500 x 4 x 512 x 1/2 = 512,000: the all-to-all's buffer 512,000 x 2 / 1.
  CHECK(layout.pooled_alltoall_bytes == doctest::Approx(1024000.0));
  // Ids to the tables' GPUs: 500 samples x 10 ids x 8 bytes.
  CHECK(layout.ids_alltoall_bytes == doctest::Approx(40000.0));
  CHECK(layout.row_wise_bytes == 0.0);
  CHECK(layout.ranks[0].hbm_weight_bytes == doctest::Approx(2 * 1000 * 128 * 4.0));
}

TEST_CASE("DLRM: a row-wise table splits its ids evenly and reduce-scatters its partial sums") {
  auto s = dlrm_test::two_gpus();
  s.parallelism.embeddings.per_table = {{"t0", EmbeddingSharding::row_wise}};
  const auto layout = dtsim::parallel::shard_embeddings(s, 0.0);
  REQUIRE_FALSE(layout.infeasible);
  // t0's 4000 ids, 2000 on each GPU, and B x d x e = 1000 x 128 x 4 partial sums reduce-scattered.
  CHECK(layout.row_wise_bytes == doctest::Approx(512000.0));
  // The rest greedily: t1 (5.68e6) -> GPU 0 (0 vs 0 after t0's even halves: ties to the lowest rank),
  // t2 -> GPU 1, t3 -> GPU 1 (4.128e6 < 5.68e6): GPU 0 2000 + 3000 ids, GPU 1 2000 + 2000 + 1000.
  CHECK(layout.ranks[0].ids == 5000.0);
  CHECK(layout.ranks[1].ids == 5000.0);
}

TEST_CASE("DLRM: rows in host memory move over the host link, an HBM cache serves its hit rate") {
  auto s = dlrm_test::two_gpus();
  s.parallelism.embeddings.placement = EmbeddingPlacement::host;
  auto layout = dtsim::parallel::shard_embeddings(s, 0.0);
  REQUIRE_FALSE(layout.infeasible);
  // GPU 0's 5000 ids read 512-byte rows from the host; ids and pooled outputs stay in HBM.
  CHECK(layout.ranks[0].forward.host_bytes == doctest::Approx(5000 * 512.0));
  CHECK(layout.ranks[0].forward.bytes == doctest::Approx(5000 * 8.0 + 2 * 512000.0));
  CHECK(layout.ranks[0].hbm_weight_bytes == 0.0);
  CHECK(layout.ranks[0].host_bytes == doctest::Approx(2 * 1000 * 128 * 4.0));
  CHECK(layout.cache_hit_rate == 0.0);

  // A cache of half the rows, every row alike: half the ids hit.
  s.parallelism.embeddings.placement = EmbeddingPlacement::host_cached;
  s.parallelism.embeddings.cache_fraction = 0.5;
  layout = dtsim::parallel::shard_embeddings(s, 0.0);
  CHECK(layout.cache_hit_rate == doctest::Approx(0.5));
  CHECK(layout.ranks[0].forward.host_bytes == doctest::Approx(2500 * 512.0));
  CHECK(layout.ranks[0].hbm_weight_bytes == doctest::Approx(0.5 * 2 * 1000 * 128 * 4.0));

  // Host memory is the node's: 4 x 512,000 bytes of rows do not fit in 1 MB.
  s.node.host_memory_bytes = 1e6;
  layout = dtsim::parallel::shard_embeddings(s, 0.0);
  REQUIRE(layout.infeasible);
  CHECK(layout.infeasible->find("host memory") != std::string::npos);
}

TEST_CASE("DLRM: a table placed on its own (per_table_placement) keeps its rows where it says") {
  auto s = dlrm_test::two_gpus();
  s.parallelism.embeddings.per_table_placement = {{"t0", EmbeddingPlacement::host}};
  const auto layout = dtsim::parallel::shard_embeddings(s, 0.0);
  REQUIRE_FALSE(layout.infeasible);
  // The greedy placement weighs the same work either way (a row is 512 bytes from HBM or from the
  // host): t0 and t3 on GPU 0, t1 and t2 on GPU 1. Only t0's 4000 ids read their rows over the host link.
  CHECK(layout.ranks[0].forward.host_bytes == doctest::Approx(4000 * 512.0));
  CHECK(layout.ranks[1].forward.host_bytes == 0.0);
  // t0's rows in host memory, t3's in HBM (SGD: no state).
  CHECK(layout.ranks[0].host_bytes == doctest::Approx(1000 * 128 * 4.0));
  CHECK(layout.ranks[0].hbm_weight_bytes == doctest::Approx(1000 * 128 * 4.0));
  CHECK(layout.ranks[1].host_bytes == 0.0);
  // 4000 of the 10,000 ids miss HBM.
  CHECK(layout.cache_hit_rate == doctest::Approx(0.6));
}

TEST_CASE("DLRM: the hit rate of a cache of the most popular rows under Zipf popularity") {
  // Every row alike: the cached fraction.
  CHECK(dtsim::models::zipf_cache_hit_rate(1e6, 0.2, 0.0) == doctest::Approx(0.2));
  CHECK(dtsim::models::zipf_cache_hit_rate(1e6, 1.0, 1.2) == 1.0);
  // s = 1: H(k) ~ ln k + 0.5772 (Euler's constant): 1% of 1e6 rows serve (ln 1e4 + 0.5772) / (ln 1e6 +
  // 0.5772) = 9.7875 / 14.3927 = 0.6800 of the ids.
  CHECK(dtsim::models::zipf_cache_hit_rate(1e6, 0.01, 1.0) == doctest::Approx(0.6800).epsilon(1e-3));
  // Steeper popularity, more hits from the same cache.
  CHECK(dtsim::models::zipf_cache_hit_rate(1e6, 0.01, 1.2) >
        dtsim::models::zipf_cache_hit_rate(1e6, 0.01, 1.0));
}

TEST_CASE("DLRM: a table that fits no GPU makes the plan infeasible, with the table's name") {
  auto s = dlrm_test::two_gpus();
  s.dlrm->tables[2].rows = 1000000000;  // 1e9 x 128 x 4 = 512 GB on one 80 GB GPU
  const auto layout = dtsim::parallel::shard_embeddings(s, 0.0);
  REQUIRE(layout.infeasible);
  CHECK(layout.infeasible->find("\"t2\"") != std::string::npos);
  CHECK(layout.infeasible->find("fits no GPU") != std::string::npos);
  const auto r = dtsim::results::evaluate(s, {});
  CHECK(r.status == dtsim::results::Status::infeasible);
  CHECK(r.reason == *layout.infeasible);
}

TEST_CASE("DLRM: a batch that does not divide over the GPUs is an infeasible plan, not bad input") {
  // A sweep over the cluster meets such points and carries on past them.
  auto s = dlrm_test::two_gpus();
  s.training.global_batch_size = 1001;
  const auto r = dtsim::results::evaluate(s, {});
  CHECK(r.status == dtsim::results::Status::infeasible);
  CHECK(r.reason == "global batch 1001 is not divisible by the 2 GPUs (one data-parallel worker per GPU)");
}

TEST_CASE("DLRM: an iteration on the engine waits at each exchange for the GPU with the most lookups") {
  auto s = dlrm_test::two_gpus();
  // One table, on GPU 0: GPU 1 has no lookups and waits for GPU 0's at the all-to-all.
  s.dlrm->tables.resize(1);
  const auto r = dtsim::results::evaluate(s, {});
  REQUIRE(r.status == dtsim::results::Status::ok);
  REQUIRE(r.embeddings);
  CHECK(r.embeddings->ids_per_gpu_max == 4000.0);
  CHECK(r.embeddings->ids_per_gpu_mean == 2000.0);
  CHECK(r.breakdown.pipeline_bubble_s > 0.0);
  CHECK(r.breakdown.exposed_embedding_comm_s > 0.0);
  double parts = 0.0;
  for (const auto& part : dtsim::results::kBreakdownParts) parts += r.breakdown.*part.value;
  CHECK(parts == doctest::Approx(r.iteration_time_s).epsilon(1e-9));
  CHECK(r.engine.simulated_ranks == 2);
  CHECK(r.throughput.samples_per_s == doctest::Approx(1000.0 / r.iteration_time_s));
  // Same scenario, same bytes: deterministic.
  CHECK(dtsim::results::evaluate(s, {}).iteration_time_s == r.iteration_time_s);
}

TEST_CASE("DLRM: column-wise shards, table-row-wise nodes and replicated tables") {
  auto s = dlrm_test::two_gpus();
  // t0 in column shards of 64: two shards of 1000 x 64, each looking up all 4000 ids of t0 at 64 x 4 =
  // 256 bytes a row (block penalty 1.15 for 64 <= d < 128).
  s.parallelism.embeddings.per_table = {{"t0", EmbeddingSharding::column_wise}};
  s.parallelism.embeddings.column_shard_dim = 64;
  auto layout = dtsim::parallel::shard_embeddings(s, 0.0);
  REQUIRE_FALSE(layout.infeasible);
  int t0_shards = 0;
  for (const auto& sh : layout.shards) {
    if (sh.table != 0) continue;
    ++t0_shards;
    CHECK(sh.columns == 64.0);
    CHECK(sh.ids == 4000.0);
  }
  CHECK(t0_shards == 2);

  // Every table replicated: each GPU looks up its own 500 samples' ids (500 x 10), no exchange, and
  // the tables' gradients (4 x 1000 x 128 x 4 bytes) are all-reduced.
  s = dlrm_test::two_gpus();
  s.parallelism.embeddings.sharding = EmbeddingSharding::data_parallel;
  layout = dtsim::parallel::shard_embeddings(s, 0.0);
  REQUIRE_FALSE(layout.infeasible);
  CHECK(layout.ranks[0].ids == 5000.0);
  CHECK(layout.ranks[1].ids == 5000.0);
  CHECK(layout.pooled_alltoall_bytes == 0.0);
  CHECK(layout.ids_alltoall_bytes == 0.0);
  CHECK(layout.data_parallel_gradient_bytes == doctest::Approx(4 * 1000 * 128 * 4.0));

  // Table-row-wise on one node of two GPUs: each table's rows over both, B x pooling / 2 ids each
  // (4000 + 3000 + 2000 + 1000) / 2, and the node reduce-scatters B x d x e = 512,000 bytes per table.
  s = dlrm_test::two_gpus();
  s.parallelism.embeddings.sharding = EmbeddingSharding::table_row_wise;
  layout = dtsim::parallel::shard_embeddings(s, 0.0);
  REQUIRE_FALSE(layout.infeasible);
  CHECK(layout.ranks[0].ids == 5000.0);
  CHECK(layout.ranks[1].ids == 5000.0);
  REQUIRE(layout.node_row_bytes.size() == 1);
  CHECK(layout.node_row_bytes[0] == doctest::Approx(4 * 512000.0));
  const auto r = dtsim::results::evaluate(s, {});
  REQUIRE(r.status == dtsim::results::Status::ok);
  CHECK(r.embeddings->tables[static_cast<std::size_t>(EmbeddingSharding::table_row_wise)] == 4);
}

TEST_CASE(
    "DLRM: search enumerates the embedding plans that can differ and ranks them by samples per second") {
  auto s = dlrm_test::two_gpus();
  // No host link on the fixture's GPU: HBM only. No table wider than a 128-column shard, none above a
  // quarter of HBM, all under 64 MiB: table_wise, row_wise, table_row_wise, data_parallel, and
  // table_wise with the small tables replicated.
  const auto candidates = dtsim::search::embedding_plan_candidates(s);
  REQUIRE(candidates.size() == 5);
  CHECK(candidates[0].label == "table_wise; HBM");
  CHECK(candidates[3].label == "data_parallel; HBM");
  CHECK(candidates[4].label == "table_wise, small data_parallel; HBM");
  CHECK(candidates[4].scenario.parallelism.embeddings.per_table.size() == 4);

  dtsim::search::SearchOptions options;
  options.top = 5;
  options.jobs = 1;
  const auto one = dtsim::search::search_embedding_plans(s, options);
  options.jobs = 2;
  const auto two = dtsim::search::search_embedding_plans(s, options);
  REQUIRE(one.top.size() == 5);
  // The 5 families, then from the best of them each of the 4 tables in the 3 other shardings (HBM only).
  CHECK(one.enumerated == 5 + 12);
  CHECK(one.refined_alternatives == 12);
  for (std::size_t i = 0; i < one.top.size(); ++i) {
    CHECK(one.top[i].rank == i + 1);
    CHECK(one.top[i].label == two.top[i].label);  // the ranking does not depend on the threads
    if (i > 0)
      CHECK(one.top[i - 1].result.throughput.samples_per_s >= one.top[i].result.throughput.samples_per_s);
  }
}

TEST_CASE("DLRM search: the best family plan refined table by table is never slower than its start") {
  // t0 looked up 40 times per sample, the others once: table-wise, its GPU does 40,000 of 43,000 ids.
  auto s = dlrm_test::two_gpus();
  s.dlrm->tables[0].pooling = 40.0;
  for (std::size_t t = 1; t < 4; ++t) s.dlrm->tables[t].pooling = 1.0;

  // From table-wise: each of the four tables (all among the 8 largest) in the 3 other shardings that
  // apply (128 columns are one column shard; the fixture's GPU has no host link: HBM only).
  dtsim::search::Candidate start{"table_wise; HBM", s};
  const auto start_result = dtsim::results::evaluate(s, {});
  REQUIRE(start_result.status == dtsim::results::Status::ok);
  const auto refined = dtsim::search::refine_embedding_plan(s, start, start_result, 1);
  CHECK(refined.evaluated == 12);
  // t0 goes its own way (its ids spread or replicated), and the plan runs faster for it.
  CHECK(refined.changed >= 1);
  CHECK(refined.plan.scenario.parallelism.embeddings.sharding_of("t0") != EmbeddingSharding::table_wise);
  CHECK(refined.result.throughput.samples_per_s > start_result.throughput.samples_per_s);
  CHECK(refined.plan.label.rfind("table_wise; HBM + ", 0) == 0);

  // The search refines its best family plan and ranks the result with the others: its first plan is at
  // least as fast as every family's.
  const auto outcome = dtsim::search::search_embedding_plans(s, dtsim::search::SearchOptions{});
  REQUIRE_FALSE(outcome.top.empty());
  CHECK(outcome.refined_alternatives > 0);
  for (const auto& c : dtsim::search::embedding_plan_candidates(s)) {
    const auto r = dtsim::results::evaluate(c.scenario, {});
    if (r.status == dtsim::results::Status::ok)
      CHECK(outcome.top.front().result.throughput.samples_per_s >= r.throughput.samples_per_s);
  }
}
