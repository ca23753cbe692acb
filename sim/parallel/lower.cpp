#include "parallel/lower.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <tuple>

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
  bool gemm = false;
  // Pipelined with the adjacent GEMM: one chunk (1/t of the bytes) on the critical path, the rest
  // concurrent with the GEMM.
  models::GemmOverlap overlap = models::GemmOverlap::none;
  graph::OpId chunk_op = 0;  // 1/t of the bytes
  graph::OpId rest_op = 0;   // (t-1)/t of the bytes
};

struct Program {
  std::vector<OpRef> forward;
  std::vector<OpRef> backward;
};

// A sequence of dependent tasks; `also`, when set, is a second task the next one must wait for (the
// communication running beside an overlapped GEMM).
struct Chain {
  TaskId first = 0;
  TaskId last = 0;
  bool empty = true;
  std::optional<TaskId> also;

  static Chain after(TaskId task) { return Chain{task, task, false, std::nullopt}; }
};

// Groups a collective can run over.
enum class GroupKind : std::uint8_t { tensor, context, data };

// A collective instance being assembled in every-rank mode: the barrier task and how many members
// have not yet arrived.
struct Rendezvous {
  TaskId barrier = 0;
  std::int64_t waiting = 0;
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
        chunk_layers_(chunk_layers(s.model.layers, p_, v_)),
        max_chunk_layers_(*std::max_element(chunk_layers_.begin(), chunk_layers_.end())),
        every_rank_(s.simulation.ranks == config::RankMode::all),
        replicas_(every_rank_ ? 1 : s.parallelism.tensor * s.parallelism.context * s.parallelism.data) {
    const std::int64_t ranks = every_rank_ ? s.gpu_count() : p_;
    out_.graph = graph::TaskGraph(static_cast<std::uint32_t>(ranks));
    out_.gpus_per_simulated_rank = replicas_;
    for (std::int64_t r = 0; r < ranks; ++r) coords_.push_back(coord_of(r));
  }

  LoweredGraph run() {
    intern_programs();
    const auto ranks = static_cast<std::int64_t>(coords_.size());
    for (std::int64_t r = 0; r < ranks; ++r) add_rank(r);
    steps_.assign(static_cast<std::size_t>(ranks * v_ * m_ * 2), Chain{});
    step_after_.assign(steps_.size(), std::nullopt);
    grad_ready_.assign(static_cast<std::size_t>(ranks * v_ * max_chunk_layers_), TaskId{0});
    first_use_.assign(static_cast<std::size_t>(ranks * v_ * max_chunk_layers_), TaskId{0});
    step_first_.assign(static_cast<std::size_t>(ranks), TaskId{0});
    stage_last_.assign(static_cast<std::size_t>(ranks), TaskId{0});
    data_tasks_.assign(static_cast<std::size_t>(ranks), {});
    for (std::int64_t r = 0; r < ranks; ++r) emit_rank(r);
    for (std::int64_t r = 0; r < ranks; ++r) connect_stages(r);
    for (std::int64_t r = 0; r < ranks; ++r) emit_gradient_sync_and_optimizer(r);
    DTSIM_CHECK(pending_.empty(), "a collective is missing members");
    out_.graph.finalize();
    return std::move(out_);
  }

 private:
  // ---- ranks -----------------------------------------------------------------------------------
  // Every-rank mode simulates every mesh rank; symmetric mode one rank per stage (the stage's rank at
  // coordinate 0 of the other dimensions), numbered by stage.
  Coord coord_of(std::int64_t r) const { return every_rank_ ? mesh_.coord_of(r) : Coord{r, 0, 0, 0}; }
  std::int64_t rank_of(const Coord& c) const { return every_rank_ ? mesh_.rank_of(c) : c.stage; }

  const Coord& coord(std::int64_t r) const { return coords_[static_cast<std::size_t>(r)]; }

  // The rank leading r's group of a kind (its coordinates along the group's dimensions set to 0), and
  // the group's size.
  std::pair<std::int64_t, std::int64_t> group_of(std::int64_t r, GroupKind kind) const {
    Coord c = coord(r);
    const auto& par = s_.parallelism;
    switch (kind) {
      case GroupKind::tensor:
        c.tensor = 0;
        return {rank_of(c), par.tensor};
      case GroupKind::context:
        c.context = 0;
        return {rank_of(c), par.context};
      case GroupKind::data:
        c.context = 0;
        c.data = 0;
        return {rank_of(c), par.context * par.data};
    }
    return {r, 1};
  }

  // Emits rank r's part of a collective and continues `chain` with it. Symmetric mode: one task on
  // the rank's stream. Every-rank mode: the k-th collective a member runs over a group meets the k-th
  // of every other member: each member posts an arrival on its stream (the first to arrive posts the
  // group's barrier there instead), the barrier waits for all arrivals, and each member's copy of the
  // collective starts after the barrier, so all members run it together.
  void collective(std::int64_t r, GroupKind kind, StreamKind stream_kind, graph::OpId op, Category cat,
                  std::uint32_t lbl, std::int32_t mb, Chain& chain) {
    const auto [leader, size] = group_of(r, kind);
    if (!every_rank_ || size <= 1) {
      link(chain, add_task(r, stream_kind, op, cat, lbl, mb));
      return;
    }
    const std::int64_t seq = sequence_[{r, static_cast<int>(kind), static_cast<int>(stream_kind)}]++;
    const RendezvousKey key{leader, static_cast<int>(kind) * 16 + static_cast<int>(stream_kind), seq};
    auto it = pending_.find(key);
    TaskId barrier = 0;
    if (it == pending_.end()) {
      barrier = add_task(r, stream_kind, arrival_op_, cat, lbl, mb);
      depend(chain, barrier);
      it = pending_.emplace(key, Rendezvous{barrier, size - 1}).first;
    } else {
      barrier = it->second.barrier;
      const TaskId arrive = add_task(r, stream_kind, arrival_op_, cat, lbl, mb);
      depend(chain, arrive);
      out_.graph.add_dependency(arrive, barrier);
      if (--it->second.waiting == 0) pending_.erase(it);
    }
    const TaskId run = add_task(r, stream_kind, op, cat, lbl, mb);
    out_.graph.add_dependency(barrier, run);
    if (chain.empty) chain.first = barrier, chain.empty = false;
    chain.last = run;
    chain.also.reset();
  }

  // `task` waits for the end of `chain`.
  void depend(const Chain& chain, TaskId task) {
    if (chain.empty) return;
    out_.graph.add_dependency(chain.last, task);
    if (chain.also) out_.graph.add_dependency(*chain.also, task);
  }

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
        ref.gemm = op.compute.cls == graph::ComputeClass::gemm;
        return ref;
      case models::CommRole::tensor_all_reduce:
        return comm_ref(ref, graph::CollectiveKind::all_reduce, op.comm_bytes, mesh_.tensor_group());
      case models::CommRole::tensor_all_gather:
        return comm_ref(ref, graph::CollectiveKind::all_gather, op.comm_bytes, mesh_.tensor_group(), op.overlap);
      case models::CommRole::tensor_reduce_scatter:
        return comm_ref(ref, graph::CollectiveKind::reduce_scatter, op.comm_bytes, mesh_.tensor_group(), op.overlap);
      case models::CommRole::context_exchange: {
        // Each step passes K/V to the ring neighbour: the transfer crosses nodes when the ring does.
        graph::CommGroup pair = mesh_.neighbours(config::MeshDim::context);
        if (mesh_.context_group().nodes > 1) pair.nodes = 2;
        OpRef r = comm_ref(ref, graph::CollectiveKind::send_recv, op.comm_bytes, pair);
        r.stream = StreamKind::context_comm;
        r.comm_category = Category::context_comm;
        return r;
      }
    }
    throw core::InternalError("unknown communication role");
  }

  OpRef comm_ref(OpRef ref, graph::CollectiveKind kind, double bytes, graph::CommGroup group,
                 models::GemmOverlap overlap = models::GemmOverlap::none) {
    ref.op = out_.graph.add_op(CommOp{kind, bytes, group});
    ref.stream = StreamKind::tensor_comm;
    ref.comm_category = Category::tensor_comm;
    if (s_.parallelism.tp_comm_overlap && overlap != models::GemmOverlap::none) {
      const double t = static_cast<double>(group.size);
      ref.overlap = overlap;
      ref.chunk_op = out_.graph.add_op(CommOp{kind, bytes / t, group});
      ref.rest_op = out_.graph.add_op(CommOp{kind, bytes * (t - 1) / t, group});
    }
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
    pipeline_send_op_ = out_.graph.add_op(
        CommOp{graph::CollectiveKind::send_recv, activation, mesh_.neighbours(config::MeshDim::pipeline)});
    // Every-rank mode: a member's arrival at a collective (and the group's barrier) take no time.
    arrival_op_ = out_.graph.add_op(CommOp{graph::CollectiveKind::all_reduce, 0.0, graph::CommGroup{}});
    if (par.zero_stage >= 3) {
      const double layer_params = models::parameters_per_layer(s_.model) / static_cast<double>(par.tensor);
      const config::Precision prec = s_.training.precision;
      zero3_gather_op_ = out_.graph.add_op(
          CommOp{graph::CollectiveKind::all_gather, layer_params * weight_bytes_per_param(prec), data_group()});
      zero3_reduce_op_ = out_.graph.add_op(
          CommOp{graph::CollectiveKind::reduce_scatter, layer_params * gradient_bytes_per_param(prec), data_group()});
    }
    pipeline_send_label_ = label("pipeline_send_activation");
    pipeline_grad_label_ = label("pipeline_send_gradient");
  }

  // ---- ranks and streams -----------------------------------------------------------------------
  void add_rank(std::int64_t r) {
    const auto rank = static_cast<graph::RankId>(r);
    std::array<graph::StreamId, graph::kStreamKindCount> ids{};
    for (int k = 0; k < graph::kStreamKindCount; ++k) ids[k] = out_.graph.add_stream(rank, static_cast<StreamKind>(k));
    streams_.push_back(ids);
    const Coord& c = coord(r);
    out_.rank_names.push_back(every_rank_ ? fmt::format("rank {} (stage {}, data {}, context {}, tensor {})", r, c.stage,
                                                        c.data, c.context, c.tensor)
                                          : fmt::format("stage {} (x{} GPUs)", c.stage, replicas_));
  }

  graph::StreamId stream(std::int64_t r, StreamKind kind) const {
    return streams_[static_cast<std::size_t>(r)][static_cast<int>(kind)];
  }

  TaskId add_task(std::int64_t r, StreamKind kind, graph::OpId op, Category cat, std::uint32_t lbl, std::int32_t mb) {
    return out_.graph.add_task(graph::Task{op, stream(r, kind), cat, lbl, mb});
  }

  // Appends ops as a dependency chain; compute ops get `compute_category`.
  void emit(std::int64_t r, const std::vector<OpRef>& ops, Category compute_category, std::int32_t mb, Chain& chain) {
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const OpRef& op = ops[i];
      const OpRef* next = i + 1 < ops.size() ? &ops[i + 1] : nullptr;
      if (op.overlap == models::GemmOverlap::with_next && next != nullptr && next->gemm) {
        // All-gather feeding a GEMM: the first chunk, then the GEMM beside the remaining chunks.
        emit_comm(r, op, op.chunk_op, mb, chain);
        Chain side = chain;
        emit_compute(r, *next, compute_category, mb, chain);
        emit_comm(r, op, op.rest_op, mb, side);
        chain.also = side.last;
        ++i;
      } else if (op.gemm && next != nullptr && next->overlap == models::GemmOverlap::with_previous) {
        // Reduce-scatter draining a GEMM: all chunks but the last beside the GEMM, then the last.
        Chain side = chain;
        emit_compute(r, op, compute_category, mb, chain);
        emit_comm(r, *next, next->rest_op, mb, side);
        chain.also = side.last;
        emit_comm(r, *next, next->chunk_op, mb, chain);
        ++i;
      } else if (op.stream == StreamKind::compute) {
        emit_compute(r, op, compute_category, mb, chain);
      } else {
        emit_comm(r, op, op.op, mb, chain);
      }
    }
  }

  void emit_compute(std::int64_t r, const OpRef& op, Category category, std::int32_t mb, Chain& chain) {
    link(chain, add_task(r, op.stream, op.op, category, op.label, mb));
    out_.hardware_flops += op.flops * static_cast<double>(replicas_);
  }

  void emit_comm(std::int64_t r, const OpRef& op, graph::OpId which, std::int32_t mb, Chain& chain) {
    const GroupKind kind = op.stream == StreamKind::context_comm ? GroupKind::context : GroupKind::tensor;
    collective(r, kind, op.stream, which, op.comm_category, op.label, mb, chain);
  }

  void link(Chain& chain, TaskId id) {
    if (chain.empty) {
      chain.first = id;
      chain.empty = false;
    } else {
      depend(chain, id);
    }
    chain.last = id;
    chain.also.reset();
  }

  // ---- pipeline steps --------------------------------------------------------------------------
  std::size_t step_index(std::int64_t r, std::int64_t chunk, std::int64_t mb, Pass pass) const {
    return static_cast<std::size_t>((((r * v_ + chunk) * m_ + mb) * 2) + (pass == Pass::backward ? 1 : 0));
  }

  std::size_t layer_index(std::int64_t r, std::int64_t chunk, std::int64_t layer) const {
    return static_cast<std::size_t>((r * v_ + chunk) * max_chunk_layers_ + layer);
  }

  std::int64_t model_chunk(std::int64_t stage, std::int64_t chunk) const { return chunk * p_ + stage; }
  std::int64_t layers_in(std::int64_t stage, std::int64_t chunk) const {
    return chunk_layers_[static_cast<std::size_t>(model_chunk(stage, chunk))];
  }

  void emit_rank(std::int64_t r) {
    const std::int64_t stage = coord(r).stage;
    previous_step_.reset();
    const bool zero3 = s_.parallelism.zero_stage >= 3;
    for (const auto& step : stage_schedule(s_.parallelism.schedule, p_, stage, m_, v_)) {
      Chain chain;
      const std::int64_t mc = model_chunk(stage, step.chunk);
      const bool first_chunk = mc == 0;
      const bool last_chunk = mc == p_ * v_ - 1;
      const std::int32_t mb = step.micro_batch;
      std::optional<TaskId> previous_layer;
      if (step.pass == Pass::forward) {
        if (first_chunk) emit(r, embedding_.forward, Category::forward, mb, chain);
        if (first_chunk && mb == 0) step_first_[static_cast<std::size_t>(r)] = chain.first;
        for (std::int64_t l = 0; l < layers_in(stage, step.chunk); ++l) {
          Chain layer;
          emit(r, layer_.forward, Category::forward, mb, layer);
          if (zero3) gate(gather_layer(r, mb, previous_layer), layer);
          if (mb == 0) first_use_[layer_index(r, step.chunk, l)] = layer.first;
          previous_layer = layer.first;
          append(chain, layer);
        }
        if (last_chunk) emit(r, head_.forward, Category::forward, mb, chain);
      } else {
        if (last_chunk) emit(r, head_.backward, Category::backward, mb, chain);
        for (std::int64_t l = layers_in(stage, step.chunk) - 1; l >= 0; --l) {
          Chain layer;
          emit(r, recompute_, Category::recompute, mb, layer);
          emit(r, layer_.backward, Category::backward, mb, layer);
          if (zero3) gate(gather_layer(r, mb, previous_layer), layer);
          previous_layer = layer.first;
          append(chain, layer);
          grad_ready_[layer_index(r, step.chunk, l)] = chain.last;
          if (zero3) reduce_layer(r, mb, chain.last);
        }
        if (first_chunk) emit(r, embedding_.backward, Category::backward, mb, chain);
      }
      DTSIM_CHECK(!chain.also, "a pipeline step ends beside an overlapped GEMM");
      const std::size_t index = step_index(r, step.chunk, mb, step.pass);
      steps_[index] = chain;
      // The step that follows in program order (a blocking pipeline transfer holds it back).
      if (previous_step_) step_after_[*previous_step_] = chain.first;
      previous_step_ = index;
      stage_last_[static_cast<std::size_t>(r)] = chain.last;
    }
  }

  // ZeRO-3: gather a layer's parameters; the gather may start once the previous layer has started
  // (one layer of prefetch) and the layer's first op waits for it (see gate()).
  TaskId gather_layer(std::int64_t r, std::int32_t mb, std::optional<TaskId> previous_layer_start) {
    Chain gather = previous_layer_start ? Chain::after(*previous_layer_start) : Chain{};
    collective(r, GroupKind::data, StreamKind::param_gather, zero3_gather_op_, Category::data_comm,
               label("zero3_param_all_gather"), mb, gather);
    return gather.last;
  }

  void reduce_layer(std::int64_t r, std::int32_t mb, TaskId after) {
    Chain reduce = Chain::after(after);
    collective(r, GroupKind::data, StreamKind::data_comm, zero3_reduce_op_, Category::data_comm,
               label("zero3_grad_reduce_scatter"), mb, reduce);
    data_tasks_[static_cast<std::size_t>(r)].push_back(reduce.last);
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
    depend(chain, next.first);
    chain.last = next.last;
    chain.also = next.also;
  }

  // Activations flow to the next model chunk, gradients to the previous one, between the ranks of
  // neighbouring stages with the same tensor, context and data coordinates.
  void connect_stages(std::int64_t r) {
    const Coord c = coord(r);
    for (const auto& step : stage_schedule(s_.parallelism.schedule, p_, c.stage, m_, v_)) {
      const std::int64_t mc = model_chunk(c.stage, step.chunk);
      const bool forward = step.pass == Pass::forward;
      const std::int64_t next = forward ? mc + 1 : mc - 1;
      if (next < 0 || next >= p_ * v_) continue;
      Coord peer = c;
      peer.stage = next % p_;
      const Chain& from = steps_[step_index(r, step.chunk, step.micro_batch, step.pass)];
      const Chain& to = steps_[step_index(rank_of(peer), next / p_, step.micro_batch, step.pass)];
      DTSIM_CHECK(!from.empty && !to.empty, "pipeline step without tasks");
      const TaskId send = add_task(r, StreamKind::pipeline_send, pipeline_send_op_, Category::pipeline_comm,
                                   forward ? pipeline_send_label_ : pipeline_grad_label_, step.micro_batch);
      out_.graph.add_dependency(from.last, send);
      out_.graph.add_dependency(send, to.first);
      if (s_.parallelism.pipeline_comm == config::PipelineComm::blocking) {
        // Megatron-LM's batched send/recv waits for its requests and synchronizes the device: the
        // sender's next step starts only when the transfer has completed.
        const std::size_t from_index = step_index(r, step.chunk, step.micro_batch, step.pass);
        if (step_after_[from_index]) out_.graph.add_dependency(send, *step_after_[from_index]);
      }
    }
  }

  // ---- gradients and optimizer -----------------------------------------------------------------
  double stage_parameters(std::int64_t stage) const {
    std::int64_t layers = 0;
    for (std::int64_t c = 0; c < v_; ++c) layers += layers_in(stage, c);
    double params = static_cast<double>(layers) * models::parameters_per_layer(s_.model);
    if (stage == 0) params += models::embedding_parameters(s_.model);
    if (stage == p_ - 1) params += models::head_parameters(s_.model);
    return params / static_cast<double>(s_.parallelism.tensor);
  }

  void emit_gradient_sync_and_optimizer(std::int64_t r) {
    const auto& par = s_.parallelism;
    const config::Precision prec = s_.training.precision;
    const bool sharded = par.distributed_optimizer || par.zero_stage >= 1;
    const std::int64_t dp = par.data * par.context;
    const std::int64_t stage = coord(r).stage;
    const TaskId backward_end = stage_last_[static_cast<std::size_t>(r)];
    std::vector<TaskId>& reductions = data_tasks_[static_cast<std::size_t>(r)];

    if (par.zero_stage < 3 && dp > 1) {
      // Gradients become final when their layer's last backward ends; bucket them in that order.
      std::vector<TaskId> ready;
      for (std::int64_t c = 0; c < v_; ++c) {
        for (std::int64_t l = 0; l < layers_in(stage, c); ++l) ready.push_back(grad_ready_[layer_index(r, c, l)]);
      }
      std::sort(ready.begin(), ready.end());
      const double layer_params = models::parameters_per_layer(s_.model) / static_cast<double>(par.tensor);
      const double layer_bytes = layer_params * gradient_bytes_per_param(prec);
      const double extra_bytes =
          (stage_parameters(stage) - static_cast<double>(ready.size()) * layer_params) * gradient_bytes_per_param(prec);
      const auto kind = sharded ? graph::CollectiveKind::reduce_scatter : graph::CollectiveKind::all_reduce;
      const std::uint32_t lbl = label(sharded ? "grad_reduce_scatter" : "grad_all_reduce");
      double bucket = extra_bytes;  // embedding/head gradients travel with the first bucket
      for (std::size_t i = 0; i < ready.size(); ++i) {
        bucket += layer_bytes;
        if (bucket < s_.training.bucket_bytes && i + 1 < ready.size()) continue;
        const graph::OpId op = intern_comm(CommOp{kind, bucket, data_group()});
        const TaskId after = s_.training.overlap_grad_reduce ? ready[i] : backward_end;
        Chain reduce = Chain::after(after);
        collective(r, GroupKind::data, StreamKind::data_comm, op, Category::data_comm, lbl, -1, reduce);
        reductions.push_back(reduce.last);
        bucket = 0.0;
      }
    }

    const double params = stage_parameters(stage);
    graph::ComputeOp step;
    step.cls = graph::ComputeClass::optimizer;
    step.bytes = params / (sharded ? static_cast<double>(dp) : 1.0) * optimizer_bytes_per_param(prec);
    step.kernels = 4;
    if (!optimizer_ops_.count(stage)) optimizer_ops_[stage] = out_.graph.add_op(step);
    const TaskId opt = add_task(r, StreamKind::compute, optimizer_ops_[stage], Category::optimizer,
                                label("optimizer_step"), -1);
    out_.graph.add_dependency(backward_end, opt);
    for (TaskId t : reductions) out_.graph.add_dependency(t, opt);

    if (sharded && par.zero_stage < 3 && dp > 1) {
      if (s_.training.overlap_param_gather) {
        emit_overlapped_param_gathers(r);
      } else {
        const graph::OpId op = intern_comm(
            CommOp{graph::CollectiveKind::all_gather, params * weight_bytes_per_param(prec), data_group()});
        Chain gather = Chain::after(opt);
        collective(r, GroupKind::data, StreamKind::param_gather, op, Category::data_comm, label("param_all_gather"),
                   -1, gather);
      }
    }
  }

  // The updated parameters are gathered in buckets, in the order the forward pass uses them, each
  // bucket before its first layer's first micro-batch (steady state of Megatron-Core's
  // --overlap-param-gather: the gathers of iteration i+1 run beside its forward pass).
  void emit_overlapped_param_gathers(std::int64_t r) {
    const std::int64_t stage = coord(r).stage;
    const double weight_bytes = weight_bytes_per_param(s_.training.precision);
    const double layer_bytes = models::parameters_per_layer(s_.model) / static_cast<double>(s_.parallelism.tensor) *
                               weight_bytes;
    const double extra_bytes =
        (stage == 0 ? models::embedding_parameters(s_.model) : 0.0) +
        (stage == p_ - 1 ? models::head_parameters(s_.model) : 0.0);
    double bucket = extra_bytes / static_cast<double>(s_.parallelism.tensor) * weight_bytes;
    std::optional<TaskId> bucket_user;
    if (stage == 0) bucket_user = step_first_[static_cast<std::size_t>(r)];
    const std::uint32_t lbl = label("param_all_gather");
    for (std::int64_t c = 0; c < v_; ++c) {
      for (std::int64_t l = 0; l < layers_in(stage, c); ++l) {
        if (!bucket_user) bucket_user = first_use_[layer_index(r, c, l)];
        bucket += layer_bytes;
        const bool last = c == v_ - 1 && l == layers_in(stage, c) - 1;
        if (bucket < s_.training.bucket_bytes && !last) continue;
        const graph::OpId op = intern_comm(CommOp{graph::CollectiveKind::all_gather, bucket, data_group()});
        Chain gather;
        collective(r, GroupKind::data, StreamKind::param_gather, op, Category::data_comm, lbl, -1, gather);
        out_.graph.add_dependency(gather.last, *bucket_user);
        bucket = 0.0;
        bucket_user.reset();
      }
    }
  }

  // One op per distinct communication (buckets of equal size share theirs).
  graph::OpId intern_comm(const CommOp& op) {
    const auto key = std::make_tuple(static_cast<int>(op.kind), op.bytes, op.group.size, op.group.nodes);
    auto it = comm_ops_.find(key);
    if (it != comm_ops_.end()) return it->second;
    const graph::OpId id = out_.graph.add_op(op);
    comm_ops_.emplace(key, id);
    return id;
  }

  graph::CommGroup data_group() const { return mesh_.gradient_group(); }

  struct RendezvousKey {
    std::int64_t leader;
    int kind;
    std::int64_t seq;
    auto operator<=>(const RendezvousKey&) const = default;
  };

  const config::Scenario& s_;
  Mesh mesh_;
  std::int64_t p_;
  std::int64_t v_;
  std::int64_t m_;
  std::vector<std::int64_t> chunk_layers_;
  std::int64_t max_chunk_layers_;
  bool every_rank_;
  std::int64_t replicas_;
  LoweredGraph out_;
  std::vector<Coord> coords_;
  std::map<std::string, std::uint32_t, std::less<>> labels_;
  Program layer_, embedding_, head_;
  std::vector<OpRef> recompute_;
  graph::OpId pipeline_send_op_ = 0;
  graph::OpId arrival_op_ = 0;
  graph::OpId zero3_gather_op_ = 0;
  graph::OpId zero3_reduce_op_ = 0;
  std::uint32_t pipeline_send_label_ = 0;
  std::uint32_t pipeline_grad_label_ = 0;
  std::vector<std::array<graph::StreamId, graph::kStreamKindCount>> streams_;
  std::vector<Chain> steps_;
  std::vector<std::optional<TaskId>> step_after_;   // first task of the step run after, on the same rank
  std::optional<std::size_t> previous_step_;
  std::vector<TaskId> grad_ready_;
  std::vector<TaskId> first_use_;   // first task of each layer's first forward
  std::vector<TaskId> step_first_;  // first task of the first forward step (embedding on stage 0)
  std::vector<TaskId> stage_last_;
  std::vector<std::vector<TaskId>> data_tasks_;
  std::map<std::int64_t, graph::OpId> optimizer_ops_;
  std::map<std::tuple<int, double, std::int64_t, std::int64_t>, graph::OpId> comm_ops_;
  std::map<std::tuple<std::int64_t, int, int>, std::int64_t> sequence_;
  std::map<RendezvousKey, Rendezvous> pending_;
};

}  // namespace

LoweredGraph lower(const config::Scenario& scenario) {
  DTSIM_CHECK(!infeasibility(scenario).has_value(), "lower() needs a feasible scenario");
  return Lowering(scenario).run();
}

}  // namespace dtsim::parallel
