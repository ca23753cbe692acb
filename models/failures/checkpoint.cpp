#include "models/failures/checkpoint.hpp"

#include <algorithm>
#include <cmath>

namespace dtsim::models {

CheckpointCost checkpoint_cost(const CheckpointInput& in) {
  CheckpointCost c;
  c.state_bytes = in.state_bytes;
  if (in.peer_memory) {
    c.write_s = in.node_state_bytes / (in.node_link_gbytes_per_s * 1e9);
    c.read_s = c.write_s;
  } else {
    c.write_s = in.state_bytes / (in.write_gbytes_per_s * 1e9);
    c.read_s = in.state_bytes / (in.read_gbytes_per_s * 1e9);
  }
  if (in.asynchronous) {
    c.snapshot_s = in.per_gpu_state_bytes / (in.snapshot_gbytes_per_s * 1e9);
    c.stall_s = c.snapshot_s;
  } else {
    c.stall_s = c.write_s;
  }
  return c;
}

double daly_optimal_interval_s(double stall_s, double mtbf_s) {
  if (stall_s >= 2.0 * mtbf_s) return mtbf_s;
  const double x = stall_s / (2.0 * mtbf_s);
  return std::sqrt(2.0 * stall_s * mtbf_s) * (1.0 + std::sqrt(x) / 3.0 + x / 9.0) - stall_s;
}

double young_optimal_interval_s(double stall_s, double mtbf_s) { return std::sqrt(2.0 * stall_s * mtbf_s); }

double expected_ettr(double failures_per_s, double restart_s, double stall_s, double interval_s) {
  const double ettr = (1.0 - failures_per_s * (restart_s + interval_s / 2.0)) / (1.0 + stall_s / interval_s);
  return std::max(ettr, 0.0);
}

}  // namespace dtsim::models
