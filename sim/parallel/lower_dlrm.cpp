#include "parallel/lower_dlrm.hpp"

#include <array>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "models/dlrm/dlrm.hpp"
#include "parallel/input_load.hpp"

namespace dtsim::parallel {

// Named, not anonymous: unity builds put several files in one translation unit.
namespace dlrm_lowering {

using graph::Category;
using graph::StreamKind;
using graph::TaskId;

class DlrmLowering {
 public:
  DlrmLowering(const config::Scenario& s, const EmbeddingLayout& layout)
      : s_(s),
        layout_(layout),
        n_(s.gpu_count()),
        out_{graph::TaskGraph(static_cast<std::uint32_t>(n_)), {}, 1, 0.0} {}

  LoweredGraph run() {
    out_.graph.set_task_limit(static_cast<std::size_t>(kMaxSimulated));
    add_streams();
    const config::DlrmSpec& m = *s_.dlrm;
    const std::int64_t local = s_.training.global_batch_size / n_;
    const models::DlrmDensePrograms p = models::dlrm_dense_programs(m, local, s_.training.precision);
    const std::vector<Op> bottom_fwd = intern(p.bottom_forward);
    const std::vector<Op> inter_fwd = intern(p.interaction_forward);
    const std::vector<Op> top_fwd = intern(p.top_forward);
    const std::vector<Op> top_bwd = intern(p.top_backward);
    const std::vector<Op> inter_bwd = intern(p.interaction_backward);
    const std::vector<Op> bottom_bwd = intern(p.bottom_backward);
    for (const auto* ops : {&bottom_fwd, &inter_fwd, &top_fwd, &top_bwd, &inter_bwd, &bottom_bwd}) {
      for (const Op& op : *ops) out_.hardware_flops += static_cast<double>(n_) * op.flops;
    }
    const graph::OpId dense_step = optimizer_op();
    const graph::LabelId lookup_label = out_.graph.add_label("embedding_lookup");
    const graph::LabelId lookup_bwd_label = out_.graph.add_label("embedding_backward_fused_optimizer");

    // Remote tables: each GPU's pull of the rows its samples use, first on its embedding stream: the
    // next batch's (pipelined), which nothing of this iteration waits for, or this batch's, which the
    // lookups wait for.
    std::vector<TaskId> pulls;
    if (layout_.remote) {
      const graph::OpId pull =
          out_.graph.add_op(graph::RemoteOp{layout_.remote_timing.pull.seconds, layout_.remote->pull_wire_bytes()});
      const graph::LabelId label = out_.graph.add_label("remote_rows_pull");
      for (std::int64_t r = 0; r < n_; ++r)
        pulls.push_back(task(r, StreamKind::embedding_comm, pull, Category::embedding_comm, label));
    }
    // The next batch's ids (pipelined) or this batch's, first on every embedding stream.
    std::vector<TaskId> ids;
    if (layout_.ids_alltoall_bytes > 0.0)
      ids = all_ranks(graph::CollectiveKind::all_to_all, layout_.ids_alltoall_bytes, "ids_all_to_all");

    std::vector<TaskId> lookups(static_cast<std::size_t>(n_));
    std::vector<TaskId> first_compute(static_cast<std::size_t>(n_));
    for (std::int64_t r = 0; r < n_; ++r) {
      const TaskId first = run_ops(r, bottom_fwd, Category::forward, true);
      const graph::OpId op = out_.graph.add_op(layout_.ranks[static_cast<std::size_t>(r)].forward);
      lookups[static_cast<std::size_t>(r)] =
          task(r, StreamKind::compute, op, Category::forward, lookup_label);
      first_compute[static_cast<std::size_t>(r)] =
          first != graph::TaskGraph::kNoTask ? first : lookups[static_cast<std::size_t>(r)];
      if (!s_.parallelism.embeddings.pipelined && !ids.empty())
        out_.graph.add_dependency(ids.front(), lookups[static_cast<std::size_t>(r)]);
      if (!s_.parallelism.embeddings.pipelined && !pulls.empty())
        out_.graph.add_dependency(pulls[static_cast<std::size_t>(r)], lookups[static_cast<std::size_t>(r)]);
    }
    // Forward exchanges, after every member's lookups.
    std::vector<TaskId> forward_exchanges =
        node_row_exchanges(graph::CollectiveKind::reduce_scatter, "table_row_wise_reduce_scatter");
    if (layout_.pooled_alltoall_bytes > 0.0)
      append(forward_exchanges, all_ranks(graph::CollectiveKind::all_to_all, layout_.pooled_alltoall_bytes,
                                          "pooled_all_to_all"));
    if (layout_.row_wise_bytes > 0.0)
      append(forward_exchanges, all_ranks(graph::CollectiveKind::reduce_scatter, layout_.row_wise_bytes,
                                          "row_wise_reduce_scatter"));
    for (const TaskId x : forward_exchanges) {
      for (const TaskId l : lookups) out_.graph.add_dependency(l, x);
    }

    std::vector<TaskId> top_done(static_cast<std::size_t>(n_));
    std::vector<TaskId> inter_done(static_cast<std::size_t>(n_));
    for (std::int64_t r = 0; r < n_; ++r) {
      const TaskId first = run_ops(r, inter_fwd, Category::forward, true);
      for (const TaskId x : forward_exchanges) out_.graph.add_dependency(x, first);
      run_ops(r, top_fwd, Category::forward);
      top_done[static_cast<std::size_t>(r)] = run_ops(r, top_bwd, Category::backward);
      inter_done[static_cast<std::size_t>(r)] = run_ops(r, inter_bwd, Category::backward);
    }
    // Backward exchanges, after every member's interaction backward.
    std::vector<TaskId> backward_exchanges;
    if (layout_.pooled_alltoall_bytes > 0.0)
      append(backward_exchanges, all_ranks(graph::CollectiveKind::all_to_all, layout_.pooled_alltoall_bytes,
                                           "pooled_gradient_all_to_all"));
    append(backward_exchanges,
           node_row_exchanges(graph::CollectiveKind::all_gather, "table_row_wise_all_gather"));
    if (layout_.row_wise_bytes > 0.0)
      append(backward_exchanges,
             all_ranks(graph::CollectiveKind::all_gather, layout_.row_wise_bytes, "row_wise_all_gather"));
    for (const TaskId x : backward_exchanges) {
      for (const TaskId t : inter_done) out_.graph.add_dependency(t, x);
    }

    std::vector<TaskId> bottom_done(static_cast<std::size_t>(n_));
    std::vector<TaskId> embeddings_done(static_cast<std::size_t>(n_));
    std::vector<TaskId> steps(static_cast<std::size_t>(n_));
    const graph::LabelId step_label = out_.graph.add_label("dense_optimizer_step");
    for (std::int64_t r = 0; r < n_; ++r) {
      const auto i = static_cast<std::size_t>(r);
      bottom_done[i] = run_ops(r, bottom_bwd, Category::backward);
      const graph::OpId op = out_.graph.add_op(layout_.ranks[i].backward);
      embeddings_done[i] = task(r, StreamKind::compute, op, Category::backward, lookup_bwd_label);
      for (const TaskId x : backward_exchanges) out_.graph.add_dependency(x, embeddings_done[i]);
      steps[i] = task(r, StreamKind::compute, dense_step, Category::optimizer, step_label);
    }
    // Remote tables: the pulled rows' gradients, pushed once the embeddings' backward has summed them.
    if (layout_.remote) {
      const graph::OpId push =
          out_.graph.add_op(graph::RemoteOp{layout_.remote_timing.push.seconds, layout_.remote->push_bytes});
      const graph::LabelId label = out_.graph.add_label("remote_gradients_push");
      for (std::int64_t r = 0; r < n_; ++r) {
        const TaskId t = task(r, StreamKind::embedding_comm, push, Category::embedding_comm, label);
        out_.graph.add_dependency(embeddings_done[static_cast<std::size_t>(r)], t);
      }
    }
    // The gradients' all-reduces, in the order their backward ends on every rank; the step waits for them.
    const auto reduce = [&](double bytes, const std::vector<TaskId>& after, const char* label) {
      if (bytes <= 0.0 || n_ == 1) return;
      const TaskId all_reduce = gang(graph::CollectiveKind::all_reduce, bytes, all_group(), 0, StreamKind::data_comm,
                                     Category::data_comm, label);
      for (const TaskId done : after) out_.graph.add_dependency(done, all_reduce);
      for (const TaskId step : steps) out_.graph.add_dependency(all_reduce, step);
    };
    reduce(models::dlrm_top_parameters(m) * models::kDenseBytes, top_done, "top_mlp_gradient_all_reduce");
    reduce(models::dlrm_interaction_parameters(m) * models::kDenseBytes, inter_done, "dcn_gradient_all_reduce");
    reduce(models::dlrm_bottom_parameters(m) * models::kDenseBytes, bottom_done, "bottom_mlp_gradient_all_reduce");
    reduce(layout_.data_parallel_gradient_bytes, embeddings_done, "data_parallel_tables_gradient_all_reduce");
    if (const std::optional<InputLoad> load = add_input_load_ops(s_, out_.graph)) {
      for (std::int64_t r = 0; r < n_; ++r) {
        add_input_load(*load, out_.graph, static_cast<graph::RankId>(r), first_compute[static_cast<std::size_t>(r)],
                       stream(r, StreamKind::compute));
      }
    }
    out_.graph.finalize();
    out_.graph.validate();
    for (std::int64_t r = 0; r < n_; ++r) out_.rank_names.push_back(fmt::format("rank {}", r));
    return std::move(out_);
  }

 private:
  struct Op {
    graph::OpId id = 0;
    graph::LabelId label = 0;
    double flops = 0.0;
  };

  // Streams kind by kind, so that a collective's members' streams are neighbours for the engine.
  void add_streams() {
    for (const StreamKind k : {StreamKind::compute, StreamKind::embedding_comm, StreamKind::data_comm}) {
      for (std::int64_t r = 0; r < n_; ++r) {
        streams_[static_cast<std::size_t>(k == StreamKind::compute          ? 0
                                          : k == StreamKind::embedding_comm ? 1
                                                                            : 2)]
            .push_back(out_.graph.add_stream(static_cast<graph::RankId>(r), k));
      }
    }
  }
  graph::StreamId stream(std::int64_t r, StreamKind k) const {
    const std::size_t i = k == StreamKind::compute ? 0 : k == StreamKind::embedding_comm ? 1 : 2;
    return streams_[i][static_cast<std::size_t>(r)];
  }

  std::vector<Op> intern(const std::vector<models::LayerOp>& ops) {
    std::vector<Op> out;
    for (const models::LayerOp& op : ops) {
      out.push_back(
          {out_.graph.add_op(op.compute), out_.graph.add_label(std::string(op.name)), op.compute.flops});
    }
    return out;
  }

  TaskId task(std::int64_t r, StreamKind k, graph::OpId op, Category c, graph::LabelId label) {
    graph::Task t;
    t.op = op;
    t.stream = stream(r, k);
    t.category = c;
    t.label = label;
    return out_.graph.add_task(t);
  }

  // The ops one after another on the rank's compute stream; returns the first (`first`) or the last.
  TaskId run_ops(std::int64_t r, const std::vector<Op>& ops, Category c, bool first = false) {
    TaskId head = graph::TaskGraph::kNoTask;
    TaskId last = graph::TaskGraph::kNoTask;
    for (const Op& op : ops) {
      last = task(r, StreamKind::compute, op.id, c, op.label);
      if (head == graph::TaskGraph::kNoTask) head = last;
    }
    return first ? head : last;
  }

  graph::CommGroup all_group() const { return graph::CommGroup(n_, s_.cluster.nodes, 1, 1); }

  // One gang task: the collective `kind` of `bytes` over `group`, on the `k` streams of ranks
  // [first, first + group.size), accounted as `category`.
  TaskId gang(graph::CollectiveKind kind, double bytes, const graph::CommGroup& group, std::int64_t first,
              StreamKind k, Category category, const char* label) {
    graph::CommOp op;
    op.kind = kind;
    op.bytes = bytes;
    op.group = group;
    std::vector<graph::StreamId> members;
    for (std::int64_t r = first; r < first + group.size; ++r) members.push_back(stream(r, k));
    graph::Task t;
    t.op = out_.graph.add_op(op);
    t.category = category;
    t.label = out_.graph.add_label(label);
    return out_.graph.add_gang_task(t, members);
  }

  // One gang over every rank's embedding stream.
  std::vector<TaskId> all_ranks(graph::CollectiveKind kind, double bytes, const char* label) {
    if (n_ == 1) return {};
    return {gang(kind, bytes, all_group(), 0, StreamKind::embedding_comm, Category::embedding_comm, label)};
  }

  // Per node with table-row-wise tables, one gang over its GPUs' embedding streams.
  std::vector<TaskId> node_row_exchanges(graph::CollectiveKind kind, const char* label) {
    std::vector<TaskId> out;
    const std::int64_t g = s_.node.gpus_per_node;
    for (std::size_t node = 0; node < layout_.node_row_bytes.size(); ++node) {
      if (layout_.node_row_bytes[node] <= 0.0 || g == 1) continue;
      out.push_back(gang(kind, layout_.node_row_bytes[node], graph::CommGroup(g, 1, 1, 1),
                         static_cast<std::int64_t>(node) * g, StreamKind::embedding_comm, Category::embedding_comm,
                         label));
    }
    return out;
  }

  // The dense optimizer step, and the data-parallel tables' (dense in torchrec: their whole gradient).
  graph::OpId optimizer_op() {
    const double state = models::optimizer_state_bytes_per_value(s_.training.optimizer);
    const double params = models::dlrm_dense_parameters(*s_.dlrm);
    const double per_param =
        2 * models::kDenseBytes + models::kDenseBytes + 2 * state;  // parameter r/w, gradient, states r/w
    graph::ComputeOp op;
    op.cls = graph::ComputeClass::optimizer;
    op.memory = core::MemoryClass::optimizer;
    const double e = models::activation_bytes_per_element(s_.dlrm->embedding_precision);
    op.bytes = params * per_param + layout_.data_parallel_gradient_bytes / e * per_param;
    return out_.graph.add_op(op);
  }

  static void append(std::vector<TaskId>& to, const std::vector<TaskId>& more) {
    to.insert(to.end(), more.begin(), more.end());
  }

  const config::Scenario& s_;
  const EmbeddingLayout& layout_;
  std::int64_t n_;
  LoweredGraph out_;
  std::array<std::vector<graph::StreamId>, 3> streams_;
};

}  // namespace dlrm_lowering

LoweredGraph lower_dlrm(const config::Scenario& scenario, const EmbeddingLayout& layout) {
  using namespace dlrm_lowering;
  return DlrmLowering(scenario, layout).run();
}

}  // namespace dtsim::parallel
