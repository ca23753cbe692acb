// Layers that are not all alike. A mixture-of-experts model may start with dense layers: DeepSeek-V3's
// first three layers have a dense SwiGLU MLP of width 18432 and the other 58 its mixture of experts
// (DeepSeek-AI 2024, arXiv 2412.19437, Sec. 4.2; deepseek-ai/DeepSeek-V3 config.json,
// first_k_dense_replace 3, intermediate_size 18432; Megatron-Core states the same with --moe-layer-freq,
// e.g. "([0]*3+[1]*58)"). config::MoeSpec::first_dense_layers says how many.
//
// Each kind of layer is costed as a uniform model: kind 0 is the model as written (every layer of a model
// without dense first layers), kind 1 the same model without its `moe` block, a dense MLP of
// ffn_hidden_size. Everything per layer (its programs, parameters, activations, gradient buckets, ZeRO-3
// gathers) is computed for the layer's kind; everything per stage sums its layers' kinds.
#pragma once

#include <cstdint>
#include <vector>

#include "config/scenario.hpp"

namespace dtsim::models {

class LayerKinds {
 public:
  explicit LayerKinds(const config::TransformerSpec& model);

  std::size_t count() const { return models_.size(); }
  // The uniform model a kind's layers are costed as.
  const config::TransformerSpec& model(std::size_t kind) const { return models_[kind]; }
  // The kind of layer `layer` (0-based, in the order the forward pass runs them).
  std::size_t of_layer(std::int64_t layer) const { return layer < first_dense_ ? 1U : 0U; }
  // How many of the layers [begin, end) are of each kind (count() entries).
  std::vector<std::int64_t> counts(std::int64_t begin, std::int64_t end) const;

 private:
  std::vector<config::TransformerSpec> models_;
  std::int64_t first_dense_ = 0;
};

// Whether the model's layers are not all of one kind.
inline bool mixed_layers(const config::TransformerSpec& model) {
  return model.moe && model.moe->first_dense_layers > 0;
}

}  // namespace dtsim::models
