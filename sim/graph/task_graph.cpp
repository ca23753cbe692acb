#include "graph/task_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <utility>
#include <variant>

#include "core/errors.hpp"

namespace dtsim::graph {

namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
constexpr std::size_t kMaxCycleNames = 8;

void check_open(bool finalized) { DTSIM_CHECK(!finalized, "the task graph is already finalized"); }

// Narrowing for ids: the graph holds fewer than 2^32 of each kind.
std::uint32_t next_id(std::size_t size, const char* what) {
  DTSIM_CHECK(size < kNone, fmt::format("too many {} for 32-bit ids", what));
  return static_cast<std::uint32_t>(size);
}

}  // namespace

OpId TaskGraph::add_op(Op op) {
  check_open(finalized_);
  const OpId id = next_id(ops_.size(), "ops");
  ops_.push_back(std::move(op));
  return id;
}

StreamId TaskGraph::add_stream(RankId rank, StreamKind kind, StreamOrder order) {
  check_open(finalized_);
  const StreamId id = next_id(streams_.size(), "streams");
  streams_.push_back(Stream{rank, kind, order});
  stream_sizes_.push_back(0);
  stream_last_.push_back(kNoTask);
  return id;
}

LabelId TaskGraph::add_label(std::string label) {
  check_open(finalized_);
  DTSIM_CHECK(labels_.size() < 0xffffU, "too many labels for 16-bit ids");
  const auto id = static_cast<LabelId>(labels_.size());
  labels_.push_back(std::move(label));
  return id;
}

void TaskGraph::reject_task(const Task& task) const {
  check_open(finalized_);
  DTSIM_CHECK(
      task.stream < streams_.size(),
      fmt::format("task added to stream {} but the graph has {} streams", task.stream, streams_.size()));
  check_task_limit();
  next_id(tasks_.size(), "tasks");
  throw core::InternalError("task rejected");
}

void TaskGraph::check_task_limit() const {
  if (tasks_.size() < task_limit_ || task_limit_ == kMaxTasks) return;
  throw core::InfeasibleError(
      fmt::format("too large to simulate: the iteration's task graph passed dtsim's limit of {} tasks while "
                  "it was built; use a smaller global batch, fewer GPUs with simulation.ranks \"all\", or "
                  "\"symmetric\"",
                  task_limit_));
}

void TaskGraph::reject_finalized() {
  check_open(true);
  throw core::InternalError("the task graph is already finalized");
}

TaskId TaskGraph::add_gang_task(const Task& task, std::span<const StreamId> members) {
  check_open(finalized_);
  DTSIM_CHECK(!members.empty(), "a gang task needs at least one member stream");
  if (members.size() == 1) {
    Task single = task;
    single.stream = members.front();
    return add_task(single);
  }
  check_task_limit();
  const TaskId id = next_id(tasks_.size(), "tasks");
  const std::uint32_t begin = next_id(gang_streams_.size(), "gang members");
  for (const StreamId s : members) {
    DTSIM_CHECK(s < streams_.size(),
                fmt::format("gang task added to stream {} but the graph has {} streams", s, streams_.size()));
  }
  gang_scratch_.clear();
  for (std::size_t i = 0; i < members.size(); ++i) {
    // A stream named twice already ends with this task the second time: undo and report.
    TaskId& last = stream_last_[members[i]];
    if (last == id) {
      for (std::size_t j = i; j-- > 0;) stream_last_[members[j]] = gang_scratch_[j];
      throw core::InternalError(fmt::format("gang task names stream {} twice", members[i]));
    }
    gang_scratch_.push_back(std::exchange(last, id));
  }
  for (const StreamId s : members) ++stream_sizes_[s];
  Task gang = task;
  gang.stream = members.front();
  tasks_.push_back(gang);
  for (const StreamId s : members) gang_streams_.push_back(s);
  gangs_.push_back(Gang{id, begin, static_cast<std::uint32_t>(members.size())});
  return id;
}

template <typename F>
void TaskGraph::for_each_occupancy(F&& f) const {
  const Gang* gang = gangs_.begin();
  for (std::size_t t = 0; t < tasks_.size(); ++t) {
    const auto id = static_cast<TaskId>(t);
    if (gang != gangs_.end() && gang->task == id) {
      for (std::uint32_t j = 0; j < gang->size; ++j) f(id, gang_streams_[gang->begin + j], j);
      ++gang;
    } else {
      f(id, tasks_[t].stream, 0U);
    }
  }
}

std::vector<TaskId> TaskGraph::stream_tasks(StreamId s) const {
  DTSIM_CHECK(s < streams_.size(), fmt::format("no stream {} in a graph of {}", s, streams_.size()));
  std::vector<TaskId> order;
  order.reserve(stream_sizes_[s]);
  for_each_occupancy([&](TaskId t, StreamId stream, std::uint32_t) {
    if (stream == s) order.push_back(t);
  });
  return order;
}

std::span<const StreamId> TaskGraph::streams_of(TaskId task) const {
  DTSIM_CHECK(task < tasks_.size(), fmt::format("no task {} in a graph of {}", task, tasks_.size()));
  const auto it = std::lower_bound(gangs_.begin(), gangs_.end(), task,
                                   [](const Gang& g, TaskId t) { return g.task < t; });
  if (it == gangs_.end() || it->task != task) return {&tasks_[task].stream, 1};
  return {gang_streams_.data() + it->begin, it->size};
}

void TaskGraph::finalize() {
  check_open(finalized_);
  const std::size_t n = tasks_.size();
  DTSIM_CHECK(edges_.size() < kNone, "too many dependencies for 32-bit offsets");
  // Counting sort of the edges by source, stable (each successor list keeps insertion order): count,
  // turn the counts into list ends, then place the edges last to first, moving each end to its start.
  succ_begin_.assign(n + 1, 0);
  pred_count_.assign(n, 0);
  for (const auto& [before, after] : edges_) {
    if (before >= n || after >= n) [[unlikely]] {
      throw core::InternalError(fmt::format(
          "task graph: dependency {} -> {} names a task that does not exist ({} tasks)", before, after, n));
    }
    ++succ_begin_[before];
    ++pred_count_[after];
  }
  std::uint32_t end = 0;
  for (std::size_t t = 0; t < n; ++t) succ_begin_[t] = end += succ_begin_[t];
  succ_begin_[n] = end;
  successors_.resize(edges_.size());
  for (std::size_t e = edges_.size(); e-- > 0;)
    successors_[--succ_begin_[edges_[e].before]] = edges_[e].after;
  edges_.release();
  finalized_ = true;
}

std::string TaskGraph::task_name(TaskId task) const {
  if (task >= tasks_.size()) return fmt::format("#{} (no such task)", task);
  const Task& t = tasks_[task];
  const std::string label = t.label < labels_.size() ? labels_[t.label] : fmt::format("#{}", task);
  if (t.stream >= streams_.size()) return label;
  const Stream& s = streams_[t.stream];
  const std::size_t members = streams_of(task).size();
  if (members > 1) {
    return fmt::format("{} ({} stream of rank {} and {} more)", label, to_string(s.kind), s.rank,
                       members - 1);
  }
  return fmt::format("{} ({} stream of rank {})", label, to_string(s.kind), s.rank);
}

void TaskGraph::validate() const {
  DTSIM_CHECK(finalized_, "validate() needs a finalized task graph");
  const std::size_t n = tasks_.size();
  for (std::size_t s = 0; s < streams_.size(); ++s) {
    if (streams_[s].rank >= ranks_) {
      throw core::InternalError(
          fmt::format("task graph: stream {} belongs to rank {} but the graph has {} ranks", s,
                      streams_[s].rank, ranks_));
    }
  }
  for (std::size_t t = 0; t < n; ++t) {
    const Task& task = tasks_[t];
    if (task.op >= ops_.size()) {
      throw core::InternalError(fmt::format("task graph: task {} uses op {} but the graph has {} ops",
                                            task_name(static_cast<TaskId>(t)), task.op, ops_.size()));
    }
    if (task.label >= labels_.size()) {
      throw core::InternalError(fmt::format("task graph: task #{} has label {} but the graph has {} labels",
                                            t, task.label, labels_.size()));
    }
  }
  for (const Gang& gang : gangs_) {
    const Op& op = ops_[tasks_[gang.task].op];
    if (!std::holds_alternative<CommOp>(op) && !std::holds_alternative<FixedOp>(op)) {
      throw core::InternalError(fmt::format(
          "task graph: gang task {} runs a compute op; gangs run collectives", task_name(gang.task)));
    }
    for (std::uint32_t j = 0; j < gang.size; ++j) {
      if (streams_[gang_streams_[gang.begin + j]].order != StreamOrder::program) {
        throw core::InternalError(fmt::format(
            "task graph: gang task {} occupies a stream not in program order", task_name(gang.task)));
      }
    }
  }
  for (const TaskId t : cut_through_) {
    if (t >= n) {
      throw core::InternalError(fmt::format("task graph: cut-through task {} of {}", t, n));
    }
    if (streams_of(t).size() > 1 || streams_[tasks_[t].stream].order == StreamOrder::concurrent) {
      throw core::InternalError(fmt::format(
          "task graph: cut-through task {} is a gang or on a concurrent stream", task_name(t)));
    }
  }

  // Stream order as edges: each task's place in each stream it occupies (one place, or one per gang
  // member), with the tasks before and after it there.
  std::vector<std::uint32_t> place_begin(n + 1, 1);
  place_begin[0] = 0;
  for (const Gang& gang : gangs_) place_begin[gang.task + 1] = gang.size;
  for (std::size_t t = 0; t < n; ++t) place_begin[t + 1] += place_begin[t];
  std::vector<TaskId> next_in_stream(place_begin[n], kNone);
  std::vector<TaskId> prev_in_stream(place_begin[n], kNone);
  std::vector<std::uint32_t> indegree(pred_count_);
  {
    // Program order is increasing ids: going through the tasks in order, each stream's previous task
    // is the one it met last (with its place there, to link that place forward).
    std::vector<std::uint32_t> last_place(streams_.size(), kNone);
    std::vector<TaskId> last_task(streams_.size(), kNone);
    for_each_occupancy([&](TaskId t, StreamId s, std::uint32_t member) {
      if (streams_[s].order != StreamOrder::program) return;  // no order but readiness
      const std::uint32_t place = place_begin[t] + member;
      const std::uint32_t before = std::exchange(last_place[s], place);
      const TaskId previous = std::exchange(last_task[s], t);
      if (before == kNone) return;
      next_in_stream[before] = t;
      prev_in_stream[place] = previous;
      ++indegree[t];
    });
  }
  std::vector<TaskId> order;
  order.reserve(n);
  for (std::size_t t = 0; t < n; ++t) {
    if (indegree[t] == 0) order.push_back(static_cast<TaskId>(t));
  }
  for (std::size_t head = 0; head < order.size(); ++head) {
    const TaskId t = order[head];
    for (std::uint32_t e = succ_begin_[t]; e < succ_begin_[t + 1]; ++e) {
      if (--indegree[successors_[e]] == 0) order.push_back(successors_[e]);
    }
    for (std::uint32_t p = place_begin[t]; p < place_begin[t + 1]; ++p) {
      const TaskId next = next_in_stream[p];
      if (next != kNone && --indegree[next] == 0) order.push_back(next);
    }
  }
  if (order.size() == n) return;

  // Every task left has a predecessor that is left too: walking backwards through such
  // predecessors must revisit a task, which closes a cycle.
  std::vector<char> visited(n, 0);
  for (const TaskId t : order) visited[t] = 1;
  std::vector<std::vector<TaskId>> preds(n);
  for (std::size_t t = 0; t < n; ++t) {
    for (std::uint32_t e = succ_begin_[t]; e < succ_begin_[t + 1]; ++e) {
      preds[successors_[e]].push_back(static_cast<TaskId>(t));
    }
  }
  const auto blocked_pred = [&](TaskId t) {
    for (std::uint32_t p = place_begin[t]; p < place_begin[t + 1]; ++p) {
      if (prev_in_stream[p] != kNone && !visited[prev_in_stream[p]]) return prev_in_stream[p];
    }
    const auto& p = preds[t];
    const auto it = std::find_if(p.begin(), p.end(), [&](TaskId q) { return !visited[q]; });
    DTSIM_CHECK(it != p.end(), "a blocked task has no blocked predecessor");
    return *it;
  };
  TaskId start = 0;
  while (visited[start]) ++start;
  std::vector<std::uint32_t> walk_pos(n, kNone);
  std::vector<TaskId> walk;
  TaskId t = start;
  while (walk_pos[t] == kNone) {
    walk_pos[t] = static_cast<std::uint32_t>(walk.size());
    walk.push_back(t);
    t = blocked_pred(t);
  }
  // walk[walk_pos[t]..] is the cycle traversed against the edges; name it in execution order.
  std::vector<TaskId> cycle(walk.begin() + walk_pos[t], walk.end());
  std::reverse(cycle.begin(), cycle.end());
  std::string names;
  for (std::size_t i = 0; i < cycle.size() && i < kMaxCycleNames; ++i) names += task_name(cycle[i]) + " -> ";
  names += cycle.size() > kMaxCycleNames ? std::string("...") : task_name(cycle.front());
  throw core::InternalError(fmt::format(
      "task graph: deadlock: {} of {} tasks can never start; cycle through dependencies and stream order: {}",
      n - order.size(), n, names));
}

const char* to_string(StreamOrder o) {
  switch (o) {
    case StreamOrder::program:
      return "program";
    case StreamOrder::arrival:
      return "arrival";
    case StreamOrder::concurrent:
      return "concurrent";
  }
  return "unknown";
}

const char* to_string(StreamKind k) {
  switch (k) {
    case StreamKind::compute:
      return "compute";
    case StreamKind::tensor_comm:
      return "tensor_comm";
    case StreamKind::context_comm:
      return "context_comm";
    case StreamKind::data_comm:
      return "data_comm";
    case StreamKind::param_gather:
      return "param_gather";
    case StreamKind::pipeline_send:
      return "pipeline_send";
    case StreamKind::embedding_comm:
      return "embedding_comm";
    case StreamKind::input:
      return "input";
    case StreamKind::expert_comm:
      return "expert_comm";
    case StreamKind::expert_data_comm:
      return "expert_data_comm";
    case StreamKind::expert_param_gather:
      return "expert_param_gather";
  }
  return "unknown";
}

const char* to_string(Category c) {
  switch (c) {
    case Category::forward:
      return "forward";
    case Category::backward:
      return "backward";
    case Category::recompute:
      return "recompute";
    case Category::optimizer:
      return "optimizer";
    case Category::tensor_comm:
      return "tensor_comm";
    case Category::context_comm:
      return "context_comm";
    case Category::pipeline_comm:
      return "pipeline_comm";
    case Category::data_comm:
      return "data_comm";
    case Category::embedding_comm:
      return "embedding_comm";
    case Category::expert_comm:
      return "expert_comm";
    case Category::input:
      return "input";
  }
  return "unknown";
}

}  // namespace dtsim::graph
