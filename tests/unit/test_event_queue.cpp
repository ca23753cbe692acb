#include <doctest/doctest.h>

#include <limits>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "engine/event_queue.hpp"

using dtsim::engine::Event;
using dtsim::engine::EventQueue;

TEST_CASE("event queue: earliest time first, ties in push order") {
  EventQueue q;
  // Pushed as (time, payload): (5,0) (3,1) (5,2) (3,3) (1,4) (5,5).
  // Expected pops: time 1 -> 4; time 3 -> 1 then 3 (pushed first); time 5 -> 0, 2, 5.
  const std::vector<std::pair<std::int64_t, std::uint32_t>> pushes{{5, 0}, {3, 1}, {5, 2},
                                                                   {3, 3}, {1, 4}, {5, 5}};
  for (const auto& [time, payload] : pushes) q.push(time, payload);
  CHECK(q.size() == 6);
  CHECK(q.top().payload == 4);
  const std::vector<std::uint32_t> expected{4, 1, 3, 0, 2, 5};
  for (const std::uint32_t payload : expected) {
    REQUIRE_FALSE(q.empty());
    CHECK(q.pop().payload == payload);
  }
  CHECK(q.empty());
}

TEST_CASE("event queue: sequence numbers count pushes and restart after clear") {
  EventQueue q;
  q.push(7, 0);
  q.push(7, 1);
  CHECK(q.pop().seq == 0);
  CHECK(q.pop().seq == 1);
  q.push(2, 9);
  CHECK(q.top().seq == 2);  // keeps counting across pops
  q.clear();
  CHECK(q.empty());
  q.push(4, 3);
  CHECK(q.top().seq == 0);
  CHECK(q.top().time == 4);
}

TEST_CASE("event queue: pop from an empty queue is an internal error") {
  EventQueue q;
  CHECK_THROWS_AS(q.pop(), dtsim::core::InternalError);
}

TEST_CASE("event queue: interleaved pushes and pops agree with an ordered set of (time, seq)") {
  // Random mix of pushes (few distinct times, so many ties: 8, then 2, where most pushes join a slot
  // that pops have moved in the heap) and pops; a std::set ordered by (time, seq) is the reference:
  // every pop must return its smallest element. Payloads use all 32 bits.
  for (const std::uint64_t spread : {8, 2}) {
    std::mt19937_64 rng(12345);
    EventQueue q;
    q.reserve(64);
    std::set<std::pair<std::int64_t, std::uint64_t>> reference;
    std::uint64_t seq = 0;
    std::int64_t now = 0;
    const auto payload_of = [](std::uint64_t s) { return static_cast<std::uint32_t>(s * 0x9e3779b9U); };
    for (int step = 0; step < 20000; ++step) {
      const bool push = reference.empty() || rng() % 100 < 55;
      if (push) {
        const auto time = now + static_cast<std::int64_t>(rng() % spread);
        q.push(time, payload_of(seq));
        reference.emplace(time, seq);
        ++seq;
      } else {
        const Event e = q.pop();
        const auto expected = *reference.begin();
        reference.erase(reference.begin());
        REQUIRE(e.time == expected.first);
        REQUIRE(e.seq == expected.second);
        REQUIRE(e.payload == payload_of(expected.second));
        now = e.time;  // like a simulator: never schedule in the past
      }
      REQUIRE(q.size() == reference.size());
    }
    while (!reference.empty()) {
      CHECK(q.pop().seq == reference.begin()->second);
      reference.erase(reference.begin());
    }
    CHECK(q.empty());
  }
}

TEST_CASE("event queue: more_at tells whether the earliest pending event is at that time") {
  dtsim::engine::EventQueue q;
  CHECK_FALSE(q.more_at(5));
  q.push(5, 1);
  q.push(7, 2);
  CHECK(q.more_at(5));
  CHECK_FALSE(q.more_at(7));
  q.pop();
  CHECK(q.more_at(7));
}

TEST_CASE("event queue: events of one time in several slots pop in push order") {
  // Pushes at 5, 9, 5, 5, 9: the second run of 5s opens a new slot (the open one is at 9), yet all
  // 5s pop before the 9s and in push order (payloads 1, 3, 4), then the 9s (2, 5).
  dtsim::engine::EventQueue q;
  q.push(5, 1);
  q.push(9, 2);
  q.push(5, 3);
  q.push(5, 4);
  q.push(9, 5);
  std::vector<std::uint32_t> order;
  while (!q.empty()) order.push_back(q.pop().payload);
  CHECK(order == std::vector<std::uint32_t>{1, 3, 4, 2, 5});
  // A push at the time being drained joins its slot and pops after the earlier ones.
  q.push(3, 10);
  q.push(3, 11);
  CHECK(q.pop().payload == 10);
  q.push(3, 12);
  CHECK(q.pop().payload == 11);
  CHECK(q.pop().payload == 12);
  CHECK(q.empty());
}

TEST_CASE("the engine's clock: times past kMaxTimeNs and durations past kMaxDurationNs are infeasible") {
  // 2^60 ns is the last time a queue takes; one more is refused before anything overflows.
  EventQueue q;
  q.push(dtsim::core::kMaxTimeNs, 0);
  CHECK_THROWS_WITH_AS(q.push(dtsim::core::kMaxTimeNs + 1, 1), doctest::Contains("beyond the 1.15e+09 s"),
                       dtsim::core::InfeasibleError);
  CHECK(q.pop().payload == 0);
  // 2^56 ns = 72,057,594.04 s is the longest duration; a second more is refused.
  const double longest_s = static_cast<double>(dtsim::core::kMaxDurationNs) / 1e9;
  CHECK(dtsim::core::seconds_to_ns(longest_s) == dtsim::core::kMaxDurationNs);
  CHECK_THROWS_AS(dtsim::core::seconds_to_ns(longest_s + 1.0), dtsim::core::InfeasibleError);
  CHECK_THROWS_AS(dtsim::core::seconds_to_ns(std::numeric_limits<double>::infinity()),
                  dtsim::core::InfeasibleError);
  CHECK(dtsim::core::seconds_to_ns(-1.0) == 0);
}
