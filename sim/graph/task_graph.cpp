#include "graph/task_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "core/errors.hpp"

namespace dtsim::graph {

namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
constexpr std::size_t kMaxCycleNames = 8;

void check_open(bool finalized) {
  DTSIM_CHECK(!finalized, "the task graph is already finalized");
}

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

StreamId TaskGraph::add_stream(RankId rank, StreamKind kind) {
  check_open(finalized_);
  const StreamId id = next_id(streams_.size(), "streams");
  streams_.push_back(Stream{rank, kind, {}});
  return id;
}

std::uint32_t TaskGraph::add_label(std::string label) {
  check_open(finalized_);
  const std::uint32_t id = next_id(labels_.size(), "labels");
  labels_.push_back(std::move(label));
  return id;
}

TaskId TaskGraph::add_task(const Task& task) {
  check_open(finalized_);
  DTSIM_CHECK(task.stream < streams_.size(),
              fmt::format("task added to stream {} but the graph has {} streams", task.stream, streams_.size()));
  const TaskId id = next_id(tasks_.size(), "tasks");
  tasks_.push_back(task);
  streams_[task.stream].tasks.push_back(id);
  return id;
}

void TaskGraph::add_dependency(TaskId before, TaskId after) {
  check_open(finalized_);
  edges_.emplace_back(before, after);
}

void TaskGraph::finalize() {
  check_open(finalized_);
  const std::size_t n = tasks_.size();
  DTSIM_CHECK(edges_.size() < kNone, "too many dependencies for 32-bit offsets");
  for (const auto& [before, after] : edges_) {
    if (before >= n || after >= n) {
      throw core::InternalError(fmt::format("task graph: dependency {} -> {} names a task that does not exist ({} tasks)",
                                            before, after, n));
    }
  }
  // Counting sort of the edges by source: stable, so each successor list keeps insertion order.
  succ_begin_.assign(n + 1, 0);
  pred_count_.assign(n, 0);
  for (const auto& [before, after] : edges_) {
    ++succ_begin_[before + 1];
    ++pred_count_[after];
  }
  for (std::size_t t = 0; t < n; ++t) succ_begin_[t + 1] += succ_begin_[t];
  successors_.resize(edges_.size());
  std::vector<std::uint32_t> fill(succ_begin_.begin(), succ_begin_.end() - 1);
  for (const auto& [before, after] : edges_) successors_[fill[before]++] = after;
  edges_.clear();
  edges_.shrink_to_fit();
  finalized_ = true;
}

std::string TaskGraph::task_name(TaskId task) const {
  if (task >= tasks_.size()) return fmt::format("#{} (no such task)", task);
  const Task& t = tasks_[task];
  const std::string label = t.label < labels_.size() ? labels_[t.label] : fmt::format("#{}", task);
  if (t.stream >= streams_.size()) return label;
  const Stream& s = streams_[t.stream];
  return fmt::format("{} ({} stream of rank {})", label, to_string(s.kind), s.rank);
}

void TaskGraph::validate() const {
  DTSIM_CHECK(finalized_, "validate() needs a finalized task graph");
  const std::size_t n = tasks_.size();
  for (std::size_t s = 0; s < streams_.size(); ++s) {
    if (streams_[s].rank >= ranks_) {
      throw core::InternalError(
          fmt::format("task graph: stream {} belongs to rank {} but the graph has {} ranks", s, streams_[s].rank, ranks_));
    }
  }
  for (std::size_t t = 0; t < n; ++t) {
    const Task& task = tasks_[t];
    if (task.op >= ops_.size()) {
      throw core::InternalError(fmt::format("task graph: task {} uses op {} but the graph has {} ops",
                                            task_name(static_cast<TaskId>(t)), task.op, ops_.size()));
    }
    if (task.label >= labels_.size()) {
      throw core::InternalError(fmt::format("task graph: task #{} has label {} but the graph has {} labels", t,
                                            task.label, labels_.size()));
    }
  }

  // Kahn's pass over dependencies plus stream order.
  std::vector<std::uint32_t> indegree(pred_count_);
  std::vector<TaskId> next_in_stream(n, kNone);
  std::vector<TaskId> prev_in_stream(n, kNone);
  for (const Stream& s : streams_) {
    for (std::size_t i = 1; i < s.tasks.size(); ++i) {
      next_in_stream[s.tasks[i - 1]] = s.tasks[i];
      prev_in_stream[s.tasks[i]] = s.tasks[i - 1];
      ++indegree[s.tasks[i]];
    }
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
    if (next_in_stream[t] != kNone && --indegree[next_in_stream[t]] == 0) order.push_back(next_in_stream[t]);
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
    if (prev_in_stream[t] != kNone && !visited[prev_in_stream[t]]) return prev_in_stream[t];
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

const char* to_string(StreamKind k) {
  switch (k) {
    case StreamKind::compute: return "compute";
    case StreamKind::tensor_comm: return "tensor_comm";
    case StreamKind::context_comm: return "context_comm";
    case StreamKind::data_comm: return "data_comm";
    case StreamKind::param_gather: return "param_gather";
    case StreamKind::pipeline_send: return "pipeline_send";
  }
  return "unknown";
}

const char* to_string(Category c) {
  switch (c) {
    case Category::forward: return "forward";
    case Category::backward: return "backward";
    case Category::recompute: return "recompute";
    case Category::optimizer: return "optimizer";
    case Category::tensor_comm: return "tensor_comm";
    case Category::context_comm: return "context_comm";
    case Category::pipeline_comm: return "pipeline_comm";
    case Category::data_comm: return "data_comm";
  }
  return "unknown";
}

}  // namespace dtsim::graph
