#include "engine/event_queue.hpp"

#include <cstdint>

#include "core/errors.hpp"

namespace dtsim::engine {

void EventQueue::push(core::TimeNs time, std::uint32_t payload) {
  DTSIM_CHECK(next_seq_ != UINT32_MAX, "more than 2^32 events pushed into one event queue");
  const Event event{time, next_seq_++, payload};
  ++size_;
  if (open_fifo_ != kNone && open_time_ == time) {
    fifos_[open_fifo_].events.push_back(event);
    return;
  }
  std::uint32_t fifo = 0;
  if (free_fifos_.empty()) {
    fifo = static_cast<std::uint32_t>(fifos_.size());
    fifos_.emplace_back();
  } else {
    fifo = free_fifos_.back();
    free_fifos_.pop_back();
  }
  fifos_[fifo].events.push_back(event);
  open_fifo_ = fifo;
  open_time_ = time;
  push_slot(Slot{time, next_slot_seq_++, fifo});
}

Event EventQueue::pop() {
  DTSIM_CHECK(size_ != 0, "pop() from an empty event queue");
  const std::uint32_t fifo_index = heap_.front().fifo;
  Fifo& fifo = fifos_[fifo_index];
  const Event event = fifo.events[fifo.head++];
  --size_;
  if (fifo.head == fifo.events.size()) {
    fifo.events.clear();
    fifo.head = 0;
    free_fifos_.push_back(fifo_index);
    if (open_fifo_ == fifo_index) open_fifo_ = kNone;
    pop_slot();
  }
  return event;
}

void EventQueue::clear() {
  for (Fifo& f : fifos_) {
    f.events.clear();
    f.head = 0;
  }
  free_fifos_.clear();
  for (std::uint32_t i = 0; i < fifos_.size(); ++i) free_fifos_.push_back(i);
  heap_.clear();
  open_fifo_ = kNone;
  next_seq_ = 0;
  next_slot_seq_ = 0;
  size_ = 0;
}

// Sift-up with a hole: parents move down until the new slot's place is found, then it is written once.
void EventQueue::push_slot(const Slot& slot) {
  std::size_t i = heap_.size();
  heap_.push_back(slot);
  Slot* heap = heap_.data();
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (!before(slot, heap[parent])) break;
    heap[i] = heap[parent];
    i = parent;
  }
  heap[i] = slot;
}

// Bottom-up deletion (Floyd): the hole left by the minimum descends along the smaller children to a
// leaf, then the former last slot rises from there (about half the comparisons of a plain sift-down).
void EventQueue::pop_slot() {
  Slot* heap = heap_.data();
  const Slot last = heap[heap_.size() - 1];
  heap_.pop_back();
  const std::size_t n = heap_.size();
  if (n == 0) return;
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
}

}  // namespace dtsim::engine
