#include "parallel/lower.hpp"

#include <algorithm>
#include <array>
#include <map>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "models/transformer/transformer.hpp"
#include "parallel/feasibility.hpp"
#include "parallel/mesh.hpp"
#include "parallel/pipeline_schedule.hpp"

namespace dtsim::parallel {

namespace {

using graph::Category;
using graph::CommOp;
using graph::StreamKind;
using graph::TaskId;

// One op of a layer program, interned in the graph.
struct OpRef {
  graph::OpId op = 0;
  StreamKind stream = StreamKind::compute;
  Category comm_category = Category::tensor_comm;  // for communication ops
  std::uint32_t label = 0;
  double flops = 0.0;
  bool attention_core = false;
};

struct Program {
  std::vector<OpRef> forward;
  std::vector<OpRef> backward;
};

struct Chain {
  TaskId first = 0;
  TaskId last = 0;
  bool empty = true;
};

double gradient_bytes_per_param(config::Precision p) { return p == config::Precision::fp16 ? 2.0 : 4.0; }
double weight_bytes_per_param(config::Precision p) {
  return models::activation_bytes_per_element(p);
}
// Adam step per parameter: read FP32 master, gradient, m, v; write master, m, v and the 16-bit copy.
double optimizer_bytes_per_param(config::Precision p) {
  return 4 * 4 + 3 * 4 + (weight_bytes_per_param(p) < 4 ? weight_bytes_per_param(p) : 0.0);
}

class Lowering {
 public:
  explicit Lowering(const config::Scenario& s)
      : s_(s),
        mesh_(Mesh::of(s)),
        p_(s.parallelism.pipeline),
        v_(s.parallelism.virtual_stages),
        m_(micro_batches(s)),
        layers_per_chunk_(s.model.layers / (p_ * v_)),
        replicas_(s.parallelism.tensor * s.parallelism.context * s.parallelism.data) {
    out_.graph = graph::TaskGraph(static_cast<std::uint32_t>(p_));
    out_.gpus_per_simulated_rank = replicas_;
  }

  LoweredGraph run() {
    intern_programs();
    for (std::int64_t stage = 0; stage < p_; ++stage) add_rank(stage);
    steps_.assign(static_cast<std::size_t>(p_ * v_ * m_ * 2), Chain{});
    for (std::int64_t stage = 0; stage < p_; ++stage) emit_stage(stage);
    for (std::int64_t stage = 0; stage < p_; ++stage) connect_stages(stage);
    for (std::int64_t stage = 0; stage < p_; ++stage) emit_gradient_sync_and_optimizer(stage);
    out_.graph.finalize();
    return std::move(out_);
  }

 private:
  // ---- ops -------------------------------------------------------------------------------------
  std::uint32_t label(std::string_view name) {
    auto it = labels_.find(std::string(name));
    if (it != labels_.end()) return it->second;
    const std::uint32_t id = out_.graph.add_label(std::string(name));
    labels_.emplace(std::string(name), id);
    return id;
  }

  OpRef intern(const models::LayerOp& op) {
    OpRef ref;
    ref.label = label(op.name);
    ref.attention_core = op.attention_core;
    switch (op.role) {
      case models::CommRole::none:
        ref.op = out_.graph.add_op(op.compute);
        ref.stream = StreamKind::compute;
        ref.flops = op.compute.flops;
        return ref;
      case models::CommRole::tensor_all_reduce:
        return comm_ref(ref, graph::CollectiveKind::all_reduce, op.comm_bytes, mesh_.tensor_group());
      case models::CommRole::tensor_all_gather:
        return comm_ref(ref, graph::CollectiveKind::all_gather, op.comm_bytes, mesh_.tensor_group());
      case models::CommRole::tensor_reduce_scatter:
        return comm_ref(ref, graph::CollectiveKind::reduce_scatter, op.comm_bytes, mesh_.tensor_group());
      case models::CommRole::context_exchange: {
        // Ring neighbours of the context group: the transfer crosses nodes when the group does.
        graph::CommGroup ring = mesh_.context_group();
        graph::CommGroup pair = mesh_.group(2, s_.parallelism.tensor);
        pair.nodes = ring.nodes > 1 ? 2 : 1;
        OpRef r = comm_ref(ref, graph::CollectiveKind::send_recv, op.comm_bytes, pair);
        r.stream = StreamKind::context_comm;
        r.comm_category = Category::context_comm;
        return r;
      }
    }
    throw core::InternalError("unknown communication role");
  }

  OpRef comm_ref(OpRef ref, graph::CollectiveKind kind, double bytes, graph::CommGroup group) {
    ref.op = out_.graph.add_op(CommOp{kind, bytes, group});
    ref.stream = StreamKind::tensor_comm;
    ref.comm_category = Category::tensor_comm;
    return ref;
  }

  std::vector<OpRef> intern_all(const std::vector<models::LayerOp>& ops) {
    std::vector<OpRef> out;
    out.reserve(ops.size());
    for (const auto& op : ops) out.push_back(intern(op));
    return out;
  }

  Program intern_program(const models::LayerProgram& p) { return {intern_all(p.forward), intern_all(p.backward)}; }

  void intern_programs() {
    const auto& par = s_.parallelism;
    const models::ShardConfig shard{par.tensor, par.sequence_parallel, par.context, s_.training.micro_batch_size,
                                    s_.training.precision};
    layer_ = intern_program(models::transformer_layer(s_.model, shard));
    embedding_ = intern_program(models::embedding_layer(s_.model, shard));
    head_ = intern_program(models::head_layer(s_.model, shard));
    switch (s_.training.activation_recompute) {
      case config::Recompute::none:
        break;
      case config::Recompute::full:
        recompute_ = layer_.forward;
        break;
      case config::Recompute::selective:
        for (const auto& op : layer_.forward) {
          // A fused attention kernel keeps no scores: its backward recomputes them itself.
          if (op.attention_core && s_.model.attention == config::AttentionKind::standard) recompute_.push_back(op);
        }
        break;
    }
    const double a = models::activation_bytes_per_element(s_.training.precision);
    const double tokens = static_cast<double>(s_.training.micro_batch_size * s_.model.seq_length) /
                          static_cast<double>(par.context);
    const double activation = tokens * static_cast<double>(s_.model.hidden_size) * a /
                              static_cast<double>(par.tensor);
    pipeline_send_op_ = out_.graph.add_op(CommOp{graph::CollectiveKind::send_recv, activation, mesh_.pipeline_pair()});
    pipeline_send_label_ = label("pipeline_send_activation");
    pipeline_grad_label_ = label("pipeline_send_gradient");
  }

  // ---- ranks and streams -----------------------------------------------------------------------
  void add_rank(std::int64_t stage) {
    const auto rank = static_cast<graph::RankId>(stage);
    std::array<graph::StreamId, graph::kStreamKindCount> ids{};
    for (int k = 0; k < graph::kStreamKindCount; ++k) ids[k] = out_.graph.add_stream(rank, static_cast<StreamKind>(k));
    streams_.push_back(ids);
    out_.rank_names.push_back(fmt::format("stage {} (x{} GPUs)", stage, replicas_));
  }

  graph::StreamId stream(std::int64_t stage, StreamKind kind) const {
    return streams_[static_cast<std::size_t>(stage)][static_cast<int>(kind)];
  }

  TaskId add_task(std::int64_t stage, StreamKind kind, graph::OpId op, Category cat, std::uint32_t lbl,
                  std::int32_t mb) {
    return out_.graph.add_task(graph::Task{op, stream(stage, kind), cat, lbl, mb});
  }

  // Appends ops as a dependency chain; compute ops get `compute_category`.
  void emit(std::int64_t stage, const std::vector<OpRef>& ops, Category compute_category, std::int32_t mb,
            Chain& chain) {
    for (const auto& op : ops) {
      const bool is_compute = op.stream == StreamKind::compute;
      const TaskId id = add_task(stage, op.stream, op.op, is_compute ? compute_category : op.comm_category, op.label, mb);
      if (is_compute) out_.hardware_flops += op.flops * static_cast<double>(replicas_);
      link(chain, id);
    }
  }

  void link(Chain& chain, TaskId id) {
    if (chain.empty) {
      chain.first = id;
      chain.empty = false;
    } else {
      out_.graph.add_dependency(chain.last, id);
    }
    chain.last = id;
  }

  // ---- pipeline steps --------------------------------------------------------------------------
  std::size_t step_index(std::int64_t stage, std::int64_t chunk, std::int64_t mb, Pass pass) const {
    return static_cast<std::size_t>((((stage * v_ + chunk) * m_ + mb) * 2) + (pass == Pass::backward ? 1 : 0));
  }

  std::int64_t model_chunk(std::int64_t stage, std::int64_t chunk) const { return chunk * p_ + stage; }

  void emit_stage(std::int64_t stage) {
    const auto schedule = stage_schedule(s_.parallelism.schedule, p_, stage, m_, v_);
    const bool zero3 = s_.parallelism.zero_stage >= 3;
    for (const auto& step : schedule) {
      Chain chain;
      const std::int64_t mc = model_chunk(stage, step.chunk);
      const bool first_chunk = mc == 0;
      const bool last_chunk = mc == p_ * v_ - 1;
      if (step.pass == Pass::forward) {
        if (first_chunk) emit(stage, embedding_.forward, Category::forward, step.micro_batch, chain);
        std::optional<TaskId> previous_layer;
        for (std::int64_t l = 0; l < layers_per_chunk_; ++l) {
          Chain layer;
          emit(stage, layer_.forward, Category::forward, step.micro_batch, layer);
          if (zero3) gate(gather_layer(stage, step.micro_batch, previous_layer), layer);
          previous_layer = layer.first;
          append(chain, layer);
        }
        if (last_chunk) emit(stage, head_.forward, Category::forward, step.micro_batch, chain);
      } else {
        if (last_chunk) emit(stage, head_.backward, Category::backward, step.micro_batch, chain);
        std::optional<TaskId> previous_layer;
        for (std::int64_t l = layers_per_chunk_ - 1; l >= 0; --l) {
          Chain layer;
          emit(stage, recompute_, Category::recompute, step.micro_batch, layer);
          emit(stage, layer_.backward, Category::backward, step.micro_batch, layer);
          if (zero3) gate(gather_layer(stage, step.micro_batch, previous_layer), layer);
          previous_layer = layer.first;
          append(chain, layer);
          grad_ready_[stage_key(stage, step.chunk, l)] = chain.last;
          if (zero3) reduce_layer(stage, step.micro_batch, chain.last);
        }
        if (first_chunk) emit(stage, embedding_.backward, Category::backward, step.micro_batch, chain);
      }
      steps_[step_index(stage, step.chunk, step.micro_batch, step.pass)] = chain;
      stage_last_[stage] = chain.last;
    }
  }

  static std::int64_t stage_key(std::int64_t stage, std::int64_t chunk, std::int64_t layer) {
    return (stage << 40) | (chunk << 20) | layer;
  }

  // ZeRO-3: gather a layer's parameters; the gather may start once the previous layer has started
  // (one layer of prefetch) and the layer's first op waits for it (see gate()).
  TaskId gather_layer(std::int64_t stage, std::int32_t mb, std::optional<TaskId> previous_layer_start) {
    const double bytes = models::parameters_per_layer(s_.model) / static_cast<double>(s_.parallelism.tensor) *
                         weight_bytes_per_param(s_.training.precision);
    if (!zero3_gather_op_) {
      zero3_gather_op_ = out_.graph.add_op(CommOp{graph::CollectiveKind::all_gather, bytes, data_group()});
      zero3_reduce_op_ = out_.graph.add_op(CommOp{graph::CollectiveKind::reduce_scatter,
                                                  bytes / weight_bytes_per_param(s_.training.precision) *
                                                      gradient_bytes_per_param(s_.training.precision),
                                                  data_group()});
    }
    const TaskId g = add_task(stage, StreamKind::param_gather, *zero3_gather_op_, Category::data_comm,
                              label("zero3_param_all_gather"), mb);
    if (previous_layer_start) out_.graph.add_dependency(*previous_layer_start, g);
    return g;
  }

  // The first task of `chain` waits for `task`.
  void gate(TaskId task, const Chain& chain) { out_.graph.add_dependency(task, chain.first); }

  // Continues `chain` with `next` (the first of `next` waits for the last of `chain`).
  void append(Chain& chain, const Chain& next) {
    if (next.empty) return;
    if (chain.empty) {
      chain = next;
      return;
    }
    out_.graph.add_dependency(chain.last, next.first);
    chain.last = next.last;
  }

  void reduce_layer(std::int64_t stage, std::int32_t mb, TaskId after) {
    const TaskId r = add_task(stage, StreamKind::data_comm, *zero3_reduce_op_, Category::data_comm,
                              label("zero3_grad_reduce_scatter"), mb);
    out_.graph.add_dependency(after, r);
    data_tasks_[stage].push_back(r);
  }

  graph::CommGroup data_group() const {
    return mesh_.group(s_.parallelism.data * s_.parallelism.context, s_.parallelism.tensor);
  }

  // Activations flow to the next model chunk, gradients to the previous one.
  void connect_stages(std::int64_t stage) {
    const auto schedule = stage_schedule(s_.parallelism.schedule, p_, stage, m_, v_);
    for (const auto& step : schedule) {
      const std::int64_t mc = model_chunk(stage, step.chunk);
      const bool forward = step.pass == Pass::forward;
      const std::int64_t next = forward ? mc + 1 : mc - 1;
      if (next < 0 || next >= p_ * v_) continue;
      const Chain& from = steps_[step_index(stage, step.chunk, step.micro_batch, step.pass)];
      const Chain& to = steps_[step_index(next % p_, next / p_, step.micro_batch, step.pass)];
      DTSIM_CHECK(!from.empty && !to.empty, "pipeline step without tasks");
      const TaskId send = add_task(stage, StreamKind::pipeline_send, pipeline_send_op_, Category::pipeline_comm,
                                   forward ? pipeline_send_label_ : pipeline_grad_label_, step.micro_batch);
      out_.graph.add_dependency(from.last, send);
      out_.graph.add_dependency(send, to.first);
    }
  }

  // ---- gradients and optimizer -----------------------------------------------------------------
  double stage_parameters(std::int64_t stage) const {
    double params = static_cast<double>(layers_per_chunk_ * v_) * models::parameters_per_layer(s_.model);
    if (stage == 0) params += models::embedding_parameters(s_.model);
    if (stage == p_ - 1) params += models::head_parameters(s_.model);
    return params / static_cast<double>(s_.parallelism.tensor);
  }

  void emit_gradient_sync_and_optimizer(std::int64_t stage) {
    const auto& par = s_.parallelism;
    const config::Precision prec = s_.training.precision;
    const bool sharded = par.distributed_optimizer || par.zero_stage >= 1;
    const std::int64_t dp = par.data * par.context;
    const graph::CommGroup group = data_group();
    std::vector<TaskId>& reductions = data_tasks_[stage];

    if (par.zero_stage < 3 && dp > 1) {
      // Gradients become final when their layer's last backward ends; bucket them in that order.
      std::vector<TaskId> ready;
      for (std::int64_t c = 0; c < v_; ++c) {
        for (std::int64_t l = 0; l < layers_per_chunk_; ++l) ready.push_back(grad_ready_.at(stage_key(stage, c, l)));
      }
      std::sort(ready.begin(), ready.end());
      const double layer_bytes = models::parameters_per_layer(s_.model) / static_cast<double>(par.tensor) *
                                 gradient_bytes_per_param(prec);
      const double extra_bytes =
          (stage_parameters(stage) - static_cast<double>(ready.size()) * models::parameters_per_layer(s_.model) /
                                         static_cast<double>(par.tensor)) *
          gradient_bytes_per_param(prec);
      const auto kind = sharded ? graph::CollectiveKind::reduce_scatter : graph::CollectiveKind::all_reduce;
      const std::uint32_t lbl = label(sharded ? "grad_reduce_scatter" : "grad_all_reduce");
      double bucket = extra_bytes;  // embedding/head gradients travel with the first bucket
      for (std::size_t i = 0; i < ready.size(); ++i) {
        bucket += layer_bytes;
        if (bucket < s_.training.bucket_bytes && i + 1 < ready.size()) continue;
        const graph::OpId op = out_.graph.add_op(CommOp{kind, bucket, group});
        const TaskId t = add_task(stage, StreamKind::data_comm, op, Category::data_comm, lbl, -1);
        out_.graph.add_dependency(s_.training.overlap_grad_reduce ? ready[i] : stage_last_.at(stage), t);
        reductions.push_back(t);
        bucket = 0.0;
      }
    }

    const double params = stage_parameters(stage);
    graph::ComputeOp step;
    step.cls = graph::ComputeClass::optimizer;
    step.bytes = params / (sharded ? static_cast<double>(dp) : 1.0) * optimizer_bytes_per_param(prec);
    step.kernels = 4;
    const TaskId opt = add_task(stage, StreamKind::compute, out_.graph.add_op(step), Category::optimizer,
                                label("optimizer_step"), -1);
    out_.graph.add_dependency(stage_last_.at(stage), opt);
    for (TaskId r : reductions) out_.graph.add_dependency(r, opt);

    if (sharded && par.zero_stage < 3 && dp > 1) {
      const graph::OpId op = out_.graph.add_op(
          CommOp{graph::CollectiveKind::all_gather, params * weight_bytes_per_param(prec), group});
      const TaskId g = add_task(stage, StreamKind::param_gather, op, Category::data_comm, label("param_all_gather"), -1);
      out_.graph.add_dependency(opt, g);
    }
  }

  const config::Scenario& s_;
  Mesh mesh_;
  std::int64_t p_;
  std::int64_t v_;
  std::int64_t m_;
  std::int64_t layers_per_chunk_;
  std::int64_t replicas_;
  LoweredGraph out_;
  std::map<std::string, std::uint32_t, std::less<>> labels_;
  Program layer_, embedding_, head_;
  std::vector<OpRef> recompute_;
  graph::OpId pipeline_send_op_ = 0;
  std::uint32_t pipeline_send_label_ = 0;
  std::uint32_t pipeline_grad_label_ = 0;
  std::optional<graph::OpId> zero3_gather_op_;
  std::optional<graph::OpId> zero3_reduce_op_;
  std::vector<std::array<graph::StreamId, graph::kStreamKindCount>> streams_;
  std::vector<Chain> steps_;
  std::map<std::int64_t, TaskId> grad_ready_;
  std::map<std::int64_t, TaskId> stage_last_;
  std::map<std::int64_t, std::vector<TaskId>> data_tasks_;
};

}  // namespace

LoweredGraph lower(const config::Scenario& scenario) {
  DTSIM_CHECK(!infeasibility(scenario).has_value(), "lower() needs a feasible scenario");
  return Lowering(scenario).run();
}

}  // namespace dtsim::parallel
