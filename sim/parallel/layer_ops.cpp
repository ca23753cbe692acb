#include "parallel/layer_ops.hpp"

#include <variant>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "models/transformer/layer_kinds.hpp"
#include "models/transformer/moe.hpp"

namespace dtsim::parallel {

namespace {

using graph::Category;
using graph::CommOp;
using graph::StreamKind;

class Interner {
 public:
  Interner(const config::Scenario& s, const LayerGroups& groups, graph::TaskGraph& graph, LabelTable& labels,
           CommOpTable& comm_ops)
      : s_(s), groups_(groups), graph_(graph), labels_(labels), comm_ops_(comm_ops) {}

  Program program(const models::LayerProgram& p) { return {all(p.forward), all(p.backward)}; }

 private:
  std::vector<OpRef> all(const std::vector<models::LayerOp>& ops) {
    std::vector<OpRef> out;
    out.reserve(ops.size());
    for (const auto& op : ops) out.push_back(intern(op));
    return out;
  }

  OpRef intern(const models::LayerOp& op) {
    OpRef ref;
    ref.label = labels_.id(graph_, op.name);
    ref.first_kernel_label = ref.last_kernel_label = ref.label;
    ref.attention_core = op.attention_core;
    ref.recompute_tag = op.recompute_tag;
    ref.weight_grad = op.weight_grad;
    switch (op.role) {
      case models::CommRole::none:
        ref.op = graph_.add_op(op.compute);
        ref.stream = StreamKind::compute;
        ref.flops = op.compute.flops;
        ref.gemm = op.compute.cls == graph::ComputeClass::gemm;
        ref.host_waits = op.host_waits;
        return ref;
      case models::CommRole::tensor_all_reduce:
        return comm_ref(ref, graph::CollectiveKind::all_reduce, op.comm_bytes, groups_.tensor, op.overlap);
      case models::CommRole::tensor_all_gather:
        return comm_ref(ref, graph::CollectiveKind::all_gather, op.comm_bytes, groups_.tensor, op.overlap);
      case models::CommRole::tensor_reduce_scatter:
        return comm_ref(ref, graph::CollectiveKind::reduce_scatter, op.comm_bytes, groups_.tensor,
                        op.overlap);
      case models::CommRole::expert_all_to_all: {
        // Token dispatch and combine: blocking, between the router and the experts (moe.hpp); DeepEP's
        // node-aware exchange when the scenario asks for it and the group spans nodes.
        graph::CommOp exchange{graph::CollectiveKind::all_to_all, op.comm_bytes, groups_.expert};
        if (s_.parallelism.moe_dispatcher == config::MoeDispatcher::deepep && s_.model.moe) {
          if (groups_.expert.nodes > 1)
            exchange.node_aware = models::node_aware_copies(*s_.model.moe, groups_.expert.nodes);
          exchange.gpu_copies = models::gpu_copies(*s_.model.moe, groups_.expert.size, groups_.expert.nodes);
        }
        ref.op = comm_ops_.id(graph_, exchange);
        ref.stream = StreamKind::expert_comm;
        ref.comm_category = Category::expert_comm;
        return ref;
      }
      case models::CommRole::expert_all_gather: {
        // The token counts the dispatch's sizes come from (moe.hpp).
        OpRef r = comm_ref(ref, graph::CollectiveKind::all_gather, op.comm_bytes, groups_.expert);
        r.stream = StreamKind::expert_comm;
        r.comm_category = Category::expert_comm;
        return r;
      }
      case models::CommRole::context_exchange: {
        // Each step passes K/V to the ring neighbour, at the pace of the ring's slowest pair.
        OpRef r = comm_ref(ref, graph::CollectiveKind::send_recv, op.comm_bytes, groups_.exchange);
        r.stream = StreamKind::context_comm;
        r.comm_category = Category::context_comm;
        return r;
      }
    }
    throw core::InternalError("unknown communication role");
  }

  OpRef comm_ref(OpRef ref, graph::CollectiveKind kind, double bytes, graph::CommGroup group,
                 models::GemmOverlap overlap = models::GemmOverlap::none) {
    ref.op = comm_ops_.id(graph_, CommOp{kind, bytes, group});
    ref.stream = StreamKind::tensor_comm;
    ref.comm_category = Category::tensor_comm;
    if (overlap == models::GemmOverlap::beside_next) {
      ref.overlap = overlap;  // whole, beside the next GEMM, with or without userbuffers
    } else if (config::tp_comm_overlap_in_effect(s_.parallelism) && overlap != models::GemmOverlap::none) {
      const double t = static_cast<double>(group.size);
      ref.overlap = overlap;
      ref.chunk_op = comm_ops_.id(graph_, CommOp{kind, bytes / t, group});
      ref.rest_op = comm_ops_.id(graph_, CommOp{kind, bytes * (t - 1) / t, group});
    }
    return ref;
  }

  const config::Scenario& s_;
  const LayerGroups& groups_;
  graph::TaskGraph& graph_;
  LabelTable& labels_;
  CommOpTable& comm_ops_;
};

// A checkpointed layer's recompute costs the host training.host_checkpoint_us beyond its kernels'
// launches, before the first recomputed kernel: that op is a copy of the forward's with the host time.
void checkpoint_on_host(std::vector<OpRef>& recompute, double host_us, graph::TaskGraph& graph) {
  for (OpRef& ref : recompute) {
    const auto* op = std::get_if<graph::ComputeOp>(&graph.ops()[ref.op]);
    if (ref.stream != graph::StreamKind::compute || op == nullptr) continue;
    graph::ComputeOp first = *op;
    first.host_us += host_us;
    ref.op = graph.add_op(first);
    return;
  }
}

}  // namespace

EmitPattern pattern_at(std::span<const OpRef> ops, std::size_t i) {
  const OpRef& op = ops[i];
  const OpRef* next = i + 1 < ops.size() ? &ops[i + 1] : nullptr;
  if (op.overlap == models::GemmOverlap::with_next && next != nullptr && next->gemm)
    return EmitPattern::gather_gemm;
  if (op.overlap == models::GemmOverlap::beside_next && next != nullptr && next->gemm)
    return EmitPattern::beside_gemm;
  if (op.gemm && next != nullptr && next->overlap == models::GemmOverlap::with_previous) {
    return EmitPattern::gemm_scatter;
  }
  return op.stream == StreamKind::compute ? EmitPattern::compute : EmitPattern::comm;
}

graph::LabelId LabelTable::id(graph::TaskGraph& graph, std::string_view name) {
  const auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  const graph::LabelId id = graph.add_label(std::string(name));
  ids_.emplace(std::string(name), id);
  return id;
}

graph::OpId CommOpTable::id(graph::TaskGraph& graph, const graph::CommOp& op) {
  const Key key{static_cast<int>(op.kind),
                op.bytes,
                op.group,
                op.copies ? op.copies->bytes : -1.0,
                op.copies ? op.copies->kernels : -1,
                op.node_aware.value_or(-1.0),
                op.gpu_copies.value_or(-1.0)};
  const auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  const graph::OpId id = graph.add_op(op);
  ids_.emplace(key, id);
  return id;
}

models::ShardConfig shard_config(const config::Scenario& s) {
  const auto& par = s.parallelism;
  return models::ShardConfig{.tensor = par.tensor,
                             .sequence_parallel = par.sequence_parallel,
                             .context = par.context,
                             .micro_batch = s.training.micro_batch_size,
                             .precision = s.training.precision,
                             .backward_overlap = par.tp_backward_overlap,
                             .grad_accumulation = s.training.grad_accumulation,
                             .autocast = s.training.autocast,
                             .fp8_recipe = s.training.fp8_recipe,
                             .expert = par.expert,
                             .expert_tensor = par.expert_tensor,
                             .master_weights = s.training.master_weights};
}

namespace {

// The ops of `layer` that the scenario's activation recompute replays before its backward pass.
std::vector<OpRef> recomputed_ops(const config::Scenario& s, const Program& layer) {
  std::vector<OpRef> out;
  switch (s.training.activation_recompute) {
    case config::Recompute::none:
      break;
    case config::Recompute::full:
      out = layer.forward;
      break;
    case config::Recompute::selective: {
      // The modules of training.recompute_modules. The attention core is checkpointed whatever its
      // kernel, as Megatron-Core does (transformer/attention.py: checkpoint_core_attention when
      // 'core_attn' is in recompute_modules): with a fused kernel the backward reruns its forward before
      // the kernel's own backward. 'layernorm' reruns the two norms' forward kernels, 'moe_act' the
      // routed experts' activation (transformer_block.py, moe/experts.py: CheckpointWithoutOutput),
      // 'mla_up_proj' latent attention's up projections, their fused latent norms and the rotary
      // embedding (multi_latent_attention.py: qkv_up_proj_and_rope_apply under CheckpointWithoutOutput).
      const config::RecomputeModules& modules = s.training.recompute_modules;
      for (const auto& op : layer.forward) {
        const bool rerun = (op.attention_core && modules.core_attn) ||
                           (op.recompute_tag == models::RecomputeTag::layernorm && modules.layernorm) ||
                           (op.recompute_tag == models::RecomputeTag::moe_act && modules.moe_act) ||
                           (op.recompute_tag == models::RecomputeTag::mla_up_proj && modules.mla_up_proj);
        if (rerun) out.push_back(op);
      }
      break;
    }
  }
  return out;
}

}  // namespace

LayerOps intern_layer_ops(const config::Scenario& s, const LayerGroups& groups, graph::TaskGraph& graph,
                          LabelTable& labels, CommOpTable& comm_ops, bool split_asked) {
  const models::ShardConfig shard = shard_config(s);
  Interner interner(s, groups, graph, labels, comm_ops);
  LayerOps out;
  const models::LayerKinds kinds(s.model);
  for (std::size_t k = 0; k < kinds.count(); ++k) {
    KindOps& kind = out.kinds.emplace_back();
    kind.layer = interner.program(models::transformer_layer(kinds.model(k), shard));
    kind.recompute = recomputed_ops(s, kind.layer);
  }
  out.embedding = interner.program(models::embedding_layer(s.model, shard));
  out.head = interner.program(models::head_layer(s.model, shard));
  if (s.model.mtp_layers > 0)
    out.mtp_projection = interner.program(models::mtp_projection_layer(s.model, shard));
  const double checkpoint_us = s.training.host_checkpoint_us;
  const bool split = (split_asked || s.parallelism.schedule == config::Schedule::zero_bubble_h1) &&
                     s.parallelism.pipeline > 1;
  for (KindOps& kind : out.kinds) {
    if (checkpoint_us > 0.0) checkpoint_on_host(kind.recompute, checkpoint_us, graph);
    if (split) split_backward(kind.layer);
  }
  if (split) {
    for (Program* p : {&out.embedding, &out.head, &out.mtp_projection}) split_backward(*p);
  }
  return out;
}

namespace {

// Ops taken from a pass in a new order (`origin`: each one's index in the pass): an overlap holds only
// between ops that are still neighbours; an op whose partner went elsewhere runs on its own.
void drop_broken_overlaps(std::vector<OpRef>& ops, const std::vector<std::size_t>& origin) {
  using models::GemmOverlap;
  for (std::size_t j = 0; j < ops.size(); ++j) {
    OpRef& op = ops[j];
    const bool next_kept = j + 1 < ops.size() && origin[j + 1] == origin[j] + 1;
    const bool previous_kept = j > 0 && origin[j - 1] + 1 == origin[j];
    const bool with_next = op.overlap == GemmOverlap::with_next || op.overlap == GemmOverlap::beside_next;
    if ((with_next && !next_kept) || (op.overlap == GemmOverlap::with_previous && !previous_kept))
      op.overlap = GemmOverlap::none;
  }
}

}  // namespace

void split_backward(Program& p) {
  const std::vector<OpRef>& ops = p.backward;
  p.input_grad.clear();
  p.weight_grad.clear();
  std::vector<std::size_t> input_origin;
  std::vector<std::size_t> weight_origin;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    (ops[i].weight_grad ? p.weight_grad : p.input_grad).push_back(ops[i]);
    (ops[i].weight_grad ? weight_origin : input_origin).push_back(i);
  }
  drop_broken_overlaps(p.input_grad, input_origin);
  drop_broken_overlaps(p.weight_grad, weight_origin);
}

std::vector<OpRef> delay_weight_grads(const std::vector<OpRef>& ops,
                                      const std::function<bool(const OpRef&)>& exchange) {
  std::vector<OpRef> out;
  std::vector<OpRef> pending;  // weight gradients waiting for the next exchange
  std::vector<std::size_t> origin;
  std::vector<std::size_t> pending_origin;
  const auto flush = [&] {
    out.insert(out.end(), pending.begin(), pending.end());
    origin.insert(origin.end(), pending_origin.begin(), pending_origin.end());
    pending.clear();
    pending_origin.clear();
  };
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (delayed_weight_grad(ops[i])) {
      pending.push_back(ops[i]);
      pending_origin.push_back(i);
      continue;
    }
    if (exchange(ops[i])) flush();
    out.push_back(ops[i]);
    origin.push_back(i);
  }
  flush();
  drop_broken_overlaps(out, origin);
  return out;
}

std::vector<OpRef> fuse_delayed_runs(const std::vector<OpRef>& ops, graph::TaskGraph& graph,
                                     LabelTable& labels) {
  std::vector<OpRef> out;
  for (std::size_t begin = 0; begin < ops.size();) {
    std::size_t end = begin + 1;
    const bool moved = delayed_weight_grad(ops[begin]);
    while (end < ops.size() && delayed_weight_grad(ops[end]) == moved) ++end;
    const std::vector<OpRef> run(ops.begin() + static_cast<std::ptrdiff_t>(begin),
                                 ops.begin() + static_cast<std::ptrdiff_t>(end));
    for (OpRef op : fuse_compute_runs(run, false, graph, labels)) {
      if (moved) op.weight_grad = true;
      out.push_back(op);
    }
    begin = end;
  }
  return out;
}

namespace {

// The kernels a compute op runs: itself, or a fused op's.
void append_kernels(const graph::TaskGraph& graph, graph::OpId op, std::vector<graph::ComputeOp>& out) {
  const graph::Op& o = graph.ops()[op];
  if (const auto* fused = std::get_if<graph::FusedOp>(&o)) {
    out.insert(out.end(), fused->kernels.begin(), fused->kernels.end());
  } else {
    out.push_back(std::get<graph::ComputeOp>(o));
  }
}

// One fused op of the compute ops ops[begin .. end), with their FLOPs summed.
OpRef fuse(const std::vector<OpRef>& ops, std::size_t begin, std::size_t end, graph::TaskGraph& graph,
           LabelTable& labels) {
  graph::FusedOp fused;
  OpRef ref;
  for (std::size_t j = begin; j < end; ++j) {
    append_kernels(graph, ops[j].op, fused.kernels);
    ref.flops += ops[j].flops;
  }
  ref.host_waits = ops[begin].host_waits;
  ref.first_kernel_label = ops[begin].first_kernel_label;
  ref.last_kernel_label = ops[end - 1].last_kernel_label;
  const std::string name = fmt::format("{} .. {} ({} kernels)", graph.labels()[ref.first_kernel_label],
                                       graph.labels()[ref.last_kernel_label], fused.kernels.size());
  ref.op = graph.add_op(std::move(fused));
  ref.stream = StreamKind::compute;
  ref.label = labels.id(graph, name);
  return ref;
}

}  // namespace

LayerSequence::LayerSequence(const std::vector<OpRef>& ops, graph::TaskGraph& graph, LabelTable& labels) {
  programs_[0] = ops;
  // The last op starts a pattern of its own only if the patterns before it end right before it.
  std::size_t last_start = 0;
  for (std::size_t i = 0; i < ops.size(); i += pattern_size(pattern_at(ops, i))) last_start = i;
  joinable_ = ops.size() >= 2 && pattern_at(ops, 0) == EmitPattern::compute && !ops.front().host_waits &&
              last_start == ops.size() - 1 && pattern_at(ops, last_start) == EmitPattern::compute;
  if (!joinable_) return;
  const std::vector<OpRef> boundary{ops.back(), ops.front()};
  const OpRef joined = fuse(boundary, 0, 2, graph, labels);
  std::vector<OpRef> middle(ops.begin() + 1, ops.end() - 1);
  programs_[1] = {joined};  // joined first op, own last op
  programs_[1].insert(programs_[1].end(), middle.begin(), middle.end());
  programs_[1].push_back(ops.back());
  programs_[2] = {ops.front()};  // own first op, last op left to the next layer
  programs_[2].insert(programs_[2].end(), middle.begin(), middle.end());
  programs_[3] = {joined};  // joined first op, last op left to the next layer
  programs_[3].insert(programs_[3].end(), middle.begin(), middle.end());
}

std::vector<OpRef> fuse_compute_runs(const std::vector<OpRef>& ops, bool first_alone, graph::TaskGraph& graph,
                                     LabelTable& labels) {
  std::vector<OpRef> out;
  std::size_t run_begin = 0;
  std::size_t run_size = 0;
  const auto flush = [&] {
    if (run_size == 1) out.push_back(ops[run_begin]);
    if (run_size >= 2) out.push_back(fuse(ops, run_begin, run_begin + run_size, graph, labels));
    run_size = 0;
  };
  for (std::size_t i = 0; i < ops.size();) {
    const EmitPattern p = pattern_at(ops, i);
    if (p == EmitPattern::compute && !(first_alone && i == 0)) {
      if (ops[i].host_waits) flush();  // the host waits before the run's first kernel only
      if (run_size == 0) run_begin = i;
      ++run_size;
      ++i;
      continue;
    }
    flush();
    for (std::size_t j = 0; j < pattern_size(p); ++j) out.push_back(ops[i + j]);
    i += pattern_size(p);
  }
  flush();
  return out;
}

}  // namespace dtsim::parallel
