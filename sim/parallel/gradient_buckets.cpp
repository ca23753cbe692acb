#include "parallel/gradient_buckets.hpp"

#include "parallel/memory_model.hpp"
#include "parallel/pipeline_schedule.hpp"

namespace dtsim::parallel {

std::vector<GradientBucket> gradient_buckets(const config::Scenario& s, std::int64_t stage) {
  const std::int64_t p = s.parallelism.pipeline;
  const std::int64_t held_layers =
      stage_layers(chunk_layers(s.model.layers, p, s.parallelism.virtual_stages), p, stage);
  const double grad = parameter_bytes(s.training).gradients;
  const GpuParameters layer = layer_parameters_per_gpu(s);
  const double extra =
      (stage_parameters_per_gpu(s, stage).dense - static_cast<double>(held_layers) * layer.dense) * grad;
  std::vector<GradientBucket> out;
  GradientBucket bucket{extra, 0.0, std::nullopt};
  for (std::int64_t l = 0; l < held_layers; ++l) {
    bucket.bytes += layer.dense * grad;
    bucket.expert_bytes += layer.experts * grad;
    bucket.last_layer = l;
    if (bucket.bytes + bucket.expert_bytes < s.training.bucket_bytes) continue;
    out.push_back(bucket);
    bucket = GradientBucket{};
  }
  // The remainder ends with the stage's last layer, like the bucket before it.
  if (held_layers > 0) bucket.last_layer = held_layers - 1;
  out.push_back(bucket);
  return out;
}

}  // namespace dtsim::parallel
