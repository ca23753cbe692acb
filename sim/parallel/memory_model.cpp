#include "parallel/memory_model.hpp"

#include <algorithm>
#include <vector>

#include "core/units.hpp"
#include "models/mlp/mlp.hpp"
#include "models/transformer/moe.hpp"
#include "models/transformer/transformer.hpp"
#include "parallel/feasibility.hpp"
#include "parallel/layer_ops.hpp"
#include "parallel/pipeline_schedule.hpp"
#include "parallel/zero3.hpp"

namespace dtsim::parallel {

namespace {

// Parameters a stage's GPU holds, from its layers.
GpuParameters parameters_with_layers(const config::Scenario& s, std::int64_t stage, double layers) {
  const double routed = models::routed_expert_parameters(s.model);
  const double whole = models::tensor_replicated_parameters(s.model);  // on every tensor rank
  double dense = layers * (models::parameters_per_layer(s.model) - routed - whole);
  if (stage == 0) dense += models::embedding_parameters(s.model);
  if (stage == s.parallelism.pipeline - 1) dense += models::head_parameters(s.model);
  return {dense / static_cast<double>(s.parallelism.tensor) + layers * whole,
          layers * layer_parameters_per_gpu(s).experts};
}

// What every stage's estimate shares, computed once per plan.
struct PlanTerms {
  std::vector<std::int64_t> chunks;  // chunk_layers
  std::int64_t micro_batches = 0;
  double layer_activation_bytes = 0.0;
  double working_set_bytes = 0.0;
  double zero3_gathered = 0.0;
  // zb-h1 only: what a layer's deferred W reads, and the head's (the logits' weight gradient).
  double layer_w_bytes = 0.0;
  double head_w_bytes = 0.0;
};

// What a program's weight-gradient pass (W) reads per micro-batch: each weight-gradient GEMM's input and
// output gradient, [tokens x k_in] and [tokens x n_out] (shapes gemm(k_in, n_out, tokens)), at the
// activations' width; an input W re-gathers over the tensor group (sequence parallelism: a weight-
// gradient all-gather of its gathered bytes) is kept as this rank's shard. An input two GEMMs share is
// counted twice: an upper bound.
double weight_grad_set_bytes(const config::Scenario& s, const models::LayerProgram& program) {
  const double a = models::activation_bytes_per_element(s.training.precision);
  const double t = static_cast<double>(s.parallelism.tensor);
  double bytes = 0.0;
  for (const models::LayerOp& op : program.backward) {
    if (!op.weight_grad) continue;
    if (op.compute.cls == graph::ComputeClass::gemm && op.role == models::CommRole::none) {
      const graph::GemmShape& g = op.compute.gemm;
      bytes += static_cast<double>(g.k) * static_cast<double>(g.m + g.n) * static_cast<double>(g.batch) * a;
    } else if (op.role == models::CommRole::tensor_all_gather) {
      bytes -= op.comm_bytes * (1.0 - 1.0 / t);
    }
  }
  return bytes;
}

PlanTerms plan_terms(const config::Scenario& s) {
  const auto& par = s.parallelism;
  PlanTerms out{.chunks = chunk_layers(s.model.layers, par.pipeline, par.virtual_stages),
                .micro_batches = micro_batches(s),
                .layer_activation_bytes = layer_activation_bytes(s),
                .working_set_bytes = layer_working_set_bytes(s),
                .zero3_gathered = par.zero_stage >= 3 ? zero3_gathered_parameters(s) : 0.0};
  if (par.schedule == config::Schedule::zero_bubble_h1 && par.pipeline > 1) {
    const models::ShardConfig shard = shard_config(s);
    out.layer_w_bytes = weight_grad_set_bytes(s, models::transformer_layer(s.model, shard));
    out.head_w_bytes = weight_grad_set_bytes(s, models::head_layer(s.model, shard));
  }
  return out;
}

}  // namespace

GpuParameters layer_parameters_per_gpu(const config::Scenario& s) {
  const double t = static_cast<double>(s.parallelism.tensor);
  const double routed = models::routed_expert_parameters(s.model);
  const double whole = models::tensor_replicated_parameters(s.model);  // on every tensor rank
  return {(models::parameters_per_layer(s.model) - routed - whole) / t + whole,
          routed / static_cast<double>(s.parallelism.expert_tensor_degree() * s.parallelism.expert)};
}

GpuParameters stage_parameters_per_gpu(const config::Scenario& s, std::int64_t stage) {
  const auto chunks = chunk_layers(s.model.layers, s.parallelism.pipeline, s.parallelism.virtual_stages);
  return parameters_with_layers(s, stage,
                                static_cast<double>(stage_layers(chunks, s.parallelism.pipeline, stage)));
}

namespace {

MemoryEstimate stage_memory(const config::Scenario& s, const PlanTerms& plan, std::int64_t stage) {
  const auto& par = s.parallelism;
  const auto& model = s.model;
  const double t = static_cast<double>(par.tensor);
  const double d = static_cast<double>(par.data) * static_cast<double>(par.context);
  const bool first = stage == 0;
  const bool last = stage == par.pipeline - 1;
  // The routed experts' states are sharded over the expert_data group (ParallelismSpec::expert_data_degree).
  const double layers = static_cast<double>(stage_layers(plan.chunks, par.pipeline, stage));
  const GpuParameters held = parameters_with_layers(s, stage, layers);
  const double params = held.dense;
  const double experts = held.experts;
  const double ed = static_cast<double>(par.expert_data_degree());

  const ParameterBytes b = parameter_bytes(s.training);
  const bool shard_optimizer = par.distributed_optimizer || par.zero_stage >= 1;
  MemoryEstimate e;
  e.weights_bytes = params * b.weights / (par.zero_stage >= 3 ? d : 1.0) + experts * b.weights;
  e.gradients_bytes = params * b.gradients / (par.zero_stage >= 2 ? d : 1.0) +
                      experts * b.gradients / (par.zero_stage >= 2 ? ed : 1.0);
  e.optimizer_bytes = params * b.optimizer / (shard_optimizer ? d : 1.0) +
                      experts * b.optimizer / (shard_optimizer ? ed : 1.0);
  if (par.zero_stage >= 3) e.weights_bytes += plan.zero3_gathered * b.weights;

  if (par.schedule == config::Schedule::zero_bubble_h1 && par.pipeline > 1 && stage > 0) {
    // Micro-batches waiting only for their W hold what W reads instead of the layers' activations (the
    // last stage's also the head's logits gradient): pipeline_schedule.hpp, zero_bubble_peak.
    const double w_read = layers * plan.layer_w_bytes + (last ? plan.head_w_bytes : 0.0);
    e.activations_bytes = zero_bubble_peak(par.pipeline, stage, plan.micro_batches,
                                           layers * plan.layer_activation_bytes, w_read) +
                          plan.working_set_bytes;
  } else {
    const double in_flight = peak_in_flight_layers(par.schedule, par.pipeline, stage, plan.micro_batches,
                                                   par.virtual_stages, plan.chunks);
    e.activations_bytes = plan.layer_activation_bytes * in_flight + plan.working_set_bytes;
  }
  const double a = models::activation_bytes_per_element(s.training.precision);
  const double tokens = static_cast<double>(s.training.micro_batch_size) *
                        static_cast<double>(model.seq_length) / static_cast<double>(par.context);
  if (first)
    e.activations_bytes += tokens * static_cast<double>(model.hidden_size) * (a + 1);  // embedding out + mask

  e.buffers_bytes = 2 * s.training.bucket_bytes + core::kGiB;
  if (last) e.buffers_bytes += tokens * static_cast<double>(model.vocab_size) / t * 4;  // FP32 logits
  return e;
}

}  // namespace

ParameterBytes parameter_bytes(config::Precision p) {
  switch (p) {
    case config::Precision::fp32:
    case config::Precision::tf32:
      return {4, 4, 8};
    case config::Precision::fp16:
      return {2, 2, 12};
    case config::Precision::bf16:
    case config::Precision::fp8:
      return {2, 4, 12};
  }
  return {};
}

ParameterBytes parameter_bytes(const config::TrainingSpec& training) {
  ParameterBytes b = parameter_bytes(training.precision);
  if (!training.master_weights && b.weights < 4) {
    // 16-bit parameters updated in place: 16-bit gradients and, for Adam, 16-bit m and v.
    b.gradients = b.weights;
    b.optimizer = training.optimizer == config::Optimizer::sgd ? 0 : 2 * b.weights;
    return b;
  }
  if (training.optimizer == config::Optimizer::sgd) b.optimizer = b.weights < 4 ? 4 : 0;
  return b;
}

namespace {

// Activation bytes one layer keeps for one micro-batch between its forward and backward when it
// recomputes `recompute` (the header's table).
double stored_layer_activation_bytes(const config::Scenario& s, config::Recompute recompute) {
  const auto& m = s.model;
  if (m.kind == config::ModelKind::mlp)
    return models::mlp_layer_activation_bytes(m, s.training.micro_batch_size, s.training.precision);
  const auto& par = s.parallelism;
  const double scale = models::activation_bytes_per_element(s.training.precision) / 2;
  const double t = static_cast<double>(par.tensor);
  const double sb = static_cast<double>(m.seq_length) / static_cast<double>(par.context) *
                    static_cast<double>(s.training.micro_batch_size);
  const double h = static_cast<double>(m.hidden_size);
  const double head_dim = m.attention_head_dim();
  const double width = m.attention_width();  // the attention output: h unless head_dim or mla say otherwise
  const double query_width = static_cast<double>(m.heads) * m.query_key_dim();
  // Latent attention keeps keys and values for every head (models/transformer/mla.hpp).
  const double kv = m.mla ? static_cast<double>(m.heads) : static_cast<double>(m.kv_heads);
  const double f = static_cast<double>(m.ffn_hidden_size);
  const bool sp = par.sequence_parallel && par.tensor > 1;
  const double replicated_div = sp ? t : 1.0;
  if (recompute == config::Recompute::full) return 2 * sb * h * scale / replicated_div;

  // 16-bit tensors scale with the precision; the two 1-byte dropout masks do not. Of the 8 sbh, the
  // two norms' outputs (the QKV and the up projection's inputs, 2 sbh each) are not kept when selective
  // recompute reruns the norms (recompute_modules 'layernorm').
  const config::RecomputeModules& modules = s.training.recompute_modules;
  const bool selective = recompute == config::Recompute::selective;
  const double kept_norm_outputs = selective && modules.layernorm ? 0.0 : 4.0;
  double replicated = ((4 + kept_norm_outputs) * sb * h * scale + 2 * sb * h) / replicated_div;
  if (m.mla) {
    // On the rank's own tokens: the down projections' outputs (the latent norms' inputs, the rotary key
    // with the key-value latent) and the normalized latents the up projections read, 2 bytes each.
    const double q_latent = static_cast<double>(m.mla->q_lora_rank);
    const double kv_latent = static_cast<double>(m.mla->kv_lora_rank);
    const double rope = static_cast<double>(m.mla->qk_rope_head_dim);
    replicated += 2 * sb * (2 * q_latent + 2 * kv_latent + rope) * scale / replicated_div;
  }
  const double per_width = m.mlp == config::MlpKind::swiglu ? 6 : 4;
  double mlp_intermediate = per_width * sb * f;
  if (m.moe) {
    // The busiest expert-parallel rank's token copies (moe.hpp): R = sb / t x top_k x e_t x busiest,
    // their expert intermediates at width f / e_t, the up GEMM's input of R copies at the full hidden
    // size (the dispatcher all-gathers the copies over the expert tensor group before the experts) and
    // the down output's gradient path after the reduce-scatter, R / e_t copies (2 h each); the shared
    // experts as a dense MLP. Written times t, as `split` divides by it.
    const double et = static_cast<double>(par.expert_tensor_degree());
    const double copies = sb * static_cast<double>(m.moe->top_k) * m.moe->busiest_factor();
    // Rerunning the experts' activation (recompute_modules 'moe_act') drops its output, the down
    // projection's input: 2 bytes per intermediate element.
    const double expert_width = per_width - (selective && modules.moe_act ? 2.0 : 0.0);
    mlp_intermediate = expert_width * copies * static_cast<double>(m.moe->expert_ffn_hidden_size) +
                       2 * (et + 1) * copies * h +
                       per_width * sb * static_cast<double>(m.moe->shared_ffn_hidden_size);
  }
  // Q, K and V, the attention output, the MLP's intermediates.
  const double split = (2 * sb * query_width + 2 * sb * kv * (m.query_key_dim() + m.value_dim()) +
                        2 * sb * width + mlp_intermediate) *
                       scale / t;
  double scores = 0.0;
  const bool keeps_scores =
      m.attention == config::AttentionKind::standard && recompute == config::Recompute::none;
  if (keeps_scores) {
    const double heads = static_cast<double>(m.heads);
    const double s_full = static_cast<double>(m.seq_length);
    // 2 B softmax output, 1 B dropout mask, 2 B dropout output per score element.
    scores = (4 * scale + 1) * heads * s_full * sb / t;
  }
  // Eager kernels (models/transformer/elementwise.hpp) keep more: each RMSNorm its FP32 input copy and
  // its output (4 bytes more per element than the fused kernel's input), the attention kernel K and V
  // repeated to every query head, and the attention output twice (the kernel's and its layout copy).
  double eager = 0.0;
  if (m.elementwise_kernels == config::ElementwiseKernels::eager ||
      m.elementwise_kernels == config::ElementwiseKernels::hf_eager) {
    const double heads = static_cast<double>(m.heads);
    if (m.mlp == config::MlpKind::swiglu) eager += 2 * 4 * sb * h / replicated_div;
    eager += (2 * (heads - kv) + heads) * sb * head_dim * 2 * scale / t;
  }
  return replicated + split + scores + eager;
}

}  // namespace

double layer_activation_bytes(const config::Scenario& s) {
  return stored_layer_activation_bytes(s, s.training.activation_recompute);
}

double layer_working_set_bytes(const config::Scenario& s) {
  return stored_layer_activation_bytes(s, config::Recompute::none) - layer_activation_bytes(s);
}

MemoryEstimate memory_per_gpu(const config::Scenario& s) {
  // Every stage: a middle stage may hold a layer more than the ends (chunk_layers), and under 1F1B the
  // micro-batches in flight fall by one per stage while its layers may rise by one (Llama 3 405B, 126
  // layers on 16 stages: stage 1 keeps 8 x 15 layer activations against stage 0's 7 x 16).
  const PlanTerms plan = plan_terms(s);
  MemoryEstimate most = stage_memory(s, plan, 0);
  for (std::int64_t stage = 1; stage < s.parallelism.pipeline; ++stage) {
    const MemoryEstimate e = stage_memory(s, plan, stage);
    if (e.total_bytes() > most.total_bytes()) most = e;
  }
  return most;
}

}  // namespace dtsim::parallel
