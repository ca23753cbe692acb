#include "engine/simulate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "core/errors.hpp"
#include "engine/event_queue.hpp"

namespace dtsim::engine {

namespace {

using core::TimeNs;
using graph::StreamId;
using graph::TaskId;

// Accounting slots of a rank: busy_ns[c] at c, exposed_ns[c] at kCategoryCount + c, idle last.
constexpr int kSlotsPerRank = 2 * graph::kCategoryCount + 1;
constexpr std::uint8_t kIdleSlot = 2 * graph::kCategoryCount;
constexpr TimeNs kNotCosted = -1;
constexpr std::uint32_t kWordBits = 64;

// Task node word: op << kOpShift | is_compute_op << kCategoryBits | category.
constexpr std::uint32_t kCategoryBits = 3;
constexpr std::uint32_t kOpShift = kCategoryBits + 1;
constexpr std::uint32_t kCategoryMask = (1U << kCategoryBits) - 1;
constexpr std::uint32_t kComputeOpFlag = 1U << kCategoryBits;
static_assert(graph::kCategoryCount <= (1 << kCategoryBits));

// std::llround for a non-negative value, without the library call: x - trunc(x) is exact below 2^52.
inline TimeNs round_to_ns(double x) {
  auto whole = static_cast<TimeNs>(x);
  if (x - static_cast<double>(whole) >= 0.5) ++whole;
  return whole;
}

// What the loop needs of a task, in 16 bytes: its successors are
// successors[node.succ_begin .. next node's succ_begin).
struct Node {
  std::uint32_t pending = 0;  // dependencies not finished yet
  StreamId stream = 0;
  std::uint32_t succ_begin = 0;
  std::uint32_t op_word = 0;
};

struct StreamState {
  const TaskId* next = nullptr;  // head of the program order: the running task, or the next to run
  const TaskId* end = nullptr;
  TimeNs start = 0;              // of the running task
  TimeNs expected_end = 0;       // completion event that is current (earlier pushes are stale)
  TimeNs rate_since = 0;         // compute: when `remaining` was last brought up to date
  double remaining = 0.0;        // compute: unslowed work left, in ns
  bool slowed = false;           // compute: progressing at 1 / overlap_slowdown
  std::uint32_t rank = 0;
  std::uint32_t local = 0;  // index among the rank's streams, by increasing stream id
  bool comm = false;        // a non-compute stream
  bool busy = false;
  bool queued = false;  // in a ready list
};

// A rank's busy flags (bit = local stream index; streams beyond 64 in extra words), the category of
// each of its streams' running task, and its books.
struct RankState {
  TimeNs last_change = 0;
  std::uint32_t comm_running = 0;  // tasks with a non-zero duration running on its comm streams
  std::uint64_t compute_bits = 0;
  std::uint64_t comm_bits = 0;
  std::uint32_t stream_begin = 0;  // into Run::running_category_ and Run::rank_streams_
  std::uint32_t extra_begin = 0;   // into Run::extra_compute_bits_ / extra_comm_bits_
  std::uint32_t extra_end = 0;
  std::uint8_t slot = kIdleSlot;
  TimeNs acc[kSlotsPerRank] = {};
};

// One simulation's state. Setup sizes every container; run() then allocates nothing.
class Run {
 public:
  Run(const graph::TaskGraph& graph, const compute::ComputeModel& compute, const network::NetworkModel& network,
      const EngineOptions& options)
      : graph_(graph),
        successors_(graph.successors().data()),
        compute_(compute),
        network_(network),
        record_spans_(options.record_spans),
        overlap_slowdown_(options.overlap_slowdown),
        slowed_(options.overlap_slowdown != 1.0) {
    DTSIM_CHECK(graph.finalized(), "simulate() needs a finalized task graph");
    DTSIM_CHECK(std::isfinite(overlap_slowdown_) && overlap_slowdown_ > 0.0,
                fmt::format("overlap_slowdown must be a positive factor, got {}", overlap_slowdown_));
    setup_nodes();
    setup_streams();
    queue_.reserve(streams_.size() + 1);  // at most one running task per stream
    ready_comm_.reserve(streams_.size());
    ready_compute_.reserve(streams_.size());
    if (record_spans_) spans_.reserve(graph.tasks().size());
  }

  EngineResult run() {
    for (StreamId s = 0; s < streams_.size(); ++s) enqueue_if_head_ready(s);
    start_ready();
    std::uint64_t events = 0;
    while (!queue_.empty()) {
      if (slowed_ && superseded(queue_.top())) {
        queue_.pop();
        continue;
      }
      now_ = queue_.top().time;
      // Every completion at this instant first, then the starts they allow: streams of one rank that
      // start together see each other, whatever the order of the completions.
      do {
        const Event e = queue_.pop();
        if (slowed_ && superseded(e)) continue;
        finish(e.payload);
        ++events;
      } while (!queue_.empty() && queue_.top().time == now_);
      start_ready();
    }
    if (events != graph_.tasks().size()) throw_deadlock(events);
    return result(events);
  }

 private:
  void setup_nodes() {
    const auto& tasks = graph_.tasks();
    const auto& ops = graph_.ops();
    const auto& pred = graph_.predecessor_counts();
    const auto& succ_begin = graph_.succ_begin();
    DTSIM_CHECK(ops.size() < (std::size_t{1} << (32 - kOpShift)), "too many ops for the engine's task nodes");
    nodes_.resize(tasks.size() + 1);
    for (std::size_t t = 0; t < tasks.size(); ++t) {
      const graph::Task& task = tasks[t];
      DTSIM_CHECK(task.op < ops.size(), fmt::format("task uses op {} of {}", task.op, ops.size()));
      const bool is_compute = std::holds_alternative<graph::ComputeOp>(ops[task.op]);
      nodes_[t] = Node{pred[t], task.stream, succ_begin[t],
                       task.op << kOpShift | (is_compute ? kComputeOpFlag : 0U) |
                           static_cast<std::uint32_t>(task.category)};
    }
    nodes_.back().succ_begin = succ_begin.back();
    memo_.assign(ops.size(), kNotCosted);
  }

  void setup_streams() {
    const auto& streams = graph_.streams();
    const std::uint32_t rank_count = graph_.ranks();
    std::vector<std::uint32_t> per_rank(rank_count, 0);
    for (const graph::Stream& s : streams) {
      DTSIM_CHECK(s.rank < rank_count, fmt::format("stream of rank {} in a graph of {} ranks", s.rank, rank_count));
      ++per_rank[s.rank];
    }
    ranks_.resize(rank_count);
    std::uint32_t extra = 0;
    std::uint32_t offset = 0;
    for (std::uint32_t r = 0; r < rank_count; ++r) {
      RankState& rank = ranks_[r];
      rank.stream_begin = offset;
      offset += per_rank[r];
      rank.extra_begin = extra;
      if (per_rank[r] > kWordBits) extra += (per_rank[r] - 1) / kWordBits;
      rank.extra_end = extra;
      per_rank[r] = 0;  // from here on: the next local index
    }
    extra_compute_bits_.assign(extra, 0);
    extra_comm_bits_.assign(extra, 0);
    running_category_.assign(streams.size(), 0);
    rank_streams_.assign(streams.size(), 0);
    streams_.resize(streams.size());
    for (StreamId s = 0; s < streams.size(); ++s) {
      const graph::Stream& in = streams[s];
      StreamState& st = streams_[s];
      st.next = in.tasks.data();
      st.end = in.tasks.data() + in.tasks.size();
      st.rank = in.rank;
      st.local = per_rank[in.rank]++;
      rank_streams_[ranks_[in.rank].stream_begin + st.local] = s;
      st.comm = in.kind != graph::StreamKind::compute;
    }
  }

  void enqueue(StreamId s, StreamState& st) {
    st.queued = true;
    (st.comm ? ready_comm_ : ready_compute_).push_back(s);
  }

  void enqueue_if_head_ready(StreamId s) {
    StreamState& st = streams_[s];
    if (!st.busy && !st.queued && st.next != st.end && nodes_[*st.next].pending == 0) enqueue(s, st);
  }

  // Communication first, so that compute starting at the same instant sees it running.
  void start_ready() {
    for (const StreamId s : ready_comm_) start(streams_[s]);
    ready_comm_.clear();
    for (const StreamId s : ready_compute_) start(streams_[s]);
    ready_compute_.clear();
  }

  [[gnu::always_inline]] void start(StreamState& st) {
    st.queued = false;
    const TaskId t = *st.next;
    const Node& node = nodes_[t];
    // Warm what this task's completion will read: its successor list and the stream's next task.
    __builtin_prefetch(successors_ + node.succ_begin);
    if (st.next + 1 != st.end) __builtin_prefetch(&nodes_[st.next[1]]);
    const std::uint32_t word = node.op_word;
    const std::uint32_t op = word >> kOpShift;
    TimeNs duration = memo_[op];
    if (duration == kNotCosted) [[unlikely]] duration = cost(op, (word & kComputeOpFlag) != 0);
    RankState& rank = ranks_[st.rank];
    st.start = now_;
    running_category_[rank.stream_begin + st.local] = static_cast<std::uint8_t>(word & kCategoryMask);
    set_busy(rank, st, true);
    if (slowed_ && !st.comm && (word & kComputeOpFlag) != 0) {
      // Compute progresses at 1 / overlap_slowdown while communication of its rank runs.
      st.remaining = static_cast<double>(duration);
      st.rate_since = now_;
      st.slowed = rank.comm_running > 0;
      schedule_compute(st, t);
      return;
    }
    if (st.comm && duration > 0 && slowed_ && rank.comm_running++ == 0) rerate_compute(rank, true);
    st.expected_end = now_ + duration;
    queue_.push(st.expected_end, t);
  }

  // A completion event pushed before its task was re-rated (only with a slowdown).
  bool superseded(const Event& e) const {
    const StreamState& st = streams_[nodes_[e.payload].stream];
    return !st.busy || *st.next != e.payload || st.expected_end != e.time;
  }

  void schedule_compute(StreamState& st, TaskId t) {
    const double left = st.slowed ? st.remaining * overlap_slowdown_ : st.remaining;
    st.expected_end = now_ + round_to_ns(left);
    queue_.push(st.expected_end, t);
  }

  // The rank's communication started or stopped: bring its running compute tasks' remaining work up
  // to date at the old rate and reschedule their completions at the new one.
  void rerate_compute(RankState& rank, bool slowed) {
    // Busy compute streams only: the set bits of the rank's compute words.
    for (std::uint64_t bits = rank.compute_bits; bits != 0; bits &= bits - 1) {
      rerate(streams_[rank_streams_[rank.stream_begin + static_cast<std::uint32_t>(std::countr_zero(bits))]], slowed);
    }
    for (std::uint32_t w = rank.extra_begin; w < rank.extra_end; ++w) {
      for (std::uint64_t bits = extra_compute_bits_[w]; bits != 0; bits &= bits - 1) {
        rerate(streams_[rank_streams_[rank.stream_begin + lowest(rank, w, bits)]], slowed);
      }
    }
  }

  void rerate(StreamState& c, bool slowed) {
    if (c.slowed == slowed || (nodes_[*c.next].op_word & kComputeOpFlag) == 0) return;
    const double elapsed = static_cast<double>(now_ - c.rate_since);
    c.remaining = std::max(0.0, c.remaining - (c.slowed ? elapsed / overlap_slowdown_ : elapsed));
    c.rate_since = now_;
    c.slowed = slowed;
    schedule_compute(c, *c.next);
  }

  void finish(TaskId t) {
    const Node& node = nodes_[t];
    const StreamId s = node.stream;
    StreamState& st = streams_[s];
    if (record_spans_) spans_.push_back(Span{t, st.start, now_});
    RankState& rank = ranks_[st.rank];
    set_busy(rank, st, false);
    if (st.comm && slowed_ && now_ > st.start && --rank.comm_running == 0) rerate_compute(rank, false);
    ++st.next;
    for (std::uint32_t e = node.succ_begin, last = (&node + 1)->succ_begin; e < last; ++e) {
      const TaskId next = successors_[e];
      Node& succ = nodes_[next];
      if (--succ.pending != 0) continue;
      StreamState& other = streams_[succ.stream];
      if (!other.busy && !other.queued && *other.next == next) enqueue(succ.stream, other);
    }
    if (!st.queued && st.next != st.end && nodes_[*st.next].pending == 0) enqueue(s, st);
  }

  // Closes the rank's current state at now_ and opens the one after the change.
  [[gnu::always_inline]] void set_busy(RankState& rank, StreamState& st, bool busy) {
    rank.acc[rank.slot] += now_ - rank.last_change;
    rank.last_change = now_;
    const std::uint64_t bit = std::uint64_t{1} << (st.local % kWordBits);
    std::uint64_t& word = st.local < kWordBits ? (st.comm ? rank.comm_bits : rank.compute_bits)
                                               : (st.comm ? extra_comm_bits_ : extra_compute_bits_)
                                                     [rank.extra_begin + st.local / kWordBits - 1];
    word = busy ? (word | bit) : (word & ~bit);
    st.busy = busy;
    rank.slot = current_slot(rank);
  }

  // Lowest busy compute stream's category, else lowest busy comm stream's, else idle.
  std::uint8_t current_slot(const RankState& rank) const {
    const std::uint8_t* category = &running_category_[rank.stream_begin];
    if (rank.compute_bits != 0) return category[std::countr_zero(rank.compute_bits)];
    for (std::uint32_t w = rank.extra_begin; w < rank.extra_end; ++w) {
      if (extra_compute_bits_[w] != 0) return category[lowest(rank, w, extra_compute_bits_[w])];
    }
    if (rank.comm_bits != 0) {
      return static_cast<std::uint8_t>(graph::kCategoryCount + category[std::countr_zero(rank.comm_bits)]);
    }
    for (std::uint32_t w = rank.extra_begin; w < rank.extra_end; ++w) {
      if (extra_comm_bits_[w] != 0) {
        return static_cast<std::uint8_t>(graph::kCategoryCount + category[lowest(rank, w, extra_comm_bits_[w])]);
      }
    }
    return kIdleSlot;
  }

  static std::uint32_t lowest(const RankState& rank, std::uint32_t w, std::uint64_t bits) {
    return (w - rank.extra_begin + 1) * kWordBits + static_cast<std::uint32_t>(std::countr_zero(bits));
  }

  TimeNs cost(std::uint32_t op, bool is_compute) {
    const graph::Op& o = graph_.ops()[op];
    const TimeNs duration = is_compute ? compute_.duration(std::get<graph::ComputeOp>(o))
                                       : network_.duration(std::get<graph::CommOp>(o));
    DTSIM_CHECK(duration >= 0, fmt::format("negative duration {} ns for op {}", duration, op));
    memo_[op] = duration;
    return duration;
  }

  [[noreturn]] void throw_deadlock(std::uint64_t events) const {
    const std::size_t never = graph_.tasks().size() - events;
    const auto blocked =
        std::find_if(streams_.begin(), streams_.end(), [](const StreamState& st) { return st.next != st.end; });
    DTSIM_CHECK(blocked != streams_.end(), "unfinished tasks but no stream has one");
    throw core::InternalError(
        fmt::format("deadlock: {} tasks never ran, e.g. {}", never, graph_.task_name(*blocked->next)));
  }

  EngineResult result(std::uint64_t events) {
    EngineResult out;
    out.makespan = now_;
    out.events = events;
    out.ranks.resize(ranks_.size());
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      RankState& rank = ranks_[r];
      rank.acc[rank.slot] += now_ - rank.last_change;  // close the books at the makespan
      RankTime& rt = out.ranks[r];
      for (int c = 0; c < graph::kCategoryCount; ++c) {
        rt.busy_ns[c] = rank.acc[c];
        rt.exposed_ns[c] = rank.acc[graph::kCategoryCount + c];
      }
      rt.idle_ns = rank.acc[kIdleSlot];
    }
    out.spans = std::move(spans_);
    return out;
  }

  const graph::TaskGraph& graph_;
  const TaskId* successors_;
  const compute::ComputeModel& compute_;
  const network::NetworkModel& network_;
  const bool record_spans_;
  const double overlap_slowdown_;
  const bool slowed_;

  TimeNs now_ = 0;
  EventQueue queue_;
  std::vector<Node> nodes_;  // one per task and a sentinel
  std::vector<TimeNs> memo_;
  std::vector<StreamState> streams_;
  std::vector<RankState> ranks_;
  std::vector<std::uint8_t> running_category_;  // per stream, grouped by rank (local index)
  std::vector<StreamId> rank_streams_;          // stream ids grouped by rank (local index)
  std::vector<std::uint64_t> extra_compute_bits_;
  std::vector<std::uint64_t> extra_comm_bits_;
  std::vector<StreamId> ready_comm_;
  std::vector<StreamId> ready_compute_;
  std::vector<Span> spans_;
};

}  // namespace

EngineResult simulate(const graph::TaskGraph& graph, const compute::ComputeModel& compute,
                      const network::NetworkModel& network, const EngineOptions& options) {
  return Run(graph, compute, network, options).run();
}

}  // namespace dtsim::engine
