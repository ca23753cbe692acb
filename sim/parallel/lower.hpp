// lower(): a scenario's workload x parallelism -> the task graph of one training iteration.
//
// Symmetric mode simulates one representative rank per pipeline stage: tensor, context and data
// parallel peers of a stage run the same program, so one stands for all of them, while every
// collective is still costed for its full group on its real layout (mesh.hpp).
//
// Per stage, in the pipeline schedule's order (pipeline_schedule.hpp), each step emits the layer
// programs of its model chunk (embedding on the first chunk, head on the last) as a chain of tasks on
// the compute and communication streams; backward steps are preceded per layer by the recomputed
// forward (full) or attention core (selective). Activations and their gradients cross stages as
// point-to-point transfers on the sender's send stream (Megatron's scatter/gather: each tensor rank
// sends 1/t of the tensor). Gradients are reduced over the data(x context)-parallel group in buckets
// as their last micro-batch's backward completes (overlap) or after the backward (no overlap);
// all-reduce, or reduce-scatter + parameter all-gather with a distributed optimizer / ZeRO-1/2;
// ZeRO-3 gathers each layer's parameters before its forward and backward (one layer of prefetch; or on
// demand, after the work before it and a device synchronization, again for a full recompute) in one
// collective per layer or per tensor (zero3.hpp), and reduce-scatters its gradients after each backward. The
// optimizer step closes the iteration.
//
// Every-rank mode simulates every GPU. To keep its task count down, each collective is one gang task
// over the streams of its group's members (gangs.hpp), and each run of compute kernels that follow one
// another with nothing between them, within a layer or across the boundary of two layers that no
// other task waits on, is one task of a fused op (layer_ops.hpp). The engine times a fused op exactly
// as its separate kernels: the iteration takes the same time as in symmetric mode.
//
// LowerOptions::fuse_kernels fuses the same runs of kernels in symmetric mode: the engine's timing
// and every category's busy and exposed time are the same as without it (the kernels of a fused task
// run back to back on one stream, as separate tasks would); only the task and event counts and the
// trace's labels differ. Strategy search (search/fast_evaluate.hpp) uses it.
#pragma once

#include <string>
#include <vector>

#include "config/scenario.hpp"
#include "graph/task_graph.hpp"
#include "parallel/feasibility.hpp"
#include "parallel/layouts_cache.hpp"
#include "parallel/reroute.hpp"

namespace dtsim::parallel {

struct LoweredGraph {
  graph::TaskGraph graph{0};
  std::vector<std::string> rank_names;
  std::int64_t gpus_per_simulated_rank = 1;
  // FLOPs counted over all GPUs in one iteration, recompute included (hardware FLOPs).
  double hardware_flops = 0.0;
};

struct LowerOptions {
  bool fuse_kernels = false;  // symmetric mode: fuse runs of kernels as every-rank mode does
  // Tasks the graph may hold; one more throws core::InfeasibleError (feasibility.hpp, size limit).
  std::int64_t max_tasks = kMaxSimulated;
  // Symmetric mode: the mesh's group layouts from this cache, shared with other lowerings (not owned;
  // null: built for this lowering alone). Every-rank mode builds its own (per-node speeds).
  LayoutsCache* layouts_cache = nullptr;
  // Every-rank mode: these stage replicas are down and their ranks' work is re-routed to data-parallel
  // peers (reroute.hpp): each live rank runs its own and its adopted pipeline steps, backward passes split
  // into input and weight gradients, in the order of the re-routing plan; a down rank runs nothing but
  // its place in its data-parallel group's collectives (costed over the whole group). Needs one model
  // chunk per stage, unsharded model state (ZeRO stage 0, no distributed optimizer) and no expert
  // parallelism (refused with InternalError: results/reroute.hpp checks first); throws
  // core::InfeasibleError when a stage has no live replica.
  std::vector<StageReplica> down_replicas = {};
};

// Requires a feasible scenario (feasibility.hpp). Throws core::InfeasibleError when the graph passes
// options.max_tasks.
LoweredGraph lower(const config::Scenario& scenario, const LowerOptions& options = {});

}  // namespace dtsim::parallel
