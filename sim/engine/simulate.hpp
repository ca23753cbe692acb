// simulate(): replays a finalized task graph. Discrete events on an integer-nanosecond clock, one
// event per task completion, ordered by (time, sequence). A task starts when it is at the head of its
// stream and its dependencies are done, and ends at start + duration; its duration comes from the
// compute model (compute ops) or the network model (communication ops), or is the op's own (a LoadOp,
// timed by the input pipeline's model; a RemoteOp, by the remote parameter servers'), memoized per op (each
// op is costed once, at its first use). Zero durations are allowed.
//
// Streams not in program order (graph::StreamOrder): an arrival-order stream runs one task at a time,
// taking the ready ones in the order they became ready (ties: the order of the releases, which follows
// the order of the completions and of each task's successor list); a concurrent stream starts each
// task as soon as it is ready, any number at once, and no rank's books count them (a message's
// latency). A FixedOp takes its own duration. A cut-through task (TaskGraph::add_cut_through) releases
// its dependants when it starts: a transfer's receiving port then takes the bytes while its sending port
// sends them, and is free again on its own schedule.
//
// A gang task (task_graph.hpp) starts once it heads every member stream and its dependencies are
// done; it runs its collective's duration (never slowed) on all members at once: each member rank's
// books count it, and it slows the compute of every member rank as communication of that rank.
// A fused op takes the time of its kernels run one after another on the stream, each rounded to ns,
// slowed or not, exactly as the same kernels as consecutive tasks would (for overlap_slowdown >= 1):
// an iteration with fused runs of kernels gives the same times as with one task per kernel.
//
// Same-instant rule: all completions at one instant are processed before the starts they allow; then
// tasks on communication streams start before tasks on compute streams (each group in the order the
// streams became ready; initially by stream id). This makes overlap independent of the order in which
// simultaneous completions are popped.
//
// Overlap slowdown: while a task with a non-zero duration runs on a communication stream of a rank,
// compute ops on that rank's compute streams progress at 1 / overlap_slowdown of their speed (shared
// SMs and HBM; GPU profile factor). Only the overlapped part of a kernel is slowed: when the rank's
// communication starts or stops, running compute tasks are re-rated and their completions rescheduled
// (the superseded completion events are discarded when they surface).
//
// Shared NICs: a communication op whose group spans nodes, or a RemoteOp, uses its ranks' NICs. The
// network model (or the RemoteOp's) costs it alone (with the groups of its own kind that share the
// node's NICs counted in: the node's every GPU exchanging at once, for a RemoteOp); while several such
// tasks run on one rank (a data-parallel reduce-scatter beside a pipeline send, a context-parallel ring
// beside a ZeRO-3 gather), they share its NICs equally: each progresses at 1 / k of its speed, k the
// number running on the rank (for a gang task, the most on any of its member ranks), and every start
// and end re-rates the others (processor sharing of the whole duration, latency included: an
// approximation that overstates the slowdown of latency-bound transfers). Two equal all-reduces that
// start together on one rank's NICs each take twice as long as one alone.
//
// Host: with host_issue_ns_per_kernel > 0, each rank's host issues the tasks of its compute stream in
// program order, each at that cost per kernel launch (ComputeOp::kernels; a fused op's kernels summed;
// host_issue_ns_per_tensor_op per launch for an op of per-tensor calls, ComputeOp::tensor_calls)
// plus an op's own host work before its launch (ComputeOp::host_us: a checkpointed layer's recompute),
// without waiting for the GPU: a task cannot start before its first kernel is issued, and the host
// issues the rest while it runs. Issue times are the running sum of those costs from time 0, except
// that a task with Task::host_waits is issued only after its dependencies are done and it heads its
// stream (the host waited for the GPU). When kernels are shorter than their issue, the GPU waits for
// the host (the host_wait_ns state below). A fused op's kernels are gated one by one, as separate tasks
// would be: where the host has not issued the next kernel by the end of the one before, the op pauses
// (its stream not busy, the rank waiting for the host) and goes on when it is issued, so fused and
// separate tasks start and end every kernel at the same times, slowdown included.
// The host also calls collectives (TaskGraph::add_host_calls: the tensor- and context-parallel ones
// of the layer programs, ZeRO-3's gathers and reductions), each at the cost of one kernel launch, before it
// issues the compute task after them; the communication tasks themselves are not gated: their dependencies
// are. The CUDA launch queue's depth (about a thousand kernels) is not modelled: it only bounds how far ahead
// of the GPU the host may run, which changes no time unless a synchronization follows.
//
// GPU speeds: EngineOptions::rank_compute gives each rank the compute model of its GPU (a straggler's
// model scales every duration: cluster.speed_factors); a rank's compute ops, a fused op's kernels and
// the copy kernels of its own communication tasks are costed by it, memoized per op and model. Gang
// tasks (collectives of every member at once) cost their copy kernels with `compute`. Without
// rank_compute every rank uses `compute`.
//
// Input pipeline: a LoadOp task (graph/ops.hpp) runs on an input stream for its given time; it slows
// nothing and is neither compute nor communication in the books below. A task marked with
// TaskGraph::add_input_wait waits (a dependency) for its rank's load: while its stream has reached it
// and the load is not done, the rank waits for data.
//
// The engine accumulates, per simulated rank, the time spent in each state over [0, makespan]: a
// compute-kind stream busy -> busy_ns[category of its task]; else a communication stream busy ->
// exposed_ns[category of its task]; else, while a stream waits for the input pipeline's batch,
// exposed_ns[input] (the data stall); else, while a ready compute task waits to be issued, host_wait_ns;
// else idle. When several streams qualify, the lowest stream id decides. The parts of every rank sum
// exactly to the makespan.
//
// Throws InternalError when the graph is not finalized or when tasks remain that can never start
// ("deadlock: N tasks never ran, e.g. <task>"); TaskGraph::validate() finds the latter beforehand.
// No globals: one call owns all of its state, so simulations may run concurrently on different threads.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "compute/compute_model.hpp"
#include "core/units.hpp"
#include "graph/task_graph.hpp"
#include "network/network_model.hpp"

namespace dtsim::engine {

struct Span {
  graph::TaskId task = 0;
  core::TimeNs start = 0;
  core::TimeNs end = 0;
};

// Time of one rank by what it was doing. Sums to the makespan.
struct RankTime {
  std::array<core::TimeNs, graph::kCategoryCount> busy_ns{};     // compute categories: compute stream busy
  std::array<core::TimeNs, graph::kCategoryCount> exposed_ns{};  // comm categories with compute idle
  core::TimeNs host_wait_ns = 0;  // nothing running, a ready compute task waiting for the host
  core::TimeNs idle_ns = 0;       // nothing running
};

struct EngineOptions {
  bool record_spans = false;
  double overlap_slowdown = 1.0;
  double host_issue_ns_per_kernel = 0.0;  // 0: the host is never the bottleneck (not simulated)
  // With a host: the cost of each launch of an op made of per-tensor calls (ComputeOp::tensor_calls).
  double host_issue_ns_per_tensor_op = 0.0;
  // Per rank, the compute model of its GPU (not owned; at most 65,535 distinct); empty: `compute`.
  std::vector<const compute::ComputeModel*> rank_compute = {};
};

struct EngineResult {
  core::TimeNs makespan = 0;
  std::uint64_t events = 0;     // completions processed: one per task
  std::vector<RankTime> ranks;  // indexed by rank id
  std::vector<Span> spans;      // only with record_spans, in order of completion
};

EngineResult simulate(const graph::TaskGraph& graph, const compute::ComputeModel& compute,
                      const network::NetworkModel& network, const EngineOptions& options);

}  // namespace dtsim::engine
