#include "engine/event_queue.hpp"

#include <cstdint>

#include "core/errors.hpp"

namespace dtsim::engine {

// Sift-up with a hole: parents move down until the new event's place is found, then it is written once.
void EventQueue::push(core::TimeNs time, std::uint32_t payload) {
  DTSIM_CHECK(next_seq_ != UINT32_MAX, "more than 2^32 events pushed into one event queue");
  const Event event{time, next_seq_++, payload};
  std::size_t i = heap_.size();
  heap_.push_back(event);
  Event* heap = heap_.data();
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (!before(event, heap[parent])) break;
    heap[i] = heap[parent];
    i = parent;
  }
  heap[i] = event;
}

// Bottom-up deletion (Floyd): the hole left by the minimum descends along the smaller children to a
// leaf, then the former last event rises from there. The last event is usually among the latest, so
// this takes about half the comparisons of the textbook sift-down.
Event EventQueue::pop() {
  DTSIM_CHECK(!heap_.empty(), "pop() from an empty event queue");
  Event* heap = heap_.data();
  const Event top = heap[0];
  const Event last = heap[heap_.size() - 1];
  heap_.pop_back();
  const std::size_t n = heap_.size();
  if (n == 0) return top;
  std::size_t i = 0;
  // Which child is smaller is a coin toss for the branch predictor: select it arithmetically.
  for (std::size_t child = 1; child + 1 < n; child = 2 * i + 1) {
    child += static_cast<std::size_t>(before(heap[child + 1], heap[child]));
    heap[i] = heap[child];
    i = child;
  }
  if (2 * i + 2 == n) {  // a last, single child
    heap[i] = heap[n - 1];
    i = n - 1;
  }
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (!before(last, heap[parent])) break;
    heap[i] = heap[parent];
    i = parent;
  }
  heap[i] = last;
  return top;
}

}  // namespace dtsim::engine
