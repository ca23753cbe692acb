#include "config/mixed_gpus.hpp"

#include <algorithm>

namespace dtsim::config {

std::vector<int> rank_gpu_entries(const std::vector<MixedGpus>& entries, std::int64_t ranks,
                                  std::int64_t gpus_per_node) {
  if (entries.empty()) return {};
  std::vector<int> out(static_cast<std::size_t>(ranks), -1);
  for (std::size_t e = 0; e < entries.size(); ++e) {
    const std::int64_t begin = entries[e].first_node * gpus_per_node;
    const std::int64_t end = std::min(ranks, (entries[e].first_node + entries[e].nodes) * gpus_per_node);
    for (std::int64_t r = begin; r < end; ++r) out[static_cast<std::size_t>(r)] = static_cast<int>(e);
  }
  return out;
}

std::set<std::pair<int, double>> distinct_rank_kinds(const std::vector<MixedGpus>& entries,
                                                     const std::vector<SpeedFactor>& factors,
                                                     std::int64_t ranks, std::int64_t gpus_per_node) {
  // Each entry and factor covers [first, end) of the ranks; between consecutive boundaries every rank
  // is alike.
  const auto entry_range = [&](const MixedGpus& e) {
    return std::pair{e.first_node * gpus_per_node, (e.first_node + e.nodes) * gpus_per_node};
  };
  const auto factor_range = [&](const SpeedFactor& f) {
    const std::int64_t first = f.node * gpus_per_node + f.gpu.value_or(0);
    return std::pair{first, f.gpu ? first + 1 : first + gpus_per_node};
  };
  std::vector<std::int64_t> bounds{0, ranks};
  for (const MixedGpus& e : entries) {
    const auto [first, end] = entry_range(e);
    bounds.insert(bounds.end(), {first, end});
  }
  for (const SpeedFactor& f : factors) {
    const auto [first, end] = factor_range(f);
    bounds.insert(bounds.end(), {first, end});
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  std::set<std::pair<int, double>> out;
  for (const std::int64_t r : bounds) {
    if (r < 0 || r >= ranks) continue;
    int entry = -1;
    for (std::size_t e = 0; e < entries.size(); ++e) {
      const auto [first, end] = entry_range(entries[e]);
      if (r >= first && r < end) entry = static_cast<int>(e);  // the last entry covering it, as above
    }
    double speed = 1.0;
    for (const SpeedFactor& f : factors) {
      const auto [first, end] = factor_range(f);
      if (f.compute != 1.0 && r >= first && r < end) speed *= f.compute;
    }
    out.emplace(entry, speed);
  }
  return out;
}

}  // namespace dtsim::config
