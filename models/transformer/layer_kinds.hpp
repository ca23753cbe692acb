// Layers that are not all alike. A mixture-of-experts model may start with dense layers: DeepSeek-V3's
// first three layers have a dense SwiGLU MLP of width 18432 and the other 58 its mixture of experts
// (DeepSeek-AI 2024, arXiv 2412.19437, Sec. 4.2; deepseek-ai/DeepSeek-V3 config.json,
// first_k_dense_replace 3, intermediate_size 18432; Megatron-Core states the same with --moe-layer-freq,
// e.g. "([0]*3+[1]*58)"). config::MoeSpec::first_dense_layers says how many. And a model with
// sliding-window attention may keep full attention in every N-th layer (GPT-OSS alternates them:
// config::SlidingWindowSpec::full_attention_every 2).
//
// Each kind of layer is costed as a uniform model: the model as written with its MLP (the `moe` block,
// or without it for the dense first layers) and its attention (a sliding window in every layer, full
// attention without one) made those of the kind. Kinds are numbered in a fixed order over the
// combinations present (routed before dense, sliding before full), so a uniform model has one kind, the
// model as written. Everything per layer (its programs, parameters, activations, gradient buckets,
// ZeRO-3 gathers) is computed for the layer's kind; everything per stage sums its layers' kinds.
#pragma once

#include <array>
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
  std::size_t of_layer(std::int64_t layer) const {
    return index_[combination(layer < first_dense_, full_attention(layer))];
  }
  // How many of the layers [begin, end) are of each kind (count() entries).
  std::vector<std::int64_t> counts(std::int64_t begin, std::int64_t end) const;

 private:
  static constexpr std::size_t kCombinations = 4;
  static constexpr std::size_t kNone = kCombinations;
  static std::size_t combination(bool dense, bool full) { return (dense ? 2U : 0U) + (full ? 1U : 0U); }
  bool full_attention(std::int64_t layer) const {
    return window_ == 0 || (full_every_ > 0 && (layer + 1) % full_every_ == 0);
  }
  // Layers with full attention among [begin, end).
  std::int64_t full_layers(std::int64_t begin, std::int64_t end) const;

  std::vector<config::TransformerSpec> models_;
  std::array<std::size_t, kCombinations> index_{};  // combination -> kind (kNone: absent)
  std::int64_t first_dense_ = 0;
  std::int64_t window_ = 0;  // 0: no sliding window
  std::int64_t full_every_ = 0;
};

// Whether the model's layers are not all of one kind.
bool mixed_layers(const config::TransformerSpec& model);

// Whether every layer of `model` attends alike: no sliding window, or one in every layer (a kind's model;
// models::transformer_layer() costs only such a model).
bool uniform_attention(const config::TransformerSpec& model);

// The keys each query of a layer of `model` may attend to as model FLOPs count them: the whole sequence
// (the causal mask is not discounted, Narayanan et al. 2021, arXiv 2104.04473, Appendix), or the
// sliding window where the layers have one shorter than the sequence (for a model that mixes sliding and
// full layers, the sliding layers' keys).
double attended_keys(const config::TransformerSpec& model);

}  // namespace dtsim::models
