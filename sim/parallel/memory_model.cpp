#include "parallel/memory_model.hpp"

#include <algorithm>
#include <vector>

#include "core/units.hpp"
#include "models/mlp/mlp.hpp"
#include "models/transformer/layer_kinds.hpp"
#include "models/transformer/moe.hpp"
#include "models/transformer/mtp.hpp"
#include "models/transformer/transformer.hpp"
#include "parallel/feasibility.hpp"
#include "parallel/layer_ops.hpp"
#include "parallel/pipeline_schedule.hpp"
#include "parallel/zero3.hpp"

namespace dtsim::parallel {

namespace {

// Parameters a stage's GPU holds, from its layers of each kind (`layers`, per models::LayerKinds kind).
GpuParameters parameters_with_layers(const config::Scenario& s, const models::LayerKinds& kinds,
                                     std::int64_t stage, const std::vector<std::int64_t>& layers) {
  double split = 0.0;  // over the tensor group
  double whole = 0.0;  // on every tensor rank
  double experts = 0.0;
  for (std::size_t k = 0; k < kinds.count(); ++k) {
    const config::TransformerSpec& m = kinds.model(k);
    const double n = static_cast<double>(layers[k]);
    const double routed = models::routed_expert_parameters(m);
    const double replicated = models::tensor_replicated_parameters(m);
    split += n * (models::parameters_per_layer(m) - routed - replicated);
    whole += n * replicated;
    experts += n * layer_parameters_per_gpu(s, m).experts;
  }
  if (stage == 0) split += models::embedding_parameters(s.model);
  if (stage == s.parallelism.pipeline - 1) {
    split += models::head_parameters(s.model);
    if (s.model.mtp_layers > 0) {
      // Multi-token prediction (models/transformer/mtp.hpp): each module's projection, norms and layer
      // of the last layer's kind, and a copy of the embedding table unless the stage holds it already.
      const config::TransformerSpec& m = kinds.model(kinds.of_layer(s.model.layers - 1));
      const double n = static_cast<double>(s.model.mtp_layers);
      const double routed = models::routed_expert_parameters(m);
      const double replicated = models::tensor_replicated_parameters(m);
      split +=
          n * (models::parameters_per_layer(m) - routed - replicated + models::mtp_projection_parameters(m));
      whole += n * replicated;
      experts += n * layer_parameters_per_gpu(s, m).experts;
      if (stage > 0) split += models::embedding_parameters(s.model);
    }
  }
  return {split / static_cast<double>(s.parallelism.tensor) + whole, experts};
}

// What a layer of one kind keeps and needs (memory per micro-batch).
struct KindTerms {
  double activation_bytes = 0.0;
  double working_set_bytes = 0.0;
  double w_bytes = 0.0;  // zb-h1 only: what the layer's deferred W reads
};

// What every stage's estimate shares, computed once per plan.
struct PlanTerms {
  std::vector<std::int64_t> chunks;  // chunk_layers
  std::int64_t micro_batches = 0;
  std::vector<KindTerms> kinds;  // per models::LayerKinds kind
  double zero3_gathered = 0.0;
  double head_w_bytes = 0.0;  // zb-h1 only: the head's (the logits' weight gradient)
  double mtp_projection_w_bytes = 0.0;  // zb-h1 only: a multi-token prediction module's projection's
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

PlanTerms plan_terms(const config::Scenario& s, const models::LayerKinds& kinds) {
  const auto& par = s.parallelism;
  PlanTerms out{.chunks = model_chunk_layers(s.model, par.pipeline, par.virtual_stages),
                .micro_batches = micro_batches(s),
                .kinds = {}};
  const bool zero_bubble = par.schedule == config::Schedule::zero_bubble_h1 && par.pipeline > 1;
  const models::ShardConfig shard = shard_config(s);
  for (std::size_t k = 0; k < kinds.count(); ++k) {
    const config::TransformerSpec& model = kinds.model(k);
    out.kinds.push_back(KindTerms{
        .activation_bytes = layer_activation_bytes(s, model),
        .working_set_bytes = layer_working_set_bytes(s, model),
        .w_bytes = zero_bubble ? weight_grad_set_bytes(s, models::transformer_layer(model, shard)) : 0.0});
    if (par.zero_stage >= 3)
      out.zero3_gathered = std::max(out.zero3_gathered, zero3_gathered_parameters(s, model));
  }
  if (zero_bubble) out.head_w_bytes = weight_grad_set_bytes(s, models::head_layer(s.model, shard));
  if (zero_bubble && s.model.mtp_layers > 0)
    out.mtp_projection_w_bytes = weight_grad_set_bytes(s, models::mtp_projection_layer(s.model, shard));
  return out;
}

}  // namespace

GpuParameters layer_parameters_per_gpu(const config::Scenario& s,
                                       const config::TransformerSpec& layer_model) {
  const double t = static_cast<double>(s.parallelism.tensor);
  const double routed = models::routed_expert_parameters(layer_model);
  const double whole = models::tensor_replicated_parameters(layer_model);  // on every tensor rank
  return {(models::parameters_per_layer(layer_model) - routed - whole) / t + whole,
          routed / static_cast<double>(s.parallelism.expert_tensor_degree() * s.parallelism.expert)};
}

GpuParameters layer_parameters_per_gpu(const config::Scenario& s) {
  return layer_parameters_per_gpu(s, s.model);
}

std::vector<std::int64_t> stage_kind_layers(const models::LayerKinds& kinds,
                                            const std::vector<std::int64_t>& chunks, std::int64_t p,
                                            std::int64_t stage) {
  if (kinds.count() == 1) return {stage_layers(chunks, p, stage)};
  std::vector<std::int64_t> out(kinds.count(), 0);
  const std::vector<std::int64_t> first = chunk_first_layers(chunks);
  for (std::size_t c = static_cast<std::size_t>(stage); c < chunks.size(); c += static_cast<std::size_t>(p)) {
    const std::vector<std::int64_t> counts = kinds.counts(first[c], first[c] + chunks[c]);
    for (std::size_t k = 0; k < out.size(); ++k) out[k] += counts[k];
  }
  return out;
}

GpuParameters stage_parameters_per_gpu(const config::Scenario& s, std::int64_t stage) {
  const models::LayerKinds kinds(s.model);
  const std::int64_t p = s.parallelism.pipeline;
  const std::vector<std::int64_t> chunks = model_chunk_layers(s.model, p, s.parallelism.virtual_stages);
  return parameters_with_layers(s, kinds, stage, stage_kind_layers(kinds, chunks, p, stage));
}

GpuParameters stage_extra_parameters(const config::Scenario& s, std::int64_t stage) {
  const models::LayerKinds kinds(s.model);
  return parameters_with_layers(s, kinds, stage, std::vector<std::int64_t>(kinds.count(), 0));
}

namespace {

MemoryEstimate stage_memory(const config::Scenario& s, const models::LayerKinds& kinds, const PlanTerms& plan,
                            std::int64_t stage) {
  const auto& par = s.parallelism;
  const auto& model = s.model;
  const double t = static_cast<double>(par.tensor);
  const double d = static_cast<double>(par.data) * static_cast<double>(par.context);
  const bool first = stage == 0;
  const bool last = stage == par.pipeline - 1;
  // The routed experts' states are sharded over the expert_data group (ParallelismSpec::expert_data_degree).
  const std::vector<std::int64_t> kind_layers = stage_kind_layers(kinds, plan.chunks, par.pipeline, stage);
  const GpuParameters held = parameters_with_layers(s, kinds, stage, kind_layers);
  const double params = held.dense;
  const double experts = held.experts;
  const double ed = static_cast<double>(par.expert_data_degree());

  const ParameterBytes b = parameter_bytes(s.training);
  const bool shard_optimizer = par.distributed_optimizer || par.zero_stage >= 1;
  MemoryEstimate e;
  e.weights_bytes = params * b.weights / (par.zero_stage >= 3 ? d : 1.0) +
                    experts * b.weights / (par.zero_stage >= 3 ? ed : 1.0);
  e.gradients_bytes = params * b.gradients / (par.zero_stage >= 2 ? d : 1.0) +
                      experts * b.gradients / (par.zero_stage >= 2 ? ed : 1.0);
  e.optimizer_bytes = params * b.optimizer / (shard_optimizer ? d : 1.0) +
                      experts * b.optimizer / (shard_optimizer ? ed : 1.0);
  if (par.zero_stage >= 3) {
    // The embedding and the output layer are gathered whole for their use (FSDP2 units of their own);
    // prefetching, beside one layer's parameters (half the two layers' it holds), on demand alone.
    const double unit = std::max(first ? models::embedding_parameters(model) : 0.0,
                                 last ? zero3_head_use_parameters(model) : 0.0) /
                        t;
    const bool prefetch = par.zero3.fetch == config::Zero3Fetch::prefetch;
    e.weights_bytes +=
        std::max(plan.zero3_gathered, unit + (prefetch ? plan.zero3_gathered / 2 : 0.0)) * b.weights;
  }

  // The stage's layers: their kept activations and W reads summed, the largest working set of a kind it
  // holds (the first kind's on a stage without layers).
  double layers = 0.0;
  double kept = 0.0;
  double w_read = last ? plan.head_w_bytes : 0.0;
  double working_set = 0.0;
  for (std::size_t k = 0; k < kinds.count(); ++k) {
    const auto n = static_cast<double>(kind_layers[k]);
    layers += n;
    kept += n * plan.kinds[k].activation_bytes;
    w_read += n * plan.kinds[k].w_bytes;
    if (n > 0) working_set = std::max(working_set, plan.kinds[k].working_set_bytes);
  }
  if (layers == 0) working_set = plan.kinds[0].working_set_bytes;
  // Multi-token prediction on the last stage: per micro-batch held, each module's layer (of the last
  // layer's kind) and its projection's inputs (the two norms' and the concatenation, 4 x tokens x h x a
  // on the rank's own tokens).
  double mtp_kept = 0.0;
  double mtp_w_read = 0.0;
  if (last && model.mtp_layers > 0) {
    const KindTerms& terms = plan.kinds[kinds.of_layer(model.layers - 1)];
    const double a = models::activation_bytes_per_element(s.training.precision);
    const double own_tokens = static_cast<double>(s.training.micro_batch_size) *
                              static_cast<double>(model.seq_length) / static_cast<double>(par.context) /
                              (par.sequence_parallel ? t : 1.0);
    const double n = static_cast<double>(model.mtp_layers);
    mtp_kept = n * (terms.activation_bytes + 4 * own_tokens * static_cast<double>(model.hidden_size) * a);
    // Under zb-h1 each module's W reads its layer's, its projection's and its head's.
    mtp_w_read = n * (terms.w_bytes + plan.mtp_projection_w_bytes + plan.head_w_bytes);
    working_set = std::max(working_set, terms.working_set_bytes);
  }
  if (par.schedule == config::Schedule::zero_bubble_h1 && par.pipeline > 1 && stage > 0) {
    // Micro-batches waiting only for their W hold what W reads instead of the layers' activations (the
    // last stage's also the head's logits gradient): pipeline_schedule.hpp, zero_bubble_peak.
    e.activations_bytes =
        zero_bubble_peak(par.pipeline, stage, plan.micro_batches, kept + mtp_kept, w_read + mtp_w_read) +
        working_set;
  } else {
    // Layer-micro-batches in flight, each at the mean of the stage's layers (exact unless an interleaved
    // stage's chunks hold different kinds).
    const double in_flight = peak_in_flight_layers(par.schedule, par.pipeline, stage, plan.micro_batches,
                                                   par.virtual_stages, plan.chunks, par.expert_comm_overlap);
    const double per_layer = kinds.count() == 1 ? plan.kinds[0].activation_bytes
                             : layers > 0       ? kept / layers
                                                : 0.0;
    e.activations_bytes = in_flight * per_layer + working_set;
    if (mtp_kept > 0.0) {
      // The micro-batches of the last chunk (where the modules run) the stage holds at its peak: the count
      // with one layer in that chunk and none in the others.
      std::vector<std::int64_t> last_chunk_only(plan.chunks.size(), 0);
      last_chunk_only.back() = 1;
      e.activations_bytes +=
          mtp_kept * peak_in_flight_layers(par.schedule, par.pipeline, stage, plan.micro_batches,
                                           par.virtual_stages, last_chunk_only, par.expert_comm_overlap);
    }
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
double stored_layer_activation_bytes(const config::Scenario& s, const config::TransformerSpec& m,
                                     config::Recompute recompute) {
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
  // Q, K and V (not kept when selective recompute reruns latent attention's up projections,
  // recompute_modules 'mla_up_proj': models/transformer/mla.hpp), the attention output, the MLP's
  // intermediates.
  const bool rerun_up = m.mla && selective && modules.mla_up_proj;
  const double qkv =
      rerun_up ? 0.0 : 2 * sb * query_width + 2 * sb * kv * (m.query_key_dim() + m.value_dim());
  const double split = (qkv + 2 * sb * width + mlp_intermediate) * scale / t;
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

double layer_activation_bytes(const config::Scenario& s, const config::TransformerSpec& layer_model) {
  return stored_layer_activation_bytes(s, layer_model, s.training.activation_recompute);
}

double layer_activation_bytes(const config::Scenario& s) { return layer_activation_bytes(s, s.model); }

double layer_working_set_bytes(const config::Scenario& s, const config::TransformerSpec& layer_model) {
  return stored_layer_activation_bytes(s, layer_model, config::Recompute::none) -
         layer_activation_bytes(s, layer_model);
}

double layer_working_set_bytes(const config::Scenario& s) { return layer_working_set_bytes(s, s.model); }

MemoryEstimate memory_per_gpu(const config::Scenario& s) {
  // Every stage: a middle stage may hold a layer more than the ends (chunk_layers), and under 1F1B the
  // micro-batches in flight fall by one per stage while its layers may rise by one (Llama 3 405B, 126
  // layers on 16 stages: stage 1 keeps 8 x 15 layer activations against stage 0's 7 x 16).
  const models::LayerKinds kinds(s.model);
  const PlanTerms plan = plan_terms(s, kinds);
  MemoryEstimate most = stage_memory(s, kinds, plan, 0);
  for (std::int64_t stage = 1; stage < s.parallelism.pipeline; ++stage) {
    const MemoryEstimate e = stage_memory(s, kinds, plan, stage);
    if (e.total_bytes() > most.total_bytes()) most = e;
  }
  return most;
}

}  // namespace dtsim::parallel
