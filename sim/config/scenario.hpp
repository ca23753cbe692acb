// Scenario v1, typed and resolved: the only form of a scenario the rest of dtsim sees.
// JSON keys and their meaning are documented in docs/scenario-and-result.md ("Scenario v1"); the loader in
// scenario_loader.hpp validates strictly and resolves presets and hardware profiles.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/stack_support.hpp"
#include "config/data_parallel.hpp"
#include "config/dlrm.hpp"
#include "config/failures.hpp"
#include "config/input_pipeline.hpp"
#include "config/hardware.hpp"
#include "config/layer_table.hpp"
#include "config/mixed_gpus.hpp"
#include "config/speed_factors.hpp"
#include "core/units.hpp"

namespace dtsim::config {

enum class MlpKind { gelu, swiglu };
// What the model is: a decoder-only transformer, or a plain multi-layer perceptron (models/mlp), which
// uses layers, hidden_size, input_size and output_size (its other fields are neutral placeholders).
enum class ModelKind { transformer, mlp };
enum class AttentionKind { standard, flash };
// How the memory-bound work of a layer (norms, rotary embeddings, activation, biases, residual additions,
// layout copies) runs: fused kernels (Megatron-Core, Transformer Engine, torch.compile); the TorchScript-
// and apex-fused kernels of Megatron-LM of 2020-2022 beside the bias, gradient and layout kernels it ran
// unfused (scripted); or one eager PyTorch kernel per operation (eager), as torchtitan writes its modules
// or as Hugging Face transformers does (hf_eager: GPT-2's GELU as eager tanh arithmetic);
// models/transformer/elementwise.hpp has the passes and their sources.
enum class ElementwiseKernels { fused, scripted, eager, hf_eager };
// Every value of each, in the order error messages list them (the readers of scenarios and software
// stacks choose among these).
inline constexpr std::array kAttentionKinds{AttentionKind::standard, AttentionKind::flash};
// How a layer's parameter gradients are accumulated over the micro-batches of an iteration, besides the
// GEMMs that compute them (models/transformer/transformer.cpp, grad_accumulation): fused, each linear
// weight's gradient accumulated by its weight-gradient GEMM (Megatron's gradient_accumulation_fusion)
// and every other tensor (norm weights, biases) added into its gradient by a kernel of its own each
// micro-batch; unfused, every tensor so; none, no kernel of its own (one micro-batch per step, or a
// stack that reduces each micro-batch's gradients instead).
enum class GradAccumulation { fused, unfused, none };
inline constexpr std::array kGradAccumulations{GradAccumulation::fused, GradAccumulation::unfused,
                                               GradAccumulation::none};
// How an FP8 run scales and casts the operands of its FP8 GEMMs (models/transformer/linear.hpp):
// delayed, Transformer Engine's DelayedScaling (each scale from earlier iterations' amax history, so the
// norm before a linear writes FP8 itself and the FP8 weights are cast once per iteration); tensorwise,
// current per-tensor scaling (torchao.float8's default, Transformer Engine's Float8CurrentScaling): each
// operand's amax is read before it is cast, weights included, every micro-batch.
enum class Fp8Recipe { delayed, tensorwise };
inline constexpr std::array kFp8Recipes{Fp8Recipe::delayed, Fp8Recipe::tensorwise};
inline constexpr std::array kElementwiseKernels{ElementwiseKernels::fused, ElementwiseKernels::scripted,
                                                ElementwiseKernels::eager, ElementwiseKernels::hf_eager};

// A mixture-of-experts MLP in every layer but the first first_dense_layers, which have a dense MLP of the
// model's ffn_hidden_size (DeepSeek-V3's first_k_dense_replace = 3; Megatron-Core's --moe-layer-freq;
// models/transformer/layer_kinds.hpp), models/transformer/moe.hpp has the costs and their sources:
// each token goes to top_k of `experts` routed experts (FFN width expert_ffn_hidden_size, the model's
// mlp kind) and through the shared experts, which every token passes (their widths summed:
// shared_ffn_hidden_size; 0 without). load_imbalance: tokens of the busiest expert-parallel rank over
// the mean (1: balanced, as an auxiliary loss or a forced balance keeps it); the slowest rank sets the
// pace. capacity_factor: tokens dropped beyond and padded up to capacity_factor x the mean per expert
// (GShard, Switch); absent: dropless.
// Which experts a token goes to, for the exchanges' traffic (models/transformer/moe.hpp, distinct
// destinations): uniform, k distinct experts drawn evenly (a trained, balanced router); round_robin, token t
// the k consecutive experts t k .. t k + k - 1 (mod experts), the fake balanced gate NeMo AutoModel
// benchmarks with (nemo_automodel/components/moe/layers.py, FakeBalancedGate: arange(T k) % E).
enum class MoeRouting { uniform, round_robin };
inline constexpr std::array kMoeRoutings{MoeRouting::uniform, MoeRouting::round_robin};

struct MoeSpec {
  std::int64_t experts = 0;
  std::int64_t top_k = 1;
  std::int64_t expert_ffn_hidden_size = 0;
  std::int64_t shared_ffn_hidden_size = 0;
  double load_imbalance = 1.0;
  std::optional<double> capacity_factor;
  // Node-limited routing: each token's experts on at most this many expert-parallel nodes (DeepSeek-V3's
  // M = 4: DeepSeek-AI 2024, arXiv 2412.19437, Sec. 2.1.2). Absent: any experts.
  std::optional<std::int64_t> max_nodes_per_token;
  std::int64_t first_dense_layers = 0;
  MoeRouting routing = MoeRouting::uniform;
  // Tokens of the busiest expert over the mean, which its grouped GEMMs and exchanges carry.
  double busiest_factor() const { return capacity_factor.value_or(load_imbalance); }
  bool operator==(const MoeSpec&) const = default;
};

// Multi-head latent attention (models/transformer/mla.hpp has the costs and their sources): queries and
// keys/values projected down to a latent of rank q_lora_rank (0: queries projected directly) and
// kv_lora_rank, then up to every head; each query and key head qk_nope_head_dim + qk_rope_head_dim wide
// (the rotary part of the key shared by the heads), each value head v_head_dim.
struct MlaSpec {
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  bool operator==(const MlaSpec&) const = default;
};

// Sliding-window (local) attention: each query sees the `window` most recent positions, itself
// included, instead of all earlier ones (Mistral 7B, Jiang et al. 2023, arXiv 2310.06825; GPT-OSS, OpenAI
// 2025, arXiv 2508.10925, which alternates banded-window and dense layers). full_attention_every N > 0: every
// N-th layer (1-based layers N, 2N, ...) keeps full attention, as Megatron-Core's --window-attn-skip-freq
// N (megatron/core/transformer/utils.py, is_layer_window_attention); 0: every layer slides. Which layer is
// which: models/transformer/layer_kinds.hpp; costs: models/transformer/transformer.hpp.
struct SlidingWindowSpec {
  std::int64_t window = 0;
  std::int64_t full_attention_every = 0;
  bool operator==(const SlidingWindowSpec&) const = default;
};

struct TransformerSpec {
  std::string preset;  // preset id it came from, "" when given inline
  ModelKind kind = ModelKind::transformer;
  std::int64_t layers = 0;
  std::int64_t hidden_size = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  // Width of one attention head; 0: hidden_size / heads. Models such as Qwen3-32B (64 heads of 128
  // on a hidden size of 5120) project to heads x head_dim and back.
  std::int64_t head_dim = 0;
  std::int64_t ffn_hidden_size = 0;
  std::int64_t vocab_size = 0;
  std::int64_t seq_length = 0;
  MlpKind mlp = MlpKind::gelu;
  AttentionKind attention = AttentionKind::flash;
  ElementwiseKernels elementwise_kernels = ElementwiseKernels::fused;
  bool tied_embeddings = false;
  // The vocabulary is padded to a multiple of vocab_padding x the tensor-parallel degree for the
  // embedding and the logits (Megatron-LM's --make-vocab-size-divisible-by, 128 by default); 1: not
  // padded (torchtitan, Hugging Face transformers). Costs only: parameter counts keep vocab_size.
  std::int64_t vocab_padding = 128;
  std::int64_t input_size = 0;   // mlp only
  std::int64_t output_size = 0;  // mlp only
  std::optional<MoeSpec> moe;    // absent: a dense MLP in every layer (ffn_hidden_size wide)
  std::optional<MlaSpec> mla;    // absent: multi-head (or grouped-query) attention
  std::optional<SlidingWindowSpec> sliding_window;  // absent: every layer attends to all earlier positions
  // Multi-token prediction modules on the last pipeline stage (models/transformer/mtp.hpp; DeepSeek-V3's
  // num_nextn_predict_layers, Megatron-Core's --mtp-num-layers); 0: none.
  std::int64_t mtp_layers = 0;

  double attention_head_dim() const {
    return head_dim > 0 ? static_cast<double>(head_dim)
                        : static_cast<double>(hidden_size) / static_cast<double>(heads);
  }
  // A query (and key) head's width and a value head's: attention_head_dim() both, unless the model has
  // latent attention (MlaSpec).
  double query_key_dim() const {
    return mla ? static_cast<double>(mla->qk_nope_head_dim + mla->qk_rope_head_dim) : attention_head_dim();
  }
  double value_dim() const { return mla ? static_cast<double>(mla->v_head_dim) : attention_head_dim(); }
  // The attention output's width, heads x value_dim(): the output projection's input.
  double attention_width() const { return static_cast<double>(heads) * value_dim(); }
};

// fat_tree: all NICs of a node on the node's leaf switch. rail_optimized: NIC i of every node of a rail
// group on leaf i of that group (docs/networks.md "Topology").
enum class TopologyKind { fat_tree, rail_optimized };

// All-reduce algorithm: NCCL-like choice by predicted time, or one forced (where it does not apply to
// a group, e.g. tree inside one node, the ring is used). network/collective_cost.hpp.
enum class AllReduceAlgorithm { automatic, ring, tree, hierarchical, nvls, halving_doubling };

// NCCL protocol of collectives: NCCL-like choice by predicted time, or one forced (Simple where it does
// not apply). network/nccl_protocol.hpp.
enum class CollectiveProtocol { automatic, ll, ll128, simple };

struct NetworkSpec {
  std::string fabric;  // FabricProfile id
  double nic_gbps = 0.0;
  int nics_per_node = 0;
  TopologyKind topology = TopologyKind::fat_tree;
  double oversubscription = 1.0;  // leaf tier: leaf downlink over uplink bandwidth
  // Nodes under one leaf (fat_tree) or in one rail group (rail_optimized); 1 puts every inter-node
  // transfer across the leaf's uplinks.
  std::int64_t nodes_per_leaf = 1;
  // Leaves (rail groups) under one spine tier (a pod); absent: one pod, two tiers.
  std::optional<std::int64_t> leaves_per_pod;
  double core_oversubscription = 1.0;  // spine tier (pods to core), with leaves_per_pod
  AllReduceAlgorithm all_reduce_algorithm = AllReduceAlgorithm::automatic;
  CollectiveProtocol protocol = CollectiveProtocol::automatic;
};

// A cluster of `nodes` nodes of one profile. `gpus` (optional) uses part of each node: gpus / nodes GPUs
// of every node, as single-GPU and single-node studies need (2 or 4 GPUs of an 8-GPU node). The loader
// then narrows Scenario::node to the GPUs in use (gpus_per_node, and the NICs those GPUs reach: the
// profile's NICs per GPU, at least one), so every later stage sees a node of that many GPUs.
struct ClusterSpec {
  std::string node_id;
  std::int64_t nodes = 0;
  std::optional<std::int64_t> gpus;   // as given; absent: every GPU of every node
  std::int64_t node_gpus = 0;         // GPUs of the node profile, used or not
  NetworkSpec network;
  std::vector<SpeedFactor> speed_factors;  // GPUs and NICs slower or faster than their profiles
  std::vector<MixedGpus> mixed_gpus;        // nodes whose GPUs are another profile's (mixed generations)
};

// How a mixture of experts exchanges its tokens over the expert-parallel group (models/transformer/moe.hpp):
// NCCL's all-to-all (Megatron-Core's MoEAlltoAllTokenDispatcher), or DeepEP's node-aware normal kernels
// (each token once per destination node over RDMA, then NVLink inside the node).
enum class MoeDispatcher { all_to_all, deepep };
inline constexpr std::array kMoeDispatchers{MoeDispatcher::all_to_all, MoeDispatcher::deepep};

// The pipeline schedule (parallel/pipeline_schedule.hpp): 1F1B, GPipe, interleaved 1F1B, zero bubble ZB-H1.
enum class Schedule { one_f_one_b, gpipe, interleaved, zero_bubble_h1 };

// Pipeline transfers: asynchronous sends that compute does not wait for (Megatron-Core's overlapped
// p2p), or Megatron-LM's batched send/recv after which the sender waits for completion.
// overlapped_if_interleaved is Megatron-Core's rule: overlapped with the interleaved schedule, blocking
// with 1F1B and GPipe (Megatron-LM's arguments.py turns overlap_p2p_comm off for the non-interleaved
// schedule, whose transfers are batch_isend_irecv, a wait on every request and a device synchronize).
// The rule stays in the scenario (a search changes the schedule); pipeline_comm_in_effect applies it.
enum class PipelineComm { overlapped, blocking, overlapped_if_interleaved };
inline constexpr std::array kPipelineComms{PipelineComm::overlapped, PipelineComm::blocking,
                                           PipelineComm::overlapped_if_interleaved};

// How a ZeRO-3 / fully sharded implementation moves the parameters (parallelism.zero3, with
// zero_stage 3). The defaults describe FSDP-style engines (PyTorch FSDP, Megatron-Core's FSDP, DeepSpeed
// since it coalesces its gathers): one flat all-gather per layer, issued one layer ahead, the gathered
// layer kept through recompute and backward. The alternatives describe DeepSpeed's ZeRO-3 as it shipped
// in 2021 (docs/parallelism.md, "ZeRO-3 implementations").
//   fetch:        prefetch  - a layer's gather starts when the previous layer starts; the layer keeps its
//                             parameters through recompute and backward
//                 on_demand - each use of the weights (forward, full recompute, backward) gathers when it
//                             is reached, after a device synchronization (the rank's compute and
//                             reductions so far), waits for the gather and releases the parameters after
//   granularity:  layer     - one all-gather / reduce-scatter per layer
//                 tensor    - one per parameter tensor; tensors of fewer than persistence_threshold elements
//                             (norms, biases) travel with the next larger tensor
//   buffers:      flat      - collectives on one flat buffer
//                 list      - torch.distributed's list API: the all-gather's output is copied into one
//                             tensor per rank, the reduce-scatter's input flattened from one per rank
//                             (one copy kernel per rank and call)
enum class Zero3Fetch { prefetch, on_demand };
enum class Zero3Granularity { layer, tensor };
enum class CollectiveBuffers { flat, list, per_parameter };

struct Zero3Spec {
  Zero3Fetch fetch = Zero3Fetch::prefetch;
  Zero3Granularity granularity = Zero3Granularity::layer;
  CollectiveBuffers buffers = CollectiveBuffers::flat;
  double persistence_threshold = 1e5;  // elements; DeepSpeed's stage3_param_persistence_threshold default

  bool operator==(const Zero3Spec&) const = default;
};

// Dimensions of the rank mesh, in the order ranks are numbered along them (first fastest).
enum class MeshDim { tensor, context, data, pipeline };
inline constexpr int kMeshDims = 4;
using MeshOrder = std::array<MeshDim, kMeshDims>;

struct ParallelismSpec {
  std::int64_t data = 1;
  std::int64_t tensor = 1;
  std::int64_t pipeline = 1;
  std::int64_t virtual_stages = 1;
  bool sequence_parallel = false;
  std::int64_t context = 1;
  std::int64_t expert = 1;
  // Expert tensor parallelism (Megatron-Core --expert-tensor-parallel-size): the routed experts' widths
  // split over this many ranks; absent, the tensor degree (the attention's). 1 with tensor > 1 is
  // Megatron-Core's MoE parallel folding: the experts are not split, and the expert-parallel group takes
  // the stage's ranks in tensor, context, data order (parallel/mesh.hpp).
  std::optional<std::int64_t> expert_tensor;
  int zero_stage = 0;
  Zero3Spec zero3;  // used with zero_stage 3 (a stack's is kept at other stages, for a search)
  bool distributed_optimizer = false;
  // Tensor-parallel all-gathers and reduce-scatters pipelined with their adjacent GEMMs (Megatron-Core
  // --tp-comm-overlap, Transformer Engine userbuffers), where sequence parallelism is on: the scenario's
  // key, else its software stack's setting. It stays in the scenario when sequence parallelism is off
  // (a search turns it on); tp_comm_overlap_in_effect applies it.
  bool tp_comm_overlap = true;
  // A column-parallel linear's backward collectives beside the GEMMs that do not need them: the data
  // gradient's all-reduce (or reduce-scatter) beside the weight-gradient GEMM and, with sequence
  // parallelism, the input's re-gather beside the data-gradient GEMM (Megatron-LM since late 2021,
  // Transformer Engine). false: after both GEMMs, blocking (Megatron-LM of early 2021).
  bool tp_backward_overlap = true;
  Schedule schedule = Schedule::one_f_one_b;
  // Combined 1F1B (Megatron-Core --overlap-moe-expert-parallel-comm, 0.14.0 of 2025): a forward step and
  // the backward step after it run as one, layer by layer, so that each micro-batch's token exchanges run
  // beside the other's compute (parallel/pipeline_schedule.hpp, "combined"). Mixture-of-experts models.
  bool expert_comm_overlap = false;
  // Delayed weight gradients (Megatron-Core --delay-wgrad-compute, with the combined 1F1B schedule only:
  // transformer_config.py refuses it without): each layer's weight-gradient GEMMs run after its input
  // gradients, so that the token exchange after them does not wait for them (parallel/lowering.hpp,
  // emit_combined). Read only with expert_comm_overlap.
  bool delay_wgrad_compute = false;
  MoeDispatcher moe_dispatcher = MoeDispatcher::all_to_all;
  PipelineComm pipeline_comm = PipelineComm::overlapped_if_interleaved;
  // Rank placement: Megatron-LM's default numbers tensor ranks fastest, then context, data, pipeline.
  MeshOrder order{MeshDim::tensor, MeshDim::context, MeshDim::data, MeshDim::pipeline};
  EmbeddingPlan embeddings;  // DLRM models only (parallelism.embeddings)

  std::int64_t expert_tensor_degree() const { return expert_tensor.value_or(tensor); }
  // The experts are folded over the tensor ranks: split over fewer ranks than the attention.
  bool folded_experts() const { return expert_tensor_degree() != tensor; }
  // Ranks holding the same experts (their gradients are reduced and their optimizer states sharded
  // over them): a stage's ranks over expert x expert_tensor.
  std::int64_t expert_data_degree() const {
    return tensor / expert_tensor_degree() * context * data / expert;
  }
};

enum class Recompute { none, selective, full };
// adagrad: DLRM models only (dense and embedding parameters with one state each, as torch.optim.Adagrad
// and fbgemm's exact Adagrad).
enum class Optimizer { adam, sgd, adagrad };

// A throughput the user measured for this model on one GPU of the scenario's kind, at the scenario's
// precision and micro-batch (per-worker batch for layer-table models). dtsim scales its compute
// durations so that a one-GPU copy of the scenario runs at this rate (results/compute_calibration.hpp);
// communication stays as modelled.
struct MeasuredSingleGpu {
  double samples_per_s = 0.0;
  std::string source;  // where the measurement comes from (required, non-empty)
};

// The modules selective recompute reruns (Megatron-Core --recompute-modules, with
// --recompute-granularity selective; default core_attn): the attention core; the two norms before the
// attention and the MLP (their outputs are dropped after the GEMM after them reads them, and
// recomputed before its backward); a mixture of experts' activation function (the routed experts'
// activation output, the down projection's input); latent attention's up projections with their fused
// latent norms and the rotary embedding (mla_up_proj: their outputs, the queries, keys and values at
// the heads' widths, are dropped after the attention core reads them).
struct RecomputeModules {
  bool core_attn = true;
  bool layernorm = false;
  bool moe_act = false;
  bool mla_up_proj = false;
  bool operator==(const RecomputeModules&) const = default;
};

struct TrainingSpec {
  std::int64_t global_batch_size = 0;
  std::int64_t micro_batch_size = 1;
  Precision precision = Precision::bf16;
  Recompute activation_recompute = Recompute::none;
  RecomputeModules recompute_modules;  // with activation_recompute selective
  bool overlap_grad_reduce = true;  // data-parallel gradient reduction overlapped with backward
  // Sharded optimizers: the parameter all-gather overlapped with the next forward pass
  // (Megatron-Core --overlap-param-gather) instead of following the optimizer step.
  bool overlap_param_gather = true;
  double bucket_bytes = 40e6;  // gradient bucket size for the overlapped reduction
  Optimizer optimizer = Optimizer::adam;
  std::optional<MeasuredSingleGpu> measured_single_gpu;
  // The host that issues each rank's kernels (engine/simulate.hpp, "Host"): its cost per kernel launch
  // (framework dispatch, Python and cudaLaunchKernel), 0 when not simulated; and whether it reads a
  // value of the gradients before the optimizer step (loss-scale inf/NaN flag, gradient norm), which
  // makes it wait for the backward pass and the reductions. The defaults are megatron-core-2024's
  // (hardware_profiles/software/, with their sources): an eager PyTorch host, measured.
  double host_issue_us_per_kernel = 40.0;
  // The host's cost per launch of an eager call made once per parameter tensor outside any module (the
  // gradient-accumulation hook's add_, graph::ComputeOp::tensor_calls): no module call or autograd
  // recording around it. 7.6 us: one eager PyTorch add measured on an H100 host
  // (tests/validation/h100_kernel_classes.json, host.eager_add_host_s, kernel_class_probe.py).
  double host_issue_us_per_tensor_op = 7.6;
  // The host's time per checkpointed layer and micro-batch beyond the launches of the kernels it
  // recomputes (activation recompute: saving and restoring the RNG state, re-entering the layer's
  // forward and a nested backward in autograd), charged before the first recomputed kernel; only
  // where the host is simulated (host_issue_us_per_kernel > 0). 0 (the default, no stack states one):
  // not charged. Measured for torch.utils.checkpoint on an H100 host (docs/parallelism.md, "The host").
  double host_checkpoint_us = 0.0;
  bool host_sync_before_optimizer = true;
  GradAccumulation grad_accumulation = GradAccumulation::fused;
  // PyTorch autocast with FP32 parameters (models/transformer/autocast.hpp): the parameters, their
  // gradients and the residual stream stay FP32, and each linear casts its weight and input to the
  // 16-bit precision; false: 16-bit parameters with FP32 master weights in the optimizer (Megatron).
  bool autocast = false;
  // 16-bit training: FP32 master weights and FP32 Adam moments beside the 16-bit parameters (Megatron,
  // apex, DeepSpeed; mixed precision as Micikevicius et al. 2018 define it); false: the optimizer updates
  // the 16-bit parameters in place and keeps its moments in 16 bits (torch.optim.AdamW on BF16
  // parameters), 8 B of state per parameter instead of 18 (parallel/memory_model.hpp).
  bool master_weights = true;
  Fp8Recipe fp8_recipe = Fp8Recipe::delayed;  // how FP8 GEMM operands are scaled (precision fp8 only)
};
// The largest vocab_padding a scenario or a stack may state.
inline constexpr std::int64_t kMaxVocabPadding = 1 << 20;
// The widest attention head a model may state (TransformerSpec::head_dim).
inline constexpr std::int64_t kMaxHeadDim = 1 << 16;
inline constexpr std::int64_t kMaxMtpLayers = 64;     // model.mtp_layers
inline constexpr std::int64_t kMaxExperts = 1 << 16;  // model.moe.experts
// The largest host_issue_us_per_kernel, host_issue_us_per_tensor_op or host_checkpoint_us a scenario or
// a stack may state (one
// second per kernel or checkpoint).
inline constexpr double kMaxHostIssueUsPerKernel = 1e6;

enum class NetworkFidelity { analytic, flow, packet };
enum class RankMode { symmetric, all };

struct SimulationSpec {
  NetworkFidelity network = NetworkFidelity::analytic;
  RankMode ranks = RankMode::symmetric;
  std::uint64_t seed = 1;
  // Iterations sampled when speed factors state jitter (config/speed_factors.hpp, jitter_cv).
  std::int64_t jitter_iterations = 16;
};
inline constexpr std::int64_t kMaxJitterIterations = 1000;

// A software stack (hardware_profiles/software/<id>.json, docs/parallelism.md "Software stacks"): the implementation
// facts of a training framework at a version, which a scenario may otherwise state key by key. Each set
// field is the default of its scenario key; a key the scenario writes wins. tp_comm_overlap applies
// where sequence parallelism is on, zero3 where zero_stage is 3.
struct SoftwareStack {
  std::string id;
  std::string name;
  std::optional<AttentionKind> attention;
  std::optional<ElementwiseKernels> elementwise_kernels;
  std::optional<std::int64_t> vocab_padding;
  std::optional<PipelineComm> pipeline_comm;
  std::optional<bool> tp_backward_overlap;
  std::optional<bool> tp_comm_overlap;
  std::optional<Zero3Spec> zero3;
  std::optional<bool> overlap_grad_reduce;
  std::optional<bool> overlap_param_gather;
  std::optional<double> host_issue_us_per_kernel;
  std::optional<double> host_issue_us_per_tensor_op;
  std::optional<double> host_checkpoint_us;
  std::optional<bool> host_sync_before_optimizer;
  std::optional<GradAccumulation> grad_accumulation;
  std::optional<bool> autocast;
  std::optional<bool> master_weights;
  std::optional<Fp8Recipe> fp8_recipe;
  std::optional<StackSupport> support;  // what the framework can run ("supports"); absent: not checked
};

// A validated scenario with its hardware resolved.
struct Scenario {
  std::string source;  // file it was read from ("-" for stdin)
  std::string name;
  std::string software;  // the software stack's id ("software"); empty: none named
  std::optional<StackSupport> software_support;  // that stack's "supports" (config/stack_support.hpp)
  TransformerSpec model;
  // The workload when "model" names a layer table ({"layer_table": id}); `model` is then unused.
  std::optional<LayerTable> layer_model;
  // The workload when "model" is a recommendation model ({"kind": "dlrm", ...}); `model` is then unused.
  std::optional<DlrmSpec> dlrm;
  DataParallelSpec data_parallel;  // training keys of layer-table workloads
  ClusterSpec cluster;
  ParallelismSpec parallelism;
  TrainingSpec training;
  SimulationSpec simulation;
  std::optional<FailureSpec> failures;  // absent: the run is costed as if nothing failed
  // Where the samples come from (config/input_pipeline.hpp); absent: data is always ready.
  std::optional<InputPipelineSpec> input;
  GpuProfile gpu;
  NodeProfile node;
  FabricProfile fabric;

  std::int64_t gpu_count() const { return cluster.nodes * node.gpus_per_node; }
  // What one node's NICs move per direction, all of them together, at the fabric's efficiency and
  // through the leaf tier's oversubscription (bytes per second).
  double node_nic_bytes_per_s() const {
    return core::gbps_to_bytes_per_s(cluster.network.nic_gbps) * cluster.network.nics_per_node * fabric.efficiency /
           cluster.network.oversubscription;
  }
  // The memory of the job's smallest GPU: a plan fits when it fits there (the node profile's GPU unless
  // cluster.mixed_gpus mixes others in).
  double hbm_bytes_per_gpu() const {
    double least = gpu.hbm_bytes;
    for (const MixedGpus& e : cluster.mixed_gpus) least = std::min(least, e.gpu.hbm_bytes);
    return least;
  }
};

const char* to_string(Precision p);
const char* to_string(MlpKind m);
const char* to_string(ElementwiseKernels k);
const char* to_string(GradAccumulation g);
const char* to_string(Fp8Recipe r);
const char* to_string(AttentionKind a);
const char* to_string(Schedule s);
const char* to_string(MoeDispatcher d);
const char* to_string(MoeRouting r);
const char* to_string(Recompute r);
const char* to_string(Optimizer o);
const char* to_string(ModelKind k);
const char* to_string(NetworkFidelity n);
const char* to_string(RankMode r);
const char* to_string(TopologyKind t);
const char* to_string(IntraNodeKind k);
const char* to_string(MeshDim d);  // "tp", "cp", "dp", "pp"
const char* to_string(PipelineComm c);
const char* to_string(Zero3Fetch f);
const char* to_string(Zero3Granularity g);
const char* to_string(CollectiveBuffers b);
const char* to_string(AllReduceAlgorithm a);
const char* to_string(CollectiveProtocol p);
std::string to_string(const MeshOrder& order);  // "tp-cp-dp-pp"
// "" for the default ZeRO-3 implementation (or a stage below 3), else "<fetch>/<granularity>/<buffers>",
// e.g. "on_demand/tensor/list", with " (persistence N)" for a non-default threshold at tensor
// granularity (reports show it beside the ZeRO stage).
std::string zero3_label(const ParallelismSpec& p);
// The modules' names, in the order core_attn, layernorm, moe_act, mla_up_proj (the scenario key's values).
std::vector<const char*> recompute_module_names(const RecomputeModules& m);
// The recompute as every report shows it: "none", "full", "selective", or with modules other than the
// default "selective (core_attn, layernorm, moe_act)".
std::string recompute_label(const TrainingSpec& t);
// The ZeRO stage with its ZeRO-3 implementation when that is not the default, as every report shows
// it: "1", "3", "3 (on_demand/tensor/list)".
std::string zero_stage_label(const ParallelismSpec& p);
// The pipeline transfers as simulated: overlapped or blocking (overlapped_if_interleaved applied to the
// schedule).
PipelineComm pipeline_comm_in_effect(const ParallelismSpec& p);
// Whether the userbuffers overlap runs: tp_comm_overlap with sequence parallelism over tensor > 1 and
// the backward's collectives beside their GEMMs (which the overlap needs).
bool tp_comm_overlap_in_effect(const ParallelismSpec& p);

}  // namespace dtsim::config
