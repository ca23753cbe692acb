#include "models/transformer/layer_kinds.hpp"

#include <algorithm>

namespace dtsim::models {

LayerKinds::LayerKinds(const config::TransformerSpec& model) : models_{model} {
  if (!mixed_layers(model)) return;
  first_dense_ = model.moe->first_dense_layers;
  config::TransformerSpec dense = model;
  dense.moe.reset();
  models_.push_back(std::move(dense));
}

std::vector<std::int64_t> LayerKinds::counts(std::int64_t begin, std::int64_t end) const {
  std::vector<std::int64_t> out(models_.size(), 0);
  if (end <= begin) return out;
  if (models_.size() == 1) {
    out[0] = end - begin;
    return out;
  }
  const std::int64_t dense = std::max<std::int64_t>(0, std::min(end, first_dense_) - begin);
  out[1] = dense;
  out[0] = end - begin - dense;
  return out;
}

}  // namespace dtsim::models
