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

namespace zero_bubble_schedule_test {

// The passes of a stage as text: F, B (whole backward), b (input gradient), w (weight gradient), each
// followed by its micro-batch.
std::string passes(const std::vector<dtsim::parallel::PipelineStep>& steps) {
  std::string out;
  for (const auto& s : steps) {
    out += s.pass == Pass::forward      ? 'F'
           : s.pass == Pass::backward   ? 'B'
           : s.pass == Pass::input_grad ? 'b'
                                        : 'w';
    out += std::to_string(s.micro_batch);
  }
  return out;
}

}  // namespace zero_bubble_schedule_test

TEST_CASE("zb-h1: the zero-bubble authors' ZB-H1 order, stage by stage (p = 4, m = 6)") {
  using zero_bubble_schedule_test::passes;
  // ZeroBubbleH1Pipeline (sail-sg/zero-bubble-pipeline-parallelism, exact semantics): stage s runs
  // p - s - 1 warm-up forwards, then s forward + B pairs whose W waits, then forward + B + W while
  // forwards remain, then B + W, then the s deferred W, oldest first. Stage 0 runs each backward whole.
  CHECK(passes(stage_schedule(Schedule::zero_bubble_h1, 4, 0, 6, 1)) == "F0F1F2F3B0F4B1F5B2B3B4B5");
  CHECK(passes(stage_schedule(Schedule::zero_bubble_h1, 4, 1, 6, 1)) ==
        "F0F1F2b0F3b1w0F4b2w1F5b3w2b4w3b5w4w5");
  CHECK(passes(stage_schedule(Schedule::zero_bubble_h1, 4, 2, 6, 1)) ==
        "F0F1b0F2b1F3b2w0F4b3w1F5b4w2b5w3w4w5");
  CHECK(passes(stage_schedule(Schedule::zero_bubble_h1, 4, 3, 6, 1)) ==
        "F0b0F1b1F2b2F3b3w0F4b4w1F5b5w2w3w4w5");
  // Fewer micro-batches than stages: the warm-up and the deferred pairs stop at m.
  CHECK(passes(stage_schedule(Schedule::zero_bubble_h1, 4, 1, 2, 1)) == "F0F1b0w0b1w1");
  CHECK(passes(stage_schedule(Schedule::zero_bubble_h1, 4, 3, 2, 1)) == "F0b0F1b1w0w1");
  // One stage: nothing to fill, 1F1B.
  CHECK(passes(stage_schedule(Schedule::zero_bubble_h1, 1, 0, 3, 1)) == "F0B0F1B1F2B2");
}

TEST_CASE("zb-h1: each micro-batch's passes once, in order, at most p micro-batches awaiting their W") {
  for (const int p : {2, 4, 8}) {
    for (const int m : {1, 3, 8, 17}) {
      for (int stage = 0; stage < p; ++stage) {
        const auto steps = stage_schedule(Schedule::zero_bubble_h1, p, stage, m, 1);
        std::vector<int> state(static_cast<std::size_t>(m), 0);  // 0 none, 1 forward, 2 B, 3 done
        int in_flight = 0;
        int most = 0;
        for (const auto& s : steps) {
          int& st = state[static_cast<std::size_t>(s.micro_batch)];
          if (s.pass == Pass::forward) {
            CHECK(st == 0);
            st = 1;
            most = std::max(most, ++in_flight);
          } else if (s.pass == Pass::backward) {
            CHECK(stage == 0);
            CHECK(st == 1);
            st = 3;
            --in_flight;
          } else if (s.pass == Pass::input_grad) {
            CHECK(st == 1);
            st = 2;
          } else {
            CHECK(st == 2);
            st = 3;
            --in_flight;
          }
        }
        CHECK(std::all_of(state.begin(), state.end(), [](int st) { return st == 3; }));
        // In flight (forward run, W not yet): the first stage as 1F1B's p, every stage at most p.
        CHECK(most <= std::min(p, m));
        if (stage == 0) CHECK(most == std::min(p, m));
      }
    }
  }
}

namespace pipeline_schedule_test {
// The most layer activations a stage holds, counted step by step over its schedule: a forward adds its
// chunk's layers, a backward frees them.
double counted_peak(Schedule schedule, std::int64_t p, std::int64_t s, std::int64_t m, std::int64_t v,
                    const std::vector<std::int64_t>& chunks, bool combined = false) {
  std::int64_t held = 0;
  std::int64_t most = 0;
  for (const auto& step : stage_schedule(schedule, p, s, m, v, combined)) {
    const std::int64_t layers = chunks[static_cast<std::size_t>(step.chunk * p + s)];
    held += step.pass == Pass::forward ? layers : -layers;
    most = std::max(most, held);
  }
  return static_cast<double>(most);
}
}  // namespace pipeline_schedule_test

TEST_CASE(
    "peak in-flight layers: equal to counting over each stage's schedule, even and uneven chunks, combined "
    "1F1B too") {
  using dtsim::parallel::chunk_layers;
  using dtsim::parallel::peak_in_flight_layers;
  int cases = 0;
  for (const Schedule schedule : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved}) {
    for (const std::int64_t p : {2, 3, 4, 8}) {
      for (const std::int64_t v : {1, 2, 3, 4}) {
        if ((schedule == Schedule::interleaved) != (v > 1)) continue;
        // Layers that split evenly, one short at each end, and fewer than the chunks (ends empty).
        for (const std::int64_t layers : {4 * p * v, 4 * p * v - 2, 4 * p * v + 3, p * v - 2}) {
          if (layers < 1) continue;
          const auto chunks = chunk_layers(layers, p, v);
          for (const std::int64_t m : {p, 2 * p, 3 * p, 5 * p}) {
            for (std::int64_t s = 0; s < p; ++s) {
              CAPTURE(p);
              CAPTURE(v);
              CAPTURE(layers);
              CAPTURE(m);
              CAPTURE(s);
              CHECK(peak_in_flight_layers(schedule, p, s, m, v, chunks) ==
                    pipeline_schedule_test::counted_peak(schedule, p, s, m, v, chunks));
              // Combined 1F1B, which applies to the interleaved schedule with a pipeline.
              if (schedule == Schedule::interleaved) {
                CHECK(peak_in_flight_layers(schedule, p, s, m, v, chunks, true) ==
                      pipeline_schedule_test::counted_peak(schedule, p, s, m, v, chunks, true));
              }
              ++cases;
            }
          }
        }
      }
    }
  }
  CHECK(cases > 300);
}

TEST_CASE("peak in-flight layers: interleaved holds its warm-up's chunks and one more on every stage") {
  using dtsim::parallel::chunk_layers;
  using dtsim::parallel::peak_in_flight_layers;
  // p = 4, v = 2, m = 8, 2 layers per chunk: stage s warms up with 2 (p - s - 1) + (v - 1) p forward
  // chunk steps; the next forward comes before the first backward: stage 0 (6 + 4 + 1) x 2 = 22 layers
  // (Korthikanti et al.: p (1 + (p - 1)/(p v)) x 4 stage layers = 4 x 11/8 x 4 = 22), the last stage
  // (0 + 4 + 1) x 2 = 10, where 1F1B's last stage holds one micro-batch (4 layers).
  const auto chunks = chunk_layers(16, 4, 2);
  CHECK(peak_in_flight_layers(Schedule::interleaved, 4, 0, 8, 2, chunks) == 22.0);
  CHECK(peak_in_flight_layers(Schedule::interleaved, 4, 3, 8, 2, chunks) == 10.0);
  CHECK(peak_in_flight_layers(Schedule::one_f_one_b, 4, 3, 8, 1, chunk_layers(16, 4, 1)) == 4.0);
}

TEST_CASE("zb-h1 peak: equal to counting over each stage's schedule, W lighter or heavier than F's set") {
  // Forward: +1 before B; B: -1 before B, +1 waiting (stage 0: a whole backward, -1); W: -1 waiting.
  int cases = 0;
  for (const std::int64_t p : {2, 3, 4, 5, 8}) {
    for (std::int64_t s = 0; s < p; ++s) {
      for (std::int64_t m = 1; m <= 3 * p + 1; ++m) {
        for (const double w_read : {0.5, 1.0, 2.5}) {
          std::int64_t before_b = 0;
          std::int64_t waiting = 0;
          double most = 0.0;
          for (const auto& step : stage_schedule(Schedule::zero_bubble_h1, p, s, m, 1)) {
            if (step.pass == Pass::forward) ++before_b;
            if (step.pass == Pass::backward) --before_b;
            if (step.pass == Pass::input_grad) {
              --before_b;
              ++waiting;
            }
            if (step.pass == Pass::weight_grad) --waiting;
            most = std::max(most, static_cast<double>(before_b) + static_cast<double>(waiting) * w_read);
          }
          CAPTURE(p);
          CAPTURE(s);
          CAPTURE(m);
          CAPTURE(w_read);
          CHECK(dtsim::parallel::zero_bubble_peak(p, s, m, 1.0, w_read) == most);
          ++cases;
        }
      }
    }
  }
  CHECK(cases > 500);
}

TEST_CASE("combined 1F1B without a pipeline: micro-batch 0's forward, then backward i beside forward i + 1") {
  // Megatron-Core's combined_1f1b_schedule_for_no_pipelining with m = 4: F0, (F1 + B0), (F2 + B1),
  // (F3 + B2), B3; each combined forward is followed by its backward in the list.
  const auto s = stage_schedule(Schedule::one_f_one_b, 1, 0, 4, 1, true);
  REQUIRE(s.size() == 8);
  CHECK(s[0].pass == Pass::forward);
  CHECK(s[0].micro_batch == 0);
  CHECK_FALSE(s[0].combined);
  for (int i = 0; i < 3; ++i) {
    const auto& f = s[static_cast<std::size_t>(1 + 2 * i)];
    const auto& b = s[static_cast<std::size_t>(2 + 2 * i)];
    CHECK(f.pass == Pass::forward);
    CHECK(f.micro_batch == i + 1);
    CHECK(f.combined);
    CHECK(b.pass == Pass::backward);
    CHECK(b.micro_batch == i);
  }
  CHECK(s[7].pass == Pass::backward);
  CHECK(s[7].micro_batch == 3);
  // One micro-batch: nothing to combine.
  const auto one = stage_schedule(Schedule::one_f_one_b, 1, 0, 1, 1, true);
  REQUIRE(one.size() == 2);
  CHECK_FALSE(one[0].combined);
}

TEST_CASE("combined interleaved: one more warm-up forward, every steady forward combined with a backward") {
  // p = 4, v = 2, m = 8: stage s warms up with 2 (p - s - 1) + (v - 1) p + 1 forwards (schedules.py adds
  // one under --overlap-moe-expert-parallel-comm); no combined backward is of the forward beside it.
  const int p = 4, v = 2, m = 8;
  for (int stage = 0; stage < p; ++stage) {
    CAPTURE(stage);
    const auto s = stage_schedule(Schedule::interleaved, p, stage, m, v, true);
    const int warmup = 2 * (p - stage - 1) + (v - 1) * p + 1;
    CHECK(leading_forwards(s) == warmup + 1);
    int pairs = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (!s[i].combined) continue;
      REQUIRE(i + 1 < s.size());
      CHECK(s[i].pass == Pass::forward);
      CHECK(s[i + 1].pass == Pass::backward);
      CHECK_FALSE((s[i + 1].micro_batch == s[i].micro_batch && s[i + 1].chunk == s[i].chunk));
      ++pairs;
    }
    CHECK(pairs == m * v - warmup);  // every forward after the warm-up
    CHECK(static_cast<int>(s.size()) == 2 * m * v);
  }
}

TEST_CASE("peak in-flight layers of combined 1F1B: one micro-batch more than without") {
  using dtsim::parallel::chunk_layers;
  using dtsim::parallel::peak_in_flight_layers;
  // Even chunks of 2 layers, p = 4, v = 2, m = 8: stage 0 holds (6 + 4 + 1 + 1) x 2 = 24 layers, two more
  // than the 22 of the plain interleaved schedule; without a pipeline, two micro-batches of 8 layers.
  CHECK(peak_in_flight_layers(Schedule::interleaved, 4, 0, 8, 2, chunk_layers(16, 4, 2), true) == 24.0);
  CHECK(peak_in_flight_layers(Schedule::one_f_one_b, 1, 0, 8, 1, chunk_layers(8, 1, 1), true) == 16.0);
  CHECK(peak_in_flight_layers(Schedule::one_f_one_b, 1, 0, 8, 1, chunk_layers(8, 1, 1)) == 8.0);
}
