// What a task does, independent of where and when: compute operators (FLOPs, HBM bytes, GEMM shape)
// and communication operators (a collective over a group, or a point-to-point transfer). Models of the
// workload produce these; the compute and network models turn them into durations.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/memory_class.hpp"

namespace dtsim::graph {

enum class ComputeClass : std::uint8_t {
  gemm,       // dense matrix multiply: time from peak x GEMM efficiency(shape)
  attention,  // attention score/context batched matmuls (fused or not)
  memory,     // memory-bound kernels: norms, activations, dropout, softmax, embedding lookups
  optimizer,  // optimizer step: memory-bound over parameters and states
};

// C[m x n] = A[m x k] * B[k x n], `batch` independent products.
struct GemmShape {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t batch = 1;
};

struct ComputeOp {
  ComputeClass cls = ComputeClass::memory;
  // FLOPs as counted (the Megatron convention: attention counted over the full score matrix); these
  // feed model and hardware FLOP rates.
  double flops = 0.0;
  // Fraction of the counted FLOPs the kernel actually executes (a causal fused-attention kernel skips
  // the masked half; its backward recomputes the scores): scales the time, not the count.
  double executed_fraction = 1.0;
  double bytes = 0.0;  // bytes read and written in HBM
  // Bytes read or written in the host's memory over the GPU's host link (embedding rows in host
  // memory): at GpuProfile::host_link_gbytes_per_s x host_gather_efficiency, after the HBM bytes.
  double host_bytes = 0.0;
  GemmShape gemm;      // meaningful for gemm and attention
  int kernels = 1;     // kernel launches it takes
  // The host's time before it launches the first of them beyond the launches' own cost (framework
  // work that runs no kernel: a checkpointed layer re-entering its forward in the backward). Issue only
  // (engine/simulate.hpp, "Host"): the GPU's time is not changed.
  double host_us = 0.0;
  // Its launches are eager calls made once per parameter tensor outside any module (a gradient hook's
  // add_ into the FP32 gradient, a zeroing loop's fill_): the host issues each at
  // engine::EngineOptions::host_issue_ns_per_tensor_op instead of the per-kernel cost of a module's
  // kernels (Python module calls, autograd recording), which it does not go through.
  bool tensor_calls = false;
  // A linear layer's GEMM (models/transformer/linear.hpp): in an FP8 run the only kind that runs in
  // FP8; every other GEMM and attention then runs at the BF16 rates.
  bool linear_layer = false;
  // A convolution run as an implicit GEMM (cuDNN), which pads its channels for its vector loads: no
  // alignment penalty on its dimensions (compute/gemm_efficiency.hpp, gemm_alignment).
  bool implicit_gemm = false;
  // A memory-bound op's access pattern: the fraction of HBM bandwidth its bytes move at (the GPU
  // profile's rate for the class). Ignored for GEMMs and attention.
  core::MemoryClass memory = core::MemoryClass::streaming;
};

// Compute kernels that run back to back on one stream, as one task: its time is that of the kernels
// run one after another, each costed and rounded to whole ns by the compute model on its own, exactly
// as separate tasks would be; the engine also applies the overlap slowdown and the host's issue of
// each kernel kernel by kernel (engine/simulate.hpp). Lets a simulation of every rank keep its task
// count down.
struct FusedOp {
  std::vector<ComputeOp> kernels;
};

enum class CollectiveKind : std::uint8_t {
  all_reduce,
  reduce_scatter,
  all_gather,
  broadcast,
  reduce,
  all_to_all,
  send_recv,
};

// The most and the fewest members of a group on one of its nodes, when they differ: a group of 12
// ranks over two 8-GPU nodes has 8 on one and 4 on the other (12 data-parallel ranks of stage 0 on 3
// nodes with 2 stages).
struct UnevenSpread {
  std::int64_t most = 1;
  std::int64_t fewest = 1;
  friend auto operator<=>(const UnevenSpread&, const UnevenSpread&) = default;
};

// Where the members of a communication group sit: `size` ranks spread over `nodes` nodes, `size /
// nodes` on each unless `uneven` says otherwise. Collectives are costed for this real layout
// (parallel/group_layouts.hpp counts it from the members' ranks).
struct CommGroup {
  CommGroup() = default;
  // An even group: `members` over `spanned` nodes.
  constexpr CommGroup(std::int64_t members, std::int64_t spanned, std::int64_t concurrent = 1,
                      std::int64_t stride = 1)
      : size(members), nodes(spanned), concurrent_per_node(concurrent), node_stride(stride) {}

  std::int64_t size = 1;
  std::int64_t nodes = 1;
  // How many groups of this shape communicate at the same time through the same NICs of a node
  // (e.g. the 8 data-parallel rings of a DGX node, one per GPU): they share its nics_per_node. For an
  // uneven group, the most on any of its nodes.
  std::int64_t concurrent_per_node = 1;
  // Distance, in node numbers, between consecutive nodes of the group (1: adjacent nodes). Where a
  // group crosses switch tiers depends on it (network/topology.hpp).
  std::int64_t node_stride = 1;
  std::optional<UnevenSpread> uneven;
  // The slowest NIC speed factor among its nodes (cluster.speed_factors), for a group across nodes: the
  // share of the node's NICs it moves at is that fraction of the profile's (a ring or tree moves at the
  // pace of its slowest link). 1 inside a node.
  double nic_speed = 1.0;
  // The slowest NVLink speed factor among its nodes (cluster.speed_factors): its intra-node part moves
  // at that fraction of the profile's bandwidth.
  double nvlink_speed = 1.0;
  // For a group whose nodes are under several leaf switches, the slowest uplink speed factor among
  // those leaves (cluster.speed_factors): its traffic between leaves crosses them at that fraction of
  // their bandwidth. 1 inside one leaf.
  double uplink_speed = 1.0;
  // Members on the group's busiest node, and on its least busy one.
  std::int64_t ranks_per_node() const { return uneven ? uneven->most : size / nodes; }
  std::int64_t fewest_per_node() const { return uneven ? uneven->fewest : size / nodes; }
  friend auto operator<=>(const CommGroup&, const CommGroup&) = default;
};

struct CommOp {
  CollectiveKind kind = CollectiveKind::all_reduce;
  // For all_reduce/broadcast/reduce: the buffer each rank holds. For all_gather/reduce_scatter: the
  // full (gathered) buffer, as NCCL and nccl-tests count it. For send_recv: bytes sent.
  double bytes = 0.0;
  CommGroup group;
  // Copy kernels the call runs on its stream besides the transfer, costed by the compute model: with
  // torch.distributed's list API, one per rank, copying the buffer to or from the per-rank tensors.
  std::optional<ComputeOp> copies = std::nullopt;
  // all_to_all only, a node-aware exchange (DeepEP's normal kernels; parallelism.moe_dispatcher): each
  // rank sends what goes to another node once per destination node, to the GPU of its own local index
  // there, which forwards the copies to the node's other GPUs over NVLink. The value: the fraction of
  // the bytes an all-to-all would send off the node that cross the fabric (models/transformer/moe.hpp,
  // node_aware_copies). Absent: NCCL's all-to-all, every copy on the fabric, none forwarded.
  std::optional<double> node_aware = std::nullopt;
  // all_to_all only, DeepEP's exchanges inside the node: the fraction of the all-to-all's copies sent to
  // GPUs, each token once per destination GPU (models/transformer/moe.hpp, gpu_copies), for the copies
  // a GPU sends to its node's other GPUs and those it forwards. Absent: one copy per expert.
  std::optional<double> gpu_copies = std::nullopt;
};

// A rank's part of one global batch, supplied by the input pipeline (models/input/input_pipeline.hpp)
// in the time that model gives: it runs on the rank's input stream, takes no GPU resource and slows
// nothing beside it. The GPU waits for it only where its dependencies say so (the lowering's
// input_load.hpp).
struct LoadOp {
  double seconds = 0.0;
  double samples = 0.0;  // the global batch's, for traces and tests
};

// A rank's exchange with servers outside the GPU nodes (a DLRM's rows on remote parameter servers: the
// pull of its samples' rows, the push of their gradients), in the time its model gives
// (models/dlrm/remote_servers.hpp). A communication task through its node's NICs: it shares them with
// the rank's other transfers running beside it (engine/simulate.hpp, "Shared NICs").
struct RemoteOp {
  double seconds = 0.0;
  double bytes = 0.0;  // on the wire, the larger direction (for traces and tests)
};

// Work whose time its own model gave, in whole ns: a layer-table worker's forward or backward pass at
// its step's speed, a parameter server's update, a port's share of a transfer, a message's latency
// (parallel/lower_data_parallel.hpp). It takes the resource of its stream and nothing else; the engine
// neither slows nor shares it.
struct FixedOp {
  std::int64_t duration_ns = 0;
};
const char* to_string(ComputeClass c);
const char* to_string(CollectiveKind k);

}  // namespace dtsim::graph
