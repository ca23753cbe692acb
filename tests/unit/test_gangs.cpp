// GangTable: the members of a group share one gang task per collective (parallel/gangs.hpp).
#include <doctest/doctest.h>

#include <vector>

#include "core/errors.hpp"
#include "graph/task_graph.hpp"
#include "parallel/gangs.hpp"
#include "parallel/mesh.hpp"
#include "scenario_fixture.hpp"

using namespace dtsim;
using graph::StreamKind;
using graph::TaskId;
using parallel::GroupKind;

namespace {

struct Fixture {
  // 4 ranks, Megatron order: rank = tp + 2 * dp, tensor groups {0, 1} and {2, 3}.
  Fixture() : mesh(make_mesh()), graph(static_cast<std::uint32_t>(mesh.size())) {
    for (std::uint32_t r = 0; r < graph.ranks(); ++r) {
      parallel::GangTable::RankStreams s{};
      for (int k = 0; k < graph::kStreamKindCount; ++k)
        s[k] = graph.add_stream(r, static_cast<StreamKind>(k));
      streams.push_back(s);
    }
    all_reduce = graph.add_op(graph::CommOp{});
    all_gather = graph.add_op(graph::CommOp{});
    label = graph.add_label("tp");
  }
  static parallel::Mesh make_mesh() {
    config::Scenario s = testing::fixture_scenario();
    s.cluster.nodes = 1;
    s.parallelism.tensor = 2;
    s.parallelism.data = 2;
    return parallel::Mesh::of(s);
  }
  graph::Task task(graph::OpId op) const {
    return graph::Task{op, 0, graph::Category::tensor_comm, label, 0};
  }
  graph::StreamId tensor_stream(std::size_t r) const {
    return streams[r][static_cast<std::size_t>(StreamKind::tensor_comm)];
  }

  parallel::Mesh mesh;
  graph::TaskGraph graph;
  std::vector<parallel::GangTable::RankStreams> streams;
  graph::OpId all_reduce = 0, all_gather = 0;
  graph::LabelId label = 0;
};

}  // namespace

TEST_CASE("gang table: the members of a group share each collective, in program order") {
  Fixture f;
  parallel::GangTable gangs(f.graph, f.mesh, f.streams);
  // Rank 1 reaches both collectives first and adds them; rank 0 finds them in the same order.
  const TaskId first = gangs.join(1, GroupKind::tensor, StreamKind::tensor_comm, f.task(f.all_reduce));
  const TaskId second = gangs.join(1, GroupKind::tensor, StreamKind::tensor_comm, f.task(f.all_gather));
  CHECK(gangs.join(0, GroupKind::tensor, StreamKind::tensor_comm, f.task(f.all_reduce)) == first);
  CHECK(gangs.join(0, GroupKind::tensor, StreamKind::tensor_comm, f.task(f.all_gather)) == second);
  // The other tensor group has its own gangs.
  const TaskId other = gangs.join(3, GroupKind::tensor, StreamKind::tensor_comm, f.task(f.all_reduce));
  CHECK(other != first);
  CHECK(gangs.join(2, GroupKind::tensor, StreamKind::tensor_comm, f.task(f.all_reduce)) == other);
  CHECK(f.graph.stream_tasks(f.tensor_stream(0)) == std::vector<TaskId>{first, second});
  CHECK(f.graph.stream_tasks(f.tensor_stream(1)) == std::vector<TaskId>{first, second});
  CHECK(f.graph.stream_tasks(f.tensor_stream(2)) == std::vector<TaskId>{other});
  CHECK(f.graph.stream_size(f.tensor_stream(3)) == 1);
  CHECK(f.graph.gangs().size() == 3);
}

TEST_CASE(
    "gang table: a member that runs another collective, or a stream with other tasks, is an internal error") {
  Fixture f;
  parallel::GangTable gangs(f.graph, f.mesh, f.streams);
  SUBCASE("another op at the same place") {
    gangs.join(0, GroupKind::tensor, StreamKind::tensor_comm, f.task(f.all_reduce));
    CHECK_THROWS_WITH_AS(gangs.join(1, GroupKind::tensor, StreamKind::tensor_comm, f.task(f.all_gather)),
                         doctest::Contains("its group ran another there"), core::InternalError);
  }
  SUBCASE("a plain task on the creator's stream") {
    f.graph.add_task(graph::Task{f.all_reduce, f.tensor_stream(2), graph::Category::tensor_comm, f.label, 0});
    CHECK_THROWS_WITH_AS(gangs.join(2, GroupKind::tensor, StreamKind::tensor_comm, f.task(f.all_reduce)),
                         doctest::Contains("out of order"), core::InternalError);
  }
}
