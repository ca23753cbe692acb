// A sized resource: the quantity a scenario states and the least that meets a demand (the input
// pipeline's readers, a DLRM's parameter servers).
#pragma once

#include <cmath>
#include <string>

namespace dtsim::models {

struct ResourceNeed {
  std::string quantity;  // "storage GB/s", "reader servers (cores)", "parameter servers (memory)", ...
  double stated = 0.0;
  double needed = 0.0;
};

// The whole count that covers x, ignoring rounding noise in x (8.000000001 servers is 8).
inline double whole_count(double x) { return std::ceil(x * (1.0 - 1e-9)); }

}  // namespace dtsim::models
