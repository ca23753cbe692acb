#include "graph/ops.hpp"

namespace dtsim::graph {

const char* to_string(ComputeClass c) {
  switch (c) {
    case ComputeClass::gemm: return "gemm";
    case ComputeClass::attention: return "attention";
    case ComputeClass::memory: return "memory";
    case ComputeClass::optimizer: return "optimizer";
  }
  return "unknown";
}

const char* to_string(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::all_reduce: return "all_reduce";
    case CollectiveKind::reduce_scatter: return "reduce_scatter";
    case CollectiveKind::all_gather: return "all_gather";
    case CollectiveKind::broadcast: return "broadcast";
    case CollectiveKind::reduce: return "reduce";
    case CollectiveKind::all_to_all: return "all_to_all";
    case CollectiveKind::send_recv: return "send_recv";
  }
  return "unknown";
}

}  // namespace dtsim::graph
