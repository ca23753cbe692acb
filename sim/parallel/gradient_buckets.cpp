#include "parallel/gradient_buckets.hpp"

#include "models/transformer/layer_kinds.hpp"
#include "parallel/memory_model.hpp"
#include "parallel/pipeline_schedule.hpp"

namespace dtsim::parallel {

std::vector<GradientBucket> gradient_buckets(const config::Scenario& s, std::int64_t stage) {
  const std::int64_t p = s.parallelism.pipeline;
  const std::vector<std::int64_t> chunks = model_chunk_layers(s.model, p, s.parallelism.virtual_stages);
  const double grad = parameter_bytes(s.training).gradients;
  const models::LayerKinds kinds(s.model);
  std::vector<GpuParameters> per_kind;
  for (std::size_t k = 0; k < kinds.count(); ++k)
    per_kind.push_back(layer_parameters_per_gpu(s, kinds.model(k)));
  // The stage's layers in the order their gradients become final: its chunks last to first (every
  // schedule runs a micro-batch's chunks last to first), each chunk's layers last to first.
  const std::vector<std::int64_t> chunk_first = chunk_first_layers(chunks);
  std::vector<std::size_t> final_order;
  for (std::int64_t c = s.parallelism.virtual_stages - 1; c >= 0; --c) {
    const auto chunk = static_cast<std::size_t>(c * p + stage);
    for (std::int64_t l = chunks[chunk] - 1; l >= 0; --l)
      final_order.push_back(kinds.of_layer(chunk_first[chunk] + l));
  }
  // The embedding's or output layer's gradients, and on the last stage the multi-token prediction
  // modules' (their experts' among the expert gradients), join the first bucket.
  const GpuParameters extra = stage_extra_parameters(s, stage);
  std::vector<GradientBucket> out;
  GradientBucket bucket{extra.dense * grad, extra.experts * grad, std::nullopt};
  for (std::size_t l = 0; l < final_order.size(); ++l) {
    const GpuParameters& layer = per_kind[final_order[l]];
    bucket.bytes += layer.dense * grad;
    bucket.expert_bytes += layer.experts * grad;
    bucket.last_layer = static_cast<std::int64_t>(l);
    if (bucket.bytes + bucket.expert_bytes < s.training.bucket_bytes) continue;
    out.push_back(bucket);
    bucket = GradientBucket{};
  }
  // The remainder ends with the stage's last layer, like the bucket before it.
  if (!final_order.empty()) bucket.last_layer = static_cast<std::int64_t>(final_order.size()) - 1;
  out.push_back(bucket);
  return out;
}

}  // namespace dtsim::parallel
