// The buckets a pipeline stage's data-parallel gradient reductions run in (Megatron-Core's
// DistributedDataParallel, PyTorch DDP, DeepSpeed's reduce buckets): layers join a bucket in the order
// their gradients become final (the last layer first), and a bucket is reduced once it holds at least
// training.bucket_bytes; the embedding's or output layer's gradients join the first bucket, and what is
// left after the last layer makes the last bucket. The lowering (lower_gradients.cpp) reduces each
// bucket after its last layer's backward; the search's lower bound (search/lower_bound.hpp) costs them.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "config/scenario.hpp"

namespace dtsim::parallel {

struct GradientBucket {
  double bytes = 0.0;         // dense gradients, over the data x context group
  double expert_bytes = 0.0;  // routed experts' gradients, over the expert_data group
  // Index of the bucket's last layer in the order the stage's gradients become final; none when the
  // bucket holds no layer (a stage without layers reduces its embedding's or output layer's alone).
  std::optional<std::int64_t> last_layer;
};

// The stage's buckets in order; the last may be empty (the last layer filled a bucket), which no
// collective reduces.
std::vector<GradientBucket> gradient_buckets(const config::Scenario& scenario, std::int64_t stage);

}  // namespace dtsim::parallel
