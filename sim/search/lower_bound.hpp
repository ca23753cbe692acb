// A lower bound on a plan's iteration time, for branch and bound in search (search.hpp). It follows
// only what the lowering (parallel/lower.hpp) forces on any run of the plan's task graph, with the
// same op programs (parallel/layer_ops.hpp), compute model and, on the analytic network, the same
// collective costs as the engine:
//
//   chains  A layer program is one dependency chain (blocking collectives between compute ops;
//           all-gather -> GEMM and GEMM -> reduce-scatter pipelines as two branches that join).
//           Its chain c runs from its first op to its last; its core k from the start of its first
//           compute op to the end of its last. A stage's compute stream runs its tasks in program
//           order, so a stage is busy at least the sum of the cores of the layers it runs plus the
//           kernels of its embedding and output layer:
//             W_s = m (sum over the stage's chunks of l_c) (k_fwd + k_rec + k_bwd) + m t_ends(s)
//           Under combined 1F1B (config::ParallelismSpec::expert_comm_overlap) another micro-batch's
//           compute runs inside a layer's exchanges, so k is the sum of the layer's kernels instead.
//   stage   T >= max over stages s of W_s.
//   fill and drain   The last stage's first forward waits for micro-batch 0 to cross chunks 0 .. p-2,
//           and after its last backward (chunk p-1, last micro-batch) the gradient crosses chunks
//           p-2 .. 0 (where the last stage's schedule ends with its first chunk's backward; zb-h1's
//           ends with deferred W passes and gets no such term):
//             T >= sum_{c < p-1} l_c c_fwd + W_{p-1} + sum_{c < p-1} l_c (c_rec + c_bwd)
//           the pipeline bubble of Narayanan et al. 2021 (arXiv 2104.04473, Sec. 2.2), (p - 1) / v
//           chunk slots with v virtual stages.
//   ZeRO-2  With several micro-batches every micro-batch's gradients are reduce-scattered
//           (parallel/lowering.hpp), all on the stage's one data-parallel stream, none before some
//           backward has begun, which waits for micro-batch 0's forward through every chunk:
//             T >= sum_c l_c f_chain + m sum_buckets RS(bucket)
//           with the lowering's buckets and the analytic network's reduce-scatter times (the engine's
//           only grow with the NICs' sharing and the overlap slowdown).
// Pipeline transfers, ZeRO-3 gathers, the other data-parallel reductions, the optimizer step, queueing
// on shared streams and the overlap slowdown only add to T, so the bound holds for the full simulation
// and for the fast estimate (fast_evaluate.hpp), which is exact where T is bilinear. On the flow
// network, whose collective times are not those of the analytic formulas, communication counts zero.
// tests/unit/test_search.cpp checks the bound against estimates and full simulations.
#pragma once

#include <map>
#include <vector>

#include "config/scenario.hpp"
#include "parallel/layer_ops.hpp"
#include "parallel/layouts_cache.hpp"
#include "parallel/mesh.hpp"

namespace dtsim::search {

// Each stage's layer groups (parallel/group_layouts.hpp) depend on the rank mesh only; a search bounds
// thousands of plans over a few hundred meshes, so it keeps them here, once per mesh, read from the
// mesh's layouts in `layouts` (shared with the search's lowerings). Not thread-safe: one per thread.
class StageGroupsCache {
 public:
  explicit StageGroupsCache(parallel::LayoutsCache& layouts) : layouts_(layouts) {}
  struct Stage {
    parallel::LayerGroups layer;
    graph::CommGroup data, expert_data;  // the gradient reductions' groups
  };
  const std::vector<Stage>& of(const parallel::Mesh& mesh);

 private:
  parallel::LayoutsCache& layouts_;
  std::map<parallel::Mesh, std::vector<Stage>> by_mesh_;
};

double iteration_lower_bound_s(const config::Scenario& scenario, StageGroupsCache& cache);
inline double iteration_lower_bound_s(const config::Scenario& scenario) {
  parallel::LayoutsCache layouts;
  StageGroupsCache cache(layouts);
  return iteration_lower_bound_s(scenario, cache);
}

}  // namespace dtsim::search
