// Where every communication group of the rank mesh sits on the nodes, counted from its members' ranks
// (mesh.hpp numbers them; rank / GPUs per node is the node), and which layout stands for a pipeline
// stage when one rank per stage is simulated.
//
// A group's layout (graph::CommGroup):
//   size, nodes      its members and the nodes they occupy;
//   uneven           the most and the fewest members on one of its nodes when they differ (12
//                    data-parallel ranks on 8-GPU nodes: 8 and 4);
//   node_stride      the common distance between its nodes' numbers when they are evenly spaced, else 1;
//   nic_speed        across nodes, the slowest NIC speed factor among its nodes (cluster.speed_factors);
//   nvlink_speed     the slowest NVLink speed factor among its nodes (a transfer between two nodes: 1);
//   uplink_speed     when its nodes are under several leaf switches, the slowest uplink speed factor
//                    among those leaves (cluster.speed_factors); else 1;
//   concurrent_per_node  how many groups of its kind share a node's NICs. Inside one node: GPUs per
//                    node / its members (the flow level places that many side by side). Across nodes:
//                    for each of its nodes, the groups of its kind that have members there and span
//                    several nodes (each crosses the node's NICs with its ring channels or tree
//                    edges); the most over its nodes. An even layout gives GPUs per node / members per
//                    node, as every GPU of the node is in one such group.
// Point-to-point pairs:
//   pipeline transfers   a rank and its peer at another stage (same tensor, context and data
//                    coordinates). Across nodes: nodes 2, and the concurrent transfers of the same pair
//                    of stages leaving the sender's node or arriving at the receiver's, whichever are
//                    more; inside a node: nodes 1, GPUs per node / 2.
//   context exchanges    each member passes K/V to its ring neighbour (the next context coordinate,
//                    the last to the first); the ring moves at the pace of its slowest pair, counted
//                    like a pipeline transfer over all rings' pairs at once.
// Symmetric mode simulates one rank per stage: the groups of a kind within a stage may differ (uneven
// layouts), and a stage's collectives are coupled (each rank is in one group of each kind), so the
// stage runs at the pace of its slowest group: the one that crosses nodes, then shares a node's NICs
// with the most groups, then spans the most nodes, then has the most members on one node, then the
// widest node stride (heavier()).
// Cost: O(ranks) time; memory O(nodes) for symmetric mode, O(ranks) with per-rank layouts.
#pragma once

#include <cstdint>
#include <vector>

#include "config/speed_factors.hpp"
#include "graph/ops.hpp"
#include "parallel/mesh.hpp"

namespace dtsim::parallel {

// Whether `a` limits a collective more than `b` (see above).
bool heavier(const graph::CommGroup& a, const graph::CommGroup& b);

class GroupLayouts {
 public:
  // `per_rank`: keep every rank's own layouts (every-rank mode); otherwise each stage's slowest only.
  // `speeds`: per node, its links' speed factors (config/speed_factors.hpp; empty: all 1).
  // The expert and expert_data kinds exist where the mesh's expert degree is above 1 and divides its
  // data degree; otherwise expert groups are single ranks and expert_data groups the data groups.
  GroupLayouts(const Mesh& mesh, bool per_rank, config::NodeLinkSpeeds speeds = {});

  // Rank r's group of `kind`; the slowest of `kind` among the groups of `stage`.
  const graph::CommGroup& group(std::int64_t r, GroupKind kind) const;
  const graph::CommGroup& stage_group(std::int64_t stage, GroupKind kind) const;
  // The slowest pair of rank r's context ring; the slowest of the stage's rings.
  const graph::CommGroup& exchange(std::int64_t r) const;
  const graph::CommGroup& stage_exchange(std::int64_t stage) const;
  // The transfer from rank r to its peer at stage (r's stage ± 1) mod pipeline; the slowest of the
  // stage's transfers there. `next`: to the following stage, else to the preceding one.
  const graph::CommGroup& transfer(std::int64_t r, bool next) const;
  const graph::CommGroup& stage_transfer(std::int64_t stage, bool next) const;
  // A re-routed transfer from rank `from` to rank `to` at a neighbouring stage (reroute.hpp; per-rank
  // layouts only): inside a node, or across nodes beside as many transfers leaving the node as `from`'s
  // own transfer to that stage has (1 when that one stays inside its node).
  graph::CommGroup transfer_between(std::int64_t from, std::int64_t to, bool next) const;

 private:
  // Distinct layouts of one kind, each rank's (per_rank) and each stage's slowest, as indexes.
  struct Table {
    std::vector<graph::CommGroup> layouts;
    std::vector<std::uint32_t> of_rank;
    std::vector<std::uint32_t> of_stage;
    std::vector<std::uint8_t> stage_kept;  // whether of_stage[stage] holds one of the stage's own layouts
  };
  // The first slots are GroupKind's, in its order.
  enum Slot : int { kTensor, kContext, kData, kExpert, kExpertData, kExchange, kNext, kPrevious, kSlots };

  std::uint32_t intern(Table& table, const graph::CommGroup& layout);
  void keep(Table& table, std::int64_t rank, std::int64_t stage, const graph::CommGroup& layout);
  void add_groups(GroupKind kind);
  void add_transfers(bool next);
  void add_exchanges();
  graph::CommGroup pair(std::int64_t from, std::int64_t to) const;
  double nvlink_speed(std::int64_t node) const { return factor(speeds_.nvlink, node); }
  double nic_speed(std::int64_t node) const { return factor(speeds_.nic, node); }
  // The slowest uplink factor among the leaves of `nodes`, first + offsets, where they are under
  // several leaves; else 1.
  double uplink_speed(std::int64_t first, const std::vector<std::int64_t>& offsets) const;
  static double factor(const std::vector<double>& per_node, std::int64_t node) {
    return per_node.empty() ? 1.0 : per_node[static_cast<std::size_t>(node)];
  }
  const graph::CommGroup& of_rank(int slot, std::int64_t r) const;
  const graph::CommGroup& of_stage(int slot, std::int64_t stage) const;

  const Mesh& mesh_;
  bool per_rank_;
  config::NodeLinkSpeeds speeds_;
  std::vector<Table> tables_;
  // Scratch, per node: pairs across nodes leaving and arriving (zero between uses).
  std::vector<std::int32_t> leaving_;
  std::vector<std::int32_t> arriving_;
};

}  // namespace dtsim::parallel
