// Pipeline schedules (parallel/pipeline_schedule.hpp).
#include <doctest/doctest.h>

#include <algorithm>

#include "parallel/pipeline_schedule.hpp"

using dtsim::config::Schedule;
using dtsim::parallel::Pass;
using dtsim::parallel::stage_schedule;

namespace {
int leading_forwards(const std::vector<dtsim::parallel::PipelineStep>& steps) {
  int n = 0;
  while (n < static_cast<int>(steps.size()) && steps[n].pass == Pass::forward) ++n;
  return n;
}
}  // namespace

TEST_CASE("1F1B: stage s warms up with p - s - 1 forwards, then alternates") {
  // p = 4, m = 8: stage 0 runs 3 warm-up forwards, then F,B pairs; the first step after warm-up is F3.
  const auto s0 = stage_schedule(Schedule::one_f_one_b, 4, 0, 8, 1);
  CHECK(s0.size() == 16);
  CHECK(leading_forwards(s0) == 4);  // 3 warm-up + the steady state's first forward
  CHECK(s0[4].pass == Pass::backward);
  CHECK(s0[4].micro_batch == 0);
  const auto s3 = stage_schedule(Schedule::one_f_one_b, 4, 3, 8, 1);
  CHECK(leading_forwards(s3) == 1);
  CHECK(s3[1].pass == Pass::backward);
}

TEST_CASE("GPipe runs every forward before any backward") {
  const auto s = stage_schedule(Schedule::gpipe, 4, 1, 6, 1);
  CHECK(leading_forwards(s) == 6);
  CHECK(s.size() == 12);
}

TEST_CASE("interleaved: every (micro-batch, chunk) appears once per pass, warm-up (p-s-1)*2 + (v-1)*p") {
  const int p = 4, v = 2, m = 8;
  for (int stage = 0; stage < p; ++stage) {
    const auto s = stage_schedule(Schedule::interleaved, p, stage, m, v);
    CHECK(s.size() == static_cast<std::size_t>(2 * m * v));
    const int warmup = (p - stage - 1) * 2 + (v - 1) * p;
    CHECK(leading_forwards(s) == warmup + 1);
    for (auto pass : {Pass::forward, Pass::backward}) {
      for (int mb = 0; mb < m; ++mb) {
        for (int c = 0; c < v; ++c) {
          const auto n = std::count_if(s.begin(), s.end(), [&](const auto& st) {
            return st.pass == pass && st.micro_batch == mb && st.chunk == c;
          });
          CHECK(n == 1);
        }
      }
    }
  }
}

TEST_CASE("uneven partition: the end chunks get the fewer layers") {
  // Llama 3 405B: 126 layers over 16 stages = 7 r 14: fourteen chunks of 8, the first and last of 7.
  const auto layers = dtsim::parallel::chunk_layers(126, 16, 1);
  REQUIRE(layers.size() == 16);
  CHECK(layers.front() == 7);
  CHECK(layers.back() == 7);
  for (std::size_t i = 1; i + 1 < layers.size(); ++i) CHECK(layers[i] == 8);
  // Even splits stay even: 96 layers over 8 stages x 2 chunks = 6 each.
  const auto even = dtsim::parallel::chunk_layers(96, 8, 2);
  CHECK(std::all_of(even.begin(), even.end(), [](std::int64_t n) { return n == 6; }));
}
