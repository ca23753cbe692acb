// Data-parallel training of layer-table workloads: the event-driven worker/server simulation
// (parallel/lower_data_parallel on the engine, results/data_parallel_run), the convergence model (models/convergence) and the layer tables. Expected
// values are derived in the comments from the model's equations.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "config/layer_table_loader.hpp"
#include "config/scenario_loader.hpp"
#include "engine_fixture.hpp"
#include "input_error_of.hpp"
#include "models/convergence/convergence.hpp"
#include "models/layer_table/layer_ops.hpp"
#include "network/flow_cache.hpp"
#include "parallel/data_parallel_job.hpp"
#include "reports/reports.hpp"
#include "results/data_parallel_run.hpp"
#include "results/evaluate.hpp"
#include "sample_moments.hpp"

namespace {

using dtsim::parallel::DataParallelJob;
constexpr dtsim::core::TimeNs kMs = 1'000'000;

// The job's tasks all have fixed durations: the engine's models cost none of them.
dtsim::results::DpTrainingResult simulate(const DataParallelJob& s) {
  const dtsim::testing::engine_fixture::Models models;
  return dtsim::results::simulate_data_parallel(s, models.compute, models.network);
}

// Two workers, one per node, one dedicated server on node 2; 1e9 B/s NICs, no latency.
DataParallelJob ps_setup() {
  DataParallelJob s;
  s.workers = 2;
  s.gpus_per_node = 1;
  s.forward_ns = 4 * kMs;
  s.backward_ns = 6 * kMs;
  s.push_bytes = {1e6};  // 1 ms through a NIC
  s.pull_bytes = {1e6};
  s.server_node = {2};
  s.nic_bytes_per_s = 1e9;
  s.intra_bytes_per_s = 1e10;
  s.apply_bytes_per_s = 1e9;  // 1 ms per gradient
  s.steps = 4;
  return s;
}

}  // namespace

TEST_CASE("convergence: S = S_min (1 + B_noise / B) times 1 + kappa s") {
  dtsim::config::ConvergencePreset p{1000.0, 100.0, "t", "s"};
  // B = B_noise: twice S_min.
  CHECK(dtsim::models::steps_to_target(p, 1000.0) == doctest::Approx(200.0));
  // B = B_noise / 4: 5 S_min (McCandlish worked number).
  CHECK(dtsim::models::steps_to_target(p, 250.0) == doctest::Approx(500.0));
  dtsim::models::ConvergenceInput in{p, 1000.0, 5.0, 0.1, 10.0};
  const auto e = dtsim::models::estimate_convergence(in);
  // g(5) = 1 + 0.1 * 5 = 1.5; 200 * 1.5 = 300 updates; at 10 updates/s 30 s; 300 * 1000 samples.
  CHECK(e.staleness_factor == doctest::Approx(1.5));
  CHECK(e.updates_to_target == doctest::Approx(300.0));
  CHECK(e.time_to_target_s == doctest::Approx(30.0));
  CHECK(e.samples_to_target == doctest::Approx(300000.0));
}

TEST_CASE("dp training: synchronous all-reduce steps are compute + all-reduce + optimizer") {
  DataParallelJob s;
  s.workers = 2;
  s.gpus_per_node = 1;
  s.forward_ns = 1 * kMs;
  s.backward_ns = 2 * kMs;
  s.optimizer_ns = kMs / 10;
  s.bucket_ready_fraction = {1.0};
  s.bucket_allreduce_ns = {kMs / 2};
  s.steps = 5;
  const auto r = simulate(s);
  // A step: 3 ms compute, the bucket is ready at its end, 0.5 ms all-reduce, 0.1 ms optimizer = 3.6 ms;
  // 5 steps = 18 ms. Two workers complete one step each per 3.6 ms: 2 / 3.6 ms = 555.6 steps/s.
  CHECK(r.makespan == 18 * kMs);
  CHECK(r.worker_steps_per_s == doctest::Approx(2.0 / 3.6e-3));
  // Compute per worker 5 x 3.1 ms (the optimizer runs on the GPU); wait 5 x 0.5 ms.
  CHECK(r.workers[0].compute_s == doctest::Approx(5 * 3.1e-3));
  CHECK(r.workers[0].wait_s == doctest::Approx(5 * 0.5e-3));
}

TEST_CASE("dp training: synchronous parameter server serializes the server's NIC and CPU") {
  const auto r = simulate(ps_setup());
  // Step 1: compute ends at 10 ms; pushes share the server's ingress: w0 [10, 11], w1 [11, 12]; the
  // server folds each in 1 ms (11-12, 12-13), then updates (13-14); pulls share its egress: w0 [14, 15],
  // w1 [15, 16]. Each later step repeats 15 ms after the last (w0 restarts at 15, pushes at 25, ...):
  // the last worker finishes step 4 at 16 + 3 x 15 = 61 ms.
  CHECK(r.makespan == 61 * kMs);
  CHECK(r.applied() == 8);  // 2 workers x 4 steps x 1 server
  CHECK(r.max_staleness() == 0);
}

TEST_CASE("dp training: async staleness grows with a straggler - a bound caps it") {
  DataParallelJob s = ps_setup();
  s.steps = 12;
  s.stragglers = 1;  // the last worker
  s.straggler_slowdown = 4.0;
  s.sync = dtsim::config::SyncMode::async;
  const auto async = simulate(s);
  s.sync = dtsim::config::SyncMode::bounded;
  s.staleness_bound = 1;
  const auto bounded = simulate(s);
  // The straggler's step takes ~4x longer: the fast worker applies ~3-4 updates in between (async).
  CHECK(async.max_staleness() >= 3);
  // With bound 1 the fast worker may be at most 1 step ahead of the straggler, so at most 2 of its
  // updates land between the straggler's read and its application.
  CHECK(bounded.max_staleness() <= 2);
  // Waiting on the bound costs the fast worker throughput.
  CHECK(bounded.worker_steps_per_s < async.worker_steps_per_s);
}

TEST_CASE("dp training: compute factors are seeded, deterministic, mean 1 (lognormal)") {
  DataParallelJob s;
  s.workers = 100;
  s.variability = dtsim::config::Variability::lognormal;
  s.variability_cv = 0.2;
  s.seed = 42;
  const auto m = dtsim::testing::sample_moments(
      20000, [&](int i) { return dtsim::parallel::compute_factor(s, i % 100, i / 100); });
  // E[exp(mu + sigma Z)] = 1 with sigma^2 = ln(1 + cv^2), mu = -sigma^2/2; sampling error ~0.2/sqrt(n).
  CHECK(m.mean == doctest::Approx(1.0).epsilon(0.01));
  CHECK(m.cv == doctest::Approx(0.2).epsilon(0.05));
  CHECK(dtsim::parallel::compute_factor(s, 7, 3) == dtsim::parallel::compute_factor(s, 7, 3));
  s.stragglers = 1;
  s.straggler_slowdown = 2.0;
  s.variability = dtsim::config::Variability::none;
  CHECK(dtsim::parallel::compute_factor(s, 99, 0) == 2.0);
  CHECK(dtsim::parallel::compute_factor(s, 98, 0) == 1.0);
}

TEST_CASE("layer tables: parameters and FLOPs of the published architectures") {
  const std::string folder = std::string(DTSIM_SOURCE_DIR) + "/models/layer_table/tables";
  const auto r50 = dtsim::config::load_layer_table(folder, "resnet-50", {"test", "/model"});
  // He et al. 2016: ResNet-50 has 25.6 M parameters and 3.8-4.1 G multiply-adds (x2 FLOPs).
  CHECK(r50.params() == doctest::Approx(25.56e6).epsilon(0.005));
  CHECK(r50.forward_flops() == doctest::Approx(8.19e9).epsilon(0.01));
  const auto vgg = dtsim::config::load_layer_table(folder, "vgg-16", {"test", "/model"});
  // Simonyan and Zisserman 2015 Table 2: VGG-16 (D) has 138 M parameters.
  CHECK(vgg.params() == doctest::Approx(138.36e6).epsilon(0.005));
  const auto bert = dtsim::config::load_layer_table(folder, "bert-base", {"test", "/model"});
  // The sparse word embedding sends only the looked-up rows: a batch of 2 sequences of 128 tokens
  // touches 256 rows of 768 values (fp32) plus an 8-byte index each.
  const auto vars = dtsim::models::variables(bert, 2, dtsim::config::Precision::fp32);
  REQUIRE(vars.front().sparse);
  CHECK(vars.front().step_bytes == doctest::Approx(256.0 * (768 * 4 + 8)));
  CHECK(vars.front().dense_bytes == doctest::Approx(30522.0 * 768 * 4));
}

TEST_CASE("layer tables: a residual addition reads both operands, writes the sum, then its epilogue") {
  const std::string folder = std::string(DTSIM_SOURCE_DIR) + "/models/layer_table/tables";
  const auto r50 = dtsim::config::load_layer_table(folder, "resnet-50", {"test", "/model"});
  // One addition per bottleneck block: 3 + 4 + 6 + 3 = 16.
  std::size_t adds = 0, first = 0;
  for (std::size_t i = 0; i < r50.layers.size(); ++i) {
    if (r50.layers[i].kind != dtsim::config::LayerKind::add) continue;
    if (adds++ == 0) first = i;
  }
  CHECK(adds == 16);
  REQUIRE(r50.layers[first].name == "conv2_1_add");
  // conv2_1's output: 256 channels x 56 x 56 fp32 = 3,211,264 bytes per image; batch 2 in fp32:
  //   forward  the sum: read 2 operands + write 1 = 3 x 2 x 3,211,264 = 19,267,584 bytes,
  //            then ReLU: 2 passes = 2 x 2 x 3,211,264 = 12,845,056 bytes;
  //   backward twice each.
  const auto ops = dtsim::models::layer_ops(r50, 2, dtsim::config::Precision::fp32);
  const auto& add = ops[first];
  REQUIRE(add.forward.size() == 2);
  REQUIRE(add.backward.size() == 2);
  CHECK(add.forward[0].bytes == doctest::Approx(19267584.0));
  CHECK(add.forward[1].bytes == doctest::Approx(12845056.0));
  CHECK(add.backward[0].bytes == doctest::Approx(2 * 19267584.0));
  CHECK(add.backward[1].bytes == doctest::Approx(2 * 12845056.0));
  CHECK(add.forward[0].flops == 0.0);  // memory-bound: costed by its bytes
}

TEST_CASE("layer tables: an addition without the bytes of its operands is bad input") {
  const auto dir = std::filesystem::temp_directory_path() / "dtsim_test_layer_table_add";
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir / "no-operands.json");
    out << R"({"schema_version": 1, "id": "no-operands", "name": "n", "source": "s", "sample": "image",
      "input_size": 8, "convergence": {"b_noise": 1, "s_min": 1, "target": "t", "source": "s"},
      "layers": [{"name": "sum", "kind": "add", "forward_flops": 64, "tensors": [], "activation_bytes": 256,
                  "epilogue": "relu"}]})";
  }
  const auto e = dtsim::testing::input_error_of([&] {
    dtsim::config::load_layer_table(dir.string(), "no-operands", {"test", "/model"});
  });
  CHECK(std::string(e.what()).find("/layers/0/input_bytes") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("dp training: the all-reduce buckets are costed on the scenario's network level") {
  // BERT-large, 64 V100, all-reduce: at the flow level each distinct bucket all-reduce is simulated
  // (the shared cache counts them); at the analytic level none is. On this non-blocking fabric the two
  // levels agree on the ring's time within 1% (docs/networks.md "Network fidelity levels").
  auto scenario = dtsim::config::load_scenario(
      std::string(DTSIM_SOURCE_DIR) + "/scenarios/ps-vs-allreduce/bert-large-64gpu-allreduce.json",
      dtsim::config::default_data_paths());
  dtsim::network::FlowCache analytic_cache;
  scenario.simulation.network = dtsim::config::NetworkFidelity::analytic;
  const auto analytic = dtsim::results::evaluate(scenario, {.flow_cache = &analytic_cache});
  dtsim::network::FlowCache flow_cache;
  scenario.simulation.network = dtsim::config::NetworkFidelity::flow;
  const auto flow = dtsim::results::evaluate(scenario, {.flow_cache = &flow_cache});
  REQUIRE(flow.data_parallel.has_value());
  MESSAGE("analytic " << analytic.iteration_time_s << " s, flow " << flow.iteration_time_s << " s, "
                      << flow_cache.simulations() << " collectives simulated on the flow level");
  CHECK(analytic_cache.simulations() == 0);
  CHECK(flow_cache.simulations() >= 1);
  CHECK(flow.iteration_time_s == doctest::Approx(analytic.iteration_time_s).epsilon(0.01));
}

TEST_CASE("dp training: a shipped scenario runs and reports the data-parallel and convergence blocks") {
  const auto paths = dtsim::config::default_data_paths();
  const auto scenario = dtsim::config::load_scenario(
      std::string(DTSIM_SOURCE_DIR) + "/scenarios/ps-vs-allreduce/resnet50-64gpu-ps-async.json", paths);
  const auto a = dtsim::results::evaluate(scenario, {});
  const auto b = dtsim::results::evaluate(scenario, {});
  REQUIRE(a.data_parallel.has_value());
  REQUIRE(a.convergence.has_value());
  CHECK(a.data_parallel->workers == 64);
  CHECK(a.data_parallel->staleness.mean > 0.0);
  // Async: one update is one worker's batch; time = updates / worker steps per second.
  CHECK(a.convergence->update_batch == 64.0);
  CHECK(a.convergence->time_to_target_s ==
        doctest::Approx(a.convergence->updates_to_target / a.data_parallel->worker_steps_per_s));
  CHECK(a.throughput.samples_per_s == b.throughput.samples_per_s);  // deterministic
}

namespace {

// VGG-16 on 4 machines of 4 P100 with 4 parameter servers, placing variables as `placement` says.
dtsim::results::Result vgg_on_servers(const std::string& placement) {
  const std::string text = R"({"schema_version": 1, "name": "vgg-ps",
    "model": {"layer_table": "vgg-16"}, "cluster": {"node": "horovod-p100x4", "nodes": 4},
    "training": {"global_batch_size": 1024, "precision": "fp32", "architecture": "parameter_server",
                 "parameter_server": {"servers": 4, "variable_placement": ")" +
                           placement + R"("}, "simulated_steps": 3}})";
  const auto scenario =
      dtsim::config::load_scenario_text(text, "vgg-ps", dtsim::config::default_data_paths());
  return dtsim::results::evaluate(scenario, {});
}

}  // namespace

TEST_CASE("dp training: a job whose task graph is too large is infeasible, found first") {
  // 16 workers x 2^40 dedicated servers: refused before any per-server table is allocated. Per step
  // about 16 x 6 + 16 x (2 + 12 x 2^40) + 2^40 + 1 = 2.122e14 tasks (lower_data_parallel.hpp); 20
  // steps: 4.24e15.
  const std::string text = R"({"schema_version": 1, "name": "vgg-ps",
    "model": {"layer_table": "vgg-16"}, "cluster": {"node": "horovod-p100x4", "nodes": 4},
    "training": {"global_batch_size": 1024, "precision": "fp32", "architecture": "parameter_server",
                 "parameter_server": {"servers": 1099511627776, "placement": "dedicated"}}})";
  const auto r = dtsim::results::evaluate(
      dtsim::config::load_scenario_text(text, "vgg-ps", dtsim::config::default_data_paths()), {});
  CHECK(r.status == dtsim::results::Status::infeasible);
  CHECK(r.reason ==
        "too large to simulate: 16 workers, 1099511627776 servers and 0 all-reduce buckets over 20 steps take "
        "about 4.24e+15 tasks, more than dtsim's limit of 200000000; use fewer training.simulated_steps, "
        "workers or servers");
}

TEST_CASE("dp training: what depends on the cluster's size is an infeasible plan, not bad input") {
  // ResNet-50 on 2 DGX-1 (16 V100): a sweep over the nodes meets batches that do not divide, more
  // colocated servers than nodes and more stragglers than workers; each point is a result with its reason.
  const auto reason_of = [](const std::string& training) {
    const std::string text = R"({"schema_version": 1, "name": "resnet",
      "model": {"layer_table": "resnet-50"}, "cluster": {"node": "dgx-1-v100", "nodes": 2},
      "training": )" + training +
                             "}";
    const auto r = dtsim::results::evaluate(
        dtsim::config::load_scenario_text(text, "resnet", dtsim::config::default_data_paths()), {});
    CHECK(r.status == dtsim::results::Status::infeasible);
    return r.reason;
  };
  CHECK(reason_of(R"({"global_batch_size": 1000, "precision": "fp16"})") ==
        "global batch 1000 is not divisible by the 16 GPUs (one data-parallel worker per GPU)");
  CHECK(reason_of(R"({"global_batch_size": 1024, "precision": "fp16", "architecture": "parameter_server",
                      "parameter_server": {"servers": 3}})") ==
        "3 colocated parameter servers on 2 nodes (one per node at most)");
  CHECK(reason_of(R"({"global_batch_size": 1024, "precision": "fp16",
                      "stragglers": {"count": 17, "slowdown": 2}})") == "17 stragglers among 16 workers");
}

TEST_CASE("dp training: parameter servers shard by variable, round-robin in table order") {
  const auto r = vgg_on_servers("round_robin");
  REQUIRE(r.data_parallel.has_value());
  const auto& bytes = r.data_parallel->server_bytes;
  REQUIRE(bytes.size() == 4);
  // 13 convolutions x (weights, bias) = tensors 0..25; fc6's 25088 x 4096 weights are tensor 26 and
  // land on server 26 mod 4 = 2 with fc8's weights (tensor 30): (102,760,448 + 4,096,000) x 4 bytes.
  CHECK(bytes[2] >= (102760448.0 + 4096000.0) * 4);
  // That is (102.76 + 4.10) / 138.36 = 77% of the model on one of four servers.
  CHECK(bytes[2] > 0.77 * (bytes[0] + bytes[1] + bytes[2] + bytes[3]));
  // Every worker pushes all 138.36 M fp32 gradients per step.
  CHECK(r.data_parallel->push_bytes_per_worker_step == doctest::Approx(138.36e6 * 4).epsilon(0.001));
}

TEST_CASE("dp training: greedy_by_size puts each variable on the server holding the fewest bytes") {
  const auto r = vgg_on_servers("greedy_by_size");
  REQUIRE(r.data_parallel.has_value());
  const auto& bytes = r.data_parallel->server_bytes;
  REQUIRE(bytes.size() == 4);
  // fc6's weights (102,760,448 fp32 values) go to the least loaded server after the 13 convolutions
  // (14,714,688 values in all), which holds at most their average share; every later variable
  // (fc6 bias, fc7, fc8) finds a server with fewer bytes than that one, so the hot server holds fc6
  // and at most a quarter of the convolutions. Round-robin put fc8 there too (16.4 MB > 14.7 MB).
  const double fc6 = 102760448.0 * 4;
  const auto hot = static_cast<std::size_t>(std::max_element(bytes.begin(), bytes.end()) - bytes.begin());
  CHECK(bytes[hot] >= fc6);
  CHECK(bytes[hot] - fc6 <= 14714688.0 * 4 / 4);
  double total = 0.0;
  for (const double b : bytes) total += b;
  CHECK(total == doctest::Approx(138357544.0 * 4));
}

TEST_CASE(
    "dp training: hybrid puts only the sparse embedding on the servers; the JSON result has both blocks") {
  const std::string text = R"({"schema_version": 1, "name": "bert-hybrid",
    "model": {"layer_table": "bert-base"}, "cluster": {"node": "dgx-1-v100", "nodes": 2},
    "training": {"global_batch_size": 64, "precision": "fp16", "architecture": "hybrid",
                 "parameter_server": {"servers": 2}, "simulated_steps": 3}})";
  const auto scenario =
      dtsim::config::load_scenario_text(text, "bert-hybrid", dtsim::config::default_data_paths());
  const auto r = dtsim::results::evaluate(scenario, {});
  REQUIRE(r.data_parallel.has_value());
  // 4 sequences per worker x 128 tokens = 512 rows of 768 fp16 values plus an 8-byte index each.
  CHECK(r.data_parallel->push_bytes_per_worker_step == doctest::Approx(512.0 * (768 * 2 + 8)));
  // The word embedding (30522 x 768) sits on server 0; the rest (109.48 M - 23.44 M parameters) is
  // all-reduced in fp16.
  CHECK(r.data_parallel->server_bytes[0] == doctest::Approx(30522.0 * 768 * 2));
  CHECK(r.data_parallel->allreduce_bytes_per_step ==
        doctest::Approx((109.48e6 - 30522.0 * 768) * 2).epsilon(0.001));
  // Sequences: tokens/s = samples/s x 128.
  CHECK(r.throughput.tokens_per_s == doctest::Approx(r.throughput.samples_per_s * 128));
  const auto j = dtsim::reports::result_json(r);
  CHECK(j.contains("data_parallel"));
  CHECK(j["convergence"]["update_batch"] == 64.0);
  CHECK(j["scenario"]["training"]["architecture"] == "hybrid");
}

TEST_CASE("dp training: with local aggregation a node's workers push and pull once") {
  DataParallelJob s = ps_setup();
  s.gpus_per_node = 2;  // both workers on node 0
  s.server_node = {1};
  s.client_size = 2;
  s.local_reduce_ns = kMs;
  s.local_broadcast_ns = kMs;
  const auto r = simulate(s);
  // Compute ends at 10 ms; reduce in the node 10-11; one push 11-12; fold 12-13 and, the only client
  // being in, update 13-14; one pull 14-15; broadcast 15-16. Four steps of 16 ms: 64 ms, and one
  // applied gradient per step.
  CHECK(r.makespan == 64 * kMs);
  CHECK(r.applied() == 4);
}

TEST_CASE("dp training: a transfer is one flow, capped by the fabric's per-flow rate") {
  DataParallelJob s = ps_setup();
  s.workers = 1;
  s.push_bytes = {1e6};
  s.pull_bytes = {1e6};
  s.server_node = {1};
  s.per_flow_bytes_per_s = 0.5e9;  // 2 ms per 1e6-byte transfer instead of the NIC's 1 ms
  const auto r = simulate(s);
  // Per step: compute 10, push 2, fold 1 + update 1, pull 2 = 16 ms; four steps 64 ms.
  CHECK(r.makespan == 64 * kMs);
}

TEST_CASE("dp training: the parameter-server transport passes a server's transfers through one FIFO") {
  DataParallelJob s = ps_setup();
  s.server_transport_bytes_per_s = 0.5e9;  // 2 ms per 1e6-byte transfer in the server process
  const auto r = simulate(s);
  // Step 1: compute ends at 10 ms. Pushes: the NICs take 1 ms each (w0 [10, 11], w1 [11, 12] at the
  // server's ingress) but the server process moves w0 [10, 12], then w1 [12, 14]; folds 12-13 and
  // 14-15, update 15-16. Pulls: the process again, w0 [16, 18], w1 [18, 20].
  // Step 2: w0 computes 18-28 and w1 20-30; pushes through the process w0 [28, 30], w1 [30, 32]; folds
  // 30-31, 32-33, update 33-34; pulls w0 [34, 36], w1 [36, 38]. Every later step repeats 18 ms later:
  // the last worker finishes step 4 at 38 + 2 x 18 = 74 ms (61 ms with the NICs alone).
  CHECK(r.makespan == 74 * kMs);
}

TEST_CASE("dp training: the transport's channel cap holds inside a node too") {
  DataParallelJob s = ps_setup();
  s.workers = 1;
  s.server_node = {0};            // colocated: 1e6 bytes take 0.1 ms at the intra-node rate
  s.channel_bytes_per_s = 0.5e9;  // but 2 ms through the transport's channel
  const auto r = simulate(s);
  // Per step: compute 10, push 2, fold 1 + update 1, pull 2 = 16 ms; four steps 64 ms.
  CHECK(r.makespan == 64 * kMs);
}

TEST_CASE("dp training: a large message costs its receiver time quadratic in its size") {
  DataParallelJob s = ps_setup();
  s.workers = 1;
  s.server_node = {1};
  s.receive_s_per_square_byte = 3e-15;  // one message of 1e6 bytes: 3e-15 x 1e12 = 3 ms to receive
  s.square_bytes = {1e12};
  const auto r = simulate(s);
  // Per step: compute 10; push through the NIC 1 ms but received by the server process in 3 ms
  // (arrives at 13); fold 1 + update 1; pull through the NIC 1 ms, received by the client in 3 ms:
  // 10 + 3 + 2 + 3 = 18 ms; four steps 72 ms (56 ms without the large-message time).
  CHECK(r.makespan == 72 * kMs);
}

TEST_CASE("dp training: a scenario selects the parameter-server transport profile") {
  const std::string text = R"({"schema_version": 1, "name": "r50-grpc",
    "model": {"layer_table": "resnet-50"}, "cluster": {"node": "horovod-p100x4", "nodes": 2},
    "training": {"global_batch_size": 512, "precision": "fp32", "architecture": "parameter_server",
                 "parameter_server": {"servers": 2, "transport": "TRANSPORT"}, "simulated_steps": 3}})";
  const auto paths = dtsim::config::default_data_paths();
  const auto run = [&](const std::string& transport) {
    std::string t = text;
    t.replace(t.find("TRANSPORT"), 9, transport);
    const auto scenario = dtsim::config::load_scenario_text(t, "r50-" + transport, paths);
    CHECK(scenario.data_parallel.parameter_server.transport.id == transport);
    return dtsim::results::evaluate(scenario, {}).throughput.samples_per_s;
  };
  const double native = run("native");
  const double grpc = run("grpc");
  // The gRPC profile caps each server process below its NIC, so the same plan runs slower.
  CHECK(grpc < native);
}

TEST_CASE("dp training: a layer-table run has a trace of its workers, ports and servers") {
  // The synchronous PS job of ps_setup() (2 workers on nodes 0 and 1, a server on node 2), traced:
  // ranks are the 2 workers, the 3 nodes' ports, the server, the 2 clients' receiving processes and
  // the latencies (5 + 3 + ... named in lower_data_parallel.cpp). Step 1 as in "synchronous parameter
  // server serializes the server's NIC and CPU": w1's push enters the server's ingress at 11 ms, after
  // w0's [10, 11]; the update runs [13, 14].
  const dtsim::testing::engine_fixture::Models models;
  const auto r = dtsim::results::simulate_data_parallel(ps_setup(), models.compute, models.network, true);
  REQUIRE(r.trace.has_value());
  const auto& t = *r.trace;
  REQUIRE(t.rank_names.size() == 2 + 3 + 1 + 2 + 1);
  CHECK(t.rank_names[0] == "worker 0");
  CHECK(t.rank_names[4] == "node 2 NIC ports (egress, ingress)");
  CHECK(t.rank_names[5] == "server 0 (CPU, process)");
  const auto label = [&](const char* name) {
    return static_cast<std::uint32_t>(std::find(t.labels.begin(), t.labels.end(), name) - t.labels.begin());
  };
  std::vector<std::pair<dtsim::core::TimeNs, dtsim::core::TimeNs>> pushes_in, updates;
  for (const auto& span : t.spans) {
    if (span.label == label("push in") && span.start_ns < 20 * kMs) pushes_in.emplace_back(span.start_ns, span.end_ns);
    if (span.label == label("update") && span.start_ns < 20 * kMs) updates.emplace_back(span.start_ns, span.end_ns);
    CHECK(span.label != label("latency"));  // delays hold nothing: not in the trace
  }
  std::sort(pushes_in.begin(), pushes_in.end());
  REQUIRE(pushes_in.size() == 2);
  CHECK(pushes_in[0] == std::make_pair(10 * kMs, 11 * kMs));
  CHECK(pushes_in[1] == std::make_pair(11 * kMs, 12 * kMs));
  REQUIRE(updates.size() == 1);
  CHECK(updates[0] == std::make_pair(13 * kMs, 14 * kMs));
}

TEST_CASE("dp training: bounded staleness holds a worker until the slowest has done step c - bound - 1") {
  // Two workers without servers or all-reduce, 1 + 1 ms per step; the last is a 4x straggler (8 ms a
  // step: steps end at 8, 16, 24, 32). Bound 1: worker 0's step c waits for the straggler's step
  // c - 2. Worker 0: step 0 [0, 2], step 1 [2, 4], step 2 after the straggler's step 0 [8, 10],
  // step 3 after its step 1 [16, 18]. The window runs from the last first step (8) to the first
  // finish (18): worker 0's steps at 10 and 18 and the straggler's at 16, 3 steps in 10 ms.
  DataParallelJob s;
  s.workers = 2;
  s.forward_ns = kMs;
  s.backward_ns = kMs;
  s.stragglers = 1;
  s.straggler_slowdown = 4.0;
  s.sync = dtsim::config::SyncMode::bounded;
  s.staleness_bound = 1;
  s.steps = 4;
  const auto r = simulate(s);
  CHECK(r.makespan == 32 * kMs);
  CHECK(r.window_s == doctest::Approx(10e-3));
  CHECK(r.worker_steps_per_s == doctest::Approx(300.0));
  // Worker 0 computed 4 x 2 ms and finished at 18 ms: it waited 10 ms for the bound.
  CHECK(r.workers[0].compute_s == doctest::Approx(8e-3));
  CHECK(r.workers[0].wait_s == doctest::Approx(10e-3));
  CHECK(r.applied() == 0);
}
