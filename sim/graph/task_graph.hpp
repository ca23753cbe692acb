// The task graph: what the engine replays. A task runs one op on one stream of one simulated rank.
// Streams behave like CUDA streams: each executes its tasks one at a time, in the order they were added
// (program order, which is therefore increasing task ids), a task starting once it is at the head of its
// stream and all its dependencies have finished. Overlap of communication with compute arises from tasks on
// different streams. Two other orders serve what is not a GPU stream (StreamOrder): a FIFO server that
// takes its tasks in the order they become ready (a NIC port, a parameter server's CPU), and a stream
// whose tasks all run at once as soon as they are ready (latencies, delays that hold nothing).
//
// A gang task runs one collective on a stream of each member of its group at once: it is in the
// program order of every member stream, starts once it is at the head of all of them and its
// dependencies have finished (so it waits for the last member to reach it), occupies all of them while
// it runs and ends on all of them together.
//
// Built once by parallel::lower(), then finalize()d (successor lists in CSR form) and validate()d
// (every dependency points between existing tasks and no cycle exists through dependencies and stream
// order together). A dependency may name a task that is added later; ids are checked by finalize().
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "graph/ops.hpp"
#include "graph/pod_vector.hpp"

namespace dtsim::graph {

using TaskId = std::uint32_t;
using OpId = std::uint32_t;
using StreamId = std::uint32_t;
using RankId = std::uint32_t;
using LabelId = std::uint16_t;  // labels name op kinds (tens of them): 16 bits keep Task at 16 bytes

enum class StreamKind : std::uint8_t {
  compute,
  tensor_comm,
  context_comm,
  data_comm,     // gradient reductions
  param_gather,  // parameter all-gathers (ZeRO-3 / FSDP prefetch, distributed optimizer)
  pipeline_send,
  embedding_comm,  // sharded embeddings' all-to-alls and reductions (models/dlrm)
  input,           // the input pipeline's loads of batches (graph::LoadOp)
  expert_comm,     // a mixture of experts' token dispatch and combine, and their token counts
  // A mixture of experts' gradient reductions and parameter all-gathers over the expert_data groups
  // (their own process groups in Megatron-Core, as the dense parameters' over the data groups).
  expert_data_comm,
  expert_param_gather,
};
inline constexpr int kStreamKindCount = 11;

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
  embedding_comm,  // sharded embeddings' exchanges (models/dlrm): pooled lookups forward, their gradients
                   // back
  expert_comm,     // mixture-of-experts token dispatch and combine (models/transformer/moe.hpp)
  input,           // the input pipeline's load of a batch; exposed, it is the GPU waiting for data
};
inline constexpr int kCategoryCount = 11;

// In which order a stream runs its tasks.
enum class StreamOrder : std::uint8_t {
  program,     // one at a time, in the order they were added (a CUDA stream)
  arrival,     // one at a time, in the order they became ready; ties in the order of their release
  concurrent,  // each as soon as it is ready, any number at once; no rank's books count them
};

// A stream's program order is not stored: it is its tasks in increasing id order (stream_tasks()).
struct Stream {
  RankId rank = 0;
  StreamKind kind = StreamKind::compute;
  StreamOrder order = StreamOrder::program;
};

struct Task {
  OpId op = 0;
  StreamId stream = 0;  // a gang task's first member stream
  Category category = Category::forward;
  LabelId label = 0;              // index into TaskGraph::labels(), for traces
  std::int32_t micro_batch = -1;  // -1 when not tied to one micro-batch
};

// Every-rank simulations hold tens of millions of tasks: keep each at 16 bytes.
static_assert(sizeof(Task) == 16);

using Op = std::variant<ComputeOp, CommOp, FusedOp, LoadOp, RemoteOp, FixedOp>;

// The member streams of gang task `task`: gang_streams()[begin .. begin + size).
struct Gang {
  TaskId task = 0;
  std::uint32_t begin = 0;
  std::uint32_t size = 0;
};

class TaskGraph {
 public:
  // Ids are 32-bit; the largest is reserved (kNoTask).
  static constexpr std::size_t kMaxTasks = 0xffffffffU;
  static constexpr TaskId kNoTask = 0xffffffffU;

  explicit TaskGraph(std::uint32_t ranks) : ranks_(ranks) {}

  // At most `limit` tasks (at most kMaxTasks): one more throws core::InfeasibleError (the iteration
  // is too large to simulate; the lowering sets parallel::kMaxSimulated).
  void set_task_limit(std::size_t limit) { task_limit_ = limit < kMaxTasks ? limit : kMaxTasks; }

  // Ids are dense and assigned in call order, starting at 0. Every add_* after finalize() throws
  // InternalError.
  OpId add_op(Op op);
  StreamId add_stream(RankId rank, StreamKind kind, StreamOrder order = StreamOrder::program);
  // Throws InternalError beyond 2^16 labels.
  LabelId add_label(std::string label);
  // Appends the task to its stream's program order; throws InternalError if the stream does not exist.
  TaskId add_task(const Task& task);
  // Appends one task to the program order of each member stream (a gang task, see above); `task.stream`
  // is ignored. One member makes a plain task. Throws InternalError on no members, a stream that does
  // not exist or one named twice. Its op must be a CommOp or a FixedOp (validate() checks): a gang's
  // time is its collective's, never slowed. Its member streams must run in program order.
  TaskId add_gang_task(const Task& task, std::span<const StreamId> members);
  // `after` cannot start before `before` has finished. Duplicates are kept (each counts once more).
  // The host reads a value that `task`'s inputs produce before it issues `task` (a synchronization:
  // `.item()` of the loss scale's inf/NaN flag or of the gradient norm before the optimizer step,
  // torch.cuda.synchronize() after a blocking pipeline transfer): on a compute stream, the task is
  // issued only once its dependencies are done (engine/simulate.hpp, "Host"). Ids in any order.
  void add_host_wait(TaskId task) { host_waits_.push_back(task); }
  const std::vector<TaskId>& host_waits() const { return host_waits_; }
  // `task`, on a compute stream, waits for its rank's batch from the input pipeline (a dependency on
  // a LoadOp task): while its stream has reached it and it waits, with nothing else running on the
  // rank, the engine counts the time as the data stall (parallel/input_load.hpp). Ids in any order.
  void add_input_wait(TaskId task) { input_waits_.push_back(task); }
  const std::vector<TaskId>& input_waits() const { return input_waits_; }
  // The host calls `calls` collectives (NCCL launches on their streams) between the compute task
  // before `task` on its stream and `task`, each at the cost of one kernel launch: `task` is issued
  // that much later (engine/simulate.hpp, "Host"). On a compute stream; ids in any order.
  struct HostCalls {
    TaskId task = 0;
    std::uint32_t calls = 0;
  };
  void add_host_calls(TaskId task, std::uint32_t calls) { host_calls_.push_back({task, calls}); }
  const std::vector<HostCalls>& host_calls() const { return host_calls_; }
  void add_dependency(TaskId before, TaskId after);
  // `task`'s dependants may start as soon as it starts, not when it ends (a transfer's receiving port
  // takes the bytes while its sending port sends them: cut-through). Not for gang tasks, nor for tasks
  // on concurrent streams (validate() checks). Ids in any order.
  void add_cut_through(TaskId task) { cut_through_.push_back(task); }
  const std::vector<TaskId>& cut_through() const { return cut_through_; }

  // Builds successor lists and predecessor counts; call once after the last add_*. Throws
  // InternalError on a dependency naming a task that does not exist.
  void finalize();
  // Throws InternalError on a dangling reference (op, label, rank of a stream), a gang task whose op
  // is not a CommOp or a FixedOp or that occupies a stream not in program order, a cut-through task
  // that is a gang or on a concurrent stream, or a deadlock: a Kahn topological pass over dependencies
  // plus program order (consecutive tasks of one program-order stream) that cannot visit every task;
  // the message names the tasks of one cycle. Requires finalize().
  void validate() const;

  // The task's label for messages ("#<id>" when it has none), with its stream and rank (a gang: its
  // first member's and how many more).
  std::string task_name(TaskId task) const;
  // The streams a task occupies: its stream, or a gang's members in the order given. O(log gangs).
  std::span<const StreamId> streams_of(TaskId task) const;

  std::uint32_t ranks() const { return ranks_; }
  const std::vector<Op>& ops() const { return ops_; }
  const std::vector<Stream>& streams() const { return streams_; }
  // How many tasks stream s runs (gang tasks included). O(1).
  std::uint32_t stream_size(StreamId s) const { return stream_sizes_[s]; }
  // Stream s's tasks in program order, found by a pass over all tasks: for tests and diagnostics.
  std::vector<TaskId> stream_tasks(StreamId s) const;
  std::span<const Task> tasks() const { return tasks_.view(); }
  const std::vector<std::string>& labels() const { return labels_; }
  // Gang tasks by increasing task id, and their member streams.
  std::span<const Gang> gangs() const { return gangs_.view(); }
  std::span<const StreamId> gang_streams() const { return gang_streams_.view(); }
  // Successors of task t: successors()[succ_begin()[t] .. succ_begin()[t+1]), in the order the
  // dependencies were added. Only after finalize().
  const std::vector<std::uint32_t>& succ_begin() const { return succ_begin_; }
  const std::vector<TaskId>& successors() const { return successors_; }
  // Number of dependencies into each task (stream order not included). Only after finalize().
  const std::vector<std::uint32_t>& predecessor_counts() const { return pred_count_; }
  bool finalized() const { return finalized_; }

 private:
  struct Edge {
    TaskId before = 0;
    TaskId after = 0;
  };

  // Calls f(task, stream, member) for every task in id order (so in every stream's program order) and
  // every stream it occupies; member is the stream's index among a gang's members, 0 for a plain task.
  template <typename F>
  void for_each_occupancy(F&& f) const;
  // Throw InternalError: the graph is finalized, or the task names no stream, or ids ran out;
  // InfeasibleError: the task limit is reached.
  [[noreturn]] void reject_task(const Task& task) const;
  void check_task_limit() const;
  [[noreturn]] static void reject_finalized();

  std::uint32_t ranks_;
  std::size_t task_limit_ = kMaxTasks;
  std::vector<Op> ops_;
  std::vector<Stream> streams_;
  std::vector<std::uint32_t> stream_sizes_;  // per stream: tasks in its program order
  std::vector<TaskId> stream_last_;          // per stream: its last task (kNoTask when empty)
  std::vector<TaskId> gang_scratch_;         // add_gang_task: the members' previous last tasks
  PodVector<Task> tasks_;
  std::vector<std::string> labels_;
  PodVector<Gang> gangs_;
  PodVector<StreamId> gang_streams_;
  PodVector<Edge> edges_;
  std::vector<std::uint32_t> succ_begin_;
  std::vector<TaskId> successors_;
  std::vector<std::uint32_t> pred_count_;
  std::vector<TaskId> host_waits_;
  std::vector<TaskId> input_waits_;
  std::vector<TaskId> cut_through_;
  std::vector<HostCalls> host_calls_;
  bool finalized_ = false;
};

const char* to_string(StreamKind k);
const char* to_string(StreamOrder o);
const char* to_string(Category c);

// The two calls made once per task and dependency, inline.
inline TaskId TaskGraph::add_task(const Task& task) {
  if (finalized_ || task.stream >= streams_.size() || tasks_.size() >= task_limit_) [[unlikely]]
    reject_task(task);
  const auto id = static_cast<TaskId>(tasks_.size());
  tasks_.push_back(task);
  ++stream_sizes_[task.stream];
  stream_last_[task.stream] = id;
  return id;
}

inline void TaskGraph::add_dependency(TaskId before, TaskId after) {
  if (finalized_) [[unlikely]]
    reject_finalized();
  edges_.push_back(Edge{before, after});
}

}  // namespace dtsim::graph
