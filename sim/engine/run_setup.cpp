// Setup, costing and results of one simulation run (run.hpp); the loop is in simulate.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <variant>

#include "core/errors.hpp"
#include "engine/run.hpp"

namespace dtsim::engine::detail {

Run::Run(const graph::TaskGraph& graph, const compute::ComputeModel& compute,
         const network::NetworkModel& network, const EngineOptions& options)
    : graph_(graph),
      successors_(graph.successors().data()),
      succ_begin_(graph.succ_begin().data()),
      gang_streams_(graph.gang_streams().data()),
      compute_models_{&compute},
      network_(network),
      record_spans_(options.record_spans),
      overlap_slowdown_(options.overlap_slowdown),
      slowed_(options.overlap_slowdown != 1.0),
      host_(options.host_issue_ns_per_kernel > 0.0) {
  DTSIM_CHECK(graph.finalized(), "simulate() needs a finalized task graph");
  DTSIM_CHECK(std::isfinite(options.host_issue_ns_per_kernel) && options.host_issue_ns_per_kernel >= 0.0,
              fmt::format("host_issue_ns_per_kernel must be finite and not negative, got {}",
                          options.host_issue_ns_per_kernel));
  DTSIM_CHECK(
      std::isfinite(options.host_issue_ns_per_tensor_op) && options.host_issue_ns_per_tensor_op >= 0.0,
      fmt::format("host_issue_ns_per_tensor_op must be finite and not negative, got {}",
                  options.host_issue_ns_per_tensor_op));
  DTSIM_CHECK(std::isfinite(overlap_slowdown_) && overlap_slowdown_ > 0.0,
              fmt::format("overlap_slowdown must be a positive factor, got {}", overlap_slowdown_));
  const std::vector<std::uint16_t> speeds = setup_speeds(options);
  setup_nodes();
  setup_streams();
  if (!speeds.empty()) {
    for (StreamState& st : streams_) st.speed = speeds[st.rank];
  }
  if (host_) setup_host(options.host_issue_ns_per_kernel, options.host_issue_ns_per_tensor_op);
  setup_orders();
  input_ = !graph.input_waits().empty();
  if (input_) {
    input_waits_.assign(graph.tasks().size(), 0);
    for (const TaskId t : graph.input_waits()) {
      DTSIM_CHECK(t < input_waits_.size(), fmt::format("input wait on task {} of {}", t, input_waits_.size()));
      input_waits_[t] = 1;
    }
  }
  queue_.reserve(streams_.size() + 1);  // at most one running task or wake-up per stream
  ready_comm_.reserve(streams_.size());
  ready_compute_.reserve(streams_.size());
  if (record_spans_) spans_.reserve(graph.tasks().size());
}

void Run::setup_nodes() {
  const auto tasks = graph_.tasks();
  const auto& ops = graph_.ops();
  const auto& pred = graph_.predecessor_counts();
  const auto gangs = graph_.gangs();
  constexpr std::size_t kMaxIndex = std::size_t{1} << (32 - kOpShift);
  DTSIM_CHECK(ops.size() < kMaxIndex, "too many ops for the engine's task nodes");
  DTSIM_CHECK(gangs.size() < kMaxIndex, "too many gang tasks for the engine's task nodes");
  std::vector<std::uint32_t> kind(ops.size());
  for (std::size_t o = 0; o < ops.size(); ++o) {
    kind[o] = std::holds_alternative<graph::ComputeOp>(ops[o]) ? kComputeOpFlag
              : std::holds_alternative<graph::FusedOp>(ops[o]) ? kComputeOpFlag | kFusedFlag
                                                               : 0U;
  }
  nodes_.reserve(tasks.size());  // filled in task order below: no zeroing pass over the array first
  gangs_.resize(gangs.size());
  std::size_t gang = 0;
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    const graph::Task& task = tasks[t];
    DTSIM_CHECK(task.op < ops.size(), fmt::format("task uses op {} of {}", task.op, ops.size()));
    const auto category = static_cast<std::uint32_t>(task.category);
    if (gang < gangs.size() && gangs[gang].task == t) [[unlikely]] {
      DTSIM_CHECK(kind[task.op] == 0U,
                  fmt::format("gang task {} runs a compute op", graph_.task_name(static_cast<TaskId>(t))));
      const graph::Gang& g = gangs[gang];
      gangs_[gang] = GangRun{task.op, g.begin, g.size};
      nodes_.push_back(Node{pred[t] + g.size, task.stream,
                            static_cast<std::uint32_t>(gang) << kOpShift | kGangFlag | category, kNoTask});
      ++gang;
      continue;
    }
    nodes_.push_back(Node{pred[t], task.stream, task.op << kOpShift | kind[task.op] | category, kNoTask});
  }
  op_count_ = ops.size();
  memo_.assign(ops.size() * compute_models_.size(), kNotCosted);
  nic_op_.assign(ops.size(), 0);
  for (std::size_t o = 0; o < ops.size(); ++o) {
    const auto* comm = std::get_if<graph::CommOp>(&ops[o]);
    nic_op_[o] = (comm != nullptr && comm->group.nodes > 1) || std::holds_alternative<graph::RemoteOp>(ops[o]) ? 1 : 0;
    share_nics_ = share_nics_ || nic_op_[o] != 0;
  }
  kernel_begin_.assign(ops.size() + 1, 0);
  for (std::size_t o = 0; o < ops.size(); ++o) {
    const auto* fused = std::get_if<graph::FusedOp>(&ops[o]);
    DTSIM_CHECK(fused == nullptr || !fused->kernels.empty(), fmt::format("fused op {} has no kernels", o));
    kernel_begin_[o + 1] =
        kernel_begin_[o] + (fused != nullptr ? static_cast<std::uint32_t>(fused->kernels.size()) : 0U);
  }
  kernel_count_ = kernel_begin_.back();
  const std::size_t kernels = std::size_t{kernel_count_} * compute_models_.size();
  DTSIM_CHECK(kernels <= std::numeric_limits<std::uint32_t>::max(), "too many fused kernels for the engine");
  kernels_.resize(kernels);
}

// Each rank's compute model as an index into compute_models_ (distinct models in order of first use
// after simulate()'s own); empty when every rank uses simulate()'s.
std::vector<std::uint16_t> Run::setup_speeds(const EngineOptions& options) {
  if (options.rank_compute.empty()) return {};
  DTSIM_CHECK(options.rank_compute.size() == graph_.ranks(),
              fmt::format("rank_compute has {} models for {} ranks", options.rank_compute.size(), graph_.ranks()));
  std::vector<std::uint16_t> speeds(options.rank_compute.size(), 0);
  for (std::size_t r = 0; r < speeds.size(); ++r) {
    const compute::ComputeModel* model = options.rank_compute[r];
    DTSIM_CHECK(model != nullptr, fmt::format("rank {} has no compute model", r));
    auto it = std::find(compute_models_.begin(), compute_models_.end(), model);
    if (it == compute_models_.end()) {
      DTSIM_CHECK(compute_models_.size() < std::numeric_limits<std::uint16_t>::max(),
                  "more than 65,535 distinct compute models");
      compute_models_.push_back(model);
      it = compute_models_.end() - 1;
    }
    speeds[r] = static_cast<std::uint16_t>(it - compute_models_.begin());
  }
  return speeds;
}

void Run::setup_streams() {
  const auto& streams = graph_.streams();
  const std::uint32_t rank_count = graph_.ranks();
  std::vector<std::uint32_t> per_rank(rank_count, 0);
  for (const graph::Stream& s : streams) {
    DTSIM_CHECK(s.rank < rank_count,
                fmt::format("stream of rank {} in a graph of {} ranks", s.rank, rank_count));
    DTSIM_CHECK(++per_rank[s.rank] <= std::numeric_limits<std::uint16_t>::max(),
                fmt::format("rank {} has too many streams", s.rank));
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
  rates_.resize(streams.size());
  // Each task's successor in its stream, in its node (a gang's, per member, in gang_next_ at the member's
  // place), from one pass over the tasks backwards: a stream runs its tasks in increasing id order (ids
  // are given in the order tasks are added to their streams), so the next task of a stream is the one
  // met last going backwards; at the end, that is each stream's first task.
  const auto tasks = graph_.tasks();
  const StreamId* members = graph_.gang_streams().data();
  gang_next_.assign(graph_.gang_streams().size(), kNoTask);
  std::vector<TaskId> upcoming(streams.size(), kNoTask);  // per stream: the task met last
  for (std::size_t t = tasks.size(); t-- > 0;) {
    Node& node = nodes_[t];
    if ((node.op_word & kGangFlag) == 0) {
      node.next = std::exchange(upcoming[tasks[t].stream], static_cast<TaskId>(t));
      continue;
    }
    const GangRun& gang = gangs_[node.op_word >> kOpShift];
    for (std::uint32_t j = 0; j < gang.size; ++j) {
      gang_next_[gang.begin + j] = std::exchange(upcoming[members[gang.begin + j]], static_cast<TaskId>(t));
    }
  }
  for (StreamId s = 0; s < streams.size(); ++s) {
    const graph::Stream& in = streams[s];
    StreamState& st = streams_[s];
    st.head = upcoming[s];
    st.rank = in.rank;
    st.local = static_cast<std::uint16_t>(per_rank[in.rank]++);
    rank_streams_[ranks_[in.rank].stream_begin + st.local] = s;
    st.comm = in.kind != graph::StreamKind::compute;
    st.input = in.kind == graph::StreamKind::input;
    st.order = in.order;
    if (in.order != graph::StreamOrder::program) st.head = kNoTask;  // until a task is ready
  }
}

// Streams not in program order and cut-through tasks (run.hpp): their regions, flags, and the tasks
// ready from the start, in id order.
void Run::setup_orders() {
  const auto tasks = graph_.tasks();
  cut_any_ = !graph_.cut_through().empty();
  if (cut_any_) {
    cut_through_.assign(tasks.size(), 0);
    for (const TaskId t : graph_.cut_through()) {
      DTSIM_CHECK(t < tasks.size(), fmt::format("cut-through task {} of {}", t, tasks.size()));
      cut_through_[t] = 1;
    }
  }
  const auto& streams = graph_.streams();
  const bool any = std::any_of(streams.begin(), streams.end(), [](const graph::Stream& s) {
    return s.order != graph::StreamOrder::program;
  });
  if (!any) return;
  DTSIM_CHECK(streams.size() < kTaskBit && tasks.size() < kTaskBit,
              fmt::format("{} streams and {} tasks: the engine's events name at most 2^30 of either with "
                          "streams not in program order",
                          streams.size(), tasks.size()));
  fifo_read_.assign(streams.size(), 0);
  fifo_write_.assign(streams.size(), 0);
  std::uint32_t offset = 0;
  for (StreamId s = 0; s < streams.size(); ++s) {
    fifo_read_[s] = fifo_write_[s] = offset;
    if (streams[s].order == graph::StreamOrder::arrival) offset += graph_.stream_size(s);
  }
  fifo_.assign(offset, kNoTask);
  const auto& pred = graph_.predecessor_counts();
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    const StreamId s = tasks[t].stream;
    if (pred[t] == 0 && streams[s].order != graph::StreamOrder::program) ready_off_program(static_cast<TaskId>(t), s);
  }
}

// Issue costs per op (compute ops only: communication tasks are not gated) and the tasks whose issue
// waits for their dependencies. A fused op's kernel j is issued H_j after the host's time before the op
// (its first launch, kernel_issue_): the engine starts it no earlier, pausing the op in between as
// separate tasks would wait (simulate.cpp, Run::segment_end).
void Run::setup_host(double ns_per_kernel, double ns_per_tensor_op) {
  const auto& ops = graph_.ops();
  const auto issue = [&](std::int64_t launches, bool tensor_calls = false) {
    return round_to_ns(static_cast<double>(launches) * (tensor_calls ? ns_per_tensor_op : ns_per_kernel));
  };
  const auto own_work = [](const graph::ComputeOp& op) { return round_to_ns(op.host_us * 1e3); };
  host_cost_.assign(ops.size(), HostCost{});
  kernel_issue_.assign(kernels_.size(), 0);
  for (std::size_t o = 0; o < ops.size(); ++o) {
    if (const auto* c = std::get_if<graph::ComputeOp>(&ops[o])) {
      const TimeNs work = own_work(*c);
      host_cost_[o] = HostCost{work + issue(std::min(c->kernels, 1), c->tensor_calls),
                               work + issue(c->kernels, c->tensor_calls)};
    } else if (const auto* f = std::get_if<graph::FusedOp>(&ops[o])) {
      // Each kernel's launches cost what they would as a task of their own (rounded alike).
      TimeNs before = 0;  // the host's time on the kernels before j, then on j's own work
      for (std::size_t j = 0; j < f->kernels.size(); ++j) {
        const int count = f->kernels[j].kernels;
        const bool tensor_calls = f->kernels[j].tensor_calls;
        before += own_work(f->kernels[j]);
        kernel_issue_[kernel_begin_[o] + j] = before + issue(std::min(count, 1), tensor_calls);
        before += issue(count, tensor_calls);
      }
      const TimeNs first = f->kernels.empty() ? 0 : kernel_issue_[kernel_begin_[o]];
      host_cost_[o] = HostCost{first, before};
    }
  }
  // Issue does not depend on the GPU's speed: every compute model's kernels share the first set's times.
  for (std::size_t m = 1; m < compute_models_.size(); ++m) {
    std::copy_n(kernel_issue_.begin(), kernel_count_, kernel_issue_.begin() + m * kernel_count_);
  }
  host_calls_.assign(graph_.tasks().size(), 0);
  for (std::size_t n = 0; n < call_issue_.size(); ++n) call_issue_[n] = issue(static_cast<std::int64_t>(n));
  for (const graph::TaskGraph::HostCalls& c : graph_.host_calls()) {
    DTSIM_CHECK(c.task < host_calls_.size(),
                fmt::format("host calls before task {} of {}", c.task, host_calls_.size()));
    const std::uint32_t calls = c.calls + host_calls_[c.task];
    host_calls_[c.task] = static_cast<std::uint8_t>(std::min<std::uint32_t>(calls, 255));
  }
  host_waits_.assign(graph_.tasks().size(), false);
  for (const TaskId t : graph_.host_waits()) {
    DTSIM_CHECK(t < host_waits_.size(), fmt::format("host wait on task {} of {}", t, host_waits_.size()));
    host_waits_[t] = true;
  }
}

TimeNs Run::cost(std::uint32_t op, std::uint16_t speed) {
  const graph::Op& o = graph_.ops()[op];
  const compute::ComputeModel& compute = *compute_models_[speed];
  TimeNs duration = 0;
  if (const auto* c = std::get_if<graph::ComputeOp>(&o)) {
    duration = compute.duration(*c);
  } else if (const auto* m = std::get_if<graph::CommOp>(&o)) {
    duration = network_.duration(*m);
    if (m->copies) duration += compute.duration(*m->copies);
  } else if (const auto* load = std::get_if<graph::LoadOp>(&o)) {
    duration = core::seconds_to_ns(load->seconds);
  } else if (const auto* remote = std::get_if<graph::RemoteOp>(&o)) {
    duration = core::seconds_to_ns(remote->seconds);
  } else if (const auto* fixed = std::get_if<graph::FixedOp>(&o)) {
    duration = fixed->duration_ns;
  } else {
    duration = cost_fused(op, std::get<graph::FusedOp>(o), speed);
  }
  DTSIM_CHECK(duration >= 0, fmt::format("negative duration {} ns for op {}", duration, op));
  memo_[memo_index(op, speed)] = duration;
  return duration;
}

// Each kernel costed on its own; the op takes their sum.
TimeNs Run::cost_fused(std::uint32_t op, const graph::FusedOp& fused, std::uint16_t speed) {
  Kernel* const first = &kernels_[kernel_index(op, speed)];
  const compute::ComputeModel& compute = *compute_models_[speed];
  const std::size_t count = fused.kernels.size();
  for (std::size_t i = 0; i < count; ++i) {
    const TimeNs plain = compute.duration(fused.kernels[i]);
    DTSIM_CHECK(plain >= 0, fmt::format("negative duration {} ns for kernel {} of op {}", plain, i, op));
    first[i].plain = plain;
    first[i].slowed = round_to_ns(static_cast<double>(plain) * overlap_slowdown_);
  }
  for (std::size_t i = count - 1; i > 0; --i) {
    first[i - 1].tail_plain = first[i].tail_plain + first[i].plain;
    first[i - 1].tail_slowed = first[i].tail_slowed + first[i].slowed;
  }
  return first[0].tail_plain + first[0].plain;
}

void Run::throw_deadlock(std::uint64_t events) const {
  const std::size_t never = graph_.tasks().size() - events;
  const auto blocked = std::find_if(streams_.begin(), streams_.end(),
                                    [](const StreamState& st) { return st.head != kNoTask; });
  TaskId example = blocked != streams_.end() ? blocked->head : kNoTask;
  if (example == kNoTask) {  // only tasks of streams not in program order are left: one still waiting
    const auto waiting = std::find_if(nodes_.begin(), nodes_.end(), [](const Node& n) { return n.pending != 0; });
    DTSIM_CHECK(waiting != nodes_.end(), "unfinished tasks but none waits");
    example = static_cast<TaskId>(waiting - nodes_.begin());
  }
  throw core::InternalError(
      fmt::format("deadlock: {} tasks never ran, e.g. {}", never, graph_.task_name(example)));
}

EngineResult Run::result(std::uint64_t events) {
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
    rt.host_wait_ns = rank.acc[kHostWaitSlot];
    rt.idle_ns = rank.acc[kIdleSlot];
  }
  out.spans = std::move(spans_);
  return out;
}

}  // namespace dtsim::engine::detail
