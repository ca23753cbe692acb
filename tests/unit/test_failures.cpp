// Failures and goodput (config/failures.hpp, models/failures/checkpoint.hpp and goodput.hpp,
// results/goodput.hpp): the checkpoint formulas, the whole-run simulation's accounting, its recovery
// strategies, and the scenario key end to end.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/scenario_loader.hpp"
#include "models/failures/checkpoint.hpp"
#include "models/failures/goodput.hpp"
#include "models/transformer/transformer.hpp"
#include "reports/compare_report.hpp"
#include "reports/reports.hpp"
#include "results/evaluate.hpp"
#include "results/goodput.hpp"

namespace {

using dtsim::config::FailureSpec;
using dtsim::config::FailureUnit;
using dtsim::models::GoodputEstimate;
using dtsim::models::GoodputInput;

// One node category at `per_1000_days` per node, restart 600 s, synchronous checkpoints of 60 s every
// hour; 16 nodes of 8 GPUs, 4 replicas of 4 nodes each; 10 days of training, 1 s iterations.
struct Job {
  FailureSpec spec;
  GoodputInput in;
  explicit Job(double per_1000_days, FailureUnit per = FailureUnit::node) {
    spec.categories = {{"node", per, per_1000_days, {}}};
    spec.restart_s = 600.0;
    spec.checkpoint.interval_s = 3600.0;
    spec.runs = 400;
    in.spec = &spec;
    in.failure_free_s = 10.0 * 86400.0;
    in.iteration_s = 1.0;
    in.gpus = 128;
    in.nodes = 16;
    in.replicas = 4;
    for (std::int32_t n = 0; n < 16; ++n) in.node_replicas.push_back({n / 4});
    in.checkpoint.write_s = 60.0;
    in.checkpoint.read_s = 30.0;
    in.checkpoint.stall_s = 60.0;
  }
  GoodputEstimate run() const { return dtsim::models::estimate_goodput(in); }
};

// wall = failure-free + lost + degraded + restart + waiting + checkpoints + reconfiguration, per run and
// so in the mean.
double parts(const GoodputEstimate& g) {
  return g.failure_free_s + g.lost_work_s + g.degraded_s + g.restart_total_s + g.spare_wait_s +
         g.checkpoint_total_s + g.reconfigure_total_s;
}

}  // namespace

TEST_CASE("checkpoint: Daly's and Young's optimum intervals, Kokolis et al.'s E[ETTR], the costs") {
  // delta 300 s, M 86,400 s: sqrt(2 x 300 x 86,400) = 7,200; x = 300 / 172,800 = 1/576;
  // Daly: 7,200 (1 + sqrt(1/576) / 3 + 1/(576 x 9)) - 300 = 7,200 (1 + 1/72 + 1/5184) - 300 = 7,001.39.
  CHECK(dtsim::models::young_optimal_interval_s(300.0, 86400.0) == doctest::Approx(7200.0));
  CHECK(dtsim::models::daly_optimal_interval_s(300.0, 86400.0) == doctest::Approx(7001.389).epsilon(1e-6));
  // delta >= 2M: the interval is M.
  CHECK(dtsim::models::daly_optimal_interval_s(100.0, 40.0) == 40.0);
  // 2,048 nodes x 6.5 per 1000 node-days = 13.312 per day = 1.5407e-4 per s; u0 300 s, dt 3,600 s, no
  // stall: 1 - 1.5407e-4 x (300 + 1,800) = 0.67645 (the published example's 0.7).
  const double rate = 2048.0 * 6.5e-3 / 86400.0;
  CHECK(dtsim::models::expected_ettr(rate, 300.0, 0.0, 3600.0) == doctest::Approx(0.67645).epsilon(1e-4));
  // A stall of w: divided by 1 + w / dt.
  CHECK(dtsim::models::expected_ettr(rate, 300.0, 360.0, 3600.0) ==
        doctest::Approx(0.67645 / 1.1).epsilon(1e-4));
  // 1 TB at 100 GB/s: 10 s; read at 200: 5 s; asynchronous, 20 GB per GPU at 25 GB/s: 0.8 s stall.
  dtsim::models::CheckpointInput in{.state_bytes = 1e12,
                                    .per_gpu_state_bytes = 20e9,
                                    .write_gbytes_per_s = 100.0,
                                    .read_gbytes_per_s = 200.0};
  auto c = dtsim::models::checkpoint_cost(in);
  CHECK(c.write_s == doctest::Approx(10.0));
  CHECK(c.read_s == doctest::Approx(5.0));
  CHECK(c.stall_s == doctest::Approx(10.0));
  // To a peer's host memory: each node sends its 80 GB over 400 GB/s of NICs: 0.2 s, read back alike.
  const dtsim::models::CheckpointInput peer{.state_bytes = 1e12,
                                            .per_gpu_state_bytes = 10e9,
                                            .peer_memory = true,
                                            .node_state_bytes = 80e9,
                                            .node_link_gbytes_per_s = 400.0};
  CHECK(dtsim::models::checkpoint_cost(peer).write_s == doctest::Approx(0.2));
  CHECK(dtsim::models::checkpoint_cost(peer).read_s == doctest::Approx(0.2));
  in.asynchronous = true;
  in.snapshot_gbytes_per_s = 25.0;
  c = dtsim::models::checkpoint_cost(in);
  CHECK(c.stall_s == doctest::Approx(0.8));
  CHECK(c.write_s == doctest::Approx(10.0));
}

TEST_CASE("goodput: without failures the run is its training and its checkpoints") {
  // 10 days = 864,000 s with a 60 s stall every 3,600 s: 240 intervals, 239 checkpoints (none after
  // the last): 864,000 + 14,340 s.
  Job job(0.0);
  const auto g = job.run();
  CHECK(g.wall_s.p50 == doctest::Approx(864000.0 + 239 * 60.0));
  CHECK(g.goodput.p10 == doctest::Approx(864000.0 / (864000.0 + 239 * 60.0)));
  CHECK(g.failures.p90 == 0.0);
  CHECK(g.reason.empty());
}

TEST_CASE("goodput: the wall time splits into its parts, and the same seed gives the same numbers") {
  for (const auto recovery : {dtsim::config::Recovery::restart, dtsim::config::Recovery::elastic}) {
    Job job(20.0);  // 16 x 20 / 1000 = 0.32 failures per day: about 3 in 10 days
    job.spec.recovery = recovery;
    job.spec.repair_hours = 12.0;
    job.spec.reconfigure_s = 120.0;
    const auto g = job.run();
    CAPTURE(dtsim::config::to_string(recovery));
    CHECK(parts(g) == doctest::Approx(g.wall_s.mean).epsilon(1e-9));
    CHECK(g.failures.mean == doctest::Approx(3.2).epsilon(0.15));
    const auto again = job.run();
    CHECK(again.wall_s.p50 == g.wall_s.p50);
    CHECK(again.lost_work_s == g.lost_work_s);
    job.in.seed = 7;
    CHECK(job.run().wall_s.mean != g.wall_s.mean);
  }
}

TEST_CASE("goodput: restarts lose half an interval of work on average and pay the restart and the read") {
  // 160 per 1000 node-days x 16 nodes: 2.56 failures per day, 25.6 over 10 days (a few more over the
  // longer wall time). Each loses the work since the last checkpoint: about half of an interval of
  // training plus checkpoint (the failure falls uniformly in the cycle): ~1,800 s; and restarts for
  // 600 + 30 s.
  Job job(160.0);
  const auto g = job.run();
  const double failures = g.failures.mean;
  CHECK(failures == doctest::Approx(25.6 * g.wall_s.mean / g.failure_free_s).epsilon(0.05));
  CHECK(g.restart_total_s / failures == doctest::Approx(630.0).epsilon(0.02));
  CHECK(g.lost_work_s / failures == doctest::Approx(1800.0).epsilon(0.1));
  // The closed form agrees with the simulation within a few percent at this rate.
  CHECK(g.goodput.mean == doctest::Approx(g.closed_form_ettr).epsilon(0.03));
  CHECK(g.spare_wait_s == 0.0);
  CHECK(g.degraded_s == 0.0);
}

TEST_CASE("goodput: without a ready spare, a node failure waits for its repair") {
  // No spares and 12 h repairs: each node failure waits 12 h before its restart; job failures never
  // wait.
  Job job(20.0);
  job.spec.spare_nodes = 0;
  job.spec.repair_hours = 12.0;
  auto g = job.run();
  CHECK(g.spare_wait_s / g.failures.mean == doctest::Approx(12.0 * 3600.0).epsilon(1e-6));
  Job software(20.0, FailureUnit::job);  // 20 per 1000 job-days: 0.2 in 10 days
  software.spec.spare_nodes = 0;
  software.spec.repair_hours = 12.0;
  g = software.run();
  CHECK(g.spare_wait_s == 0.0);
  // One spare: a second failure within 12 h of the first waits for the repair, others do not.
  job.spec.spare_nodes = 1;
  const auto one = job.run();
  CHECK(one.spare_wait_s < 0.1 * 12.0 * 3600.0 * one.failures.mean);
}

TEST_CASE("goodput: elastic recovery runs on without the failed node's replicas, at their pace") {
  // A node failure removes its replica (1 of 4): a quarter of the pace is lost for the 12 h repair, so
  // each failure costs about 12 h x 1/4 = 3 h of degraded time, plus its pause; the replicas hold the
  // whole state, so no work is rolled back.
  Job job(20.0);
  job.spec.recovery = dtsim::config::Recovery::elastic;
  job.spec.repair_hours = 12.0;
  job.spec.reconfigure_s = 120.0;
  job.in.replicas_hold_state = true;
  const auto g = job.run();
  CHECK(g.lost_work_s == 0.0);
  CHECK(g.restart_total_s == 0.0);
  CHECK(g.degraded_s / g.failures.mean == doctest::Approx(3.0 * 3600.0).epsilon(0.1));
  CHECK(g.reconfigure_total_s / g.failures.mean == doctest::Approx(240.0).epsilon(0.1));  // out and back
  // Sharded state: each failure rolls back to the last checkpoint and reads it.
  job.in.replicas_hold_state = false;
  const auto sharded = job.run();
  CHECK(sharded.lost_work_s > 0.0);
  CHECK(sharded.restart_total_s / sharded.failures.mean == doctest::Approx(120.0 + 30.0).epsilon(0.05));
}

TEST_CASE(
    "goodput: re-routing trains on at the pace with the nodes down, and waits when a stage has no replica") {
  // 16 nodes, each one replica of one of 4 stages (replica n: stage n % 4, 4 replicas per stage). Re-routed,
  // the job runs at 0.8 with one node down and 0.6 with more: each failure costs about its 12 h repair x
  // 0.2 = 2.4 h of degraded time (a little more where two repairs overlap: about 0.32 failures a day, so
  // an overlap in 0.32 x 12 / 24 = 16% of them, at 0.6 instead of 0.8), plus its pauses; the replicas
  // hold the state, so nothing is rolled back or restarted.
  Job job(20.0);
  job.spec.recovery = dtsim::config::Recovery::reroute;
  job.spec.repair_hours = 12.0;
  job.spec.reconfigure_s = 120.0;
  job.in.replicas_hold_state = true;
  job.in.stages = 4;
  job.in.replicas = 16;
  for (std::int32_t n = 0; n < 16; ++n) job.in.node_replicas[static_cast<std::size_t>(n)] = {n};
  std::vector<std::int64_t> asked;
  job.in.reroute_pace = [&asked](const std::vector<std::int64_t>& down) {
    asked.push_back(static_cast<std::int64_t>(down.size()));
    return down.size() == 1 ? 0.8 : 0.6;
  };
  const auto g = job.run();
  CHECK(g.lost_work_s == 0.0);
  CHECK(g.restart_total_s == 0.0);
  CHECK(g.spare_wait_s == 0.0);
  const double per_failure = g.degraded_s / g.failures.mean;
  CHECK(per_failure > 2.4 * 3600.0 * 0.95);
  CHECK(per_failure < 2.4 * 3600.0 * 1.25);
  CHECK(g.reconfigure_total_s / g.failures.mean == doctest::Approx(240.0).epsilon(0.1));  // out and back
  CHECK(std::find(asked.begin(), asked.end(), 1) != asked.end());
  CHECK(parts(g) == doctest::Approx(g.wall_s.mean).epsilon(1e-9));
  // One replica per stage (16 stages): a node down leaves its stage without one; the job waits for the
  // repair (12 h) and restarts from the last checkpoint (600 + 30 s).
  job.in.stages = 16;
  const auto alone = job.run();
  CHECK(alone.spare_wait_s / alone.failures.mean == doctest::Approx(12.0 * 3600.0).epsilon(0.05));
  CHECK(alone.restart_total_s / alone.failures.mean == doctest::Approx(630.0).epsilon(0.05));
  CHECK(alone.degraded_s == 0.0);
}

TEST_CASE("goodput: a slowdown costs its hours x (1 - pace) and stops nothing") {
  // Only slowdowns: 20 per 1000 node-days x 16 nodes = 0.32 a day (lambda = 0.01333 per hour), each
  // d = 6 h at pace 0.5: 6 h x 0.5 = 3 h of degraded time each, less the part an earlier slowdown
  // already covers (the slowest sets the pace; expected fraction lambda d / 2 = 4%) and the checkpoint
  // stalls inside it (60 s of every 3,660): 10,800 x 0.96 x 0.9836 = 10,198 s. Nothing is lost or
  // restarted.
  Job job(20.0);
  job.spec.categories[0].effect = dtsim::config::FailureEffect::slow;
  job.spec.categories[0].compute = 0.5;
  job.spec.categories[0].hours = 6.0;
  job.in.category_pace = {0.5};
  const auto g = job.run();
  CHECK(g.lost_work_s == 0.0);
  CHECK(g.restart_total_s == 0.0);
  CHECK(g.mtbf_s == 0.0);
  CHECK(g.degraded_s / g.failures.mean == doctest::Approx(10198.0).epsilon(0.02));
  CHECK(parts(g) == doctest::Approx(g.wall_s.mean).epsilon(1e-9));
}

TEST_CASE("goodput: the optimal interval is Daly's, in whole iterations, a rate the job cannot outrun") {
  Job job(160.0);
  job.spec.checkpoint.interval_s.reset();
  job.in.iteration_s = 7.0;
  const auto g = job.run();
  CHECK(g.interval_optimal);
  const double daly = dtsim::models::daly_optimal_interval_s(60.0, g.mtbf_s);
  CHECK(g.interval_s == doctest::Approx(std::ceil(daly / 7.0) * 7.0));
  // A failure a minute with a 20-minute restart never gets anywhere.
  Job hopeless(1000.0 * 1440.0 / 16.0);  // 1,440 per day over 16 nodes
  hopeless.spec.restart_s = 1200.0;
  hopeless.spec.runs = 1;
  const auto h = hopeless.run();
  CHECK_FALSE(h.reason.empty());
}

TEST_CASE("scenario: failures from a preset give goodput in the result, the text and the JSON") {
  const nlohmann::json doc = {
      {"schema_version", 1},
      {"name", "failures"},
      {"model", {{"preset", "gpt-1.3b"}}},
      {"cluster", {{"node", "dgx-a100"}, {"nodes", 2}}},
      {"parallelism", {{"data", 16}}},
      {"training", {{"global_batch_size", 16}}},
      {"failures",
       {{"preset", "meta-rsc1-a100-2024"},
        {"categories", {{{"name", "software"}, {"per", "job"}, {"failures_per_1000_days", 100.0}}}},
        {"restart_s", 300},
        {"checkpoint", {{"write_gbytes_per_s", 10}}},
        {"train_steps", 100000}}}};
  const auto s = dtsim::config::load_scenario_text(doc.dump(), "test", dtsim::config::default_data_paths());
  REQUIRE(s.failures);
  // The preset's category, then the scenario's; the read bandwidth defaults to the write's.
  REQUIRE(s.failures->categories.size() == 2);
  CHECK(s.failures->categories[0].failures_per_1000_days == 6.5);
  CHECK(s.failures->categories[1].per == FailureUnit::job);
  CHECK(s.failures->checkpoint.read_gbytes_per_s == 10.0);
  const auto r = dtsim::results::evaluate(s, {});
  REQUIRE(r.goodput);
  // 2 nodes x 6.5 + 100 per 1000 days = 0.113 per day.
  CHECK(r.goodput->failures_per_day == doctest::Approx(0.113));
  CHECK(r.goodput->failure_free_s == doctest::Approx(100000 * r.iteration_time_s));
  // The state: parameters x (2 + 12) bytes under bf16 with Adam.
  CHECK(r.goodput->checkpoint.state_bytes ==
        doctest::Approx(dtsim::models::total_parameters(s.model) * 14.0));
  std::ostringstream text;
  dtsim::reports::write_result(text, r, dtsim::reports::Format::text);
  CHECK(text.str().find("goodput") != std::string::npos);
  std::ostringstream json;
  dtsim::reports::write_result(json, r, dtsim::reports::Format::json);
  const auto j = nlohmann::json::parse(json.str());
  CHECK(j["goodput"]["goodput"]["p50"].get<double>() > 0.9);
  CHECK(j["scenario"]["failures"]["categories"].size() == 2);
  // A peer-memory checkpoint: the node's GPUs' weights and optimizer states over its NICs at the
  // fabric's efficiency; two nodes' states must fit in a node's host memory.
  FailureSpec peer = *s.failures;
  peer.checkpoint.target = dtsim::config::CheckpointTarget::peer_memory;
  const auto in_memory = dtsim::results::goodput_of(r, peer, 86400.0);
  const double node_bytes = (r.memory.weights_bytes + r.memory.optimizer_bytes) * 8.0;
  CHECK(in_memory.checkpoint.write_s ==
        doctest::Approx(node_bytes / (s.cluster.network.nic_gbps * s.cluster.network.nics_per_node / 8.0 *
                                      s.fabric.efficiency * 1e9)));
  auto small_host = r;
  small_host.scenario.node.host_memory_bytes = node_bytes;
  CHECK(dtsim::results::goodput_of(small_host, peer, 86400.0).reason.find("host memory") != std::string::npos);
  // compare shows the days with failures and the goodput only where a scenario states failures.
  auto plain = s;
  plain.failures.reset();
  std::ostringstream with, without;
  dtsim::reports::write_compare_text(with, {r, dtsim::results::evaluate(plain, {})});
  dtsim::reports::write_compare_text(without, {dtsim::results::evaluate(plain, {})});
  CHECK(with.str().find("goodput (p50)") != std::string::npos);
  CHECK(without.str().find("goodput") == std::string::npos);
}

TEST_CASE("scenario: a slowdown's pace is the engine's iteration over the iteration with slowed GPUs") {
  const nlohmann::json doc = {
      {"schema_version", 1},
      {"name", "slow"},
      {"model", {{"preset", "gpt-1.3b"}}},
      {"cluster", {{"node", "dgx-a100"}, {"nodes", 2}}},
      {"parallelism", {{"data", 16}}},
      {"training", {{"global_batch_size", 64}}},
      {"failures",
       {{"categories",
         {{{"name", "throttled"}, {"per", "gpu"}, {"failures_per_1000_days", 50.0}, {"effect", "slow"},
           {"compute", 0.5}, {"hours", 12}}}},
        {"restart_s", 300},
        {"checkpoint", {{"write_gbytes_per_s", 10}}},
        {"runs", 50},
        {"train_days", 5}}}};
  const auto s = dtsim::config::load_scenario_text(doc.dump(), "test", dtsim::config::default_data_paths());
  const auto r = dtsim::results::evaluate(s, {});
  REQUIRE(r.goodput);
  // A GPU at half speed: compute takes twice as long, communication and launches do not, so the job
  // runs at more than half pace and less than full. 16 GPUs x 50 / 1000 = 0.8 slowdowns a day, 12 h
  // each: degraded time = slowdowns x 12 h x (1 - pace) when they do not overlap (they do, a little).
  auto slowed = s;
  slowed.failures.reset();
  for (auto& peak : slowed.gpu.peak_tflops) {
    if (peak) *peak *= 0.5;
  }
  slowed.gpu.hbm_bandwidth_gbytes_per_s *= 0.5;
  const double pace = r.iteration_time_s / dtsim::results::evaluate(slowed, {}).iteration_time_s;
  CHECK(pace > 0.5);
  CHECK(pace < 0.6);
  const double per_slowdown = r.goodput->degraded_s / r.goodput->failures.mean;
  CHECK(per_slowdown <= 12.0 * 3600.0 * (1.0 - pace) * 1.001);
  CHECK(per_slowdown >= 0.7 * 12.0 * 3600.0 * (1.0 - pace));
  CHECK(r.goodput->lost_work_s == 0.0);
}
