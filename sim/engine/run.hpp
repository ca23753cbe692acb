// The state of one simulate() call (simulate.hpp has the contract): what the event loop keeps per
// task, stream and rank, sized once by the setup (run_setup.cpp) so that the loop (simulate.cpp)
// allocates nothing. Internal to the engine.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "compute/compute_model.hpp"
#include "core/units.hpp"
#include "engine/event_queue.hpp"
#include "engine/simulate.hpp"
#include "graph/task_graph.hpp"
#include "network/network_model.hpp"

namespace dtsim::engine::detail {

using core::TimeNs;
using graph::StreamId;
using graph::TaskId;

// Accounting slots of a rank: busy_ns[c] at c, exposed_ns[c] at kCategoryCount + c, then waiting for
// the host, then idle.
inline constexpr int kSlotsPerRank = 2 * graph::kCategoryCount + 2;
inline constexpr std::uint8_t kHostWaitSlot = 2 * graph::kCategoryCount;
inline constexpr std::uint8_t kIdleSlot = 2 * graph::kCategoryCount + 1;
// An event payload with this bit wakes a stream whose head task the host has just issued (the rest is
// the stream); without it, the payload is the stream whose running task ends.
inline constexpr std::uint32_t kWakeBit = 1U << 31;
// An event payload with this bit (and not kWakeBit) ends a task of a concurrent stream: the rest is the
// task. Streams and such tasks therefore stay below 2^30 (the setup checks).
inline constexpr std::uint32_t kTaskBit = 1U << 30;
inline constexpr TimeNs kNotCosted = -1;
inline constexpr std::uint32_t kWordBits = 64;

// Task node word: index << kOpShift | flags | category, where the index is the op's, or for a gang
// task the gang's (Run::gangs_). Fused ops carry both the compute and the fused flag.
inline constexpr std::uint32_t kCategoryBits = 4;
inline constexpr std::uint32_t kCategoryMask = (1U << kCategoryBits) - 1;
inline constexpr std::uint32_t kComputeOpFlag = 1U << kCategoryBits;
inline constexpr std::uint32_t kFusedFlag = 1U << (kCategoryBits + 1);
inline constexpr std::uint32_t kGangFlag = 1U << (kCategoryBits + 2);
inline constexpr std::uint32_t kOpShift = kCategoryBits + 3;
inline constexpr std::uint32_t kNoKernel = std::numeric_limits<std::uint32_t>::max();
inline constexpr TaskId kNoTask = std::numeric_limits<TaskId>::max();
static_assert(graph::kCategoryCount <= (1 << kCategoryBits));

// Durations below this are exact as doubles.
inline constexpr TimeNs kExactDouble = TimeNs{1} << 52;

// std::llround for a non-negative value, without the library call: x - trunc(x) is exact below 2^52.
inline TimeNs round_to_ns(double x) {
  auto whole = static_cast<TimeNs>(x);
  if (x - static_cast<double>(whole) >= 0.5) ++whole;
  return whole;
}

// What the loop needs of a task, in 16 bytes (its successor list comes from the graph's CSR offsets,
// read when it starts). `next`: the task after it on its stream, so that a stream moves on without
// reading its program order (kNoTask at the end; for a gang, Run::gang_next_ per member instead).
struct Node {
  std::uint32_t pending = 0;  // dependencies not finished yet; for a gang, also members not at it yet
  StreamId stream = 0;        // a gang's first member
  std::uint32_t op_word = 0;
  TaskId next = 0;
};
static_assert(sizeof(Node) == 16);

// A stream, in one cache line: its place in program order and what the loop needs of its running
// task, copied from the task's node when it starts so that its completion reads the stream only.
struct alignas(64) StreamState {
  TimeNs start = 0;              // of the running task
  TimeNs host_clock = 0;         // compute streams with a host: when the host issued its last kernel
  TimeNs expected_end = 0;       // completion event that is current (earlier pushes are stale)
  TaskId head = kNoTask;         // the running task, or the next to run; kNoTask past the end
  TaskId after = kNoTask;        // the task after the running one
  std::uint32_t word = 0;        // running task: node word
  std::uint32_t succ_begin = 0;  // running task: successors[succ_begin .. succ_end)
  std::uint32_t succ_end = 0;
  std::uint32_t rank = 0;
  std::uint16_t local = 0;  // index among the rank's streams, by increasing stream id
  std::uint16_t speed = 0;  // its rank's compute model (Run::compute_models_)
  bool comm = false;        // a non-compute stream
  bool input = false;       // the input pipeline's (comm too): its loads slow nothing, expose nothing
  bool busy = false;
  bool queued = false;    // in a ready list
  bool slowable = false;  // running a compute op on a compute stream: re-rated with its rank's communication
  graph::StreamOrder order = graph::StreamOrder::program;
};
static_assert(sizeof(StreamState) == 64);

// The progress of a compute stream's running task while the overlap slowdown applies.
struct RateState {
  TimeNs since = 0;                  // when `remaining` was last brought up to date
  double remaining = 0.0;            // unslowed work left, in ns (of the running kernel if fused)
  std::uint32_t kernel = kNoKernel;  // fused: the running kernel (Run::kernels_), else kNoKernel
  std::uint32_t kernel_last = 0;     // fused: its last kernel
  bool slowed = false;               // progressing at 1 / overlap_slowdown
  // Fused, with a host: the host's clock before it issued the op (its kernels are issued at
  // issue_base + Run::kernel_issue_), the last kernel of the run scheduled now (the one before the
  // first kernel whose issue is later than its predecessor's end, else kernel_last), and whether the
  // op is waiting for the host to issue its next kernel (a pause: the stream is not busy).
  TimeNs issue_base = 0;
  std::uint32_t segment_last = 0;
  bool paused = false;
  // A communication task through its node's NICs (on a gang's first member for the gang): how many
  // tasks share them now (it progresses at 1 / nic_share; simulate.hpp, "Shared NICs"), 0 for any
  // other task. `remaining` and `since` then hold its work at the full share.
  std::uint32_t nic_share = 0;
};

// A rank's busy flags (bit = local stream index; streams beyond 64 in extra words), where the
// categories of its streams' running tasks are, and its books.
struct RankState {
  TimeNs last_change = 0;
  std::uint32_t comm_running = 0;  // tasks with a non-zero duration running on its comm streams
  std::uint32_t host_waiting = 0;  // ready compute tasks waiting for the host to issue them
  std::uint32_t nic_users = 0;     // running communication tasks through the node's NICs
  std::uint32_t input_waiting = 0;  // streams at a task that waits for the input pipeline's batch
  std::uint64_t compute_bits = 0;
  std::uint64_t comm_bits = 0;
  std::uint32_t stream_begin = 0;  // into Run::running_category_ and Run::rank_streams_
  std::uint32_t extra_begin = 0;   // into Run::extra_compute_bits_ / extra_comm_bits_
  std::uint32_t extra_end = 0;
  std::uint8_t slot = kIdleSlot;
  TimeNs acc[kSlotsPerRank] = {};
};

// A kernel of a fused op: its time alone and slowed, and the time of the kernels after it in the op.
struct Kernel {
  TimeNs plain = 0;
  TimeNs slowed = 0;  // round(plain * overlap_slowdown), as a kernel started slowed would take
  TimeNs tail_plain = 0;
  TimeNs tail_slowed = 0;
};

// What the host spends on an op: issuing its first kernel (before which it cannot start) and all of
// its kernels (before the host moves on to the next task).
struct HostCost {
  TimeNs first = 0;
  TimeNs total = 0;
};

// A gang task: its op and its member streams, TaskGraph::gang_streams()[begin .. begin + size).
struct GangRun {
  std::uint32_t op = 0;
  std::uint32_t begin = 0;
  std::uint32_t size = 0;
};

class Run {
 public:
  Run(const graph::TaskGraph& graph, const compute::ComputeModel& compute,
      const network::NetworkModel& network, const EngineOptions& options);
  EngineResult run();

 private:
  // ---- setup and costing (run_setup.cpp) ----
  void setup_nodes();
  void setup_streams();
  std::vector<std::uint16_t> setup_speeds(const EngineOptions& options);
  void setup_host(double ns_per_kernel, double ns_per_tensor_op);
  TimeNs cost(std::uint32_t op, std::uint16_t speed);
  TimeNs cost_fused(std::uint32_t op, const graph::FusedOp& fused, std::uint16_t speed);
  // Where op's duration, or its first kernel, is kept for compute model `speed`.
  std::size_t memo_index(std::uint32_t op, std::uint16_t speed) const {
    return std::size_t{speed} * op_count_ + op;
  }
  std::uint32_t kernel_index(std::uint32_t op, std::uint16_t speed) const {
    return speed * kernel_count_ + kernel_begin_[op];
  }
  [[noreturn]] void throw_deadlock(std::uint64_t events) const;
  EngineResult result(std::uint64_t events);

  // ---- the event loop (simulate.cpp) ----
  void enqueue(StreamId s, StreamState& st);
  void issue(StreamId s, StreamState& st);
  void wake(StreamId s);
  void set_waiting(RankState& rank, std::uint32_t RankState::*count, bool waiting);
  void arrive(StreamId s, StreamState& st);
  void start_ready();
  void start(StreamId s);
  void start_gang(StreamId first_stream, StreamState& first);
  bool stale(const Event& e) const;
  bool superseded(const Event& e) const;
  void schedule_compute(StreamId s, StreamState& st, RateState& rate);
  void rerate_compute(RankState& rank, bool slowed);
  void rerate(StreamId s, bool slowed);
  void advance_kernels(RateState& rate) const;
  TimeNs segment_end(RateState& rate, TimeNs first_end) const;
  bool finish(StreamId s);
  void pause(StreamId s, StreamState& st);
  void resume(StreamId s, StreamState& st);
  void finish_gang(StreamState& first);
  void start_nic_task(StreamId holder, std::span<const StreamId> members, TimeNs duration);
  void finish_nic_task(StreamId holder, std::span<const StreamId> members);
  void rerate_nics(const RankState& rank);
  void rerate_nic_task(StreamId holder);
  std::uint32_t nic_share_of(std::span<const StreamId> members) const;
  std::span<const StreamId> members_of(const StreamId& holder) const;
  void release_successors(std::uint32_t begin, std::uint32_t end);
  // A task on a stream not in program order is ready (graph::StreamOrder): an arrival-order stream
  // queues it, a concurrent stream starts it in the next start_ready().
  void ready_off_program(TaskId task, StreamId s);
  TaskId next_arrival(StreamId s) {
    return fifo_read_[s] < fifo_write_[s] ? fifo_[fifo_read_[s]++] : kNoTask;
  }
  void start_concurrent(TaskId task);
  void finish_concurrent(TaskId task);
  void setup_orders();
  void set_busy(RankState& rank, StreamState& st, bool busy);
  std::uint8_t current_slot(const RankState& rank) const;
  static std::uint32_t lowest(const RankState& rank, std::uint32_t w, std::uint64_t bits) {
    return (w - rank.extra_begin + 1) * kWordBits + static_cast<std::uint32_t>(std::countr_zero(bits));
  }
  static void advance(StreamState& st) { st.head = st.after; }

  const graph::TaskGraph& graph_;
  const TaskId* successors_;
  const std::uint32_t* succ_begin_;  // task t's successors: successors_[succ_begin_[t] .. succ_begin_[t + 1])
  const StreamId* gang_streams_;
  std::vector<const compute::ComputeModel*> compute_models_;  // [0]: simulate()'s, then the ranks' others
  const network::NetworkModel& network_;
  const bool record_spans_;
  const double overlap_slowdown_;
  const bool slowed_;
  const bool host_;  // a host issues the compute streams' tasks
  bool share_nics_ = false;  // some communication op crosses nodes (simulate.hpp, "Shared NICs")

  TimeNs now_ = 0;
  EventQueue queue_;
  std::vector<Node> nodes_;  // one per task
  std::size_t op_count_ = 0;
  std::uint32_t kernel_count_ = 0;  // fused kernels of one compute model (kernels_ holds one set per model)
  std::vector<TimeNs> memo_;        // per compute model and op (memo_index)
  std::vector<std::uint8_t> nic_op_;  // per op: a communication op whose group spans nodes
  std::vector<std::uint32_t> kernel_begin_;  // per op: its kernels are kernels_[begin[op] .. begin[op + 1])
  std::vector<Kernel> kernels_;
  std::vector<GangRun> gangs_;
  // Per gang member (TaskGraph::gang_streams() order): the next task of the member's stream.
  std::vector<TaskId> gang_next_;
  std::vector<StreamState> streams_;
  std::vector<RateState> rates_;  // per stream (compute streams use theirs)
  std::vector<RankState> ranks_;
  std::vector<std::uint8_t> running_category_;  // per stream, grouped by rank (local index)
  std::vector<StreamId> rank_streams_;          // stream ids grouped by rank (local index)
  std::vector<std::uint64_t> extra_compute_bits_;
  std::vector<std::uint64_t> extra_comm_bits_;
  std::vector<StreamId> ready_comm_;
  std::vector<StreamId> ready_compute_;
  std::vector<Span> spans_;
  std::vector<HostCost> host_cost_;     // per op, with a host
  std::vector<TimeNs> kernel_issue_;    // per fused kernel, with a host: its first launch's issue
  std::vector<bool> host_waits_;        // per task, with a host: TaskGraph::host_waits()
  std::vector<std::uint8_t> input_waits_;  // per task, with an input pipeline: TaskGraph::input_waits()
  bool input_ = false;                     // the graph has tasks that wait for the input pipeline
  std::vector<std::uint8_t> host_calls_;  // per task, with a host: TaskGraph::host_calls(), saturated
  // Streams not in program order (graph::StreamOrder): an arrival-order stream's ready tasks wait in
  // fifo_[fifo_read_[s] .. fifo_write_[s]) (its region holds all of its tasks); a concurrent stream's
  // ready tasks start in the next start_ready(). Cut-through tasks release their dependants when they
  // start (TaskGraph::add_cut_through): the next start_ready() releases them.
  std::vector<TaskId> fifo_;
  std::vector<std::uint32_t> fifo_read_;
  std::vector<std::uint32_t> fifo_write_;
  std::vector<TaskId> ready_concurrent_;
  std::vector<std::uint8_t> cut_through_;  // per task, when the graph has any
  std::vector<TaskId> cut_released_;
  bool cut_any_ = false;
  std::array<TimeNs, 256> call_issue_{};  // the host's time for n collective calls
};

}  // namespace dtsim::engine::detail
