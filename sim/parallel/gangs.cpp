#include "parallel/gangs.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace dtsim::parallel {

GangTable::GangTable(graph::TaskGraph& graph, const Mesh& mesh, const std::vector<RankStreams>& streams)
    : graph_(graph),
      mesh_(mesh),
      streams_(streams),
      joined_(streams.size(), std::array<std::uint32_t, graph::kStreamKindCount>{}),
      group_gangs_(streams.size()) {
  // Ranks are linear in coordinates: every group of a kind is the group of rank 0 shifted.
  for (int kind = 0; kind < kGroupKinds; ++kind) {
    mesh.group_members(Coord{}, static_cast<GroupKind>(kind), offsets_[static_cast<std::size_t>(kind)]);
  }
}

graph::TaskId GangTable::join(std::int64_t r, GroupKind kind, graph::StreamKind stream,
                              const graph::Task& task) {
  const auto rank = static_cast<std::size_t>(r);
  const auto k = static_cast<std::size_t>(stream);
  const std::uint32_t place = joined_[rank][k]++;
  const auto first = static_cast<std::size_t>(mesh_.first_member(r, kind));
  std::vector<graph::TaskId>& group = group_gangs_[first][k];
  if (place < group.size()) {
    const graph::TaskId gang = group[place];
    const graph::Task& found = graph_.tasks()[gang];
    DTSIM_CHECK(found.op == task.op && found.label == task.label,
                fmt::format("rank {} reaches collective {} of its {} stream but its group ran another there",
                            r, place, graph::to_string(stream)));
    return gang;
  }
  DTSIM_CHECK(
      place == group.size() && place == graph_.stream_size(streams_[rank][k]),
      fmt::format("collectives of rank {} on its {} stream out of order", r, graph::to_string(stream)));
  members_.clear();
  for (const std::int64_t offset : offsets_[static_cast<std::size_t>(kind)]) {
    members_.push_back(streams_[first + static_cast<std::size_t>(offset)][k]);
  }
  group.push_back(graph_.add_gang_task(task, members_));
  return group.back();
}

}  // namespace dtsim::parallel
