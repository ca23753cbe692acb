// The engine's pending-event queue, ordered by (time, sequence). The sequence number is assigned at
// push, so events at the same time pop in the order they were scheduled: runs are deterministic.
//
// A binary min-heap of time slots: each slot holds, in a FIFO, events of one time pushed one after
// another (the slot stays open for pushes at its time until a push at another time opens a new slot).
// Slots are ordered by (time, creation), so events of one time in several slots still pop in push
// order. When many ranks run the same program (every-rank simulations) thousands of events share a
// time and the heap holds a few slots instead of every event; with all times distinct it is a plain
// binary heap with one event per slot. Storage (heap, FIFOs) is reused: no allocation per event once
// grown. The sequence is 32-bit: one queue accepts 2^32 pushes before clear() (InternalError beyond).
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
  const Event& top() const {
    const Fifo& f = fifos_[heap_.front().fifo];
    return f.events[f.head];
  }
  // Whether an event at `time` is pending and earliest.
  bool more_at(core::TimeNs time) const { return size_ != 0 && heap_.front().time == time; }
  void clear();

 private:
  static constexpr std::uint32_t kNone = UINT32_MAX;
  struct Slot {
    core::TimeNs time = 0;
    std::uint32_t seq = 0;   // creation order among slots
    std::uint32_t fifo = 0;  // index into fifos_
  };
  struct Fifo {
    std::vector<Event> events;
    std::size_t head = 0;
  };
  // (time, seq) order, evaluated without branches.
  static bool before(const Slot& a, const Slot& b) {
    const int earlier = a.time < b.time;
    const int tie = a.time == b.time;
    const int created_first = a.seq < b.seq;
    return (earlier | (tie & created_first)) != 0;
  }
  void push_slot(const Slot& slot);
  void pop_slot();

  std::vector<Slot> heap_;
  std::vector<Fifo> fifos_;
  std::vector<std::uint32_t> free_fifos_;
  std::uint32_t open_fifo_ = kNone;  // the slot taking pushes at open_time_
  core::TimeNs open_time_ = 0;
  std::uint32_t next_seq_ = 0;
  std::uint32_t next_slot_seq_ = 0;
  std::size_t size_ = 0;
};

}  // namespace dtsim::engine
