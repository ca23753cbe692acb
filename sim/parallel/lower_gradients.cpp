// Gradient reductions, optimizer step and parameter gathers of each rank (lowering.hpp).
#include <algorithm>

#include "parallel/lowering.hpp"
#include "parallel/zero3.hpp"

namespace dtsim::parallel::detail {

void Lowering::reduce_bucket(std::int64_t r, double bytes, double expert_bytes, TaskId after, bool sharded) {
  const auto kind = sharded ? graph::CollectiveKind::reduce_scatter : graph::CollectiveKind::all_reduce;
  std::vector<TaskId>& reductions = data_tasks_[static_cast<std::size_t>(r)];
  const auto reduce = [&](GroupKind group, StreamKind stream, double b, const char* name) {
    if (b <= 0.0 || group_size(group) <= 1) return;
    const graph::OpId op = intern_comm(CommOp{kind, b, group_layout(r, group)});
    Chain chain = Chain::after(after);
    collective(r, group, stream, op, Category::data_comm, label(name), -1, chain);
    reductions.push_back(chain.last);
  };
  reduce(GroupKind::data, StreamKind::data_comm, bytes, sharded ? "grad_reduce_scatter" : "grad_all_reduce");
  reduce(GroupKind::expert_data, StreamKind::expert_data_comm, expert_bytes,
         sharded ? "expert_grad_reduce_scatter" : "expert_grad_all_reduce");
}

void Lowering::gather_parameters(std::int64_t r, double bytes, double expert_bytes, const Chain& after,
                                 std::optional<TaskId> user) {
  const auto gather = [&](GroupKind group, StreamKind stream, double b, graph::LabelId lbl) {
    if (b <= 0.0 || group_size(group) <= 1) return;
    const graph::OpId op = intern_comm(CommOp{graph::CollectiveKind::all_gather, b, group_layout(r, group)});
    Chain chain = after;
    collective(r, group, stream, op, Category::data_comm, lbl, -1, chain);
    if (user) wait(chain.last, *user);
  };
  gather(GroupKind::data, StreamKind::param_gather, bytes, param_gather_label_);
  gather(GroupKind::expert_data, StreamKind::expert_param_gather, expert_bytes,
         label("expert_param_all_gather"));
}

void Lowering::reduce_gradients(std::int64_t r, const std::vector<TaskId>& ready, TaskId end) {
  const auto& par = s_.parallelism;
  const bool sharded = par.distributed_optimizer || par.zero_stage >= 1;
  const bool overlap = s_.training.overlap_grad_reduce;
  const std::vector<GradientBucket>& buckets = stage_buckets_[static_cast<std::size_t>(coord(r).stage)];
  DTSIM_CHECK(buckets.back().last_layer.value_or(-1) + 1 == static_cast<std::int64_t>(ready.size()),
              "gradient buckets and ready layers disagree");
  for (const GradientBucket& b : buckets) {
    const TaskId after = overlap && b.last_layer ? ready[static_cast<std::size_t>(*b.last_layer)] : end;
    reduce_bucket(r, b.bytes, b.expert_bytes, after, sharded);
  }
}

void Lowering::emit_gradient_sync_and_optimizer(std::int64_t r) {
  const auto& par = s_.parallelism;
  const bool sharded = par.distributed_optimizer || par.zero_stage >= 1;
  const std::int64_t dp = par.data * par.context;
  const std::int64_t edp = par.expert_data_degree();
  const std::int64_t stage = coord(r).stage;
  const TaskId backward_end = stage_last_[static_cast<std::size_t>(r)];
  const std::vector<TaskId>& reductions = data_tasks_[static_cast<std::size_t>(r)];

  if (par.zero_stage < 3 && dp > 1) {
    // Gradients become final when their layer's last backward ends; bucket them in that order (with
    // ZeRO-2 the earlier micro-batches' were reduced as their backward ended: close_step).
    std::vector<TaskId> ready;
    for (std::int64_t c = 0; c < v_; ++c) {
      for (std::int64_t l = 0; l < layers_in(stage, c); ++l)
        ready.push_back(grad_ready_[layer_index(r, c, l)]);
    }
    std::sort(ready.begin(), ready.end());
    reduce_gradients(r, ready, backward_end);
  }

  const GpuParameters held = stage_parameters_per_gpu(s_, stage);
  graph::ComputeOp step;
  step.cls = graph::ComputeClass::optimizer;
  step.memory = core::MemoryClass::optimizer;
  step.bytes = (held.dense / (sharded ? static_cast<double>(dp) : 1.0) +
                held.experts / (sharded ? static_cast<double>(edp) : 1.0)) *
               optimizer_bytes_per_param(s_.training);
  step.kernels = 4;
  if (!optimizer_ops_.count(stage)) optimizer_ops_[stage] = out_.graph.add_op(step);
  const TaskId opt =
      add_task(r, StreamKind::compute, optimizer_ops_[stage], Category::optimizer, optimizer_label_, -1);
  // Collectives the host called after the last backward kernel (ZeRO-3's last reductions) come before it.
  std::uint32_t& calls = collective_calls_[static_cast<std::size_t>(r)];
  if (calls > 0) out_.graph.add_host_calls(opt, calls);
  calls = 0;
  wait(backward_end, opt);
  for (TaskId t : reductions) wait(t, opt);
  if (s_.training.host_sync_before_optimizer) out_.graph.add_host_wait(opt);

  if (sharded && par.zero_stage < 3 && dp > 1) {
    if (s_.training.overlap_param_gather) {
      emit_overlapped_param_gathers(r);
    } else {
      const double weight = weight_bytes_per_param(s_.training);
      gather_parameters(r, held.dense * weight, held.experts * weight, Chain::after(opt), std::nullopt);
    }
  }
}

// The updated parameters are gathered in buckets, in the order the forward pass uses them, each
// bucket before its first layer's first micro-batch (steady state of Megatron-Core's
// --overlap-param-gather: the gathers of iteration i+1 run beside its forward pass).
void Lowering::emit_overlapped_param_gathers(std::int64_t r) {
  const std::int64_t stage = coord(r).stage;
  const double weight_bytes = weight_bytes_per_param(s_.training);
  std::vector<GpuParameters> kinds;  // per layer kind
  for (std::size_t k = 0; k < layer_kinds_.count(); ++k)
    kinds.push_back(layer_parameters_per_gpu(s_, layer_kinds_.model(k)));
  // The stage's parameters beyond its layers (the embedding, the output layer, multi-token prediction
  // modules) with the first bucket.
  const GpuParameters extra = stage_extra_parameters(s_, stage);
  double bucket = extra.dense * weight_bytes;
  double expert_bucket = extra.experts * weight_bytes;
  std::optional<TaskId> bucket_user;
  if (stage == 0) bucket_user = step_first_[static_cast<std::size_t>(r)];
  for (std::int64_t c = 0; c < v_; ++c) {
    const std::int64_t first = chunk_first_[static_cast<std::size_t>(model_chunk(stage, c))];
    for (std::int64_t l = 0; l < layers_in(stage, c); ++l) {
      if (!bucket_user) bucket_user = first_use_[layer_index(r, c, l)];
      const GpuParameters& layer = kinds[layer_kinds_.of_layer(first + l)];
      bucket += layer.dense * weight_bytes;
      expert_bucket += layer.experts * weight_bytes;
      if (bucket + expert_bucket < s_.training.bucket_bytes) continue;
      gather_parameters(r, bucket, expert_bucket, Chain{}, bucket_user);
      bucket = 0.0;
      expert_bucket = 0.0;
      bucket_user.reset();
    }
  }
  // The last bucket (as above), or the embedding's or output layer's alone on a stage without layers.
  gather_parameters(r, bucket, expert_bucket, Chain{}, bucket_user);
}

// ZeRO-3's collectives of one layer (zero3.hpp) over rank r's data-parallel layout, interned once per layout.
// With list buffers each call also copies its buffer to or from one tensor per rank (after an all-gather,
// before a reduce-scatter): one copy kernel per rank, reading and writing the bytes once. With per-parameter
// buffers (FSDP2) one kernel copies the gathered buffer out to the parameters' own tensors
// (split_with_sizes_copy), reading and writing it once, and one copies the gradients, in the activation
// precision, into the reduce-scatter buffer (chunk_cat), reading them and writing the buffer.
const Lowering::Zero3Ops& Lowering::zero3_ops(std::int64_t r, std::size_t layer_kind) {
  const graph::CommGroup& group = data_group(r);
  const graph::CommGroup& expert_group = group_layout(r, GroupKind::expert_data);
  for (const Zero3Ops& ops : zero3_ops_) {
    if (ops.group == group && ops.expert_group == expert_group && ops.kind == layer_kind) return ops;
  }
  Zero3Ops ops{group, expert_group, layer_kind, {}, {}, {}, {}};
  const auto add = [&](const std::vector<double>& groups, const graph::CommGroup& over,
                       std::vector<graph::OpId>& gathers, std::vector<graph::OpId>& reduces) {
    for (const double params : groups) {
      gathers.push_back(zero3_comm(graph::CollectiveKind::all_gather, params, over));
      reduces.push_back(zero3_comm(graph::CollectiveKind::reduce_scatter, params, over));
    }
  };
  const config::TransformerSpec& model = layer_kinds_.model(layer_kind);
  add(zero3_layer_groups(s_, model), group, ops.gathers, ops.reduces);
  // Empty where the expert_data group has one rank.
  add(zero3_expert_groups(s_, model), expert_group, ops.expert_gathers, ops.expert_reduces);
  zero3_ops_.push_back(std::move(ops));
  return zero3_ops_.back();
}

graph::OpId Lowering::zero3_comm(graph::CollectiveKind kind, double params, const graph::CommGroup& group) {
  // An all-gather moves the weights; a reduce-scatter the gradients, whose copy-in reads them in the
  // activations' precision.
  const bool gather = kind == graph::CollectiveKind::all_gather;
  const double bytes =
      params * (gather ? weight_bytes_per_param(s_.training) : gradient_bytes_per_param(s_.training));
  const double read_bytes =
      gather ? bytes : params * models::activation_bytes_per_element(s_.training.precision);
  const config::CollectiveBuffers buffers = s_.parallelism.zero3.buffers;
  CommOp op{kind, bytes, group};
  if (buffers != config::CollectiveBuffers::flat) {
    graph::ComputeOp copy;
    copy.cls = graph::ComputeClass::memory;
    const bool list = buffers == config::CollectiveBuffers::list;
    copy.bytes = list ? 2 * bytes : read_bytes + bytes;
    copy.kernels = list ? static_cast<int>(group.size) : 1;
    op.copies = copy;
  }
  return intern_comm(op);
}

// The embedding's or output layer's gather before its use, after the compute just before it on demand,
// else after the previous layer's start (none at a step's opening: as early as the gather stream allows).
void Lowering::gather_unit(std::int64_t r, const StepInProgress& s, double params, const Chain& use) {
  if (use.empty || params <= 0.0 || group_size(GroupKind::data) <= 1) return;
  const bool on_demand = s_.parallelism.zero3.fetch == config::Zero3Fetch::on_demand;
  const std::optional<TaskId> after = on_demand ? compute_before(r, s) : s.previous_layer;
  Chain gather = after ? Chain::after(*after) : Chain{};
  const std::size_t tasks_before = out_.graph.tasks().size();
  collective(r, GroupKind::data, StreamKind::param_gather,
             zero3_comm(graph::CollectiveKind::all_gather, params, data_group(r)), Category::data_comm,
             zero3_gather_label_, s.step.micro_batch, gather);
  ++collective_calls_[static_cast<std::size_t>(r)];
  if (on_demand) synchronize_before(r, gather.last, gather.last >= tasks_before);
  gate(gather.last, use);
}

void Lowering::reduce_unit(std::int64_t r, double params, std::int32_t mb, TaskId after) {
  if (params <= 0.0 || group_size(GroupKind::data) <= 1) return;
  Chain reduce = Chain::after(after);
  collective(r, GroupKind::data, StreamKind::data_comm,
             zero3_comm(graph::CollectiveKind::reduce_scatter, params, data_group(r)), Category::data_comm,
             zero3_reduce_label_, mb, reduce);
  ++collective_calls_[static_cast<std::size_t>(r)];
  last_reductions_[static_cast<std::size_t>(r)].dense = reduce.last;
  data_tasks_[static_cast<std::size_t>(r)].push_back(reduce.last);
}

// On demand, DeepSpeed's fetch synchronizes the device first (torch.cuda.synchronize): a use's first
// gather also waits for the rank's gradient reductions issued so far, the last on each reduction stream.
// The data group's are one gang for all its members, whose creator adds the edge (`created`); the
// experts' are over each member's own expert_data group.
void Lowering::synchronize_before(std::int64_t r, TaskId gather, bool created) {
  const LastReductions& last = last_reductions_[static_cast<std::size_t>(r)];
  if (last.dense && created) wait(*last.dense, gather);
  if (last.expert) wait(*last.expert, gather);
}

// A layer's gathers, one after another on the rank's gather stream, the first after `after` (prefetch:
// the previous layer's first task; on demand: the compute just before the layer, and the reductions
// so far: synchronize_before).
TaskId Lowering::gather_layer(std::int64_t r, std::size_t kind, std::int32_t mb,
                              std::optional<TaskId> after) {
  Chain gather = after ? Chain::after(*after) : Chain{};
  bool synchronize = s_.parallelism.zero3.fetch == config::Zero3Fetch::on_demand;
  const Zero3Ops& ops = zero3_ops(r, kind);
  // Dense parameters, then the routed experts' after them (FSDP2 issues its units' gathers one after
  // another; the experts' run on a stream of their own, as every stream carries one kind of group).
  const auto issue = [&](const std::vector<graph::OpId>& gathers, GroupKind group, StreamKind stream) {
    for (const graph::OpId op : gathers) {
      const std::size_t tasks_before = out_.graph.tasks().size();
      collective(r, group, stream, op, Category::data_comm, zero3_gather_label_, mb, gather);
      ++collective_calls_[static_cast<std::size_t>(r)];  // the host calls it before the layer's next kernel
      if (synchronize) synchronize_before(r, gather.last, gather.last >= tasks_before);
      synchronize = false;
    }
  };
  issue(ops.gathers, GroupKind::data, StreamKind::param_gather);
  issue(ops.expert_gathers, GroupKind::expert_data, StreamKind::expert_param_gather);
  return gather.last;
}

// A layer's gradient reductions on the rank's data stream, after `after` (the layer's last backward task):
// dense, then the routed experts' (on their own stream).
void Lowering::reduce_layer(std::int64_t r, std::size_t kind, std::int32_t mb, TaskId after) {
  Chain reduce = Chain::after(after);
  const Zero3Ops& ops = zero3_ops(r, kind);
  const auto issue = [&](const std::vector<graph::OpId>& reduces, GroupKind group, StreamKind stream) {
    for (const graph::OpId op : reduces) {
      collective(r, group, stream, op, Category::data_comm, zero3_reduce_label_, mb, reduce);
      ++collective_calls_[static_cast<std::size_t>(r)];
    }
  };
  LastReductions& last = last_reductions_[static_cast<std::size_t>(r)];
  issue(ops.reduces, GroupKind::data, StreamKind::data_comm);
  if (!ops.reduces.empty()) last.dense = reduce.last;
  issue(ops.expert_reduces, GroupKind::expert_data, StreamKind::expert_data_comm);
  if (!ops.expert_reduces.empty()) last.expert = reduce.last;
  data_tasks_[static_cast<std::size_t>(r)].push_back(reduce.last);
}

}  // namespace dtsim::parallel::detail
