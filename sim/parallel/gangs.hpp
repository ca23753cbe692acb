// Collectives when every rank is simulated: one gang task per collective instance, shared by the
// members of its group (graph/task_graph.hpp), instead of one task per member.
//
// The members of a group run the same program, so the k-th collective a rank runs on its stream of
// one kind is the k-th of every other member on theirs. The first member to reach it adds the gang
// task, which appends it to the stream of that kind of every member, and files it as its group's k-th
// on that stream kind; the others find it there. This needs each stream kind to carry collectives over one
// kind of group and nothing else (tensor_comm: tensor groups; context_comm: context groups; data_comm and
// param_gather: data x context groups; expert_comm: expert groups; expert_data_comm and
// expert_param_gather: expert_data groups). A member that finds a task with another op or label there, or a
// creator whose stream holds other tasks, throws InternalError.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "graph/task_graph.hpp"
#include "parallel/mesh.hpp"

namespace dtsim::parallel {

class GangTable {
 public:
  using RankStreams = std::array<graph::StreamId, graph::kStreamKindCount>;

  // `streams[r]` are rank r's streams by kind; mesh ranks are graph ranks. The references must
  // outlive the table.
  GangTable(graph::TaskGraph& graph, const Mesh& mesh, const std::vector<RankStreams>& streams);

  // Rank r's part of its next collective over its group of `kind`, on its stream of `stream`: the gang
  // task running `task.op` (its stream is ignored), added on first use.
  graph::TaskId join(std::int64_t r, GroupKind kind, graph::StreamKind stream, const graph::Task& task);

 private:
  graph::TaskGraph& graph_;
  const Mesh& mesh_;
  const std::vector<RankStreams>& streams_;
  std::vector<std::array<std::uint32_t, graph::kStreamKindCount>> joined_;  // collectives per rank and stream
  // Per group (at its first member's rank) and stream kind: its gang tasks in program order.
  std::vector<std::array<std::vector<graph::TaskId>, graph::kStreamKindCount>> group_gangs_;
  // Per group kind: member ranks minus the first's.
  std::array<std::vector<std::int64_t>, kGroupKinds> offsets_;
  std::vector<graph::StreamId> members_;              // scratch: a group's streams
};

}  // namespace dtsim::parallel
