#include "config/mlp_reader.hpp"

namespace dtsim::config {

TransformerSpec read_mlp(ObjectReader& model) {
  model.expect_keys({"kind", "layers", "hidden_size", "input_size", "output_size"});
  const IntRule positive = IntRule::positive();
  TransformerSpec spec;
  spec.kind = ModelKind::mlp;
  spec.layers = model.required<std::int64_t>("layers", positive);
  spec.hidden_size = model.required<std::int64_t>("hidden_size", positive);
  spec.input_size = model.required<std::int64_t>("input_size", positive);
  spec.output_size = model.required<std::int64_t>("output_size", positive);
  // Neutral transformer fields: one "token" per sample, one head, no attention or vocabulary.
  spec.heads = 1;
  spec.kv_heads = 1;
  spec.ffn_hidden_size = spec.hidden_size;
  spec.vocab_size = spec.output_size;
  spec.seq_length = 1;
  model.finish();
  return spec;
}

}  // namespace dtsim::config
