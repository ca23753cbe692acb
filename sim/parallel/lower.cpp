#include "parallel/lower.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "models/transformer/transformer.hpp"
#include "parallel/feasibility.hpp"
#include "parallel/input_load.hpp"
#include "parallel/lowering.hpp"
#include "parallel/zero3.hpp"

namespace dtsim::parallel {

namespace detail {

namespace {

// The lowering's group layouts: every-rank mode's with each node's speeds, built here; symmetric mode's
// from `cache` when there is one, else built here.
const GroupLayouts& layouts_of(const config::Scenario& s, const Mesh& mesh, LayoutsCache* cache,
                               std::optional<GroupLayouts>& own) {
  if (s.simulation.ranks == config::RankMode::all) {
    return own.emplace(
        mesh, true,
        config::node_link_speeds(s.cluster.speed_factors, s.cluster.nodes, s.cluster.network.nodes_per_leaf));
  }
  return cache != nullptr ? cache->of(mesh) : own.emplace(mesh, false);
}

}  // namespace

Lowering::Lowering(const config::Scenario& s, const LowerOptions& options)
    : s_(s),
      down_(options.down_replicas),
      mesh_(Mesh::of(s)),
      p_(s.parallelism.pipeline),
      v_(s.parallelism.virtual_stages),
      m_(micro_batches(s)),
      chunk_layers_(model_chunk_layers(s.model, p_, v_)),
      chunk_first_(chunk_first_layers(chunk_layers_)),
      max_chunk_layers_(*std::max_element(chunk_layers_.begin(), chunk_layers_.end())),
      layer_kinds_(s.model),
      every_rank_(s.simulation.ranks == config::RankMode::all),
      fuse_(every_rank_ || options.fuse_kernels),
      delay_wgrad_(s.parallelism.expert_comm_overlap && s.parallelism.delay_wgrad_compute),
      layouts_(layouts_of(s, mesh_, options.layouts_cache, own_layouts_)),
      replicas_(every_rank_ ? 1 : s.parallelism.tensor * s.parallelism.context * s.parallelism.data),
      reduces_each_micro_batch_(s.parallelism.zero_stage == 2 &&
                                s.parallelism.data * s.parallelism.context > 1 && m_ > 1),
      embedding_params_(models::embedding_parameters(s.model) / static_cast<double>(s.parallelism.tensor)),
      head_params_(models::head_parameters(s.model) / static_cast<double>(s.parallelism.tensor)),
      head_use_params_(zero3_head_use_parameters(s.model) / static_cast<double>(s.parallelism.tensor)) {
  for (std::int64_t stage = 0; stage < p_; ++stage) stage_buckets_.push_back(gradient_buckets(s, stage));
  const std::int64_t ranks = every_rank_ ? s.gpu_count() : p_;
  out_.graph = graph::TaskGraph(static_cast<std::uint32_t>(ranks));
  out_.graph.set_task_limit(static_cast<std::size_t>(options.max_tasks));
  out_.gpus_per_simulated_rank = replicas_;
  for (std::int64_t r = 0; r < ranks; ++r) coords_.push_back(coord_of(r));
  const auto& par = s.parallelism;
  DTSIM_CHECK(down_.empty() || (every_rank_ && v_ == 1 && par.zero_stage == 0 && !par.distributed_optimizer &&
                                par.expert == 1 && !s.model.moe),
              "re-routing needs every rank simulated, one chunk per stage, unsharded state and no experts");
}

LoweredGraph Lowering::run() {
  intern_programs();
  if (!down_.empty()) plan_reroute_steps();
  const auto ranks = static_cast<std::int64_t>(coords_.size());
  add_streams(ranks);
  for (std::int64_t r = 0; r < ranks; ++r) add_rank(r);
  if (every_rank_) gangs_.emplace(out_.graph, mesh_, streams_);
  steps_.assign(static_cast<std::size_t>(ranks * v_ * m_ * kStepSlots), Chain{});
  step_after_.assign(steps_.size(), std::nullopt);
  grad_ready_.assign(static_cast<std::size_t>(ranks * v_ * max_chunk_layers_), TaskId{0});
  first_use_.assign(static_cast<std::size_t>(ranks * v_ * max_chunk_layers_), TaskId{0});
  step_first_.assign(static_cast<std::size_t>(ranks), TaskId{0});
  step_first_set_.assign(static_cast<std::size_t>(ranks), 0);
  stage_last_.assign(static_cast<std::size_t>(ranks), TaskId{0});
  data_tasks_.assign(static_cast<std::size_t>(ranks), {});
  last_reductions_.assign(static_cast<std::size_t>(ranks), {});
  emit_steps();
  // A down rank runs nothing of its own: its steps are its executors', its place in its data-parallel
  // group's collectives is joined by the others (gangs.hpp).
  for (std::int64_t r = 0; r < ranks; ++r) {
    if (!is_down(r)) connect_stages(r);
  }
  for (std::int64_t r = 0; r < ranks; ++r) {
    if (!is_down(r)) emit_gradient_sync_and_optimizer(r);
  }
  if (const std::optional<InputLoad> load = add_input_load_ops(s_, out_.graph)) {
    for (std::int64_t r = 0; r < ranks; ++r) {
      if (is_down(r)) continue;
      const auto i = static_cast<std::size_t>(r);
      add_input_load(*load, out_.graph, static_cast<graph::RankId>(r), step_first_[i],
                     streams_[i][static_cast<int>(StreamKind::compute)]);
    }
  }
  out_.graph.finalize();
  return std::move(out_);
}

std::int64_t Lowering::group_size(GroupKind kind) const {
  const auto& par = s_.parallelism;
  switch (kind) {
    case GroupKind::tensor:
      return par.tensor;
    case GroupKind::context:
      return par.context;
    case GroupKind::data:
      return par.context * par.data;
    case GroupKind::expert:
      return par.expert;
    case GroupKind::expert_data:
      return par.expert_data_degree();
  }
  return 1;
}

// Emits rank r's part of a collective and continues `chain` with it. Symmetric mode: one task on
// the rank's stream. Every-rank mode: one gang task on the streams of all members (gangs.hpp), which
// each member's chain continues with: it starts once every member has reached it.
void Lowering::collective(std::int64_t r, GroupKind kind, StreamKind stream_kind, graph::OpId op,
                          Category cat, graph::LabelId lbl, std::int32_t mb, Chain& chain) {
  if (!every_rank_ || group_size(kind) <= 1) {
    link(chain, add_task(r, stream_kind, op, cat, lbl, mb));
    return;
  }
  link(chain, gangs_->join(r, kind, stream_kind, graph::Task{op, 0, cat, lbl, mb}));
}

// `after` waits for `before`, unless stream order says so already (`before` is earlier on the
// stream `after` is on: the first of a gang's; ids grow along every stream).
void Lowering::wait(TaskId before, TaskId after) {
  const auto tasks = out_.graph.tasks();
  if (before < after && tasks[before].stream == tasks[after].stream) return;
  out_.graph.add_dependency(before, after);
}

// `task` waits for the end of `chain`.
void Lowering::depend(const Chain& chain, TaskId task) {
  if (chain.empty) return;
  wait(chain.last, task);
  if (chain.also) wait(*chain.also, task);
}

LayerGroups Lowering::layer_groups(std::int64_t r) const {
  if (every_rank_)
    return {layouts_.group(r, GroupKind::tensor), layouts_.exchange(r), layouts_.group(r, GroupKind::expert)};
  const std::int64_t stage = coord(r).stage;
  return {layouts_.stage_group(stage, GroupKind::tensor), layouts_.stage_exchange(stage),
          layouts_.stage_group(stage, GroupKind::expert)};
}

// The transfer of an activation (or its gradient) from rank r to the next (or preceding) stage.
graph::OpId Lowering::pipeline_send_op(std::int64_t r, bool next) {
  const graph::CommGroup& pair =
      every_rank_ ? layouts_.transfer(r, next) : layouts_.stage_transfer(coord(r).stage, next);
  return intern_comm(CommOp{graph::CollectiveKind::send_recv, pipeline_send_bytes_, pair});
}

void Lowering::intern_programs() {
  const auto& par = s_.parallelism;
  for (std::size_t r = 0; r < coords_.size(); ++r) {
    const LayerGroups groups = layer_groups(static_cast<std::int64_t>(r));
    const auto same = [&](const Programs& p) { return p.groups == groups; };
    const auto it = std::find_if(programs_.begin(), programs_.end(), same);
    program_of_.push_back(static_cast<std::uint32_t>(it - programs_.begin()));
    if (it == programs_.end()) programs_.push_back(intern_program(groups));
  }
  for (const KindPrograms& kind : programs_.front().kinds)
    recomputes_ = recomputes_ || !kind.recompute.empty();
  const double a = models::activation_bytes_per_element(s_.training.precision);
  const double tokens = static_cast<double>(s_.training.micro_batch_size) *
                        static_cast<double>(s_.model.seq_length) / static_cast<double>(par.context);
  pipeline_send_bytes_ =
      tokens * static_cast<double>(s_.model.hidden_size) * a / static_cast<double>(par.tensor);
  pipeline_send_label_ = label("pipeline_send_activation");
  pipeline_grad_label_ = label("pipeline_send_gradient");
  zero3_gather_label_ = label("zero3_param_all_gather");
  zero3_reduce_label_ = label("zero3_grad_reduce_scatter");
  optimizer_label_ = label("optimizer_step");
  param_gather_label_ = label("param_all_gather");
}

Lowering::Programs Lowering::intern_program(const LayerGroups& groups) {
  LayerOps ops = intern_layer_ops(s_, groups, out_.graph, labels_, comm_ops_, !down_.empty());
  Programs out{groups, {}, std::move(ops.embedding), std::move(ops.head), std::move(ops.mtp_projection)};
  for (KindOps& kind : ops.kinds) {
    KindPrograms& programs = out.kinds.emplace_back();
    programs.layer = std::move(kind.layer);
    programs.recompute = std::move(kind.recompute);
    if (delay_wgrad_)
      programs.delayed_backward =
          delay_weight_grads(programs.layer.backward, [&](const OpRef& op) { return is_exchange(op); });
  }
  if (!fuse_) return out;
  // Each rank is simulated (or many plans are), so task count matters: kernels that run back to back become
  // one task. ZeRO-3 prefetches a layer's parameters once the previous layer's first task has ended: that
  // task stays a kernel of its own.
  const bool zero3 = s_.parallelism.zero_stage >= 3;
  // W (a split backward's weight gradients) gathers nothing: its first task is no event.
  const auto fuse = [&](Program& p, bool first_alone) {
    p.forward = fuse_compute_runs(p.forward, first_alone, out_.graph, labels_);
    p.backward = fuse_compute_runs(p.backward, first_alone, out_.graph, labels_);
    p.input_grad = fuse_compute_runs(p.input_grad, first_alone, out_.graph, labels_);
    p.weight_grad = fuse_compute_runs(p.weight_grad, false, out_.graph, labels_);
  };
  for (KindPrograms& kind : out.kinds) fuse(kind.layer, zero3);
  fuse(out.embedding, false);
  fuse(out.head, false);
  fuse(out.mtp_projection, false);
  for (KindPrograms& kind : out.kinds) {
    kind.recompute = fuse_compute_runs(kind.recompute, zero3, out_.graph, labels_);
    kind.delayed_backward = fuse_delayed_runs(kind.delayed_backward, out_.graph, labels_);
    if (zero3) continue;
    kind.forward_sequence = LayerSequence(kind.layer.forward, out_.graph, labels_);
    if (kind.recompute.empty()) {
      kind.backward_sequence = LayerSequence(kind.layer.backward, out_.graph, labels_);
      kind.input_grad_sequence = LayerSequence(kind.layer.input_grad, out_.graph, labels_);
    }
    kind.weight_grad_sequence = LayerSequence(kind.layer.weight_grad, out_.graph, labels_);
  }
  return out;
}

// Symmetric mode numbers streams rank by rank; every-rank mode kind by kind, so that the streams a
// collective's members use, on consecutive ranks, are neighbours for the engine. Within a rank the
// order of kinds is the same either way.
void Lowering::add_streams(std::int64_t ranks) {
  streams_.assign(static_cast<std::size_t>(ranks), {});
  collective_calls_.assign(static_cast<std::size_t>(ranks), 0);
  const auto add = [&](std::int64_t r, int k) {
    streams_[static_cast<std::size_t>(r)][k] =
        out_.graph.add_stream(static_cast<graph::RankId>(r), static_cast<StreamKind>(k));
  };
  // The kinds a transformer's ranks use: every kind before the sharded embeddings' (models/dlrm), and
  // a mixture of experts' exchanges.
  std::vector<int> kinds;
  for (int k = 0; k < static_cast<int>(StreamKind::embedding_comm); ++k) kinds.push_back(k);
  if (s_.model.moe) {
    for (const StreamKind k :
         {StreamKind::expert_comm, StreamKind::expert_data_comm, StreamKind::expert_param_gather})
      kinds.push_back(static_cast<int>(k));
  }
  if (every_rank_) {
    for (const int k : kinds) {
      for (std::int64_t r = 0; r < ranks; ++r) add(r, k);
    }
  } else {
    for (std::int64_t r = 0; r < ranks; ++r) {
      for (const int k : kinds) add(r, k);
    }
  }
}

void Lowering::add_rank(std::int64_t r) {
  const Coord& c = coord(r);
  out_.rank_names.push_back(every_rank_ ? fmt::format("rank {} (stage {}, data {}, context {}, tensor {})", r,
                                                      c.stage, c.data, c.context, c.tensor)
                                        : fmt::format("stage {} (x{} GPUs)", c.stage, replicas_));
}

// Appends ops as a dependency chain; compute ops get `compute_category`. The host calls each collective
// once (one call for the chunks of a pipelined one) before it issues the compute task after it.
void Lowering::emit(std::int64_t r, std::span<const OpRef> ops, Category compute_category, std::int32_t mb,
                    Chain& chain) {
  std::uint32_t& calls = collective_calls_[static_cast<std::size_t>(r)];
  for (std::size_t i = 0; i < ops.size();) {
    const OpRef& op = ops[i];
    const EmitPattern pattern = pattern_at(ops, i);
    switch (pattern) {
      case EmitPattern::gather_gemm: {
        // All-gather feeding a GEMM: the first chunk, then the GEMM beside the remaining chunks.
        ++calls;
        emit_comm(r, op, op.chunk_op, mb, chain);
        Chain side = chain;
        emit_compute(r, ops[i + 1], compute_category, mb, chain);
        emit_comm(r, op, op.rest_op, mb, side);
        chain.also = side.last;
        break;
      }
      case EmitPattern::gemm_scatter: {
        // Reduce-scatter draining a GEMM: all chunks but the last beside the GEMM, then the last.
        const OpRef& scatter = ops[i + 1];
        Chain side = chain;
        emit_compute(r, op, compute_category, mb, chain);
        ++calls;
        emit_comm(r, scatter, scatter.rest_op, mb, side);
        chain.also = side.last;
        emit_comm(r, scatter, scatter.chunk_op, mb, chain);
        break;
      }
      case EmitPattern::beside_gemm: {
        // A collective beside the GEMM after it, which does not need it; the next op waits for both.
        Chain side = chain;
        ++calls;
        emit_comm(r, op, op.op, mb, side);
        emit_compute(r, ops[i + 1], compute_category, mb, chain);
        chain.also = side.last;
        break;
      }
      case EmitPattern::compute:
        emit_compute(r, op, compute_category, mb, chain);
        break;
      case EmitPattern::comm:
        ++calls;
        emit_comm(r, op, op.op, mb, chain);
        break;
    }
    i += pattern_size(pattern);
  }
}

void Lowering::emit_compute(std::int64_t r, const OpRef& op, Category category, std::int32_t mb,
                            Chain& chain) {
  const TaskId task = add_task(r, op.stream, op.op, category, op.label, mb);
  link(chain, task);
  if (op.host_waits) out_.graph.add_host_wait(task);
  out_.hardware_flops += op.flops * static_cast<double>(replicas_);
  std::uint32_t& calls = collective_calls_[static_cast<std::size_t>(r)];
  if (calls > 0) out_.graph.add_host_calls(task, calls);
  calls = 0;
}

void Lowering::emit_comm(std::int64_t r, const OpRef& op, graph::OpId which, std::int32_t mb, Chain& chain) {
  const GroupKind kind = op.stream == StreamKind::context_comm       ? GroupKind::context
                         : op.comm_category == Category::expert_comm ? GroupKind::expert
                                                                     : GroupKind::tensor;
  collective(r, kind, op.stream, which, op.comm_category, op.label, mb, chain);
  if (op.weight_grad) weight_gather_ = chain.last;
}

void Lowering::link(Chain& chain, TaskId id) {
  if (chain.empty) {
    chain.first = id;
    chain.empty = false;
  } else {
    depend(chain, id);
  }
  chain.last = id;
  chain.also.reset();
}

// With fused kernels, the layers of a step run as one sequence (LayerSequence) unless a boundary between
// layers is an event others wait for: ZeRO-3 gathers, parameter gathers before a layer's first
// micro-batch, gradient reductions after its last backward.
bool Lowering::joins_layers(const PipelineStep& step, bool last_backward) const {
  const auto& par = s_.parallelism;
  const bool dp = par.data * par.context > 1 && par.zero_stage < 3;
  const bool sharded = par.distributed_optimizer || par.zero_stage >= 1;
  if (!fuse_ || par.zero_stage >= 3) return false;
  const bool grad_events = last_backward && dp && s_.training.overlap_grad_reduce;
  switch (step.pass) {
    case Pass::forward:
      return !(step.micro_batch == 0 && dp && sharded && s_.training.overlap_param_gather);
    case Pass::input_grad:  // makes no weight gradient; recompute runs before each of its layers
      return !recomputes_;
    case Pass::weight_grad:  // no recompute before its layers
      return !grad_events;
    case Pass::backward:
      return !recomputes_ && !grad_events;
  }
  return false;
}

// The ops of `program` that a step of `pass` runs (a backward pass: whole, or its split part).
const std::vector<OpRef>& Lowering::backward_ops(const Program& program, Pass pass) {
  if (pass == Pass::input_grad) return program.input_grad;
  if (pass == Pass::weight_grad) return program.weight_grad;
  return program.backward;
}

const LayerSequence& Lowering::backward_sequence(const KindPrograms& programs, Pass pass) {
  if (pass == Pass::input_grad) return programs.input_grad_sequence;
  if (pass == Pass::weight_grad) return programs.weight_grad_sequence;
  return programs.backward_sequence;
}

// A layer's program within its step: joined with the layers of its kind next to it in the step's order
// (LayerSequence), or whole.
const std::vector<OpRef>& Lowering::layer_program(const LayerSequence& sequence,
                                                  const std::vector<OpRef>& plain, bool join,
                                                  const StepLayer& layer) {
  if (!join) return plain;
  return sequence.program(layer.run_first, layer.run_last);
}

Lowering::StepLayer Lowering::step_layer(std::int64_t stage, const PipelineStep& step, std::int64_t k) const {
  const std::int64_t mc = model_chunk(stage, step.chunk);
  const std::int64_t count = chunk_layers_[static_cast<std::size_t>(mc)];
  const std::int64_t first = chunk_first_[static_cast<std::size_t>(mc)];
  // A forward runs the chunk's layers first to last, a backward pass last to first.
  const bool forward = step.pass == Pass::forward;
  const std::int64_t l = forward ? k : count - 1 - k;
  const std::int64_t before = forward ? l - 1 : l + 1;  // the layer run just before, and just after
  const std::int64_t after = forward ? l + 1 : l - 1;
  const std::size_t kind = layer_kinds_.of_layer(first + l);
  return {l, kind, k == 0 || layer_kinds_.of_layer(first + before) != kind,
          k + 1 == count || layer_kinds_.of_layer(first + after) != kind};
}

// Every rank's pipeline steps, across the ranks part by part: the k-th step's opening (embedding or
// head) on every rank, then its first layer on every rank, ..., then its closing, then step k+1, on the
// ranks whose schedule has a k-th step (zb-h1's first stage runs fewer: its backward passes whole); a
// rank's program is the same in any order,
// but task ids then follow the ranks' progress, so that what an every-rank simulation runs at one
// time sits together in the graph's and the engine's arrays instead of a rank's program apart. A combined
// pair (pipeline_schedule.hpp) is emitted whole on each rank at its forward's index, after the other ranks'
// k-th steps (emit_combined).
void Lowering::emit_steps() {
  const auto ranks = static_cast<std::size_t>(coords_.size());
  for (std::int64_t stage = 0; stage < p_; ++stage)
    schedules_.push_back(
        stage_schedule(s_.parallelism.schedule, p_, stage, m_, v_, s_.parallelism.expert_comm_overlap));
  // Per schedule (each stage's; re-routing: each rank's), the index of each chunk's last step that makes
  // weight gradients.
  const auto last_backward_of = [&](const std::vector<PipelineStep>& steps) {
    std::vector<std::size_t> last(static_cast<std::size_t>(v_), 0);
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (makes_weight_grads(steps[i].pass)) last[static_cast<std::size_t>(steps[i].chunk)] = i;
    }
    return last;
  };
  std::vector<std::vector<std::size_t>> last_backward;
  std::size_t most_steps = 0;
  const std::size_t schedules = reroute_ ? ranks : static_cast<std::size_t>(p_);
  for (std::size_t k = 0; k < schedules; ++k) {
    const std::vector<PipelineStep>& steps = reroute_ ? rank_schedules_[k] : schedules_[k];
    last_backward.push_back(last_backward_of(steps));
    most_steps = std::max(most_steps, steps.size());
  }
  previous_step_.assign(ranks, std::nullopt);
  combined_forward_.assign(ranks, std::nullopt);
  std::vector<StepInProgress> open(ranks);
  std::vector<StepInProgress> partner(ranks);  // the backward combined with open[r]'s forward
  std::vector<std::size_t> running;   // the ranks with an i-th step (not emitted with the one before)
  std::vector<std::size_t> combined;  // those whose i-th step is a combined pair's forward
  std::vector<std::size_t> delayed;   // those whose i-th step is a backward alone, with delay_wgrad_
  for (std::size_t i = 0; i < most_steps; ++i) {
    running.clear();
    combined.clear();
    delayed.clear();
    for (std::size_t r = 0; r < ranks; ++r) {
      const auto rank = static_cast<std::int64_t>(r);
      const std::vector<PipelineStep>& steps = schedule_of(rank);
      if (i >= steps.size() || (i > 0 && steps[i - 1].combined)) continue;
      const std::size_t key = reroute_ ? r : static_cast<std::size_t>(coords_[r].stage);
      const auto set = [&](StepInProgress& s, std::size_t j) {
        s.step = steps[j];
        s.owner = owner_of(rank, j);
        s.last_of_chunk = last_backward[key][static_cast<std::size_t>(s.step.chunk)] == j;
      };
      set(open[r], i);
      if (steps[i].combined) {
        DTSIM_CHECK(i + 1 < steps.size() && steps[i + 1].pass == Pass::backward,
                    "a combined forward step without a backward step after it");
        set(partner[r], i + 1);
        combined.push_back(r);
      } else if (delay_wgrad_ && steps[i].pass == Pass::backward) {
        delayed.push_back(r);
      } else {
        running.push_back(r);
      }
    }
    for (const std::size_t r : running) open_step(static_cast<std::int64_t>(r), open[r]);
    for (std::int64_t k = 0; k < max_chunk_layers_; ++k) {
      for (const std::size_t r : running) emit_step_layer(static_cast<std::int64_t>(r), open[r], k);
    }
    for (const std::size_t r : running) close_step(static_cast<std::int64_t>(r), open[r]);
    for (const std::size_t r : combined) emit_combined(static_cast<std::int64_t>(r), open[r], partner[r]);
    for (const std::size_t r : delayed) emit_delayed_backward(static_cast<std::int64_t>(r), open[r]);
  }
}

// The re-routing plan for the down replicas (reroute.hpp), on each stage's costs (its layers', embedding's
// and output layer's FLOPs per micro-batch) and the micro-batches its schedule holds at once without
// failures.
void Lowering::plan_reroute_steps() {
  const auto flops = [](const std::vector<OpRef>& ops) {
    double f = 0.0;
    for (const OpRef& op : ops) f += op.flops;
    return f;
  };
  const bool split = p_ > 1;
  std::vector<StageCost> costs;
  std::vector<std::int64_t> in_flight;
  for (std::int64_t stage = 0; stage < p_; ++stage) {
    const Programs& p = programs(rank_of(Coord{stage, 0, 0, 0}));
    StageCost c{0.0, 0.0, 0.0};
    const auto add = [&](const Program& program) {
      c.forward += flops(program.forward);
      c.input_grad += flops(split ? program.input_grad : program.backward);
      c.weight_grad += split ? flops(program.weight_grad) : 0.0;
    };
    const std::int64_t first = chunk_first_[static_cast<std::size_t>(stage)];
    for (std::int64_t l = 0; l < layers_in(stage, 0); ++l) {
      const KindPrograms& kind = p.kinds[layer_kinds_.of_layer(first + l)];
      add(kind.layer);
      c.input_grad += flops(kind.recompute);
    }
    if (stage == 0) add(p.embedding);
    if (stage == p_ - 1) add(p.head);
    costs.push_back(
        StageCost{std::max(c.forward, 1.0), std::max(c.input_grad, 1.0), std::max(c.weight_grad, 1.0)});
    const config::Schedule schedule = s_.parallelism.schedule;
    in_flight.push_back(schedule == config::Schedule::gpipe            ? m_
                        : schedule == config::Schedule::zero_bubble_h1 ? std::min(m_, p_)
                                                                       : std::min(m_, p_ - stage));
  }
  reroute_ = plan_reroute(mesh_, m_, split, down_, in_flight, costs);
  const std::size_t ranks = coords_.size();
  rank_schedules_.assign(ranks, {});
  rank_owners_.assign(ranks, {});
  for (std::size_t r = 0; r < ranks; ++r) {
    for (const RoutedStep& step : reroute_->steps[r]) {
      rank_schedules_[r].push_back(step.step);
      rank_owners_[r].push_back(step.owner);
    }
  }
}

// A step's opening: the embedding before the first chunk's forward, the head before the last chunk's
// backward.
void Lowering::open_step(std::int64_t r, StepInProgress& s) {
  s.chain = Chain{};
  s.previous_layer.reset();
  s.weights_last.reset();
  const std::int64_t mc = model_chunk(coord(r).stage, s.step.chunk);
  const std::int32_t mb = s.step.micro_batch;
  if (s.step.pass == Pass::forward) {
    if (mc == 0) emit_unit(r, s, programs(r).embedding.forward, embedding_params_, embedding_params_);
    // The rank's first forward of the first chunk (micro-batch 0; re-routed, possibly an adopted one),
    // which the rank's input load holds back.
    if (mc == 0 && step_first_set_[static_cast<std::size_t>(r)] == 0) {
      step_first_[static_cast<std::size_t>(r)] = s.chain.first;
      step_first_set_[static_cast<std::size_t>(r)] = 1;
    }
  } else if (mc == p_ * v_ - 1) {
    emit_mtp(r, s.step.pass, mb, s.chain);
    // Prefetching (FSDP2), the output layer stays gathered from its forward through its backward, which
    // follows it on the last stage (FSDP2 does not reshard a root unit, nor torchtitan's [norm, output]).
    const bool regather = s_.parallelism.zero3.fetch == config::Zero3Fetch::on_demand;
    emit_unit(r, s, backward_ops(programs(r).head, s.step.pass), regather ? head_use_params_ : 0.0,
              head_params_);
  }
}

// The embedding's or output layer's ops of step `s`; under ZeRO-3 (units of their own) after the gather
// of `gathered` parameters (none: 0, or a weight-gradient pass), and, in a pass that makes their
// gradients, followed by the reduce-scatter of `reduced`.
void Lowering::emit_unit(std::int64_t r, StepInProgress& s, const std::vector<OpRef>& ops, double gathered,
                         double reduced) {
  const Category category = s.step.pass == Pass::forward ? Category::forward : Category::backward;
  Chain unit;
  emit(r, ops, category, s.step.micro_batch, unit);
  const bool zero3 = s_.parallelism.zero_stage >= 3;
  if (zero3 && s.step.pass != Pass::weight_grad) gather_unit(r, s, gathered, unit);
  append(s.chain, unit);
  if (zero3 && makes_weight_grads(s.step.pass) && !unit.empty)
    reduce_unit(r, reduced, s.step.micro_batch, unit.last);
}

void Lowering::emit_mtp(std::int64_t r, Pass pass, std::int32_t mb, Chain& chain) {
  const Programs& p = programs(r);
  const KindPrograms& layer = p.kinds[layer_kinds_.of_layer(s_.model.layers - 1)];
  for (std::int64_t depth = 0; depth < s_.model.mtp_layers; ++depth) {
    if (pass == Pass::forward) {
      emit(r, p.embedding.forward, Category::forward, mb, chain);
      emit(r, p.mtp_projection.forward, Category::forward, mb, chain);
      emit(r, layer.layer.forward, Category::forward, mb, chain);
      emit(r, p.head.forward, Category::forward, mb, chain);
      continue;
    }
    emit(r, backward_ops(p.head, pass), Category::backward, mb, chain);
    if (pass != Pass::weight_grad) emit(r, layer.recompute, Category::recompute, mb, chain);
    emit(r, backward_ops(layer.layer, pass), Category::backward, mb, chain);
    emit(r, backward_ops(p.mtp_projection, pass), Category::backward, mb, chain);
    emit(r, backward_ops(p.embedding, pass), Category::backward, mb, chain);
  }
}

// The compute rank r runs just before what continues step `s`: the step's end so far, or that of the
// step before.
std::optional<TaskId> Lowering::compute_before(std::int64_t r, const StepInProgress& s) const {
  if (!s.chain.empty) return s.chain.last;
  const std::optional<std::size_t> previous_step = previous_step_[static_cast<std::size_t>(r)];
  if (previous_step && !steps_[*previous_step].empty) return steps_[*previous_step].last;
  return std::nullopt;
}

// The step's k-th layer in its order of execution (backward: from the last layer), if it has one.
void Lowering::emit_step_layer(std::int64_t r, StepInProgress& s, std::int64_t k) {
  const PipelineStep& step = s.step;
  const std::int64_t layers = layers_in(coord(r).stage, step.chunk);
  if (k >= layers) return;
  const bool zero3 = s_.parallelism.zero_stage >= 3;
  const bool on_demand = s_.parallelism.zero3.fetch == config::Zero3Fetch::on_demand;
  const bool join = joins_layers(step, s.last_of_chunk);
  const StepLayer at = step_layer(coord(r).stage, step, k);
  const KindPrograms& program = programs(r).kinds[at.kind];
  const std::int32_t mb = step.micro_batch;
  Chain layer;
  if (step.pass == Pass::forward) {
    emit(r, layer_program(program.forward_sequence, program.layer.forward, join, at), Category::forward, mb,
         layer);
    if (zero3) gate(gather_layer(r, at.kind, mb, on_demand ? compute_before(r, s) : s.previous_layer), layer);
    append(s.chain, layer);
    finish_layer(r, s, at, layer.first);
    return;
  }
  if (step.pass == Pass::weight_grad) {
    // W: the weight gradients of what B computed; no recompute, no parameters to gather.
    emit(r,
         layer_program(backward_sequence(program, step.pass), backward_ops(program.layer, step.pass), join,
                       at),
         Category::backward, mb, layer);
  } else {
    emit_input_grads(r, s, at, layer);
  }
  append(s.chain, layer);
  finish_layer(r, s, at, layer.first);
}

void Lowering::finish_layer(std::int64_t r, StepInProgress& s, const StepLayer& at, TaskId first,
                            std::optional<TaskId> weights_last) {
  const PipelineStep& step = s.step;
  s.previous_layer = first;
  if (step.pass == Pass::forward) {
    if (step.micro_batch == 0 && s.owner == r) first_use_[layer_index(r, step.chunk, at.l)] = first;
    return;
  }
  if (!makes_weight_grads(step.pass)) return;
  const TaskId ready = weights_last.value_or(s.chain.last);
  grad_ready_[layer_index(r, step.chunk, at.l)] = ready;
  if (s_.parallelism.zero_stage >= 3) reduce_layer(r, at.kind, step.micro_batch, ready);
}

// A backward step's layer `at` up to its weight gradients (all of them in a whole backward): recompute,
// ZeRO-3's gathers, the layer's backward ops.
void Lowering::emit_input_grads(std::int64_t r, const StepInProgress& s, const StepLayer& at, Chain& layer) {
  const PipelineStep& step = s.step;
  const bool zero3 = s_.parallelism.zero_stage >= 3;
  const bool on_demand = s_.parallelism.zero3.fetch == config::Zero3Fetch::on_demand;
  // Fetching on demand, a full recompute (a forward of the layer's weights) gathers of its own; a
  // selective one recomputes the attention core, which has no weights.
  const bool regather = s_.training.activation_recompute == config::Recompute::full;
  const bool join = joins_layers(step, s.last_of_chunk);
  const KindPrograms& program = programs(r).kinds[at.kind];
  const std::int32_t mb = step.micro_batch;
  const std::vector<OpRef>& ops = backward_ops(program.layer, step.pass);
  const LayerSequence& sequence = backward_sequence(program, step.pass);
  emit(r, program.recompute, Category::recompute, mb, layer);
  if (zero3 && on_demand && regather) {
    // The recomputed forward gathers, uses and releases the parameters; the backward, which starts
    // after its gather, gathers them again.
    gate(gather_layer(r, at.kind, mb, compute_before(r, s)), layer);
    Chain backward = Chain::after(gather_layer(r, at.kind, mb, layer.last));
    emit(r, layer_program(sequence, ops, join, at), Category::backward, mb, backward);
    layer.last = backward.last;
    layer.also = backward.also;
  } else {
    emit(r, layer_program(sequence, ops, join, at), Category::backward, mb, layer);
    if (zero3) gate(gather_layer(r, at.kind, mb, on_demand ? compute_before(r, s) : s.previous_layer), layer);
  }
}

// A step's closing: the head after the last chunk's forward, the embedding after the first chunk's
// backward; then the step is recorded for the pipeline transfers and as the rank's latest.
void Lowering::close_step(std::int64_t r, StepInProgress& s, bool link) {
  const std::int64_t mc = model_chunk(coord(r).stage, s.step.chunk);
  const std::int32_t mb = s.step.micro_batch;
  if (s.step.pass == Pass::forward) {
    if (mc == p_ * v_ - 1) {
      emit_unit(r, s, programs(r).head.forward, head_use_params_, head_params_);
      emit_mtp(r, Pass::forward, mb, s.chain);
    }
  } else if (mc == 0) {
    emit_unit(r, s, backward_ops(programs(r).embedding, s.step.pass), embedding_params_, embedding_params_);
  }
  DTSIM_CHECK(!s.chain.also, "a pipeline step ends beside an overlapped GEMM");
  // ZeRO-2 before the last micro-batch: the step's layer gradients are ready when the step ends (a
  // layer's own end is not an event here, so that fused layers stay one sequence); the micro-batch's
  // backward ends on a stage with its first chunk (every schedule runs a micro-batch's chunks last to
  // first), where what is left of its buckets is reduced.
  if (reduces_each_micro_batch_ && makes_weight_grads(s.step.pass) && mb + 1 < m_) {
    std::vector<TaskId>& ready = micro_batch_grads_[{r, mb}];
    ready.insert(ready.end(), static_cast<std::size_t>(layers_in(coord(r).stage, s.step.chunk)), step_end(s));
    if (s.step.chunk == 0) {
      reduce_gradients(r, ready, step_end(s));
      micro_batch_grads_.erase({r, mb});
    }
  }
  const std::size_t index = step_index(s.owner, s.step.chunk, mb, s.step.pass);
  steps_[index] = s.chain;
  if (!link) return;
  follow_step(r, index, s.chain.first);
  stage_last_[static_cast<std::size_t>(r)] = step_end(s);
}

// The step that follows in program order (a blocking pipeline transfer holds it back).
void Lowering::follow_step(std::int64_t r, std::size_t index, TaskId first) {
  std::optional<std::size_t>& previous_step = previous_step_[static_cast<std::size_t>(r)];
  if (previous_step) step_after_[*previous_step] = first;
  std::optional<std::size_t>& pair_forward = combined_forward_[static_cast<std::size_t>(r)];
  if (pair_forward) step_after_[*pair_forward] = first;
  pair_forward.reset();
  previous_step = index;
}

// Continues `chain` with `next` (the first of `next` waits for the last of `chain`).
void Lowering::append(Chain& chain, const Chain& next) {
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
// neighbouring stages with the same tensor, context and data coordinates; re-routed, from the rank that
// ran the step to the one that runs the next (the owners' neighbours' executors).
void Lowering::connect_stages(std::int64_t r) {
  const std::vector<PipelineStep>& schedule = schedule_of(r);
  for (std::size_t i = 0; i < schedule.size(); ++i) {
    const PipelineStep& step = schedule[i];
    const std::int64_t owner = owner_of(r, i);
    const Coord c = coord(owner);
    const std::int64_t mc = model_chunk(c.stage, step.chunk);
    if (step.pass == Pass::weight_grad) continue;  // W sends nothing on
    const bool forward = step.pass == Pass::forward;
    const std::int64_t next = forward ? mc + 1 : mc - 1;
    if (next < 0 || next >= p_ * v_) continue;
    Coord peer = c;
    peer.stage = next % p_;
    const std::int64_t peer_rank = rank_of(peer);
    const std::size_t from_index = step_index(owner, step.chunk, step.micro_batch, step.pass);
    const Chain& from = steps_[from_index];
    const Chain& to = steps_[step_index(peer_rank, next / p_, step.micro_batch, step.pass)];
    DTSIM_CHECK(!from.empty && !to.empty, "pipeline step without tasks");
    const graph::OpId op =
        reroute_ ? intern_comm(CommOp{graph::CollectiveKind::send_recv, pipeline_send_bytes_,
                                      layouts_.transfer_between(
                                          r, reroute_->executor_of(peer_rank, step.micro_batch), forward)})
                 : pipeline_send_op(r, forward);
    const TaskId send = add_task(r, StreamKind::pipeline_send, op, Category::pipeline_comm,
                                 forward ? pipeline_send_label_ : pipeline_grad_label_, step.micro_batch);
    wait(from.last, send);
    wait(send, to.first);
    if (config::pipeline_comm_in_effect(s_.parallelism) == config::PipelineComm::blocking) {
      // Megatron-LM's batched send/recv waits for its requests and synchronizes the device: the
      // sender's next step starts only when the transfer has completed, and both hosts issue their
      // next step only then.
      if (step_after_[from_index]) {
        wait(send, *step_after_[from_index]);
        out_.graph.add_host_wait(*step_after_[from_index]);
      }
      out_.graph.add_host_wait(to.first);
    }
  }
}

}  // namespace detail

LoweredGraph lower(const config::Scenario& scenario, const LowerOptions& options) {
  DTSIM_CHECK(!infeasibility(scenario).has_value(), "lower() needs a feasible scenario");
  return detail::Lowering(scenario, options).run();
}

}  // namespace dtsim::parallel
