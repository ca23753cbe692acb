#include "network/flow_cache.hpp"

#include <exception>

namespace dtsim::network {

std::int64_t FlowCache::network(const std::string& identity) {
  const std::lock_guard<std::mutex> lock(mutex_);
  return networks_.try_emplace(identity, static_cast<std::int64_t>(networks_.size())).first->second;
}

core::TimeNs FlowCache::get(const Key& key, const std::function<core::TimeNs()>& simulate) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (const auto it = entries_.find(key); it != entries_.end()) {
    ++hits_;
    const std::shared_future<core::TimeNs> pending = it->second;
    lock.unlock();
    return pending.get();  // waits while another thread simulates it
  }
  std::promise<core::TimeNs> promise;
  entries_.emplace(key, promise.get_future().share());
  ++simulations_;
  lock.unlock();
  try {
    const core::TimeNs t = simulate();
    promise.set_value(t);
    return t;
  } catch (...) {
    // Forget the key first, so that a caller arriving now simulates it again rather than getting this
    // failure; those already waiting get it.
    lock.lock();
    entries_.erase(key);
    lock.unlock();
    promise.set_exception(std::current_exception());
    throw;
  }
}

std::int64_t FlowCache::simulations() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return simulations_;
}

std::int64_t FlowCache::hits() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}

}  // namespace dtsim::network
