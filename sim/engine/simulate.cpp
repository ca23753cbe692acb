// The event loop of simulate(); run.hpp holds its state and run_setup.cpp builds it.
#include "engine/simulate.hpp"

#include <algorithm>
#include <bit>

#include "engine/run.hpp"

namespace dtsim::engine {

namespace detail {

EngineResult Run::run() {
  for (StreamId s = 0; s < streams_.size(); ++s) arrive(s, streams_[s]);
  start_ready();
  std::uint64_t events = 0;
  while (!queue_.empty()) {
    Event e = queue_.pop();
    if (stale(e)) continue;
    now_ = e.time;
    // Every completion and wake-up at this instant first, then the starts they allow: streams of one
    // rank that start together see each other, whatever the order of the events.
    bool more = true;
    while (more) {
      if ((e.payload & kWakeBit) != 0) [[unlikely]] {
        wake(e.payload & ~kWakeBit);
      } else if ((e.payload & kTaskBit) != 0) [[unlikely]] {
        finish_concurrent(e.payload & ~kTaskBit);
        ++events;
      } else if (finish(e.payload)) {  // the stream whose running task ends (or pauses)
        ++events;
      }
      more = false;
      while (!more && queue_.more_at(now_)) {
        e = queue_.pop();
        more = !stale(e);
      }
    }
    start_ready();
  }
  if (events != graph_.tasks().size()) throw_deadlock(events);
  return result(events);
}

inline void Run::enqueue(StreamId s, StreamState& st) {
  st.queued = true;
  if (host_ && !st.comm) [[unlikely]] {
    issue(s, st);
    return;
  }
  (st.comm ? ready_comm_ : ready_compute_).push_back(s);
}

// Compute stream s's head task is ready: the host issues it (simulate.hpp, "Host"): at once if the
// host's issue of its first kernel is past, else when it comes (a wake-up event).
void Run::issue(StreamId s, StreamState& st) {
  const HostCost& cost = host_cost_[nodes_[st.head].op_word >> kOpShift];
  const TimeNs from = (host_waits_[st.head] ? std::max(st.host_clock, now_) : st.host_clock) +
                     call_issue_[host_calls_[st.head]];
  const TimeNs issued = from + cost.first;
  st.host_clock = from + cost.total;
  rates_[s].issue_base = from;
  if (issued <= now_) {
    ready_compute_.push_back(s);
    return;
  }
  set_waiting(ranks_[st.rank], &RankState::host_waiting, true);
  queue_.push(issued, s | kWakeBit);
}

void Run::wake(StreamId s) {
  set_waiting(ranks_[streams_[s].rank], &RankState::host_waiting, false);
  ready_compute_.push_back(s);
}

// One more or one fewer of the rank's streams waits (`count`: RankState::host_waiting for a ready
// compute task the host has not issued, RankState::input_waiting for a task whose batch the input
// pipeline has not loaded): close the books at now_ and open the state after the change.
void Run::set_waiting(RankState& rank, std::uint32_t RankState::*count, bool waiting) {
  rank.acc[rank.slot] += now_ - rank.last_change;
  rank.last_change = now_;
  if (waiting) {
    ++(rank.*count);
  } else {
    --(rank.*count);
  }
  rank.slot = current_slot(rank);
}

// Stream s (not busy) has reached its next task: enqueue it if ready. A gang task counts the members
// that have reached it and is enqueued on its first member's stream by the last of them.
[[gnu::always_inline]] inline void Run::arrive(StreamId s, StreamState& st) {
  if (st.head == kNoTask) return;
  Node& head = nodes_[st.head];
  if ((head.op_word & kGangFlag) != 0) [[unlikely]] {
    if (--head.pending == 0) enqueue(head.stream, streams_[head.stream]);
    return;
  }
  if (!st.queued && head.pending == 0) {
    enqueue(s, st);
  } else if (input_ && head.pending != 0 && input_waits_[st.head] != 0) [[unlikely]] {
    set_waiting(ranks_[st.rank], &RankState::input_waiting, true);
  }
}

// Communication first, so that compute starting at the same instant sees it running. Tasks of
// concurrent streams, and the dependants of cut-through tasks that started, may make more ready.
inline void Run::start_ready() {
  for (;;) {
    for (const StreamId s : ready_comm_) start(s);
    ready_comm_.clear();
    for (const StreamId s : ready_compute_) start(s);
    ready_compute_.clear();
    if (ready_concurrent_.empty() && cut_released_.empty()) [[likely]]
      return;
    for (const TaskId t : ready_concurrent_) start_concurrent(t);
    ready_concurrent_.clear();
    for (std::size_t i = 0; i < cut_released_.size(); ++i) {
      const TaskId t = cut_released_[i];
      release_successors(succ_begin_[t], succ_begin_[t + 1]);
    }
    cut_released_.clear();
  }
}

void Run::ready_off_program(TaskId task, StreamId s) {
  StreamState& st = streams_[s];
  if (st.order == graph::StreamOrder::concurrent) {
    ready_concurrent_.push_back(task);
    return;
  }
  if (!st.busy && !st.queued && st.head == kNoTask) {
    st.head = task;
    enqueue(s, st);
    return;
  }
  fifo_[fifo_write_[s]++] = task;
}

// A concurrent stream's task runs its duration, holding nothing; its span's start is its end less it.
void Run::start_concurrent(TaskId task) {
  const std::uint32_t op = nodes_[task].op_word >> kOpShift;
  const std::uint16_t speed = streams_[nodes_[task].stream].speed;
  TimeNs duration = memo_[memo_index(op, speed)];
  if (duration == kNotCosted) duration = cost(op, speed);
  queue_.push(now_ + duration, task | kTaskBit);
}

void Run::finish_concurrent(TaskId task) {
  if (record_spans_) {
    const std::uint32_t op = nodes_[task].op_word >> kOpShift;
    spans_.push_back(Span{task, now_ - memo_[memo_index(op, streams_[nodes_[task].stream].speed)], now_});
  }
  release_successors(succ_begin_[task], succ_begin_[task + 1]);
}

// Starts stream s's head task; its completion event carries the stream.
[[gnu::always_inline]] inline void Run::start(StreamId s) {
  StreamState& st = streams_[s];
  st.queued = false;
  if (host_ && rates_[s].paused) [[unlikely]] {
    resume(s, st);
    return;
  }
  const Node& node = nodes_[st.head];
  const std::uint32_t word = node.op_word;
  st.word = word;
  st.succ_begin = succ_begin_[st.head];
  st.succ_end = succ_begin_[st.head + 1];
  if (cut_any_ && cut_through_[st.head] != 0) [[unlikely]] {  // its dependants go now, not at its end
    cut_released_.push_back(st.head);
    st.succ_end = st.succ_begin;
  }
  // Warm what the completion will read: the successor list and the stream's next task.
  __builtin_prefetch(successors_ + st.succ_begin);
  if ((word & kGangFlag) != 0) [[unlikely]] {
    start_gang(s, st);
    return;
  }
  st.after = node.next;
  if (st.after != kNoTask) {
    __builtin_prefetch(&nodes_[st.after]);
    __builtin_prefetch(succ_begin_ + st.after);
  }
  const std::uint32_t op = word >> kOpShift;
  TimeNs duration = memo_[memo_index(op, st.speed)];
  if (duration == kNotCosted) [[unlikely]]
    duration = cost(op, st.speed);
  RankState& rank = ranks_[st.rank];
  st.start = now_;
  running_category_[rank.stream_begin + st.local] = static_cast<std::uint8_t>(word & kCategoryMask);
  set_busy(rank, st, true);
  const bool fused = (word & kFusedFlag) != 0;
  if ((slowed_ || (host_ && fused)) && !st.comm && (word & kComputeOpFlag) != 0) {
    // Compute progresses at 1 / overlap_slowdown while communication of its rank runs; a fused op
    // kernel by kernel, each no earlier than the host issues it.
    RateState& rate = rates_[s];
    rate.kernel = kNoKernel;
    if (fused) [[unlikely]] {
      rate.kernel = kernel_index(op, st.speed);
      rate.kernel_last = rate.kernel + (kernel_begin_[op + 1] - kernel_begin_[op]) - 1;
      rate.segment_last = rate.kernel_last;
      duration = kernels_[rate.kernel].plain;
    }
    rate.remaining = static_cast<double>(duration);
    rate.since = now_;
    rate.slowed = rank.comm_running > 0;
    st.slowable = true;
    if (!rate.slowed && rate.kernel == kNoKernel && duration < kExactDouble) {
      // schedule_compute() would round the same whole number of ns back.
      st.expected_end = now_ + duration;
      queue_.push(st.expected_end, s);
      return;
    }
    schedule_compute(s, st, rate);
    return;
  }
  st.slowable = false;
  if (st.comm && !st.input && duration > 0 && slowed_ && rank.comm_running++ == 0) rerate_compute(rank, true);
  if (share_nics_ && duration > 0 && nic_op_[op] != 0) [[unlikely]] {
    start_nic_task(s, {&s, 1}, duration);
    return;
  }
  st.expected_end = now_ + duration;
  queue_.push(st.expected_end, s);
}

// One gang task starts on all its member streams: each member rank's books, and its compute slows.
void Run::start_gang(StreamId first_stream, StreamState& first) {
  const GangRun& gang = gangs_[first.word >> kOpShift];
  TimeNs duration = memo_[gang.op];  // simulate()'s compute model (memo_index(op, 0))
  if (duration == kNotCosted) [[unlikely]]
    duration = cost(gang.op, 0);
  const auto category = static_cast<std::uint8_t>(first.word & kCategoryMask);
  for (std::uint32_t j = 0; j < gang.size; ++j) {
    StreamState& st = streams_[gang_streams_[gang.begin + j]];
    RankState& rank = ranks_[st.rank];
    st.start = now_;
    st.word = first.word;  // each member names the gang (Run::rerate_nics finds it from any member)
    st.expected_end = -1;  // the gang's completion event carries its first member only
    st.slowable = false;
    st.after = gang_next_[gang.begin + j];
    running_category_[rank.stream_begin + st.local] = category;
    set_busy(rank, st, true);
    if (st.comm && duration > 0 && slowed_ && rank.comm_running++ == 0) rerate_compute(rank, true);
  }
  if (share_nics_ && duration > 0 && nic_op_[gang.op] != 0) [[unlikely]] {
    start_nic_task(first_stream, {gang_streams_ + gang.begin, gang.size}, duration);
    return;
  }
  first.expected_end = now_ + duration;
  queue_.push(first.expected_end, first_stream);
}

// Shared NICs (simulate.hpp): a task through its node's NICs starts on its member streams (a plain
// task's own stream, or a gang's members); `holder` carries its completion event. The other tasks on
// those ranks' NICs slow.
void Run::start_nic_task(StreamId holder, std::span<const StreamId> members, TimeNs duration) {
  for (const StreamId m : members) ++ranks_[streams_[m].rank].nic_users;
  RateState& rate = rates_[holder];
  rate.remaining = static_cast<double>(duration);
  rate.since = now_;
  rate.nic_share = nic_share_of(members);
  StreamState& st = streams_[holder];
  st.expected_end = now_ + round_to_ns(rate.remaining * rate.nic_share);
  queue_.push(st.expected_end, holder);
  for (const StreamId m : members) {
    const RankState& rank = ranks_[streams_[m].rank];
    if (rank.nic_users > 1) rerate_nics(rank);
  }
}

// A task through the NICs ended (its streams no longer busy): the others on them speed up.
void Run::finish_nic_task(StreamId holder, std::span<const StreamId> members) {
  rates_[holder].nic_share = 0;
  for (const StreamId m : members) --ranks_[streams_[m].rank].nic_users;
  for (const StreamId m : members) {
    const RankState& rank = ranks_[streams_[m].rank];
    if (rank.nic_users > 0) rerate_nics(rank);
  }
}

// Every task through the rank's NICs (its busy communication streams'; a gang's on its first member).
void Run::rerate_nics(const RankState& rank) {
  const auto holder = [&](std::uint32_t local) {
    const StreamId s = rank_streams_[rank.stream_begin + local];
    return members_of(s).front();  // a gang's first member, else s
  };
  for (std::uint64_t bits = rank.comm_bits; bits != 0; bits &= bits - 1) {
    rerate_nic_task(holder(static_cast<std::uint32_t>(std::countr_zero(bits))));
  }
  for (std::uint32_t w = rank.extra_begin; w < rank.extra_end; ++w) {
    for (std::uint64_t bits = extra_comm_bits_[w]; bits != 0; bits &= bits - 1) {
      rerate_nic_task(holder(lowest(rank, w, bits)));
    }
  }
}

// Brings the task's work at the full share up to date at its old share and reschedules its completion
// at the new one.
void Run::rerate_nic_task(StreamId holder) {
  RateState& rate = rates_[holder];
  if (rate.nic_share == 0) return;
  const std::uint32_t share = nic_share_of(members_of(holder));
  if (share == rate.nic_share) return;
  const double elapsed = static_cast<double>(now_ - rate.since);
  rate.remaining = std::max(0.0, rate.remaining - elapsed / rate.nic_share);
  rate.since = now_;
  rate.nic_share = share;
  StreamState& st = streams_[holder];
  st.expected_end = now_ + round_to_ns(rate.remaining * share);
  queue_.push(st.expected_end, holder);
}

// The member streams of the task whose completion `holder` carries: a gang's members, else `holder`
// itself (the span then refers to the caller's variable).
std::span<const StreamId> Run::members_of(const StreamId& holder) const {
  const std::uint32_t word = streams_[holder].word;
  if ((word & kGangFlag) == 0) return {&holder, 1};
  const GangRun& gang = gangs_[word >> kOpShift];
  return {gang_streams_ + gang.begin, gang.size};
}

// A task's share: the most tasks on any of its member ranks' NICs.
std::uint32_t Run::nic_share_of(std::span<const StreamId> members) const {
  std::uint32_t most = 1;
  for (const StreamId m : members) most = std::max(most, ranks_[streams_[m].rank].nic_users);
  return most;
}

// A completion event superseded by a re-rating (below); wake-ups and concurrent tasks' ends never are.
inline bool Run::stale(const Event& e) const {
  return (slowed_ || share_nics_) && (e.payload & (kWakeBit | kTaskBit)) == 0 && superseded(e);
}

// A completion event pushed before its task was re-rated (only with a slowdown). One that falls at the
// time of a later task's completion on the same stream stands for it (the same instant).
inline bool Run::superseded(const Event& e) const {
  const StreamState& st = streams_[e.payload];
  return !st.busy || st.expected_end != e.time;
}

inline void Run::schedule_compute(StreamId s, StreamState& st, RateState& rate) {
  const double left = rate.slowed ? rate.remaining * overlap_slowdown_ : rate.remaining;
  st.expected_end = now_ + round_to_ns(left);
  if (rate.kernel != kNoKernel) [[unlikely]] {
    if (host_) {
      st.expected_end = segment_end(rate, st.expected_end);
    } else {
      st.expected_end += rate.slowed ? kernels_[rate.kernel].tail_slowed : kernels_[rate.kernel].tail_plain;
    }
  }
  queue_.push(st.expected_end, s);
}

// A fused op with a host: from its running kernel, which ends at `first_end`, the kernels that follow
// back to back at the current rate, up to the first one the host has not issued by its predecessor's
// end (separate tasks would wait there for the host). Sets rate.segment_last; returns its end.
TimeNs Run::segment_end(RateState& rate, TimeNs first_end) const {
  TimeNs end = first_end;
  std::uint32_t j = rate.kernel;
  while (j != rate.kernel_last && rate.issue_base + kernel_issue_[j + 1] <= end) {
    ++j;
    end += rate.slowed ? kernels_[j].slowed : kernels_[j].plain;
  }
  rate.segment_last = j;
  return end;
}

// The fused op on stream s ran its kernels up to rate.segment_last: it waits for the host to issue the
// next, not busy, as a task that is issued late waits (Run::issue). A trace shows each part of the op
// that ran as a span of its own.
void Run::pause(StreamId s, StreamState& st) {
  RateState& rate = rates_[s];
  RankState& rank = ranks_[st.rank];
  rate.kernel = rate.segment_last + 1;
  rate.remaining = static_cast<double>(kernels_[rate.kernel].plain);
  rate.paused = true;
  st.slowable = false;
  if (record_spans_) spans_.push_back(Span{st.head, st.start, now_});  // the kernels run so far
  set_busy(rank, st, false);
  set_waiting(rank, &RankState::host_waiting, true);
  queue_.push(rate.issue_base + kernel_issue_[rate.kernel], s | kWakeBit);
}

// The host has issued the paused fused op's next kernel (Run::wake put the stream in the ready list):
// it runs on from there.
void Run::resume(StreamId s, StreamState& st) {
  RateState& rate = rates_[s];
  RankState& rank = ranks_[st.rank];
  rate.paused = false;
  st.start = now_;
  set_busy(rank, st, true);
  rate.since = now_;
  rate.slowed = rank.comm_running > 0;
  st.slowable = true;
  schedule_compute(s, st, rate);
}

// The rank's communication started or stopped: bring its running compute tasks' remaining work up to
// date at the old rate and reschedule their completions at the new one.
void Run::rerate_compute(RankState& rank, bool slowed) {
  // Busy compute streams only: the set bits of the rank's compute words.
  for (std::uint64_t bits = rank.compute_bits; bits != 0; bits &= bits - 1) {
    rerate(rank_streams_[rank.stream_begin + static_cast<std::uint32_t>(std::countr_zero(bits))], slowed);
  }
  for (std::uint32_t w = rank.extra_begin; w < rank.extra_end; ++w) {
    for (std::uint64_t bits = extra_compute_bits_[w]; bits != 0; bits &= bits - 1) {
      rerate(rank_streams_[rank.stream_begin + lowest(rank, w, bits)], slowed);
    }
  }
}

inline void Run::rerate(StreamId s, bool slowed) {
  StreamState& c = streams_[s];
  if (!c.slowable) return;
  RateState& rate = rates_[s];
  if (rate.slowed == slowed) return;
  if (rate.kernel != kNoKernel) [[unlikely]]
    advance_kernels(rate);
  const double elapsed = static_cast<double>(now_ - rate.since);
  rate.remaining = std::max(0.0, rate.remaining - (rate.slowed ? elapsed / overlap_slowdown_ : elapsed));
  rate.since = now_;
  rate.slowed = slowed;
  schedule_compute(s, c, rate);
}

// A fused task's kernels run one after another, each rounded to whole ns as a task of its own would
// be: those that ended by now at the current rate are done, the next started where its predecessor
// ended. Leaves `remaining` and `since` as of the kernel still running.
void Run::advance_kernels(RateState& rate) const {
  TimeNs end = rate.since + round_to_ns(rate.slowed ? rate.remaining * overlap_slowdown_ : rate.remaining);
  while (end <= now_ && rate.kernel != rate.segment_last) {
    const Kernel& k = kernels_[++rate.kernel];
    rate.since = end;
    rate.remaining = static_cast<double>(k.plain);
    end += rate.slowed ? k.slowed : k.plain;
  }
}

// Stream s's running task ends now (true), or a fused one pauses for the host (false).
[[gnu::always_inline]] inline bool Run::finish(StreamId s) {
  StreamState& st = streams_[s];
  if ((st.word & kGangFlag) != 0) [[unlikely]] {
    finish_gang(st);
    return true;
  }
  if (host_ && st.slowable) [[unlikely]] {
    const RateState& rate = rates_[s];
    if (rate.kernel != kNoKernel && rate.segment_last != rate.kernel_last) {
      pause(s, st);
      return false;
    }
  }
  if (record_spans_) spans_.push_back(Span{st.head, st.start, now_});
  RankState& rank = ranks_[st.rank];
  set_busy(rank, st, false);
  if (st.comm && !st.input && slowed_ && now_ > st.start && --rank.comm_running == 0) rerate_compute(rank, false);
  if (rates_[s].nic_share != 0) [[unlikely]]
    finish_nic_task(s, {&s, 1});
  advance(st);
  if (st.order == graph::StreamOrder::arrival) [[unlikely]]
    st.head = next_arrival(s);
  release_successors(st.succ_begin, st.succ_end);
  arrive(s, st);
  return true;
}

void Run::finish_gang(StreamState& first) {
  const GangRun& gang = gangs_[first.word >> kOpShift];
  const StreamId* const members = gang_streams_ + gang.begin;
  const StreamId* const last = members + gang.size;
  if (record_spans_) spans_.push_back(Span{first.head, first.start, now_});
  for (const StreamId* m = members; m != last; ++m) {
    StreamState& st = streams_[*m];
    RankState& rank = ranks_[st.rank];
    set_busy(rank, st, false);
    if (st.comm && slowed_ && now_ > st.start && --rank.comm_running == 0) rerate_compute(rank, false);
    advance(st);
  }
  if (rates_[*members].nic_share != 0) [[unlikely]]
    finish_nic_task(*members, {members, gang.size});
  release_successors(first.succ_begin, first.succ_end);
  for (const StreamId* m = members; m != last; ++m) arrive(*m, streams_[*m]);
}

[[gnu::always_inline]] inline void Run::release_successors(std::uint32_t begin, std::uint32_t end) {
  for (std::uint32_t e = begin; e < end; ++e) {
    const TaskId next = successors_[e];
    Node& succ = nodes_[next];
    if (--succ.pending != 0) continue;
    // A gang's count includes its members reaching it: at 0 it heads all of them.
    StreamState& other = streams_[succ.stream];
    if (other.order != graph::StreamOrder::program) [[unlikely]] {
      ready_off_program(next, succ.stream);
      continue;
    }
    if (!other.busy && !other.queued && other.head == next) {
      if (input_ && input_waits_[next] != 0) [[unlikely]]
        set_waiting(ranks_[other.rank], &RankState::input_waiting, false);  // its stream had reached it (Run::arrive)
      enqueue(succ.stream, other);
    }
  }
}

// Closes the rank's current state at now_ and opens the one after the change.
[[gnu::always_inline]] inline void Run::set_busy(RankState& rank, StreamState& st, bool busy) {
  if (st.input) [[unlikely]] {  // a load neither computes nor communicates: the rank's state stays
    st.busy = busy;
    return;
  }
  rank.acc[rank.slot] += now_ - rank.last_change;
  rank.last_change = now_;
  const std::uint64_t bit = std::uint64_t{1} << (st.local % kWordBits);
  std::uint64_t& word =
      st.local < kWordBits
          ? (st.comm ? rank.comm_bits : rank.compute_bits)
          : (st.comm ? extra_comm_bits_ : extra_compute_bits_)[rank.extra_begin + st.local / kWordBits - 1];
  word = busy ? (word | bit) : (word & ~bit);
  st.busy = busy;
  rank.slot = current_slot(rank);
}

// Lowest busy compute stream's category, else lowest busy comm stream's, else the data stall while a
// stream waits for the input pipeline's batch, else waiting for the host, else idle.
inline std::uint8_t Run::current_slot(const RankState& rank) const {
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
      return static_cast<std::uint8_t>(graph::kCategoryCount +
                                       category[lowest(rank, w, extra_comm_bits_[w])]);
    }
  }
  if (rank.input_waiting != 0) [[unlikely]]
    return static_cast<std::uint8_t>(graph::kCategoryCount + static_cast<int>(graph::Category::input));
  return rank.host_waiting != 0 ? kHostWaitSlot : kIdleSlot;
}

}  // namespace detail

EngineResult simulate(const graph::TaskGraph& graph, const compute::ComputeModel& compute,
                      const network::NetworkModel& network, const EngineOptions& options) {
  return detail::Run(graph, compute, network, options).run();
}

}  // namespace dtsim::engine
