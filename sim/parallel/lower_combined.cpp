// Combined 1F1B (lowering.hpp, Lowering::emit_combined): a forward and a backward step of one rank
// emitted together, each micro-batch's ops in turn up to the end of its next token exchange.
#include <algorithm>
#include <variant>

#include "core/errors.hpp"
#include "parallel/lowering.hpp"

namespace dtsim::parallel::detail {

void Lowering::emit_combined(std::int64_t r, StepInProgress& f, StepInProgress& b) {
  open_step(r, f);
  open_step(r, b);
  CombinedCursor forward = cursor(r, f);
  CombinedCursor backward = cursor(r, b);
  bool f_more = forward.layers > 0;
  bool b_more = backward.layers > 0;
  while (f_more || b_more) {
    if (b_more) b_more = emit_combined_part(r, backward);
    if (f_more) f_more = emit_combined_part(r, forward);
  }
  close_step(r, f, false);
  close_step(r, b, false);
  // The pair starts with the first task either step emitted; the step after it follows both. Both
  // pipeline receives hold the pair back (connect_stages waits on a step's first task): Megatron-Core waits
  // for the forward's input and the backward's gradient before either runs a layer (schedule_chunk_1f1b).
  const TaskId first = f.chain.empty   ? b.chain.first
                       : b.chain.empty ? f.chain.first
                                       : std::min(f.chain.first, b.chain.first);
  const std::size_t f_index = step_index(f.owner, f.step.chunk, f.step.micro_batch, f.step.pass);
  const std::size_t b_index = step_index(b.owner, b.step.chunk, b.step.micro_batch, b.step.pass);
  steps_[f_index].first = first;
  steps_[b_index].first = first;
  follow_step(r, b_index, first);
  combined_forward_[static_cast<std::size_t>(r)] = f_index;
  stage_last_[static_cast<std::size_t>(r)] = std::max(step_end(f), step_end(b));
}

void Lowering::emit_delayed_backward(std::int64_t r, StepInProgress& b) {
  open_step(r, b);
  CombinedCursor backward = cursor(r, b);
  while (backward.k < backward.layers) emit_combined_part(r, backward);
  close_step(r, b);
}

bool Lowering::is_exchange(const OpRef& op) const {
  if (op.stream != StreamKind::expert_comm) return false;
  const auto* comm = std::get_if<CommOp>(&out_.graph.ops()[op.op]);
  return comm != nullptr && comm->kind == graph::CollectiveKind::all_to_all;
}

bool Lowering::emit_combined_part(std::int64_t r, CombinedCursor& c) {
  StepInProgress& s = *c.step;
  const PipelineStep& step = s.step;
  const bool forward = step.pass == Pass::forward;
  while (c.k < c.layers) {
    if (!c.open) {
      c.at = step_layer(coord(r).stage, step, c.k);
      const KindPrograms& program = programs(r).kinds[c.at.kind];
      const std::vector<OpRef>& backward = delay_wgrad_ ? program.delayed_backward : program.layer.backward;
      c.parts = {forward ? std::span<const OpRef>{} : std::span<const OpRef>{program.recompute},
                 forward ? std::span<const OpRef>{program.layer.forward} : std::span<const OpRef>{backward}};
      c.categories = {Category::recompute, forward ? Category::forward : Category::backward};
      c.part = 0;
      c.pos = 0;
      c.first.reset();
      c.weights_last.reset();
      c.open = true;
    }
    bool cut = false;
    while (!cut && c.part < c.parts.size()) {
      const std::span<const OpRef> ops = c.parts[c.part];
      std::size_t end = c.pos;
      while (end < ops.size() && !cut) cut = is_exchange(ops[end++]);
      if (end > c.pos) {
        // A cut falls after an exchange, a lone collective (pattern_at): no emit pattern spans it.
        Chain piece;
        emit_combined_piece(r, c, ops.subspan(c.pos, end - c.pos), piece);
        if (!c.first && !piece.empty) c.first = piece.first;
        append(s.chain, piece);
      }
      c.pos = end;
      if (c.pos == ops.size()) {
        ++c.part;
        c.pos = 0;
      }
    }
    if (c.part == c.parts.size()) {
      c.open = false;
      ++c.k;
      DTSIM_CHECK(c.first.has_value(), "a layer of a combined step without tasks");
      finish_layer(r, s, c.at, *c.first, c.weights_last);
    }
    if (cut) break;
  }
  return c.k < c.layers;
}

void Lowering::emit_combined_piece(std::int64_t r, CombinedCursor& c, std::span<const OpRef> ops,
                                   Chain& piece) {
  StepInProgress& s = *c.step;
  const Category category = c.categories[c.part];
  const std::int32_t mb = s.step.micro_batch;
  if (!delay_wgrad_ || s.step.pass == Pass::forward) {
    emit(r, ops, category, mb, piece);
    return;
  }
  // delay_weight_grads() left no overlap between a moved run and its neighbours: each run is emitted on
  // its own, the weight-gradient kernels on the compute stream beside the chain, after the latest
  // re-gather of a weight gradient's input before them (their only input not made on the compute stream;
  // the re-gathers run in order on the tensor stream, so the latest stands for all).
  std::optional<TaskId> gather;
  for (std::size_t begin = 0; begin < ops.size();) {
    const bool moved = delayed_weight_grad(ops[begin]);
    std::size_t end = begin + 1;
    while (end < ops.size() && delayed_weight_grad(ops[end]) == moved) ++end;
    const std::span<const OpRef> run = ops.subspan(begin, end - begin);
    if (moved) {
      Chain side = gather ? Chain::after(*gather) : Chain{};
      emit(r, run, category, mb, side);
      c.weights_last = side.last;
      s.weights_last = side.last;
    } else {
      weight_gather_.reset();
      emit(r, run, category, mb, piece);
      if (weight_gather_) gather = weight_gather_;
    }
    begin = end;
  }
}

}  // namespace dtsim::parallel::detail
