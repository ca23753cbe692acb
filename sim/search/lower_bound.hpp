// A lower bound on a plan's iteration time from its compute alone, for branch and bound in search
// (search.hpp): no plan can finish an iteration before its most loaded GPU has run its kernels, and
// that GPU runs at least the average over the p pipeline stages (the data, tensor and context ranks of
// a stage are symmetric):
//   T >= m (l t_layer + t_embedding + t_head) / p
// with m the micro-batches per replica, l the model's layers, and t_x the summed kernel durations of one
// micro-batch's forward, backward and recompute of x under the plan's sharding, from the same compute
// model and the same op programs the engine runs (parallel/layer_ops.hpp). Communication, pipeline
// bubbles, the optimizer step and the overlap slowdown only add to T, so the bound holds for the full
// simulation and for the fast estimate (fast_evaluate.hpp), which is exact where T is bilinear;
// tests/unit/test_search.cpp checks it on a sample of plans.
#pragma once

#include "config/scenario.hpp"

namespace dtsim::search {

double iteration_lower_bound_s(const config::Scenario& scenario);

}  // namespace dtsim::search
