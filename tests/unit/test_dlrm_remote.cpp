// Embedding tables on remote parameter servers (models/dlrm/remote_servers.hpp, models/dlrm/zipf.hpp):
// distinct rows under Zipf popularity, each GPU's traffic, the pull's and push's times, the servers a
// plan needs, and how the engine runs the exchanges.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "dlrm_fixture.hpp"
#include "models/dlrm/remote_servers.hpp"
#include "models/dlrm/zipf.hpp"
#include "parallel/embedding_shards.hpp"
#include "results/evaluate.hpp"
#include "config/plan_loader.hpp"
#include "search/capacity_plan.hpp"
#include "search/embedding_search.hpp"

// Named, not anonymous: unity builds put several files in one translation unit.
namespace dlrm_remote_test {

// The DLRM fixture with its tables on two servers of 1e9 bytes, 80 Gb/s (x 0.5 efficiency: 5e9 B/s
// each) and rows at 1 GB/s each; not pipelined unless asked.
dtsim::config::Scenario on_servers(bool pipelined = false) {
  auto s = dlrm_test::two_gpus();
  s.parallelism.embeddings.placement = dtsim::config::EmbeddingPlacement::remote;
  s.parallelism.embeddings.servers = dtsim::config::RemoteServers{2, 1e9, 80.0, 1.0, std::nullopt};
  s.parallelism.embeddings.pipelined = pipelined;
  return s;
}

// U = R (1 - (1 - 1/R)^n) for the fixture's uniform tables of R = 1000 rows, n = 500 x pooling lookups.
double uniform_rows(double lookups) { return 1000.0 * (1.0 - std::pow(1.0 - 1.0 / 1000.0, lookups)); }

// sum_k 1 - (1 - p_k)^n over every row, p_k = k^-s / H(R, s): the definition, row by row.
double exact_distinct(double rows, double lookups, double s) {
  double h = 0.0;
  for (double k = 1.0; k <= rows; k += 1.0) h += std::pow(k, -s);
  double sum = 0.0;
  for (double k = 1.0; k <= rows; k += 1.0) sum += 1.0 - std::pow(1.0 - std::pow(k, -s) / h, lookups);
  return sum;
}

}  // namespace dlrm_remote_test

TEST_CASE("DLRM remote servers: distinct rows among a batch's lookups under Zipf popularity") {
  using dtsim::models::zipf_distinct_rows;
  // Every row alike: R (1 - (1 - 1/R)^n); 1000 lookups of 1000 rows touch 1000 (1 - 0.999^1000) = 632.3.
  CHECK(zipf_distinct_rows(1000, 1000, 0.0) == doctest::Approx(632.305).epsilon(1e-5));
  // One lookup touches one row; none, none; never more rows than lookups or than the table has.
  CHECK(zipf_distinct_rows(1e6, 1, 1.05) == doctest::Approx(1.0));
  CHECK(zipf_distinct_rows(1e6, 0, 1.05) == 0.0);
  CHECK(zipf_distinct_rows(100, 1e9, 1.05) == doctest::Approx(100.0));
  // The binned sum against the definition, row by row (1e6 rows: 999,000 of them in bins).
  for (const double s : {0.5, 1.05, 1.5}) {
    for (const double n : {1e3, 1e5}) {
      const double exact = dlrm_remote_test::exact_distinct(1e6, n, s);
      CAPTURE(s);
      CAPTURE(n);
      CHECK(zipf_distinct_rows(1e6, n, s) == doctest::Approx(exact).epsilon(1e-3));
    }
  }
  // More popular heads, fewer distinct rows.
  CHECK(zipf_distinct_rows(1e8, 1e5, 1.2) < zipf_distinct_rows(1e8, 1e5, 0.8));
}

TEST_CASE("DLRM remote servers: each GPU's traffic, its pull and push, and the servers it needs") {
  const auto s = dlrm_remote_test::on_servers();
  const dtsim::models::RemoteTraffic t = dtsim::models::remote_traffic(s);
  // 500 samples per GPU: 2000, 1500, 1000 and 500 lookups of the four uniform tables.
  double u = 0.0;
  for (const double n : {2000.0, 1500.0, 1000.0, 500.0}) u += dlrm_remote_test::uniform_rows(n);
  CHECK(t.rows == doctest::Approx(u));
  CHECK(t.pull_out_bytes == doctest::Approx(8.0 * u));      // an 8-byte id per row
  CHECK(t.pull_in_bytes == doctest::Approx(512.0 * u));     // 128 FP32 columns
  CHECK(t.push_bytes == doctest::Approx(520.0 * u));        // the gradient and its id
  CHECK(t.update_bytes == doctest::Approx(2.0 * 512.0 * u));  // SGD: the row read and written, no state
  CHECK(t.resident_bytes == doctest::Approx(4.0 * 1000 * 512));

  const dtsim::models::RemoteTiming timing = dtsim::models::remote_timing(s, t);
  // Pull: trainer 512 u / 50e9; server NICs 2 GPUs x 512 u / (2 x 5e9); server memory 2 x 512 u / (2 x
  // 1e9): the memory, 512 u x 1e-9 s, after a request and its answer of 5 us each.
  CHECK(timing.pull.limited_by == "server memory");
  CHECK(timing.pull.seconds == doctest::Approx(2 * 5e-6 + 512.0 * u * 1e-9));
  CHECK(timing.pull.trainer_s == doctest::Approx(512.0 * u / 50e9));
  // Push: the memory again, 2 x 1024 u / 2e9, after one message.
  CHECK(timing.push.limited_by == "server memory");
  CHECK(timing.push.seconds == doctest::Approx(5e-6 + 1024.0 * u * 1e-9));

  // Servers for the memory: ceil(2,048,000 / 1e9) = 1. For the NICs: the trainers' 2 x 50e9 B/s over
  // 5e9 each = 20. For the memory bandwidth: the pull needs 2 x 512 u / (1e9 x 512 u / 50e9) = 100, the
  // push 2 x 1024 u / (1e9 x 520 u / 50e9) = 196.9: 197.
  const auto needs = dtsim::models::size_remote_servers(s, t);
  REQUIRE(needs.size() == 3);
  CHECK(needs[0].needed == 1.0);
  CHECK(needs[1].needed == 20.0);
  CHECK(needs[2].needed == 197.0);
  for (const auto& n : needs) CHECK(n.stated == 2.0);
}

TEST_CASE("DLRM remote servers: the GPUs pool their own samples from the pulled rows, with no exchange") {
  const auto s = dlrm_remote_test::on_servers();
  const auto layout = dtsim::parallel::shard_embeddings(s, 0.0);
  REQUIRE_FALSE(layout.infeasible);
  REQUIRE(layout.remote);
  CHECK(layout.pooled_alltoall_bytes == 0.0);
  CHECK(layout.ids_alltoall_bytes == 0.0);
  // Each GPU looks up its own 500 x (4 + 3 + 2 + 1) = 5000 ids: forward 5000 x (512 + 8) bytes and the
  // pooled outputs 4 x 500 x 512; no rows or states resident in HBM, the pulled ones in the buffers.
  for (const auto& r : layout.ranks) {
    CHECK(r.ids == 5000.0);
    CHECK(r.forward.bytes == doctest::Approx(5000.0 * 520 + 4.0 * 500 * 512));
    CHECK(r.forward.host_bytes == 0.0);
    CHECK(r.hbm_weight_bytes == 0.0);
    CHECK(r.hbm_state_bytes == 0.0);
  }
  CHECK(layout.buffer_bytes == doctest::Approx(2.0 * layout.remote->pull_in_bytes));

  // The servers' memory must hold the tables: 2,048,000 bytes on two servers of 1e6 need three.
  auto small = s;
  small.parallelism.embeddings.servers->memory_bytes = 1e6;
  const auto refused = dtsim::parallel::shard_embeddings(small, 0.0);
  REQUIRE(refused.infeasible);
  CHECK(refused.infeasible->find("use 3 servers or more") != std::string::npos);
}

TEST_CASE("DLRM remote servers: the engine runs the pull before the lookups and the push after them") {
  const auto s = dlrm_remote_test::on_servers();
  const auto r = dtsim::results::evaluate(s, {});
  REQUIRE(r.status == dtsim::results::Status::ok);
  REQUIRE(r.embeddings);
  REQUIRE(r.embeddings->remote);
  const auto& remote = *r.embeddings->remote;
  CHECK(remote.tables == 4);
  // Not pipelined: the pull, the lookups, the rest of the iteration and the push one after another
  // on each GPU, so the iteration holds both exchanges whole.
  CHECK(r.iteration_time_s >= remote.timing.pull.seconds + remote.timing.push.seconds);
  // Exposed, both but the part of the pull beside the bottom MLP's forward (which does not wait for it)
  // and of the push beside the dense optimizer step (which follows the embeddings' backward).
  const double exchanges = remote.timing.pull.seconds + remote.timing.push.seconds;
  CHECK(r.breakdown.exposed_embedding_comm_s <= exchanges + 1e-9);
  CHECK(r.breakdown.exposed_embedding_comm_s + r.breakdown.forward_s + r.breakdown.optimizer_s >= exchanges - 1e-9);
  // Pipelined, the next batch's pull runs beside the dense forward and the lookups: no longer.
  const auto ahead = dtsim::results::evaluate(dlrm_remote_test::on_servers(true), {});
  REQUIRE(ahead.status == dtsim::results::Status::ok);
  CHECK(ahead.iteration_time_s <= r.iteration_time_s);
}

TEST_CASE("DLRM remote servers: the search weighs the tables on the scenario's servers") {
  const auto s = dlrm_remote_test::on_servers();
  const auto candidates = dtsim::search::embedding_plan_candidates(s);
  int remote = 0;
  for (const auto& c : candidates) {
    const auto& plan = c.scenario.parallelism.embeddings;
    // Servers go with the remote placement only: every other plan reads back without them.
    CHECK((plan.placement == dtsim::config::EmbeddingPlacement::remote) == plan.servers.has_value());
    remote += plan.placement == dtsim::config::EmbeddingPlacement::remote ? 1 : 0;
  }
  // Every table on the servers, and the small ones replicated (the fixture's tables are all small).
  CHECK(remote == 2);
}

TEST_CASE("DLRM remote servers: a plan's cost adds the servers for as long as its tables are on them") {
  // torchrec's Criteo 1TB DLRM on 2 p4d nodes, every table on 8 servers at $3 an hour each.
  const std::string text = R"({"schema_version": 1, "name": "dlrm", "model": {"kind": "dlrm",
    "preset": "torchrec-dlrm-criteo-1tb"}, "training": {"global_batch_size": 32768, "precision": "fp32"},
    "parallelism": {"embeddings": {"placement": "remote", "servers": {"count": 8, "memory_gbytes": 256,
      "nic_gbps": 100, "row_gbytes_per_s": 50, "usd_per_hour": 3}}},
    "samples": 4e9, "candidates": [{"node": "aws-p4d", "nodes": [2]}]})";
  const auto plan = dtsim::config::load_plan_text(text, "test", dtsim::config::default_data_paths(), {});
  const auto outcome = dtsim::search::evaluate_plan(plan, 1);
  REQUIRE(outcome.rows.size() == 1);
  const auto& row = outcome.rows[0];
  REQUIRE(row.feasible);
  // The search ranks the servers first on these two nodes (the all-to-all over EFA costs more).
  REQUIRE(row.best.embeddings);
  REQUIRE(row.best.embeddings->remote);
  // GPU-hours at the node's price, plus 8 servers x $3 x the hours.
  const double gpus = row.gpu_hours * plan.clusters[0].usd_per_gpu_hour;
  CHECK(row.cost_usd == doctest::Approx(gpus + 8 * 3.0 * row.train_s / 3600.0));
}
