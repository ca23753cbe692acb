// The flow-level collective cache (network/flow_cache.hpp): each distinct key simulated once, also when
// several threads ask at the same time; keys of different networks kept apart; a failed simulation
// reaches its callers and is not kept; flow models on one cluster share their simulations.
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "network/flow_cache.hpp"
#include "network/flow_model.hpp"
#include "results/evaluate.hpp"
#include "scenario_fixture.hpp"

using dtsim::network::FlowCache;

namespace {

FlowCache::Key key(std::int64_t network, double bytes) {
  return {network, {0, 0, bytes, 16, 2, 1, 1, 8, -1.0, -1.0, 1.0}};
}

}  // namespace

TEST_CASE("flow cache: a key is simulated once, other keys and other networks each once") {
  FlowCache cache;
  const std::int64_t a = cache.network("topology a");
  const std::int64_t b = cache.network("topology b");
  CHECK(a != b);
  CHECK(cache.network("topology a") == a);  // equal identities, one number
  int calls = 0;
  const auto simulate = [&] { return ++calls * 1000; };
  CHECK(cache.get(key(a, 1e6), simulate) == 1000);
  CHECK(cache.get(key(a, 1e6), simulate) == 1000);  // cached: simulate() not called again
  CHECK(cache.get(key(a, 2e6), simulate) == 2000);  // another collective
  CHECK(cache.get(key(b, 1e6), simulate) == 3000);  // the same collective on another network
  CHECK(calls == 3);
  CHECK(cache.simulations() == 3);
  CHECK(cache.hits() == 1);
}

TEST_CASE("flow cache: threads asking for one key at once share one simulation") {
  FlowCache cache;
  std::atomic<int> calls{0};
  std::vector<std::thread> threads;
  std::vector<long long> got(8, 0);
  for (std::size_t t = 0; t < got.size(); ++t) {
    threads.emplace_back([&, t] {
      got[t] = cache.get(key(0, 1e6), [&] {
        ++calls;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the others arrive meanwhile
        return 42;
      });
    });
  }
  for (auto& th : threads) th.join();
  CHECK(calls == 1);
  for (const long long v : got) CHECK(v == 42);
  CHECK(cache.simulations() == 1);
  CHECK(cache.hits() == 7);
}

TEST_CASE("flow cache: a failed simulation reaches the caller and is not kept") {
  FlowCache cache;
  CHECK_THROWS_AS(cache.get(key(0, 1e6), []() -> dtsim::core::TimeNs { throw std::runtime_error("child"); }),
                  std::runtime_error);
  CHECK(cache.get(key(0, 1e6), [] { return 7; }) == 7);  // simulated again, now successfully
}

TEST_CASE("flow models on one cluster share a cache - another cluster gets its own entries") {
  auto s = dtsim::testing::fixture_scenario();
  s.simulation.network = dtsim::config::NetworkFidelity::flow;
  s.cluster.nodes = 2;
  const dtsim::graph::CommOp op{dtsim::graph::CollectiveKind::all_reduce, 64e6,
                                dtsim::graph::CommGroup{16, 2, 1}};
  FlowCache cache;
  const dtsim::network::FlowModel first(s, &cache);
  const auto t = first.duration(op);
  const dtsim::network::FlowModel second(s, &cache);
  CHECK(second.duration(op) == t);
  CHECK(cache.simulations() == 1);
  // Half the NIC bandwidth: a different network, simulated anew, and slower.
  auto slow = s;
  slow.cluster.network.oversubscription = 2.0;
  const dtsim::network::FlowModel third(slow, &cache);
  CHECK(third.duration(op) > t);
  CHECK(cache.simulations() == 2);
}

TEST_CASE("an evaluation's calibration interval reuses the flow simulations of the scenario itself") {
  // A compute-only spread changes no network: the interval's two ends (evaluate() twice more, each with
  // the GPU's throughput at one end of the spread) find every collective already simulated.
  auto s = dtsim::testing::fixture_scenario();
  s.simulation.network = dtsim::config::NetworkFidelity::flow;
  s.cluster.nodes = 2;
  s.parallelism.data = 16;
  s.training.global_batch_size = 32;
  s.model.layers = 2;
  FlowCache plain;
  const auto r0 = dtsim::results::evaluate(s, {.flow_cache = &plain});
  REQUIRE(r0.status == dtsim::results::Status::ok);
  REQUIRE(plain.simulations() > 0);
  s.gpu.spread = dtsim::config::ThroughputSpread{0.9, 1.1, 0.95, 1.05};
  FlowCache with_interval;
  const auto r1 = dtsim::results::evaluate(s, {.flow_cache = &with_interval});
  REQUIRE(r1.interval.has_value());
  CHECK(r1.iteration_time_s == r0.iteration_time_s);
  CHECK(with_interval.simulations() == plain.simulations());
  CHECK(with_interval.hits() > plain.hits());
}
