#include "models/dlrm/dlrm.hpp"

namespace dtsim::models {

using config::DlrmSpec;
using config::Interaction;

// Named, not anonymous: unity builds put several files in one translation unit.
namespace dlrm_dense {

double as_double(std::int64_t v) { return static_cast<double>(v); }

// Vectors the interaction combines: the dense one and one per table.
double vectors(const DlrmSpec& m) { return as_double(static_cast<std::int64_t>(m.tables.size()) + 1); }

// One linear layer (see the header): appends its forward ops to `fwd` and its backward ops to `bwd`
// in the order the backward pass runs them.
void dense_linear(std::vector<LayerOp>& fwd, std::vector<LayerOp>& bwd, double b, double in, double out,
                  double a, bool relu, bool input_gradient) {
  fwd.push_back(gemm_op("dlrm_linear", b, out, in, a));
  fwd.push_back(memory_op(relu ? "dlrm_bias_relu" : "dlrm_bias", 2 * b * out * a));
  if (relu) bwd.push_back(memory_op("dlrm_relu_bwd", 3 * b * out * a));
  bwd.push_back(gemm_op("dlrm_linear_wgrad", in, out, b, a));
  bwd.push_back(memory_op("dlrm_bias_grad", b * out * a, false, core::MemoryClass::reduction));
  if (input_gradient) bwd.push_back(gemm_op("dlrm_linear_dgrad", b, in, out, a));
}

// An MLP from `in` through `widths`; backward ops in backward order.
void dense_mlp(std::vector<LayerOp>& fwd, std::vector<LayerOp>& bwd, double b, double in,
               const std::vector<std::int64_t>& widths, double a, bool last_relu, bool first_input_gradient) {
  std::vector<std::vector<LayerOp>> backward_layers;
  double width = in;
  for (std::size_t i = 0; i < widths.size(); ++i) {
    const bool last = i + 1 == widths.size();
    backward_layers.emplace_back();
    dense_linear(fwd, backward_layers.back(), b, width, as_double(widths[i]), a, !last || last_relu,
                 i > 0 || first_input_gradient);
    width = as_double(widths[i]);
  }
  for (auto it = backward_layers.rbegin(); it != backward_layers.rend(); ++it) {
    bwd.insert(bwd.end(), it->begin(), it->end());
  }
}

double mlp_parameters(double in, const std::vector<std::int64_t>& widths) {
  double sum = 0.0;
  for (const std::int64_t w : widths) {
    sum += in * as_double(w) + as_double(w);
    in = as_double(w);
  }
  return sum;
}

double mlp_forward_flops(double in, const std::vector<std::int64_t>& widths) {
  double sum = 0.0;
  for (const std::int64_t w : widths) {
    sum += 2 * in * as_double(w);
    in = as_double(w);
  }
  return sum;
}

}  // namespace dlrm_dense

std::int64_t dlrm_interaction_width(const DlrmSpec& m) {
  using namespace dlrm_dense;
  const std::int64_t f = static_cast<std::int64_t>(m.tables.size()) + 1;
  const std::int64_t d = m.embedding_dim();
  return m.interaction == Interaction::dot ? d + f * (f - 1) / 2 : f * d;
}

DlrmDensePrograms dlrm_dense_programs(const DlrmSpec& m, std::int64_t samples, config::Precision precision) {
  using namespace dlrm_dense;
  const double a = activation_bytes_per_element(precision);
  const double b = as_double(samples);
  const double f = vectors(m);
  const double d = as_double(m.embedding_dim());
  DlrmDensePrograms p;
  dense_mlp(p.bottom_forward, p.bottom_backward, b, as_double(m.dense_features), m.bottom_mlp, a, true,
            false);

  if (m.interaction == Interaction::dot) {
    const double pairs = f * (f - 1) / 2;
    p.interaction_forward.push_back(memory_op("dlrm_interaction_stack", 2 * b * f * d * a));
    p.interaction_forward.push_back(gemm_op("dlrm_interaction_dot", f, f, d, a, b));
    p.interaction_forward.push_back(memory_op("dlrm_interaction_pairs", (b * f * f + b * (d + pairs)) * a));
    p.interaction_backward.push_back(
        memory_op("dlrm_interaction_pairs_bwd", (b * (d + pairs) + b * f * f) * a));
    p.interaction_backward.push_back(gemm_op("dlrm_interaction_dot_bwd", f, d, f, a, b));
    p.interaction_backward.push_back(memory_op("dlrm_interaction_split_bwd", 2 * b * f * d * a));
  } else {
    const double d0 = f * d;
    const double r = as_double(m.dcn_low_rank);
    p.interaction_forward.push_back(memory_op("dlrm_dcn_concat", 2 * b * d0 * a));
    for (std::int64_t l = 0; l < m.dcn_layers; ++l) {
      p.interaction_forward.push_back(gemm_op("dlrm_dcn_u", b, r, d0, a));
      p.interaction_forward.push_back(gemm_op("dlrm_dcn_v", b, d0, r, a));
      p.interaction_forward.push_back(memory_op("dlrm_dcn_cross", 4 * b * d0 * a));
    }
    for (std::int64_t l = 0; l < m.dcn_layers; ++l) {
      p.interaction_backward.push_back(memory_op("dlrm_dcn_cross_bwd", 6 * b * d0 * a));
      p.interaction_backward.push_back(gemm_op("dlrm_dcn_v_wgrad", r, d0, b, a));
      p.interaction_backward.push_back(gemm_op("dlrm_dcn_v_dgrad", b, r, d0, a));
      p.interaction_backward.push_back(gemm_op("dlrm_dcn_u_wgrad", d0, r, b, a));
      p.interaction_backward.push_back(gemm_op("dlrm_dcn_u_dgrad", b, d0, r, a));
    }
    p.interaction_backward.push_back(memory_op("dlrm_dcn_split_bwd", 2 * b * d0 * a));
  }

  dense_mlp(p.top_forward, p.top_backward, b, as_double(dlrm_interaction_width(m)), m.top_mlp, a, false,
            true);
  p.top_forward.push_back(memory_op("dlrm_bce_loss", 2 * b * a));
  p.top_backward.insert(p.top_backward.begin(), memory_op("dlrm_bce_loss_bwd", 2 * b * a));
  return p;
}

double dlrm_bottom_parameters(const DlrmSpec& m) {
  using namespace dlrm_dense;
  return mlp_parameters(as_double(m.dense_features), m.bottom_mlp);
}

double dlrm_interaction_parameters(const DlrmSpec& m) {
  using namespace dlrm_dense;
  if (m.interaction == Interaction::dot) return 0.0;
  const double d0 = vectors(m) * as_double(m.embedding_dim());
  return as_double(m.dcn_layers) * (2 * d0 * as_double(m.dcn_low_rank) + d0);
}

double dlrm_top_parameters(const DlrmSpec& m) {
  using namespace dlrm_dense;
  return mlp_parameters(as_double(dlrm_interaction_width(m)), m.top_mlp);
}

double dlrm_dense_parameters(const DlrmSpec& m) {
  using namespace dlrm_dense;
  return dlrm_bottom_parameters(m) + dlrm_interaction_parameters(m) + dlrm_top_parameters(m);
}

double dlrm_embedding_parameters(const DlrmSpec& m) {
  using namespace dlrm_dense;
  double sum = 0.0;
  for (const config::EmbeddingTable& t : m.tables) sum += as_double(t.rows) * as_double(t.dim);
  return sum;
}

double dlrm_model_flops_per_iteration(const DlrmSpec& m, std::int64_t global_batch) {
  using namespace dlrm_dense;
  const double f = vectors(m);
  const double d = as_double(m.embedding_dim());
  double forward = mlp_forward_flops(as_double(m.dense_features), m.bottom_mlp) +
                   mlp_forward_flops(as_double(dlrm_interaction_width(m)), m.top_mlp);
  if (m.interaction == Interaction::dot) {
    forward += 2 * f * f * d;
  } else {
    forward += as_double(m.dcn_layers) * 4 * f * d * as_double(m.dcn_low_rank);
  }
  return 3 * forward * as_double(global_batch);
}

double dlrm_dense_activation_bytes(const DlrmSpec& m, std::int64_t samples, config::Precision precision) {
  using namespace dlrm_dense;
  const double a = activation_bytes_per_element(precision);
  const double b = as_double(samples);
  double widths = 0.0;
  for (const std::int64_t w : m.bottom_mlp) widths += 2 * as_double(w);  // linear and ReLU outputs
  for (const std::int64_t w : m.top_mlp) widths += 2 * as_double(w);
  const double f = vectors(m);
  const double d = as_double(m.embedding_dim());
  widths += f * d + as_double(dlrm_interaction_width(m));  // the stacked vectors and the top MLP's input
  if (m.interaction == Interaction::dcn_v2) {
    widths += as_double(m.dcn_layers) * (f * d + as_double(m.dcn_low_rank) + f * d);
  } else {
    widths += f * f;  // Z
  }
  return b * widths * a;
}

double optimizer_state_bytes_per_value(config::Optimizer optimizer) {
  switch (optimizer) {
    case config::Optimizer::sgd:
      return 0.0;
    case config::Optimizer::adagrad:
      return 4.0;
    case config::Optimizer::adam:
      return 8.0;
  }
  return 0.0;
}

double embedding_table_state_bytes(const config::EmbeddingTable& table, config::Precision embedding_precision,
                                   config::Optimizer optimizer) {
  const double per_value = activation_bytes_per_element(embedding_precision) + optimizer_state_bytes_per_value(optimizer);
  return static_cast<double>(table.rows) * static_cast<double>(table.dim) * per_value;
}

double dlrm_state_bytes(const config::DlrmSpec& model, config::Optimizer optimizer) {
  const double state = optimizer_state_bytes_per_value(optimizer);
  const double rows = activation_bytes_per_element(model.embedding_precision) + state;
  return dlrm_dense_parameters(model) * (kDenseBytes + state) + dlrm_embedding_parameters(model) * rows;
}

}  // namespace dtsim::models
