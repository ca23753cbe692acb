// The engine's pending-event queue, ordered by (time, sequence). The sequence number is assigned at
// push, so events at the same time pop in the order they were scheduled: runs are deterministic.
//
// A 4-ary min-heap of time slots. A slot holds events of one time pushed one after another: the first
// in the slot itself (16 bytes, like a plain heap's entry), any more in a FIFO. A slot stays open for
// pushes at its time until a push at another time opens a new one; a slot of one event also closes
// at the next pop, since the heap may move it. Slots are ordered by (time, creation), so events of one
// time in several slots still pop in push order. When many ranks run the same program (every-rank
// simulations) thousands of events share a time and the heap holds a few slots instead of every
// event; with all times distinct it is a plain heap of events, no FIFO touched. Storage (heap,
// FIFOs) is reused: no allocation per event once grown. The sequence is 31-bit: one queue accepts
// 2^31 pushes before clear() (InternalError beyond). A push after core::kMaxTimeNs throws
// InfeasibleError (core/units.hpp): the engines' times never overflow. push(), pop() and the heap's
// sifts are inline: they are most of an engine loop's work when few events are pending.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/units.hpp"

namespace dtsim::engine {

struct Event {
  core::TimeNs time = 0;
  std::uint32_t seq = 0;
  std::uint32_t payload = 0;
};

class EventQueue {
 public:
  void reserve(std::size_t n) { heap_.reserve(n); }
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  void push(core::TimeNs time, std::uint32_t payload);
  // Removes and returns the earliest event; InternalError when empty.
  Event pop();
  // The earliest event; the queue must not be empty.
  Event top() const {
    const Slot& slot = heap_.front();
    if ((slot.key() & kFifoFlag) == 0) return Event{slot.time, slot.key() >> 1, slot.item()};
    const Fifo& f = fifos_[slot.item()];
    return f.events[f.head];
  }
  // Whether an event at `time` is pending and earliest.
  bool more_at(core::TimeNs time) const { return size_ != 0 && heap_.front().time == time; }
  void clear();

 private:
  static constexpr std::uint32_t kMaxSeq = 0x7fffffffU;
  static constexpr std::uint32_t kFifoFlag = 1;
  static constexpr std::size_t kArity = 4;  // children per slot: half the depth of a binary heap
  // A slot is ordered by its first event's (time, seq), which is its creation order among slots of
  // one time. tag = key << 32 | item, key = seq << 1 | kFifoFlag when the slot's events are in a FIFO
  // (seqs differ, so neither the flag nor the item ever decides an order). item: the first event's
  // payload while it is the slot's only event; once a second event joins, the index into fifos_ of all
  // of the slot's events. 16 bytes.
  struct Slot {
    core::TimeNs time = 0;
    std::uint64_t tag = 0;
    std::uint32_t key() const { return static_cast<std::uint32_t>(tag >> 32); }
    std::uint32_t item() const { return static_cast<std::uint32_t>(tag); }
    static std::uint64_t make_tag(std::uint32_t key, std::uint32_t item) {
      return std::uint64_t{key} << 32 | item;
    }
  };
  struct Fifo {
    std::vector<Event> events;
    std::size_t head = 0;
  };
  // (time, seq) order as one unsigned 128-bit comparison of (time, tag): times are never negative
  // (core::kMaxTimeNs bounds them), and tags differ in their keys.
  static bool before(const Slot& a, const Slot& b) {
    __extension__ using Order = unsigned __int128;
    const Order x = Order{static_cast<std::uint64_t>(a.time)} << 64 | a.tag;
    const Order y = Order{static_cast<std::uint64_t>(b.time)} << 64 | b.tag;
    return x < y;
  }
  std::size_t sift_up(std::size_t i, const Slot& slot);
  // Adds a slot; returns its place.
  std::size_t push_slot(const Slot& slot);
  void pop_slot();
  // The slow paths of push() and pop(): a second event at the open slot's time; an event from a FIFO;
  // misuse (InternalError).
  void join_open_slot(core::TimeNs time, std::uint32_t seq, std::uint32_t payload);
  Event pop_from_fifo();
  [[noreturn]] static void reject_push(core::TimeNs time);
  [[noreturn]] static void reject_pop();

  std::vector<Slot> heap_;
  std::vector<Fifo> fifos_;
  std::vector<std::uint32_t> free_fifos_;
  // The open slot, which takes pushes at open_time_: a slot with one event until the next pop (the
  // heap may move it), then closed; a slot whose events are in a FIFO, open_fifo_, until a push at
  // another time or its last event is popped.
  enum class Open : std::uint8_t { none, single, fifo };
  Open open_ = Open::none;
  std::size_t open_slot_ = 0;    // single: its place in the heap
  std::uint32_t open_fifo_ = 0;  // fifo: its FIFO
  core::TimeNs open_time_ = 0;
  std::uint32_t next_seq_ = 0;
  std::size_t size_ = 0;
};

// Sift-up with a hole at i: parents move down until the slot's place is found, then it is written
// once. Returns that place.
inline std::size_t EventQueue::sift_up(std::size_t i, const Slot& slot) {
  Slot* heap = heap_.data();
  while (i > 0) {
    const std::size_t parent = (i - 1) / kArity;
    if (!before(slot, heap[parent])) break;
    heap[i] = heap[parent];
    i = parent;
  }
  heap[i] = slot;
  return i;
}

inline std::size_t EventQueue::push_slot(const Slot& slot) {
  heap_.push_back(slot);
  return sift_up(heap_.size() - 1, slot);
}

// Bottom-up deletion (Floyd): the hole left by the minimum descends along the smallest children to a
// leaf, then the former last slot rises from there (about half the comparisons of a sift-down). The
// smallest of four children is chosen by a tournament of selects, not branches: which one it is is a
// coin toss for the branch predictor.
inline void EventQueue::pop_slot() {
  Slot* heap = heap_.data();
  const Slot last = heap[heap_.size() - 1];
  heap_.pop_back();
  const std::size_t n = heap_.size();
  if (n == 0) return;
  std::size_t i = 0;
  for (std::size_t child = 1; child + kArity <= n; child = kArity * i + 1) {
    const std::size_t a = child + static_cast<std::size_t>(before(heap[child + 1], heap[child]));
    const std::size_t b = child + 2 + static_cast<std::size_t>(before(heap[child + 3], heap[child + 2]));
    // A mask, not a conditional: the compiler would branch on it.
    const std::size_t b_first = 0 - static_cast<std::size_t>(before(heap[b], heap[a]));
    const std::size_t smallest = a ^ ((a ^ b) & b_first);
    heap[i] = heap[smallest];
    i = smallest;
  }
  const std::size_t first = kArity * i + 1;
  if (first < n) {  // the last, incomplete family
    std::size_t smallest = first;
    for (std::size_t c = first + 1; c < n; ++c) {
      if (before(heap[c], heap[smallest])) smallest = c;
    }
    heap[i] = heap[smallest];
    i = smallest;
  }
  sift_up(i, last);
}

inline void EventQueue::push(core::TimeNs time, std::uint32_t payload) {
  if (next_seq_ > kMaxSeq || time > core::kMaxTimeNs) [[unlikely]]
    reject_push(time);
  const std::uint32_t seq = next_seq_++;
  ++size_;
  if (open_ != Open::none && open_time_ == time) {
    join_open_slot(time, seq, payload);
    return;
  }
  open_ = Open::single;
  open_time_ = time;
  open_slot_ = push_slot(Slot{time, Slot::make_tag(seq << 1, payload)});
}

inline Event EventQueue::pop() {
  if (size_ == 0) [[unlikely]]
    reject_pop();
  --size_;
  const Slot& slot = heap_.front();
  if ((slot.key() & kFifoFlag) != 0) return pop_from_fifo();
  const Event event{slot.time, slot.key() >> 1, slot.item()};
  if (open_ == Open::single) open_ = Open::none;
  pop_slot();
  return event;
}

}  // namespace dtsim::engine
