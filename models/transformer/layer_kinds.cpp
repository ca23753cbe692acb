#include "models/transformer/layer_kinds.hpp"

#include <algorithm>

#include "core/errors.hpp"

namespace dtsim::models {

namespace {

bool any_full(const config::TransformerSpec& m) {
  const auto& w = m.sliding_window;
  return !w || (w->full_attention_every > 0 && w->full_attention_every <= m.layers);
}

// A window as long as the sequence is no window: such layers attend as full ones do.
bool any_sliding(const config::TransformerSpec& m) {
  return m.sliding_window && m.sliding_window->full_attention_every != 1 &&
         m.sliding_window->window < m.seq_length;
}

}  // namespace

bool mixed_layers(const config::TransformerSpec& model) {
  return (model.moe && model.moe->first_dense_layers > 0) || !uniform_attention(model);
}

bool uniform_attention(const config::TransformerSpec& model) {
  return !any_full(model) || !any_sliding(model);
}

double attended_keys(const config::TransformerSpec& model) {
  const double s = static_cast<double>(model.seq_length);
  if (!model.sliding_window || !any_sliding(model)) return s;
  return std::min(s, static_cast<double>(model.sliding_window->window));
}

LayerKinds::LayerKinds(const config::TransformerSpec& model) {
  index_.fill(kNone);
  if (!mixed_layers(model)) {
    models_.push_back(model);
    index_.fill(0);
    return;
  }
  first_dense_ = model.moe ? model.moe->first_dense_layers : 0;
  if (any_sliding(model)) {
    window_ = model.sliding_window->window;
    full_every_ = model.sliding_window->full_attention_every;
  }
  // The combinations present, in the order of the header (routed before dense, sliding before full).
  const bool dense_present = first_dense_ > 0;
  const bool routed_present = first_dense_ < model.layers;
  for (const bool dense : {false, true}) {
    if (dense ? !dense_present : !routed_present) continue;
    const std::int64_t begin = dense ? 0 : first_dense_;
    const std::int64_t end = dense ? first_dense_ : model.layers;
    const std::int64_t full = full_layers(begin, end);
    for (const bool full_kind : {false, true}) {
      if (full_kind ? full == 0 : full == end - begin) continue;
      config::TransformerSpec kind = model;
      if (dense) kind.moe.reset();
      if (full_kind) {
        kind.sliding_window.reset();
      } else {
        kind.sliding_window->full_attention_every = 0;
      }
      index_[combination(dense, full_kind)] = models_.size();
      models_.push_back(std::move(kind));
    }
  }
  DTSIM_CHECK(!models_.empty(), "a model has at least one kind of layer");
}

std::int64_t LayerKinds::full_layers(std::int64_t begin, std::int64_t end) const {
  if (end <= begin) return 0;
  if (window_ == 0) return end - begin;
  if (full_every_ == 0) return 0;
  // Layers i with (i + 1) % N == 0 among [begin, end): multiples of N in [begin + 1, end].
  return end / full_every_ - begin / full_every_;
}

std::vector<std::int64_t> LayerKinds::counts(std::int64_t begin, std::int64_t end) const {
  std::vector<std::int64_t> out(models_.size(), 0);
  if (end <= begin) return out;
  if (models_.size() == 1) {
    out[0] = end - begin;
    return out;
  }
  const auto add = [&](bool dense, std::int64_t b, std::int64_t e) {
    if (e <= b) return;
    const std::int64_t full = full_layers(b, e);
    if (full > 0) out[index_[combination(dense, true)]] += full;
    if (e - b - full > 0) out[index_[combination(dense, false)]] += e - b - full;
  };
  add(true, begin, std::min(end, first_dense_));
  add(false, std::max(begin, first_dense_), end);
  return out;
}

}  // namespace dtsim::models
