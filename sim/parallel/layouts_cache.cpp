#include "parallel/layouts_cache.hpp"

namespace dtsim::parallel {

const GroupLayouts& LayoutsCache::of(const Mesh& mesh) {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::unique_ptr<const Entry>& entry = entries_[mesh];
  if (!entry) entry = std::make_unique<const Entry>(mesh);
  return entry->layouts;
}

}  // namespace dtsim::parallel
