// The layer programs of a scenario's model (models/transformer) as ops of a task graph, ready for
// lower() to emit per rank and micro-batch: one op per distinct operator, shared by every task that
// runs it, and for a simulation of every rank, runs of compute kernels fused into one op each.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "config/scenario.hpp"
#include "graph/task_graph.hpp"
#include "models/transformer/transformer.hpp"

namespace dtsim::parallel {

// One op of a layer program, interned in the graph.
struct OpRef {
  graph::OpId op = 0;
  graph::StreamKind stream = graph::StreamKind::compute;
  graph::Category comm_category = graph::Category::tensor_comm;  // for communication ops
  graph::LabelId label = 0;
  // Compute ops: labels of the first and the last kernel (a fused op's label names both).
  graph::LabelId first_kernel_label = 0;
  graph::LabelId last_kernel_label = 0;
  double flops = 0.0;
  bool attention_core = false;
  models::RecomputeTag recompute_tag = models::RecomputeTag::none;
  bool gemm = false;
  bool host_waits = false;  // models::LayerOp::host_waits; a fused op's first kernel's
  // Pipelined with the adjacent GEMM (with_next, with_previous): one chunk (1/t of the bytes) on the
  // critical path, the rest concurrent with the GEMM; beside_next: the whole op beside the next GEMM.
  models::GemmOverlap overlap = models::GemmOverlap::none;
  graph::OpId chunk_op = 0;  // 1/t of the bytes
  graph::OpId rest_op = 0;   // (t-1)/t of the bytes
  bool weight_grad = false;  // models::LayerOp::weight_grad
};

struct Program {
  std::vector<OpRef> forward;
  std::vector<OpRef> backward;
  // Under a schedule that splits the backward pass (config::Schedule::zero_bubble_h1): its
  // input-gradient part (B) and its weight-gradient part (W), split_backward()'s; empty otherwise.
  std::vector<OpRef> input_grad = {};
  std::vector<OpRef> weight_grad = {};
};

// One kind of layer (models/transformer/layer_kinds.hpp): its program and what the scenario's activation
// recompute replays before each of its backward passes.
struct KindOps {
  Program layer;
  std::vector<OpRef> recompute;
};

struct LayerOps {
  std::vector<KindOps> kinds;  // per models::LayerKinds kind (one for a model whose layers are alike)
  Program embedding;
  Program head;
  // A multi-token prediction module's norms and projection (models/transformer/mtp.hpp); empty without.
  Program mtp_projection;
};

// How the ops of a program at index i are emitted, one after another:
//   gather_gemm   an all-gather chunk, then the GEMM it feeds beside the remaining chunks (2 ops)
//   gemm_scatter  a GEMM beside all reduce-scatter chunks but the last, then the last (2 ops)
//   beside_gemm   a collective and the GEMM after it side by side, neither waiting for the other; the
//                 op after both waits for both (2 ops)
//   compute       one compute op
//   comm          one communication op
enum class EmitPattern : std::uint8_t { gather_gemm, gemm_scatter, beside_gemm, compute, comm };
EmitPattern pattern_at(std::span<const OpRef> ops, std::size_t i);
inline std::size_t pattern_size(EmitPattern p) {
  return p == EmitPattern::gather_gemm || p == EmitPattern::gemm_scatter || p == EmitPattern::beside_gemm ? 2
                                                                                                          : 1;
}

// Interned labels: one id per distinct text.
class LabelTable {
 public:
  graph::LabelId id(graph::TaskGraph& graph, std::string_view name);

 private:
  std::map<std::string, graph::LabelId, std::less<>> ids_;
};

// Interned communication ops: one op per distinct (kind, bytes, group layout, copy kernels), so that
// every program and every rank that runs the same collective over the same layout shares its op (the
// members of a gang must: gangs.hpp).
class CommOpTable {
 public:
  graph::OpId id(graph::TaskGraph& graph, const graph::CommOp& op);

 private:
  using Key = std::tuple<int, double, graph::CommGroup, double, int, double, double>;
  std::map<Key, graph::OpId> ids_;
};

// The layouts a layer program's communication runs over (group_layouts.hpp): the tensor-parallel
// group, the context ring's exchange and, for a mixture-of-experts model, the expert-parallel group.
struct LayerGroups {
  graph::CommGroup tensor;
  graph::CommGroup exchange;
  graph::CommGroup expert;
  friend auto operator<=>(const LayerGroups&, const LayerGroups&) = default;
};

// One rank's share of a micro-batch as the models see it (tensor, sequence, context and expert
// parallelism, micro-batch, precision and the settings that shape the layer programs).
models::ShardConfig shard_config(const config::Scenario& s);

// The layer programs of each kind of layer, the embedding and head programs under the scenario's
// sharding over `groups`, and what the scenario's activation recompute replays. The backward passes are
// split (split_backward()) under a zero-bubble schedule, or when `split` asks for it (re-routing).
LayerOps intern_layer_ops(const config::Scenario& s, const LayerGroups& groups, graph::TaskGraph& graph,
                          LabelTable& labels, CommOpTable& comm_ops, bool split = false);

// The backward pass `ops` as its input-gradient part (B, what the layers before it wait for) and its
// weight-gradient part (W: OpRef::weight_grad), each in program order. An op pipelined with or run
// beside a neighbour (OpRef::overlap) that went to the other part runs on its own, blocking: a column-
// parallel linear's data-gradient reduction, beside its weight-gradient GEMM in the whole pass, has no
// GEMM to hide behind in B (the next GEMM needs its result), and the sequence-parallel re-gather of the
// linear's input, beside the data-gradient GEMM in the whole pass, precedes the weight-gradient GEMM
// that needs it in W. So the implementations do: the zero-bubble authors' Megatron-LM fork keeps each
// linear's weight gradient as a closure whose input gather runs synchronously when W pops it (its
// WeightGradStore.pop: func(**pre_func(async_op=False))),
// and Transformer Engine's WeightGradStore refuses the userbuffers' bulk weight-gradient overlap when
// the weight gradient is delayed (delay_wgrad_compute with ub_bulk_wgrad asserts).
void split_backward(Program& p);

// Whether delay_weight_grads() moves `op`: a weight-gradient kernel. A weight gradient's collective (the
// sequence-parallel re-gather of a linear's input) stays beside the data-gradient GEMM: Transformer
// Engine gathers the input in the backward pass and keeps it for the delayed GEMM
// (transformer_engine/pytorch/module/linear.py: wgrad_store.put of the gathered input).
inline bool delayed_weight_grad(const OpRef& op) {
  return op.weight_grad && op.stream == graph::StreamKind::compute;
}

// The backward pass `ops` with its weight gradients delayed (Megatron-Core --delay-wgrad-compute): each run
// of weight-gradient kernels (delayed_weight_grad()) moved to just before the next op for which
// `exchange` holds (a token exchange), or to the end of the pass; the other ops keep their order. The
// lowering emits a moved run beside the chain, after the re-gathers it needs, so that the exchange waits
// only for the input gradients before it (megatron/core/models/common/model_chunk_schedule_plan.py,
// TransformerLayerSchedulePlan.run: the mlp node's backward, its backward_dw, then the dispatch's
// backward; the attention's backward_dw after its backward). An op overlapped with a neighbour that
// moved runs on its own, as in split_backward(): a data gradient's reduction, beside the weight-gradient
// GEMM in the whole pass, blocks.
std::vector<OpRef> delay_weight_grads(const std::vector<OpRef>& ops,
                                      const std::function<bool(const OpRef&)>& exchange);

// fuse_compute_runs() of a delayed backward pass (delay_weight_grads()), whose moved runs stay apart from
// the ops beside them (their fused ops keep OpRef::weight_grad).
std::vector<OpRef> fuse_delayed_runs(const std::vector<OpRef>& ops, graph::TaskGraph& graph,
                                     LabelTable& labels);

// The same program with every run of two or more consecutive `compute` ops (pattern_at) as one op
// reference to a graph::FusedOp of their kernels, labelled "<first> .. <last> (<n> kernels)", with
// their FLOPs summed. Communication ops and GEMMs overlapped with communication stay as they are, and
// so does the first op with `first_alone` (when its end is an event others wait for); an op the host
// waits for (OpRef::host_waits) starts a run.
std::vector<OpRef> fuse_compute_runs(const std::vector<OpRef>& ops, bool first_alone, graph::TaskGraph& graph,
                                     LabelTable& labels);

// Consecutive layers of one pipeline step as one sequence: where nothing waits on the boundary
// between two layers, the last compute op of the first and the first compute op of the second (fused
// programs that start and end with a lone compute op) run as one fused op, labelled as in
// fuse_compute_runs(). program(keeps_first, keeps_last) is a layer's program within such a sequence:
// with its own first op, or else the joined op in its place; with its own last op, or else none (the
// next layer's program starts with the joined op). Programs that cannot be joined keep both.
class LayerSequence {
 public:
  LayerSequence() = default;
  LayerSequence(const std::vector<OpRef>& ops, graph::TaskGraph& graph, LabelTable& labels);

  bool joinable() const { return joinable_; }
  const std::vector<OpRef>& program(bool keeps_first, bool keeps_last) const {
    return programs_[joinable_ ? (keeps_first ? 0U : 1U) + (keeps_last ? 0U : 2U) : 0U];
  }

 private:
  std::array<std::vector<OpRef>, 4> programs_;
  bool joinable_ = false;
};

}  // namespace dtsim::parallel
