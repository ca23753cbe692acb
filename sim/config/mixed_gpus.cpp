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

}  // namespace dtsim::config
