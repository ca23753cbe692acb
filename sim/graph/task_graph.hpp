// The task graph: what the engine replays. A task runs one op on one stream of one simulated rank.
// Streams behave like CUDA streams: each executes its tasks one at a time, in the order they were added
// (program order), a task starting once it is at the head of its stream and all its dependencies have
// finished. Overlap of communication with compute arises from tasks on different streams.
//
// Built once by parallel::lower(), then finalize()d (successor lists in CSR form) and validate()d
// (every dependency points between existing tasks and no cycle exists through dependencies and stream
// order together). A dependency may name a task that is added later; ids are checked by finalize().
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "graph/ops.hpp"

namespace dtsim::graph {

using TaskId = std::uint32_t;
using OpId = std::uint32_t;
using StreamId = std::uint32_t;
using RankId = std::uint32_t;

enum class StreamKind : std::uint8_t {
  compute,
  tensor_comm,
  context_comm,
  data_comm,      // gradient reductions
  param_gather,   // parameter all-gathers (ZeRO-3 / FSDP prefetch, distributed optimizer)
  pipeline_send,
};
inline constexpr int kStreamKindCount = 6;

// What the time of a task is accounted as, in the iteration breakdown.
enum class Category : std::uint8_t {
  forward,
  backward,
  recompute,
  optimizer,
  tensor_comm,
  context_comm,
  pipeline_comm,
  data_comm,
};
inline constexpr int kCategoryCount = 8;

struct Stream {
  RankId rank = 0;
  StreamKind kind = StreamKind::compute;
  std::vector<TaskId> tasks;  // program order
};

struct Task {
  OpId op = 0;
  StreamId stream = 0;
  Category category = Category::forward;
  std::uint32_t label = 0;        // index into TaskGraph::labels(), for traces
  std::int32_t micro_batch = -1;  // -1 when not tied to one micro-batch
};

using Op = std::variant<ComputeOp, CommOp>;

class TaskGraph {
 public:
  explicit TaskGraph(std::uint32_t ranks) : ranks_(ranks) {}

  // Ids are dense and assigned in call order, starting at 0. Every add_* after finalize() throws
  // InternalError.
  OpId add_op(Op op);
  StreamId add_stream(RankId rank, StreamKind kind);
  std::uint32_t add_label(std::string label);
  // Appends the task to its stream's program order; throws InternalError if the stream does not exist.
  TaskId add_task(const Task& task);
  // `after` cannot start before `before` has finished. Duplicates are kept (each counts once more).
  void add_dependency(TaskId before, TaskId after);

  // Builds successor lists and predecessor counts; call once after the last add_*. Throws
  // InternalError on a dependency naming a task that does not exist.
  void finalize();
  // Throws InternalError on a dangling reference (op, label, rank of a stream) or a deadlock: a Kahn
  // topological pass over dependencies plus stream order (consecutive tasks of one stream) that
  // cannot visit every task; the message names the tasks of one cycle. Requires finalize().
  void validate() const;

  // The task's label for messages ("#<id>" when it has none), with its stream and rank.
  std::string task_name(TaskId task) const;

  std::uint32_t ranks() const { return ranks_; }
  const std::vector<Op>& ops() const { return ops_; }
  const std::vector<Stream>& streams() const { return streams_; }
  const std::vector<Task>& tasks() const { return tasks_; }
  const std::vector<std::string>& labels() const { return labels_; }
  // Successors of task t: successors()[succ_begin()[t] .. succ_begin()[t+1]), in the order the
  // dependencies were added. Only after finalize().
  const std::vector<std::uint32_t>& succ_begin() const { return succ_begin_; }
  const std::vector<TaskId>& successors() const { return successors_; }
  // Number of dependencies into each task (stream order not included). Only after finalize().
  const std::vector<std::uint32_t>& predecessor_counts() const { return pred_count_; }
  bool finalized() const { return finalized_; }

 private:
  std::uint32_t ranks_;
  std::vector<Op> ops_;
  std::vector<Stream> streams_;
  std::vector<Task> tasks_;
  std::vector<std::string> labels_;
  std::vector<std::pair<TaskId, TaskId>> edges_;
  std::vector<std::uint32_t> succ_begin_;
  std::vector<TaskId> successors_;
  std::vector<std::uint32_t> pred_count_;
  bool finalized_ = false;
};

const char* to_string(StreamKind k);
const char* to_string(Category c);

}  // namespace dtsim::graph
