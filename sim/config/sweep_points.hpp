// Sweep points: a scenario's JSON with values set at JSON pointers, for every combination of the
// values given (cartesian product, the first --set varying slowest), optionally rescaled for weak or
// strong scaling when the node count changes:
//   weak    keep the batch per GPU: global_batch_size and parallelism.data scale with the nodes
//   strong  keep the global batch: parallelism.data scales with the nodes
// (parallelism.data only when the scenario gives it; otherwise it is derived from the GPUs anyway).
// Each point is scenario text for load_scenario_text(); errors in the --set values or pointers are
// InputErrors naming the option.
#pragma once

#include <string>
#include <vector>

namespace dtsim::config {

struct SweepAxis {
  std::string pointer;              // RFC 6901, e.g. "/cluster/nodes"
  std::vector<std::string> values;  // JSON texts; a bare word that is not JSON is a string
};

enum class Scaling { none, weak, strong };

struct SweepPoint {
  std::vector<std::string> assignment;  // "pointer=value" per axis
  std::string scenario_text;
};

// Parses "PTR=V1,V2,..." (the pointer may omit its leading '/'; "a.b" means "/a/b").
SweepAxis parse_sweep_axis(const std::string& option);

std::vector<SweepPoint> sweep_points(const std::string& scenario_text, const std::string& source,
                                     const std::vector<SweepAxis>& axes, Scaling scaling);

}  // namespace dtsim::config
