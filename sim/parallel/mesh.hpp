// The rank mesh: how data, tensor, context and pipeline degrees map global ranks onto nodes.
//
// Ranks are numbered along the dimensions in `parallelism.order`, the first varying fastest. The
// default is Megatron-LM's (tensor, context, data, pipeline):
//   rank = tp + t * (cp + c * (dp + d * pp)).
// Consecutive ranks fill a node (rank / GPUs per node), so the first dimensions stay inside a node
// (tensor groups on NVLink when t <= GPUs per node). Where the groups of each kind sit on the nodes is
// group_layouts.hpp's.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "config/scenario.hpp"

namespace dtsim::parallel {

// A rank's coordinates along the four dimensions.
struct Coord {
  std::int64_t stage = 0;
  std::int64_t tensor = 0;
  std::int64_t context = 0;
  std::int64_t data = 0;
};

// Groups a collective can run over: tensor varies the tensor coordinate, context the context
// coordinate, data the data and context coordinates (gradients are reduced over both). With expert
// parallelism (mixture-of-experts models, degree e dividing data): expert varies the data coordinate
// within its block of e consecutive ones (the ranks that exchange tokens: Megatron-Core orders expert
// inside data), expert_data the context coordinate and the data coordinates of the same place in every
// block (the ranks holding the same experts, whose gradients they reduce). Folded experts
// (parallelism.expert_tensor 1 with tensor > 1, Megatron-Core's MoE parallel folding): a stage's ranks
// are taken in tensor, context, data order, j = tensor + t (context + c data); expert is a block of e
// consecutive j, expert_data the j of the same place in every block.
enum class GroupKind : std::uint8_t { tensor, context, data, expert, expert_data };
inline constexpr int kGroupKinds = 5;

class Mesh {
 public:
  static Mesh of(const config::Scenario& scenario);

  std::int64_t degree(config::MeshDim d) const { return degree_[static_cast<int>(d)]; }
  std::int64_t stride(config::MeshDim d) const { return stride_[static_cast<int>(d)]; }
  std::int64_t size() const;
  std::int64_t gpus_per_node() const { return gpus_per_node_; }
  std::int64_t expert() const { return expert_; }  // expert-parallel degree, within data
  bool folded_experts() const { return folded_; }
  // The plan has groups of kind expert and expert_data (else the experts' gradients go over data).
  // Folded, always: without expert parallelism every rank of the stage holds every expert whole.
  bool has_expert_groups() const {
    return folded_ || (expert_ > 1 && degree(config::MeshDim::data) % expert_ == 0);
  }
  // Two meshes with the same degrees, strides and node size place every rank alike.
  friend auto operator<=>(const Mesh&, const Mesh&) = default;
  std::int64_t node_of(std::int64_t rank) const { return rank / gpus_per_node_; }

  std::int64_t rank_of(const Coord& c) const;
  Coord coord_of(std::int64_t rank) const;

  // The member of rank r's group of `kind` at coordinate 0 along the group's dimensions (every group
  // of a kind is the group of rank 0 shifted by its first member: ranks are linear in coordinates).
  std::int64_t first_member(std::int64_t r, GroupKind kind) const;
  // Ranks of the group of `kind` that the rank at `c` belongs to, in increasing order, into `out`
  // (cleared first).
  void group_members(const Coord& c, GroupKind kind, std::vector<std::int64_t>& out) const;

 private:
  std::array<std::int64_t, config::kMeshDims> degree_{};
  std::array<std::int64_t, config::kMeshDims> stride_{};
  std::int64_t gpus_per_node_ = 1;
  std::int64_t expert_ = 1;  // expert-parallel degree
  bool folded_ = false;      // folded experts (above)

  // A rank's place in its stage in tensor, context, data order (folded experts), and back; the first
  // place of the expert or expert_data group of place j.
  std::int64_t folded_index(const Coord& c) const;
  Coord folded_coord(std::int64_t stage, std::int64_t j) const;
  std::int64_t folded_first(std::int64_t j, GroupKind kind) const {
    return kind == GroupKind::expert ? j - j % expert_ : j % expert_;
  }
};

}  // namespace dtsim::parallel
