#include "search/lower_bound.hpp"

#include <algorithm>
#include <memory>
#include <variant>
#include <vector>

#include "compute/compute_model.hpp"
#include "core/errors.hpp"
#include "models/transformer/layer_kinds.hpp"
#include "network/analytic_model.hpp"
#include "parallel/feasibility.hpp"
#include "parallel/gradient_buckets.hpp"
#include "parallel/group_layouts.hpp"
#include "parallel/layer_ops.hpp"
#include "parallel/memory_model.hpp"
#include "parallel/mesh.hpp"
#include "parallel/pipeline_schedule.hpp"

namespace dtsim::search {

namespace {

using core::TimeNs;

// Op durations as the engine costs them; communication only on the analytic network.
class Costs {
 public:
  Costs(const config::Scenario& s, const graph::TaskGraph& graph)
      : graph_(graph), compute_(s.gpu, s.training.precision) {
    if (s.simulation.network == config::NetworkFidelity::analytic) {
      network_ = std::make_unique<network::AnalyticModel>(s);
    }
  }
  TimeNs operator()(graph::OpId id) const {
    const graph::Op& op = graph_.ops()[id];
    if (const auto* c = std::get_if<graph::ComputeOp>(&op)) return compute_.duration(*c);
    if (const auto* m = std::get_if<graph::CommOp>(&op)) {
      // Layer programs and gradient buckets only: no collective of theirs carries copy kernels (ZeRO-3
      // list buffers, which only add time).
      DTSIM_CHECK(!m->copies, "the lower bound costs a collective with copy kernels");
      return network_ ? network_->duration(*m) : 0;
    }
    return 0;  // intern_layer_ops() does not fuse
  }

 private:
  const graph::TaskGraph& graph_;
  compute::ComputeModel compute_;
  std::unique_ptr<network::AnalyticModel> network_;
};

// One layer pass as the lowering emits it (Lowering::emit): `chain` from its first op to its last,
// `core` from the start of its first compute op to the end of its last.
struct Walk {
  TimeNs now = 0;  // end of the chain so far
  TimeNs first_compute = -1;
  TimeNs last_compute_end = 0;

  void compute(TimeNs start, TimeNs d) {
    if (first_compute < 0) first_compute = start;
    last_compute_end = start + d;
  }
  TimeNs chain() const { return now; }
  TimeNs core() const { return first_compute < 0 ? 0 : last_compute_end - first_compute; }
};

void walk(const std::vector<parallel::OpRef>& ops, const Costs& cost, Walk& w) {
  for (std::size_t i = 0; i < ops.size();) {
    const parallel::OpRef& op = ops[i];
    const parallel::EmitPattern pattern = parallel::pattern_at(ops, i);
    switch (pattern) {
      case parallel::EmitPattern::gather_gemm: {
        // First all-gather chunk, then the GEMM beside the other chunks; the next op waits for both.
        w.now += cost(op.chunk_op);
        const TimeNs gemm = cost(ops[i + 1].op);
        w.compute(w.now, gemm);
        w.now += std::max(gemm, cost(op.rest_op));
        break;
      }
      case parallel::EmitPattern::gemm_scatter: {
        // The GEMM beside all reduce-scatter chunks but the last, which waits for both.
        const TimeNs gemm = cost(op.op);
        w.compute(w.now, gemm);
        w.now += std::max(gemm, cost(ops[i + 1].rest_op)) + cost(ops[i + 1].chunk_op);
        break;
      }
      case parallel::EmitPattern::beside_gemm: {
        // The collective and the GEMM side by side; the next op waits for both.
        const TimeNs gemm = cost(ops[i + 1].op);
        w.compute(w.now, gemm);
        w.now += std::max(gemm, cost(op.op));
        break;
      }
      case parallel::EmitPattern::compute: {
        const TimeNs d = cost(op.op);
        w.compute(w.now, d);
        w.now += d;
        break;
      }
      case parallel::EmitPattern::comm:
        w.now += cost(op.op);
        break;
    }
    i += parallel::pattern_size(pattern);
  }
}

Walk walk_all(std::initializer_list<const std::vector<parallel::OpRef>*> parts, const Costs& cost) {
  Walk w;
  for (const auto* ops : parts) walk(*ops, cost, w);
  return w;
}

// Kernel time of the compute ops of a program.
TimeNs kernels_ns(const std::vector<parallel::OpRef>& ops, const graph::TaskGraph& graph, const Costs& cost) {
  TimeNs total = 0;
  for (const parallel::OpRef& ref : ops) {
    if (std::holds_alternative<graph::ComputeOp>(graph.ops()[ref.op])) total += cost(ref.op);
  }
  return total;
}

// Whether the stage's schedule opens with chunk 0's forward and closes with chunk 0's backward (the
// premise of the fill and drain term).
bool ends_on_first_chunk(const config::Scenario& s, std::int64_t stage, std::int64_t m) {
  const auto steps =
      parallel::stage_schedule(s.parallelism.schedule, s.parallelism.pipeline, stage, m,
                               s.parallelism.virtual_stages, s.parallelism.expert_comm_overlap);
  return !steps.empty() && steps.front().pass == parallel::Pass::forward && steps.front().chunk == 0 &&
         steps.back().pass == parallel::Pass::backward && steps.back().chunk == 0;
}

}  // namespace

// One layer's forward and backward (with recompute) over a stage's groups: the chain, and the compute
// core (first compute start to last compute end).
struct LayerCost {
  TimeNs core = 0;
  TimeNs chain = 0;
  TimeNs forward_chain = 0;
};

const std::vector<StageGroupsCache::Stage>& StageGroupsCache::of(const parallel::Mesh& mesh) {
  const auto found = by_mesh_.find(mesh);
  if (found != by_mesh_.end()) return found->second;
  const parallel::GroupLayouts& layouts = layouts_.of(mesh);
  std::vector<Stage> stages;
  for (std::int64_t s = 0; s < mesh.degree(config::MeshDim::pipeline); ++s) {
    stages.push_back(Stage{
        parallel::LayerGroups{layouts.stage_group(s, parallel::GroupKind::tensor), layouts.stage_exchange(s),
                              layouts.stage_group(s, parallel::GroupKind::expert)},
        layouts.stage_group(s, parallel::GroupKind::data),
        layouts.stage_group(s, parallel::GroupKind::expert_data)});
  }
  return by_mesh_.emplace(mesh, std::move(stages)).first->second;
}

double iteration_lower_bound_s(const config::Scenario& scenario, StageGroupsCache& cache) {
  const std::vector<StageGroupsCache::Stage>& stage_groups = cache.of(parallel::Mesh::of(scenario));
  graph::TaskGraph graph(1);  // only its op table is used
  parallel::LabelTable labels;
  parallel::CommOpTable comm_ops;
  // Each stage's layers run over its own groups (group_layouts.hpp), which may differ (uneven layouts);
  // each kind of layer (models/transformer/layer_kinds.hpp) has its own cost.
  std::vector<std::pair<parallel::LayerGroups, std::vector<LayerCost>>> costs;
  std::vector<std::size_t> cost_of_stage;
  TimeNs embedding = 0;
  TimeNs head = 0;
  TimeNs mtp_module = 0;
  const Costs cost(scenario, graph);
  for (std::int64_t s = 0; s < scenario.parallelism.pipeline; ++s) {
    const parallel::LayerGroups& groups = stage_groups[static_cast<std::size_t>(s)].layer;
    const auto same = [&](const auto& entry) { return entry.first == groups; };
    const auto it = std::find_if(costs.begin(), costs.end(), same);
    cost_of_stage.push_back(static_cast<std::size_t>(it - costs.begin()));
    if (it != costs.end()) continue;
    const parallel::LayerOps ops = parallel::intern_layer_ops(scenario, groups, graph, labels, comm_ops);
    std::vector<LayerCost> kinds;
    for (const parallel::KindOps& kind : ops.kinds) {
      const Walk forward = walk_all({&kind.layer.forward}, cost);
      const Walk backward = walk_all({&kind.recompute, &kind.layer.backward}, cost);
      // Combined 1F1B runs another micro-batch's compute inside a layer's exchanges: only its kernels
      // are sure to occupy the compute stream.
      const TimeNs core = scenario.parallelism.expert_comm_overlap
                              ? kernels_ns(kind.layer.forward, graph, cost) +
                                    kernels_ns(kind.recompute, graph, cost) +
                                    kernels_ns(kind.layer.backward, graph, cost)
                              : forward.core() + backward.core();
      kinds.push_back(LayerCost{core, forward.chain() + backward.chain(), forward.chain()});
    }
    costs.emplace_back(groups, std::move(kinds));
    if (costs.size() == 1) {
      embedding =
          kernels_ns(ops.embedding.forward, graph, cost) + kernels_ns(ops.embedding.backward, graph, cost);
      head = kernels_ns(ops.head.forward, graph, cost) + kernels_ns(ops.head.backward, graph, cost);
      // A multi-token prediction module (models/transformer/mtp.hpp) besides its layer: the embedding's
      // lookup, its projection, the head again.
      mtp_module = embedding + head + kernels_ns(ops.mtp_projection.forward, graph, cost) +
                   kernels_ns(ops.mtp_projection.backward, graph, cost);
    }
  }
  const std::int64_t p = scenario.parallelism.pipeline;
  const std::int64_t v = scenario.parallelism.virtual_stages;
  const std::int64_t m = parallel::micro_batches(scenario);
  const std::vector<std::int64_t> layers = parallel::model_chunk_layers(scenario.model, p, v);
  const models::LayerKinds kinds(scenario.model);
  // The time `member` of LayerCost of `counts` layers of each kind on stage s's groups.
  const auto time_of = [&](std::int64_t s, const std::vector<std::int64_t>& counts,
                           TimeNs LayerCost::*member) {
    const std::vector<LayerCost>& stage = costs[cost_of_stage[static_cast<std::size_t>(s)]].second;
    TimeNs sum = 0;
    for (std::size_t k = 0; k < counts.size(); ++k) sum += counts[k] * (stage[k].*member);
    return sum;
  };
  const std::vector<std::int64_t> chunk_first = parallel::chunk_first_layers(layers);
  // Model chunk c's layers of each kind.
  const auto chunk_kinds = [&](std::int64_t c) {
    const auto i = static_cast<std::size_t>(c);
    return kinds.counts(chunk_first[i], chunk_first[i] + layers[i]);
  };

  // Busy time of each stage's compute stream (model chunk c * p + s is stage s's chunk c).
  std::vector<double> work(static_cast<std::size_t>(p), 0.0);
  for (std::int64_t s = 0; s < p; ++s) {
    TimeNs per_micro_batch = time_of(s, parallel::stage_kind_layers(kinds, layers, p, s), &LayerCost::core);
    if (s == 0) per_micro_batch += embedding;
    if (s == p - 1) {
      std::vector<std::int64_t> mtp_layers(kinds.count(), 0);
      mtp_layers[kinds.of_layer(scenario.model.layers - 1)] = scenario.model.mtp_layers;
      per_micro_batch +=
          head + scenario.model.mtp_layers * mtp_module + time_of(s, mtp_layers, &LayerCost::core);
    }
    work[static_cast<std::size_t>(s)] = static_cast<double>(m) * static_cast<double>(per_micro_batch);
  }
  double bound = *std::max_element(work.begin(), work.end());
  if (p > 1 && ends_on_first_chunk(scenario, p - 1, m)) {
    TimeNs fill_drain = 0;
    for (std::int64_t c = 0; c + 1 < p; ++c) fill_drain += time_of(c, chunk_kinds(c), &LayerCost::chain);
    bound = std::max(bound, static_cast<double>(fill_drain) + work.back());
  }
  if (m > 1 && scenario.parallelism.zero_stage == 2 &&
      scenario.simulation.network == config::NetworkFidelity::analytic) {
    TimeNs first_forward = 0;
    for (std::int64_t c = 0; c < p * v; ++c)
      first_forward += time_of(c % p, chunk_kinds(c), &LayerCost::forward_chain);
    for (std::int64_t s = 0; s < p; ++s) {
      const StageGroupsCache::Stage& groups = stage_groups[static_cast<std::size_t>(s)];
      TimeNs reductions = 0;
      for (const parallel::GradientBucket& b : parallel::gradient_buckets(scenario, s)) {
        const auto reduce = [&](const graph::CommGroup& group, double bytes) {
          if (bytes > 0.0 && group.size > 1)
            reductions +=
                cost(comm_ops.id(graph, graph::CommOp{graph::CollectiveKind::reduce_scatter, bytes, group}));
        };
        reduce(groups.data, b.bytes);
        reduce(groups.expert_data, b.expert_bytes);
      }
      bound = std::max(bound, static_cast<double>(first_forward) + static_cast<double>(m * reductions));
    }
  }
  return core::ns_to_seconds(static_cast<TimeNs>(bound));
}

}  // namespace dtsim::search
