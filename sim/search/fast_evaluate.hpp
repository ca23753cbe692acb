// A faster estimate of one scenario's iteration for strategy search: simulate the same plan with two
// short runs of micro-batches and extrapolate to the real count.
//
// Why it holds: once a pipeline has more micro-batches than stages, each further micro-batch adds one
// steady-state slot (the slowest stage's forward + backward, or its share of a pipeline transfer)
// while fill, drain, the gradient reduction after the last backward and the optimizer step stay the
// same. The iteration time and every part of its breakdown are then affine in the micro-batch count m:
//   T(m) = T(m1) + (T(m2) - T(m1)) (m - m1) / (m2 - m1)          for m >= m1 >= steady start
// (Narayanan et al. 2021, arXiv 2104.04473, Sec. 2.2: the 1F1B and interleaved iteration is
// (m + p - 1) t_slot and (m + (p - 1)/v) t_slot with fixed per-iteration terms). Both runs are full
// simulations by the same engine; m1 = p (pipeline stages; at least 2) and m2 = m1 + k where k is
// 1, or p for the interleaved schedule (which needs m divisible by p). When the real m is not above m2
// the scenario is simulated as is. tests/unit/test_fast_evaluate.cpp compares both with the full
// simulation and prints the error.
//
// Memory, status and the rates are those of the real scenario; engine.events and engine.tasks count
// what the two short simulations processed.
#pragma once

#include <cstdint>

#include "config/scenario.hpp"
#include "results/result.hpp"

namespace dtsim::search {

struct ExtrapolationPoints {
  std::int64_t m1 = 0;
  std::int64_t m2 = 0;
};

// The two micro-batch counts simulated for `scenario` (see above).
ExtrapolationPoints extrapolation_points(const config::Scenario& scenario);

// The Result of results::evaluate() without a trace, the iteration extrapolated as above. Infeasible
// plans (their result carries the reason) and plans with m <= m2 are simulated as they are.
results::Result evaluate_extrapolated(const config::Scenario& scenario);

}  // namespace dtsim::search
