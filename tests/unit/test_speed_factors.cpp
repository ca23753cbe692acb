// Stragglers and degraded links (config/speed_factors.hpp, cluster.speed_factors): a GPU's compute
// model in the engine (engine/simulate.hpp, "GPU speeds"), a node's NICs in its groups' layouts
// (parallel/group_layouts.hpp, nic_speed) and in the analytic cost (network/collective_cost.hpp), and
// what an every-rank simulation makes of them.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "config/speed_factors.hpp"
#include "core/random.hpp"
#include "engine_fixture.hpp"
#include "network/analytic_model.hpp"
#include "sample_moments.hpp"
#include "parallel/group_layouts.hpp"
#include "parallel/mesh.hpp"
#include "scenario_fixture.hpp"

using namespace dtsim::testing::engine_fixture;
using dtsim::config::SpeedFactor;

TEST_CASE("speed factors: a rank's factor is the product of the entries that name its GPU or its node") {
  // 2 nodes of 4: node 1 at 0.8, its GPU 2 (rank 6) at 0.5 besides: 0.4; node 0 untouched.
  const std::vector<SpeedFactor> factors{{1, std::nullopt, 0.8, 1.0}, {1, 2, 0.5, 1.0}, {0, std::nullopt, 1.0, 0.5}};
  const auto compute = dtsim::config::rank_compute_speeds(factors, 8, 4);
  REQUIRE(compute.size() == 8);
  for (int r = 0; r < 4; ++r) CHECK(compute[r] == 1.0);
  CHECK(compute[4] == doctest::Approx(0.8));
  CHECK(compute[6] == doctest::Approx(0.4));
  const auto nic = dtsim::config::node_nic_speeds(factors, 2);
  REQUIRE(nic.size() == 2);
  CHECK(nic[0] == 0.5);
  CHECK(nic[1] == 1.0);
  // Nothing different from 1: no vectors (the engine then costs every rank alike).
  CHECK(dtsim::config::rank_compute_speeds({{0, std::nullopt, 1.0, 0.5}}, 8, 4).empty());
  CHECK(dtsim::config::node_nic_speeds({{0, 1, 0.5, 1.0}}, 2).empty());
}

TEST_CASE("engine: a rank with a compute model at half speed takes twice as long, fused kernels included") {
  // Ranks 0 and 1 each run M (10 ns) then F (a fused op of kernels of 3 and 5 ns), then a gang G (4)
  // over both. Rank 1's model halves the speed (duration_scale 2): M 20, F 6 + 10 = 16, so rank 1's
  // compute ends at 36, rank 0's at 18; G waits for rank 1: [36, 40). Rank 0 idles 18 ns.
  Models m;
  const dtsim::compute::ComputeModel half{m.gpu, dtsim::config::Precision::bf16, 2.0};
  graph::TaskGraph g(2);
  std::vector<graph::StreamId> compute, tensor;
  for (graph::RankId r = 0; r < 2; ++r) {
    compute.push_back(g.add_stream(r, StreamKind::compute));
    tensor.push_back(g.add_stream(r, StreamKind::tensor_comm));
  }
  const auto m_op = g.add_op(memory(10));
  graph::FusedOp fused;
  fused.kernels = {std::get<graph::ComputeOp>(memory(3)), std::get<graph::ComputeOp>(memory(5))};
  const auto f_op = g.add_op(fused);
  std::vector<TaskId> f;
  for (graph::RankId r = 0; r < 2; ++r) {
    const TaskId a = add(g, compute[r], m_op, Category::forward, "M");
    f.push_back(add(g, compute[r], f_op, Category::forward, "F", {a}));
  }
  const TaskId gang =
      g.add_gang_task(graph::Task{g.add_op(comm(4)), 0, Category::tensor_comm, g.add_label("G"), -1}, tensor);
  for (const TaskId t : f) g.add_dependency(t, gang);
  g.finalize();
  g.validate();
  for (const double slowdown : {1.0, 1.5}) {
    CAPTURE(slowdown);
    engine::EngineOptions options{true, slowdown, 0.0};
    options.rank_compute = {&m.compute, &half};
    const auto r = engine::simulate(g, m.compute, m.network, options);
    CHECK(span_of(r, f[0]).end == 18);
    CHECK(span_of(r, f[1]).start == 20);
    CHECK(span_of(r, f[1]).end == 36);
    CHECK(span_of(r, gang).start == 36);
    CHECK(r.makespan == 40);
    CHECK(busy(r.ranks[1], Category::forward) == 36);
    CHECK(r.ranks[0].idle_ns == 18);
  }
}

TEST_CASE("group layouts: a group across nodes moves at its slowest node's NIC factor") {
  // 2 nodes of 8, data 16: rank 0's data group spans both nodes; node 1's NICs at 0.5 slow it.
  // Tensor 8 inside a node: no NICs, factor 1. Pipeline 2 of 8 x 1: the transfer 0 -> 8 crosses.
  dtsim::config::Scenario s = dtsim::testing::fixture_scenario();
  s.cluster.nodes = 2;
  s.parallelism.data = 16;
  const dtsim::parallel::Mesh dp = dtsim::parallel::Mesh::of(s);
  const dtsim::parallel::GroupLayouts layouts(dp, true, {.nic = {1.0, 0.5}});
  CHECK(layouts.group(0, dtsim::parallel::GroupKind::data).nic_speed == 0.5);
  s.parallelism.data = 1;
  s.parallelism.tensor = 8;
  s.parallelism.pipeline = 2;
  const dtsim::parallel::Mesh pp = dtsim::parallel::Mesh::of(s);
  const dtsim::parallel::GroupLayouts staged(pp, true, {.nic = {0.25, 1.0}});
  CHECK(staged.group(0, dtsim::parallel::GroupKind::tensor).nic_speed == 1.0);
  CHECK(staged.transfer(0, true).nic_speed == 0.25);
  CHECK(staged.transfer(8, false).nic_speed == 0.25);
}

TEST_CASE("a NIC factor divides the bandwidth term of a collective across nodes, not its latency") {
  // Fixture path: node NICs 100e9 B/s, inter step 5 us. Point-to-point, 8 senders per node: 12.5e9 B/s
  // each (test_network_analytic.cpp), 100 MB in 8 ms + 5 us; at 0.5: 16 ms + 5 us.
  graph::CommGroup pair{2, 2, 8};
  pair.nic_speed = 0.5;
  const graph::CommOp op{graph::CollectiveKind::send_recv, 100e6, pair};
  CHECK(dtsim::network::collective_time_s(op, dtsim::testing::fixture_path()) == doctest::Approx(16e-3 + 5e-6));
}

TEST_CASE("an NVLink factor divides the bandwidth term inside a node, not its latency") {
  // Fixture path: 200e9 B/s per GPU inside the node (test_network_analytic.cpp). A transfer inside a
  // node: intra latency + 100 MB / 200e9 B/s = 0.5 ms; with the node's NVLink at 0.5, 1 ms: 0.5 ms more.
  graph::CommGroup pair{2, 1, 4};
  const graph::CommOp full{graph::CollectiveKind::send_recv, 100e6, pair};
  pair.nvlink_speed = 0.5;
  const graph::CommOp half{graph::CollectiveKind::send_recv, 100e6, pair};
  const auto path = dtsim::testing::fixture_path();
  CHECK(dtsim::network::collective_time_s(half, path) - dtsim::network::collective_time_s(full, path) ==
        doctest::Approx(0.5e-3));
  // An all-reduce of 8 inside the node: every algorithm's bandwidth term doubles. Two sizes give the
  // slope (the latency cancels): 2 x the full-speed slope.
  const auto slope = [&](double nvlink) {
    graph::CommGroup eight{8, 1, 1};
    eight.nvlink_speed = nvlink;
    const graph::CommOp a{graph::CollectiveKind::all_reduce, 1e9, eight};
    const graph::CommOp b{graph::CollectiveKind::all_reduce, 2e9, eight};
    return dtsim::network::collective_time_s(b, path) - dtsim::network::collective_time_s(a, path);
  };
  CHECK(slope(0.5) == doctest::Approx(2 * slope(1.0)));
}

TEST_CASE("group layouts: a group carries its slowest node's NVLink factor") {
  // 2 nodes of 8, tensor 8 x data 2: the tensor group of rank 8 lies in node 1 (NVLink at 0.5), rank 0's
  // in node 0; each data group spans both nodes; a transfer inside node 1 carries its factor.
  dtsim::config::Scenario s = dtsim::testing::fixture_scenario();
  s.cluster.nodes = 2;
  s.parallelism.data = 2;
  s.parallelism.tensor = 8;
  const dtsim::parallel::Mesh mesh = dtsim::parallel::Mesh::of(s);
  const dtsim::parallel::GroupLayouts layouts(mesh, true, {.nvlink = {1.0, 0.5}});
  CHECK(layouts.group(0, dtsim::parallel::GroupKind::tensor).nvlink_speed == 1.0);
  CHECK(layouts.group(8, dtsim::parallel::GroupKind::tensor).nvlink_speed == 0.5);
  CHECK(layouts.group(0, dtsim::parallel::GroupKind::data).nvlink_speed == 0.5);
  CHECK(dtsim::config::node_nvlink_speeds({{1, std::nullopt, 1.0, 1.0, 0.0, 0.5}}, 2) ==
        std::vector<double>{1.0, 0.5});
  CHECK(dtsim::config::node_nvlink_speeds({{1, std::nullopt, 0.5, 1.0}}, 2).empty());
}

namespace {

// Llama 2 7B on 4 DGX H100 nodes, TP 2 x DP 16, every rank simulated, with `factors`.
nlohmann::json every_rank(const nlohmann::json& factors) {
  nlohmann::json s = {{"schema_version", 1},
                      {"name", "speed factors"},
                      {"model", {{"preset", "llama2-7b"}}},
                      {"cluster", {{"node", "dgx-h100"}, {"nodes", 4}}},
                      {"parallelism", {{"data", 16}, {"tensor", 2}, {"sequence_parallel", true}}},
                      {"training", {{"global_batch_size", 64}, {"micro_batch_size", 2}}},
                      {"simulation", {{"ranks", "all"}}}};
  if (!factors.is_null()) s["cluster"]["speed_factors"] = factors;
  return s;
}

}  // namespace

TEST_CASE("every rank: one GPU at half speed holds back its whole data-parallel job") {
  // Each rank computes C (forward + backward + optimizer, the same on every rank) per iteration; with one
  // GPU at 0.5 that GPU's kernels take twice as long, and every collective waits for it (its tensor
  // partner each layer, every rank at the gradient reduction). C includes the overlap slowdown's extra
  // time while communication runs beside compute, which does not double with the kernels (under 1% of C
  // here): the iteration takes at least 0.99 x 2C, and at most 2C plus the communication the even run
  // exposes plus what the straggler's gradients expose (the reduction cannot start before the
  // straggler's last layer: its last bucket is exposed, under 10% of C here).
  const auto base = dtsim::testing::evaluate_json(every_rank(nullptr));
  const auto slow = dtsim::testing::evaluate_json(every_rank({{{"node", 1}, {"gpu", 3}, {"compute", 0.5}}}));
  REQUIRE(base.status == dtsim::results::Status::ok);
  REQUIRE(slow.status == dtsim::results::Status::ok);
  const double c = base.breakdown.forward_s + base.breakdown.backward_s + base.breakdown.optimizer_s;
  MESSAGE("C = " << c << " s, even " << base.iteration_time_s << " s, one GPU at 0.5: " << slow.iteration_time_s
                 << " s");
  CHECK(slow.iteration_time_s >= 0.99 * 2 * c);
  CHECK(slow.iteration_time_s <= 2 * c + (base.iteration_time_s - c) + 0.1 * c);
  // Factors of 1 change nothing, to the byte.
  const auto same = dtsim::testing::evaluate_json(every_rank({{{"node", 2}, {"compute", 1.0}, {"nic", 1.0}}}));
  CHECK(same.iteration_time_s == base.iteration_time_s);
  // A node entry and a GPU entry multiply: node 1 at 0.8 with its GPU 3 at 0.625 is that GPU at 0.5.
  const auto both = dtsim::testing::evaluate_json(
      every_rank({{{"node", 1}, {"compute", 0.8}}, {{"node", 1}, {"gpu", 3}, {"compute", 0.625}}}));
  CHECK(both.iteration_time_s == doctest::Approx(slow.iteration_time_s).epsilon(1e-9));
}

TEST_CASE("every rank: a degraded NIC slows the collectives that cross its node, and those only") {
  // Node 2's NICs at 0.25: the data-parallel reduction of every group with a member there (all 16-wide
  // groups span the 4 nodes) moves at a quarter of its bandwidth. Its exposed part grows; compute does
  // not change.
  const auto base = dtsim::testing::evaluate_json(every_rank(nullptr));
  const auto nic = dtsim::testing::evaluate_json(every_rank({{{"node", 2}, {"nic", 0.25}}}));
  MESSAGE("exposed data-parallel communication: " << base.breakdown.exposed_data_comm_s << " s, with node 2's NICs "
                                                  << "at 0.25: " << nic.breakdown.exposed_data_comm_s << " s");
  CHECK(nic.breakdown.exposed_data_comm_s > base.breakdown.exposed_data_comm_s);
  CHECK(nic.iteration_time_s > base.iteration_time_s);
  CHECK(nic.breakdown.exposed_tensor_comm_s == doctest::Approx(base.breakdown.exposed_tensor_comm_s));
}

TEST_CASE("every rank: a degraded NVLink slows the collectives inside its node") {
  // Node 2's NVLink at 0.25: the tensor-parallel collectives of its pairs (inside the node) move at a
  // quarter of their bandwidth; their exposed part and the iteration grow; compute does not change.
  const auto base = dtsim::testing::evaluate_json(every_rank(nullptr));
  const auto slow = dtsim::testing::evaluate_json(every_rank({{{"node", 2}, {"nvlink", 0.25}}}));
  MESSAGE("exposed tensor-parallel communication: " << base.breakdown.exposed_tensor_comm_s << " s, with node 2's "
                                                    << "NVLink at 0.25: " << slow.breakdown.exposed_tensor_comm_s
                                                    << " s; iteration " << base.iteration_time_s << " -> "
                                                    << slow.iteration_time_s << " s");
  CHECK(slow.breakdown.exposed_tensor_comm_s > base.breakdown.exposed_tensor_comm_s);
  CHECK(slow.iteration_time_s > base.iteration_time_s);
  CHECK(slow.breakdown.forward_s == doctest::Approx(base.breakdown.forward_s).epsilon(0.02));
}

TEST_CASE("jitter: a draw per (entry, iteration), lognormal with mean 1 and the stated CV") {
  // jittered() divides the entry's compute factor by X = core::lognormal_factor(seed, entry, iteration,
  // cv) and clears the CV; an entry without jitter is left as it is.
  const std::vector<SpeedFactor> factors{{0, std::nullopt, 0.8, 1.0, 0.0}, {1, std::nullopt, 1.0, 1.0, 0.3}};
  const auto k3 = dtsim::config::jittered(factors, 7, 3);
  CHECK(k3[0].compute == 0.8);
  CHECK(k3[1].compute == 1.0 / dtsim::core::lognormal_factor(7, 1, 3, 0.3));
  CHECK(k3[1].jitter_cv == 0.0);
  CHECK(dtsim::config::jittered(factors, 7, 3)[1].compute == k3[1].compute);  // a pure function
  CHECK(dtsim::config::jittered(factors, 7, 4)[1].compute != k3[1].compute);
  CHECK(dtsim::config::has_jitter(factors));
  CHECK_FALSE(dtsim::config::has_jitter({factors[0]}));
  // Over 20,000 draws the sample mean is 1 and the sample CV 0.3, within a few standard errors
  // (standard error of the mean 0.3 / sqrt(20000) = 0.002).
  const auto m =
      dtsim::testing::sample_moments(20000, [](int i) { return dtsim::core::lognormal_factor(1, 0, i, 0.3); });
  CHECK(m.mean == doctest::Approx(1.0).epsilon(0.01));
  CHECK(m.cv == doctest::Approx(0.3).epsilon(0.05));
}

TEST_CASE("every rank: a jittery node lengthens the mean iteration, one sample is one speed factor") {
  // Node 1 at CV 0.2: in each sample its GPUs take X times as long. A faster draw (X < 1) cannot end the
  // iteration sooner (the other nodes' GPUs still take their time and every collective waits for the
  // slowest member), a slower one holds everyone back: each sample takes at least the even time, and
  // the mean more.
  const auto base = dtsim::testing::evaluate_json(every_rank(nullptr));
  nlohmann::json jittery = every_rank({{{"node", 1}, {"jitter_cv", 0.2}}});
  const auto jit = dtsim::testing::evaluate_json(jittery);
  REQUIRE(jit.jitter);
  CHECK(jit.jitter->iterations == 16);
  MESSAGE("even " << base.iteration_time_s << " s; node 1 at CV 0.2: mean " << jit.iteration_time_s << " s, p50 "
                  << jit.jitter->iteration_s.p50 << " s, p99 " << jit.jitter->iteration_s.p99 << " s");
  CHECK(jit.iteration_time_s == jit.jitter->iteration_s.mean);
  CHECK(jit.iteration_time_s > base.iteration_time_s);
  CHECK(jit.jitter->iteration_s.p50 >= 0.999 * base.iteration_time_s);
  CHECK(jit.breakdown.compute_s() + jit.breakdown.exposed_comm_s() + jit.breakdown.optimizer_s +
            jit.breakdown.pipeline_bubble_s + jit.breakdown.host_wait_s ==
        doctest::Approx(jit.iteration_time_s));
  // Same seed, same result; another seed, other draws.
  CHECK(dtsim::testing::evaluate_json(jittery).iteration_time_s == jit.iteration_time_s);
  jittery["simulation"]["seed"] = 2;
  CHECK(dtsim::testing::evaluate_json(jittery).iteration_time_s != jit.iteration_time_s);
  // One sample with seed 1 is the run with node 1's compute factor 1 / X(seed 1, entry 0, iteration 0).
  jittery["simulation"]["seed"] = 1;
  jittery["simulation"]["jitter_iterations"] = 1;
  const auto one = dtsim::testing::evaluate_json(jittery);
  const auto fixed = dtsim::testing::evaluate_json(
      every_rank({{{"node", 1}, {"compute", 1.0 / dtsim::core::lognormal_factor(1, 0, 0, 0.2)}}}));
  CHECK(one.iteration_time_s == fixed.iteration_time_s);
}
