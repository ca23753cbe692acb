// Sweep points: a scenario's JSON with values set at JSON pointers, for every combination of the
// values given (cartesian product, the first --set varying slowest), optionally rescaled for weak or
// strong scaling when the node count changes:
//   weak    keep the batch per GPU: global_batch_size and parallelism.data scale with the nodes
//   strong  keep the global batch: parallelism.data scales with the nodes
// (parallelism.data only when the scenario gives it; otherwise it is derived from the GPUs anyway).
//
// Points are made one at a time from their index, never all at once: index i is a mixed-radix number
// whose digits, last axis fastest, pick each axis's value (digit_a = (i / prod_{b > a} n_b) mod n_a).
// The number of points, the product of the axes' value counts, must be at most 2^63 - 1 (points are
// numbered by JSON integers); a product beyond that is an InputError naming the sweep, never a
// wrapped-around count.
// Each point is scenario text for load_scenario_text(); errors in the --set values or pointers are
// InputErrors naming the option. A SweepSpace is immutable: point() may be called from several threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

inline constexpr std::uint64_t kMaxSweepPoints = 9223372036854775807ULL;  // 2^63 - 1

class SweepSpace {
 public:
  // InputError when the scenario is not JSON, a pointer is malformed or there are too many points.
  SweepSpace(const std::string& scenario_text, const std::string& source, std::vector<SweepAxis> axes,
             Scaling scaling);

  std::uint64_t size() const { return size_; }
  const std::vector<SweepAxis>& axes() const { return axes_; }
  // "pointer=value" per axis of point `index` (< size()).
  std::vector<std::string> assignment(std::uint64_t index) const;
  // The same as an object {pointer: value}, in axis order, each value as JSON (a bare word a string).
  nlohmann::ordered_json assignment_object(std::uint64_t index) const;
  // The point's assignment and scenario text; InputError when a value cannot be set there.
  SweepPoint point(std::uint64_t index) const;

 private:
  // The value index of each axis for point `index`.
  std::vector<std::size_t> digits(std::uint64_t index) const;

  nlohmann::json base_;
  std::string source_;
  std::vector<SweepAxis> axes_;
  std::vector<nlohmann::json::json_pointer> pointers_;
  Scaling scaling_;
  double base_nodes_ = 0.0;
  std::uint64_t size_ = 1;
};

}  // namespace dtsim::config
