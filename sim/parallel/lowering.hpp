// The lowering of one scenario (lower.hpp has the contract): the state it keeps while it emits the
// task graph rank by rank. Internal to lower(): lower.cpp emits the ranks' programs and pipeline
// transfers, lower_gradients.cpp the gradient reductions, optimizer step and parameter gathers.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <vector>

#include "config/scenario.hpp"
#include "graph/task_graph.hpp"
#include "models/transformer/layer_kinds.hpp"
#include "models/transformer/transformer.hpp"
#include "parallel/gangs.hpp"
#include "parallel/gradient_buckets.hpp"
#include "parallel/group_layouts.hpp"
#include "parallel/layer_ops.hpp"
#include "parallel/lower.hpp"
#include "parallel/memory_model.hpp"
#include "parallel/mesh.hpp"
#include "parallel/pipeline_schedule.hpp"
#include "parallel/reroute.hpp"

namespace dtsim::parallel::detail {

using graph::Category;
using graph::CommOp;
using graph::StreamKind;
using graph::TaskId;

// A sequence of dependent tasks; `also`, when set, is a second task the next one must wait for (the
// communication running beside an overlapped GEMM).
struct Chain {
  TaskId first = 0;
  TaskId last = 0;
  bool empty = true;
  std::optional<TaskId> also;

  static Chain after(TaskId task) { return Chain{task, task, false, std::nullopt}; }
};

inline double gradient_bytes_per_param(const config::TrainingSpec& t) { return parameter_bytes(t).gradients; }
inline double weight_bytes_per_param(const config::TrainingSpec& t) { return parameter_bytes(t).weights; }
// Adam step per parameter: read FP32 master, gradient, m, v; write master, m, v and the 16-bit copy.
// SGD: read FP32 master and gradient, write master and the 16-bit copy. With autocast the FP32
// parameters are the master weights: no 16-bit copy (models/transformer/autocast.hpp). Without master
// weights (TrainingSpec::master_weights false) every one of them is a 16-bit tensor and there is no copy:
// Adam reads the parameter, gradient, m and v and writes the parameter, m and v; SGD reads the
// parameter and gradient and writes the parameter.
inline double optimizer_bytes_per_param(const config::TrainingSpec& t) {
  const ParameterBytes b = parameter_bytes(t);
  if (!t.master_weights && b.weights < 4) return (t.optimizer == config::Optimizer::sgd ? 3 : 7) * b.weights;
  const double copy = b.weights < 4 && !t.autocast ? b.weights : 0.0;
  return (t.optimizer == config::Optimizer::sgd ? 2 * 4 + 4 : 4 * 4 + 3 * 4) + copy;
}

class Lowering {
 public:
  Lowering(const config::Scenario& s, const LowerOptions& options);
  LoweredGraph run();

 private:
  // ---- ranks -----------------------------------------------------------------------------------
  // Every-rank mode simulates every mesh rank; symmetric mode one rank per stage (the stage's rank at
  // coordinate 0 of the other dimensions), numbered by stage.
  Coord coord_of(std::int64_t r) const { return every_rank_ ? mesh_.coord_of(r) : Coord{r, 0, 0, 0}; }
  std::int64_t rank_of(const Coord& c) const { return every_rank_ ? mesh_.rank_of(c) : c.stage; }
  const Coord& coord(std::int64_t r) const { return coords_[static_cast<std::size_t>(r)]; }
  std::int64_t group_size(GroupKind kind) const;
  // The layouts rank r's collectives and transfers run over: its own groups' with every rank, its
  // stage's slowest in symmetric mode (group_layouts.hpp).
  const graph::CommGroup& group_layout(std::int64_t r, GroupKind kind) const {
    return every_rank_ ? layouts_.group(r, kind) : layouts_.stage_group(coord(r).stage, kind);
  }
  LayerGroups layer_groups(std::int64_t r) const;
  graph::OpId pipeline_send_op(std::int64_t r, bool next);
  void collective(std::int64_t r, GroupKind kind, StreamKind stream_kind, graph::OpId op, Category cat,
                  graph::LabelId lbl, std::int32_t mb, Chain& chain);
  void wait(TaskId before, TaskId after);
  void depend(const Chain& chain, TaskId task);

  // ---- ops -------------------------------------------------------------------------------------
  graph::LabelId label(std::string_view name) { return labels_.id(out_.graph, name); }
  // A rank's layer programs: one set per distinct LayerGroups among the simulated ranks.
  // One kind of layer's (models/transformer/layer_kinds.hpp).
  struct KindPrograms {
    Program layer;
    std::vector<OpRef> recompute;
    LayerSequence forward_sequence, backward_sequence;  // with fuse_
    LayerSequence input_grad_sequence, weight_grad_sequence;  // with fuse_, under a split backward
    std::vector<OpRef> delayed_backward = {};  // with delay_wgrad_: delay_weight_grads() of layer.backward
  };
  struct Programs {
    LayerGroups groups;
    std::vector<KindPrograms> kinds;  // per models::LayerKinds kind
    Program embedding, head;
    Program mtp_projection;  // with multi-token prediction (models/transformer/mtp.hpp)
  };
  const Programs& programs(std::int64_t r) const {
    return programs_[program_of_[static_cast<std::size_t>(r)]];
  }
  void intern_programs();
  Programs intern_program(const LayerGroups& groups);

  // ---- ranks and streams -----------------------------------------------------------------------
  void add_streams(std::int64_t ranks);
  void add_rank(std::int64_t r);
  graph::StreamId stream(std::int64_t r, StreamKind kind) const {
    return streams_[static_cast<std::size_t>(r)][static_cast<int>(kind)];
  }
  TaskId add_task(std::int64_t r, StreamKind kind, graph::OpId op, Category cat, graph::LabelId lbl,
                  std::int32_t mb) {
    return out_.graph.add_task(graph::Task{op, stream(r, kind), cat, lbl, mb});
  }
  void emit(std::int64_t r, std::span<const OpRef> ops, Category compute_category, std::int32_t mb,
            Chain& chain);
  void emit_compute(std::int64_t r, const OpRef& op, Category category, std::int32_t mb, Chain& chain);
  void emit_comm(std::int64_t r, const OpRef& op, graph::OpId which, std::int32_t mb, Chain& chain);
  void link(Chain& chain, TaskId id);

  // ---- pipeline steps --------------------------------------------------------------------------
  // A step's slot: forward 0, the pass that sends the gradient on (backward or input_grad) 1, weight_grad 2.
  static std::int64_t step_slot(Pass pass) {
    return pass == Pass::forward ? 0 : pass == Pass::weight_grad ? 2 : 1;
  }
  std::size_t step_index(std::int64_t r, std::int64_t chunk, std::int64_t mb, Pass pass) const {
    return static_cast<std::size_t>((((r * v_ + chunk) * m_ + mb) * kStepSlots) + step_slot(pass));
  }
  static constexpr std::int64_t kStepSlots = 3;
  // Whether a step ends with gradients of the chunk's parameters ready (a whole backward, or W).
  static bool makes_weight_grads(Pass pass) { return pass == Pass::backward || pass == Pass::weight_grad; }
  std::size_t layer_index(std::int64_t r, std::int64_t chunk, std::int64_t layer) const {
    return static_cast<std::size_t>((r * v_ + chunk) * max_chunk_layers_ + layer);
  }
  std::int64_t model_chunk(std::int64_t stage, std::int64_t chunk) const { return chunk * p_ + stage; }
  std::int64_t layers_in(std::int64_t stage, std::int64_t chunk) const {
    return chunk_layers_[static_cast<std::size_t>(model_chunk(stage, chunk))];
  }
  // The k-th layer a step of stage `stage` runs: its index in its chunk, its kind, and whether it
  // begins or ends a run of layers of its kind in the step's order (a fused sequence joins only those).
  struct StepLayer {
    std::int64_t l = 0;
    std::size_t kind = 0;
    bool run_first = true;
    bool run_last = true;
  };
  StepLayer step_layer(std::int64_t stage, const PipelineStep& step, std::int64_t k) const;
  bool joins_layers(const PipelineStep& step, bool last_backward) const;
  static const std::vector<OpRef>& layer_program(const LayerSequence& sequence,
                                                 const std::vector<OpRef>& plain, bool join,
                                                 const StepLayer& layer);
  // A rank's pipeline step being emitted (lower.cpp, emit_steps()).
  struct StepInProgress {
    PipelineStep step;
    std::int64_t owner = 0;      // the rank whose micro-batch it is (re-routing: a down peer's)
    bool last_of_chunk = false;  // the chunk's last step that makes weight gradients
    Chain chain;
    std::optional<TaskId> previous_layer;  // first task of the layer emitted last
    std::optional<TaskId> weights_last;    // its last delayed weight-gradient task (delay_wgrad_)
  };
  // The task a step ends with on its compute stream: the chain's, or a delayed weight gradient's after it.
  static TaskId step_end(const StepInProgress& s) {
    return s.weights_last ? std::max(s.chain.last, *s.weights_last) : s.chain.last;
  }
  // The steps rank r runs, in order, and whose each is (reroute.hpp; else the stage's schedule, its own).
  const std::vector<PipelineStep>& schedule_of(std::int64_t r) const {
    return reroute_ ? rank_schedules_[static_cast<std::size_t>(r)]
                    : schedules_[static_cast<std::size_t>(coord(r).stage)];
  }
  std::int64_t owner_of(std::int64_t r, std::size_t i) const {
    return reroute_ ? rank_owners_[static_cast<std::size_t>(r)][i] : r;
  }
  bool is_down(std::int64_t r) const { return reroute_ && reroute_->is_down(r); }
  void plan_reroute_steps();
  void emit_steps();
  void open_step(std::int64_t r, StepInProgress& s);
  void emit_step_layer(std::int64_t r, StepInProgress& s, std::int64_t k);
  // Step `s`'s layer `at` has been appended to its chain, from its task `first`: what the rest of the
  // lowering waits for of it (the next layer's gathers, the first use of its parameters, its gradients'
  // readiness and, under ZeRO-3, their reduce-scatter).
  // `weights_last`: the layer's last delayed weight-gradient task (emit_combined_part), which its
  // gradients' readiness waits for instead of the step's chain.
  void finish_layer(std::int64_t r, StepInProgress& s, const StepLayer& at, TaskId first,
                    std::optional<TaskId> weights_last = std::nullopt);
  std::optional<TaskId> compute_before(std::int64_t r, const StepInProgress& s) const;
  void emit_input_grads(std::int64_t r, const StepInProgress& s, const StepLayer& at, Chain& layer);
  static const std::vector<OpRef>& backward_ops(const Program& program, Pass pass);
  static const LayerSequence& backward_sequence(const KindPrograms& programs, Pass pass);
  // `link`: the step follows the rank's step before in program order (follow_step); a combined pair's
  // steps are linked as one (emit_combined).
  void close_step(std::int64_t r, StepInProgress& s, bool link = true);
  // The step at `index` (steps_) runs next on rank r, from its task `first`: the step before (and the
  // forward of a combined pair before) are followed by it.
  void follow_step(std::int64_t r, std::size_t index, TaskId first);
  // Combined 1F1B (pipeline_schedule.hpp, PipelineStep::combined): the forward step `f` and the backward
  // step `b` after it, opened, their layers emitted in turn and closed as one step. Each micro-batch's
  // ops go on to the end of its next token exchange (an expert all-to-all), across layer ends, then the
  // other's do, the backward's first; so each exchange is followed on the compute stream by the other
  // micro-batch's compute, which runs beside it: per layer pair, the backward's combine-gradient
  // exchange beside the forward's attention, the forward's dispatch beside the backward's experts, the
  // backward's dispatch-gradient exchange beside the forward's experts, the forward's combine beside the
  // backward's attention (megatron/core/models/common/model_chunk_schedule_plan.py,
  // schedule_layer_1f1b). The steps' own layer programs are emitted (no layers joined). The pair's first
  // task stands for both steps' first (steps_): their pipeline receives and the step before hold it back.
  void emit_combined(std::int64_t r, StepInProgress& f, StepInProgress& b);
  // With delay_wgrad_, a backward step of the combined schedule that runs alone (warm-up and cool-down):
  // emitted as a pair's backward, its weight gradients delayed likewise (Megatron-Core runs it through
  // the same layer plan without a forward).
  void emit_delayed_backward(std::int64_t r, StepInProgress& b);
  struct CombinedCursor {
    StepInProgress* step = nullptr;
    std::int64_t k = 0;  // the layer being emitted, in the step's order of execution
    std::int64_t layers = 0;
    std::array<std::span<const OpRef>, 2> parts{};  // the layer's recompute (a backward's) and program
    std::array<Category, 2> categories{};
    std::size_t part = 0;
    std::size_t pos = 0;
    bool open = false;
    StepLayer at;
    std::optional<TaskId> first;         // the layer's first task
    std::optional<TaskId> weights_last;  // the layer's last delayed weight-gradient task
  };
  CombinedCursor cursor(std::int64_t r, StepInProgress& s) const {
    CombinedCursor c;
    c.step = &s;
    c.layers = layers_in(coord(r).stage, s.step.chunk);
    return c;
  }
  // Emits the cursor's step up to the end of its next token exchange or of its layers; whether it has
  // layers left.
  bool emit_combined_part(std::int64_t r, CombinedCursor& c);
  // A cursor's ops up to its cut, onto `piece`; with delay_wgrad_ a backward's weight-gradient runs beside
  // it (the exchange after them waits for the input gradients only).
  void emit_combined_piece(std::int64_t r, CombinedCursor& c, std::span<const OpRef> ops, Chain& piece);
  bool is_exchange(const OpRef& op) const;
  // The multi-token prediction modules of micro-batch `mb` on the last stage (models/transformer/mtp.hpp):
  // after the main head's forward; in a backward pass (or its part `pass`), before the main head's.
  void emit_mtp(std::int64_t r, Pass pass, std::int32_t mb, Chain& chain);
  // ZeRO-3 (lower_gradients.cpp): a layer's parameter gathers, which may begin after `after`; the
  // last of them is returned. Its gradient reductions, after `after`.
  TaskId gather_layer(std::int64_t r, std::size_t kind, std::int32_t mb, std::optional<TaskId> after);
  void synchronize_before(std::int64_t r, TaskId gather, bool created);
  void reduce_layer(std::int64_t r, std::size_t kind, std::int32_t mb, TaskId after);
  // ZeRO-3 of the stage's embedding or output layer (`params` per rank: FSDP2 units of their own): its
  // gather, which the unit's program `use` of step `s` waits for, and its gradients' reduce-scatter after
  // `after` (a pass that makes them).
  void gather_unit(std::int64_t r, const StepInProgress& s, double params, const Chain& use);
  void emit_unit(std::int64_t r, StepInProgress& s, const std::vector<OpRef>& ops, double gathered,
                 double reduced);
  void reduce_unit(std::int64_t r, double params, std::int32_t mb, TaskId after);
  // ZeRO-3's all-gather or reduce-scatter of `params` parameters over `group`, with the copies of the
  // scenario's buffers (zero3_ops).
  graph::OpId zero3_comm(graph::CollectiveKind kind, double params, const graph::CommGroup& group);
  // A layer kind's ZeRO-3 collectives on one data-parallel layout: the dense parameters' over the data
  // group, the routed experts' over the expert_data group (none when it has one rank).
  struct Zero3Ops {
    graph::CommGroup group;
    graph::CommGroup expert_group;
    std::size_t kind = 0;
    std::vector<graph::OpId> gathers;
    std::vector<graph::OpId> reduces;
    std::vector<graph::OpId> expert_gathers;
    std::vector<graph::OpId> expert_reduces;
  };
  const Zero3Ops& zero3_ops(std::int64_t r, std::size_t kind);
  // The first task of `chain` waits for `task`.
  void gate(TaskId task, const Chain& chain) { wait(task, chain.first); }
  void append(Chain& chain, const Chain& next);
  void connect_stages(std::int64_t r);

  // ---- gradients and optimizer -----------------------------------------------------------------
  // The gradient reductions of a bucket of `bytes` (dense) and `expert_bytes` (routed experts'), after
  // `after`.
  void reduce_bucket(std::int64_t r, double bytes, double expert_bytes, TaskId after, bool sharded);
  // The parameter all-gathers of `bytes` and `expert_bytes` after the optimizer (or before `user`), each over
  // its group.
  void gather_parameters(std::int64_t r, double bytes, double expert_bytes, const Chain& after,
                         std::optional<TaskId> user);
  // The gradient reductions of the layers whose gradients become final at `ready` (program order),
  // bucket by bucket; the stage's embedding or output layer joins the first bucket; what is left after
  // `end` (the last of `ready` when the reduction overlaps the backward pass).
  void reduce_gradients(std::int64_t r, const std::vector<TaskId>& ready, TaskId end);
  void emit_gradient_sync_and_optimizer(std::int64_t r);
  void emit_overlapped_param_gathers(std::int64_t r);
  graph::OpId intern_comm(const CommOp& op) { return comm_ops_.id(out_.graph, op); }
  const graph::CommGroup& data_group(std::int64_t r) const { return group_layout(r, GroupKind::data); }

  // ---- state -----------------------------------------------------------------------------------
  const config::Scenario& s_;
  const std::vector<StageReplica> down_;  // LowerOptions::down_replicas
  Mesh mesh_;
  std::int64_t p_;
  std::int64_t v_;
  std::int64_t m_;
  std::vector<std::int64_t> chunk_layers_;
  std::vector<std::int64_t> chunk_first_;  // per model chunk: the index of its first layer
  std::int64_t max_chunk_layers_;
  models::LayerKinds layer_kinds_;
  bool every_rank_;
  bool fuse_;  // runs of kernels as fused ops (every-rank mode, or LowerOptions::fuse_kernels)
  // Combined 1F1B with delayed weight gradients (ParallelismSpec::delay_wgrad_compute).
  bool delay_wgrad_ = false;
  // The latest weight gradient's collective emitted (a re-gather of a linear's input; emit_comm), which
  // the delayed weight gradients after it wait for (emit_combined_piece).
  std::optional<TaskId> weight_gather_;
  std::optional<GroupLayouts> own_layouts_;  // unless LowerOptions::layouts_cache holds them
  const GroupLayouts& layouts_;
  std::int64_t replicas_;
  LoweredGraph out_;
  std::vector<Coord> coords_;
  LabelTable labels_;
  std::optional<GangTable> gangs_;  // every-rank mode
  CommOpTable comm_ops_;
  std::vector<Programs> programs_;
  std::vector<std::uint32_t> program_of_;  // per simulated rank
  bool recomputes_ = false;                // the scenario's recompute replays ops before each backward
  // ZeRO-2 with several micro-batches: each micro-batch's gradients are reduce-scattered as its backward
  // produces them (DeepSpeed's engine, deepspeed/runtime/engine.py allreduce_gradients: 'ZeRO stage >= 2
  // communicates during non gradient accumulation boundaries as well'; FSDP's SHARD_GRAD_OP likewise
  // outside no_sync), since a rank keeps only its shard of the accumulated gradients.
  const bool reduces_each_micro_batch_;
  // Parameters per tensor-parallel rank of the embedding and of the output layer (ZeRO-3's units).
  double embedding_params_ = 0.0;
  double head_params_ = 0.0;
  double head_use_params_ = 0.0;  // gathered for the output layer's use: with tied embeddings, the table too
  std::vector<std::vector<GradientBucket>> stage_buckets_;  // per stage (gradient_buckets.hpp)
  double pipeline_send_bytes_ = 0.0;
  std::deque<Zero3Ops> zero3_ops_;  // references stay valid as it grows
  graph::LabelId pipeline_send_label_ = 0;
  graph::LabelId pipeline_grad_label_ = 0;
  graph::LabelId zero3_gather_label_ = 0;
  graph::LabelId zero3_reduce_label_ = 0;
  graph::LabelId optimizer_label_ = 0;
  graph::LabelId param_gather_label_ = 0;
  std::vector<std::array<graph::StreamId, graph::kStreamKindCount>> streams_;
  // Per rank: the collectives of its layer programs and its ZeRO-3 gathers and reductions emitted since
  // its last compute task, which the host calls before it issues the next one (TaskGraph::add_host_calls).
  // Data-parallel bucket reductions and pipeline transfers are wired after the steps and cost the host
  // nothing (not modelled).
  std::vector<std::uint32_t> collective_calls_;
  std::vector<Chain> steps_;
  std::vector<std::optional<TaskId>> step_after_;     // first task of the step run after, on the same rank
  std::vector<std::vector<PipelineStep>> schedules_;  // per stage (emit_steps() fills it)
  // Re-routing (LowerOptions::down_replicas): the plan, and per rank its steps and their owners.
  std::optional<Reroute> reroute_;
  std::vector<std::vector<PipelineStep>> rank_schedules_;
  std::vector<std::vector<std::int64_t>> rank_owners_;
  std::vector<std::optional<std::size_t>> previous_step_;  // per rank: its latest step so far
  // Per rank: the forward of its latest combined pair, which the step after the pair follows as well.
  std::vector<std::optional<std::size_t>> combined_forward_;
  std::vector<TaskId> grad_ready_;
  // With reduces_each_micro_batch_: per (rank, micro-batch) before the last, the end of the backward
  // step of each of its layers so far, in program order, until the micro-batch's backward ends on the rank.
  std::map<std::pair<std::int64_t, std::int32_t>, std::vector<TaskId>> micro_batch_grads_;
  std::vector<TaskId> first_use_;   // first task of each layer's first forward
  std::vector<TaskId> step_first_;  // first task of the first forward step (embedding on stage 0)
  std::vector<std::uint8_t> step_first_set_;  // per rank: step_first_ holds it
  std::vector<TaskId> stage_last_;
  std::vector<std::vector<TaskId>> data_tasks_;
  // ZeRO-3: each rank's last gradient reduction on each reduction stream (synchronize_before).
  struct LastReductions {
    std::optional<TaskId> dense;
    std::optional<TaskId> expert;
  };
  std::vector<LastReductions> last_reductions_;
  std::map<std::int64_t, graph::OpId> optimizer_ops_;
};

}  // namespace dtsim::parallel::detail
