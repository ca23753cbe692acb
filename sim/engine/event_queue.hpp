// The engine's pending-event queue: a binary min-heap on (time, sequence). The sequence number is
// assigned at push, so events at the same time pop in the order they were scheduled: runs are
// deterministic. Storage is one contiguous vector reused across pushes (no allocation per event once
// it has grown). An event is 16 bytes (4 per cache line): the sequence is 32-bit, so one queue
// accepts 2^32 pushes before clear() (InternalError beyond).
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
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  void push(core::TimeNs time, std::uint32_t payload);
  // Removes and returns the earliest event; InternalError when empty.
  Event pop();
  // The earliest event; the queue must not be empty.
  const Event& top() const { return heap_.front(); }
  // Whether an event at `time` is pending and earliest.
  bool more_at(core::TimeNs time) const { return !heap_.empty() && heap_.front().time == time; }
  void clear() {
    heap_.clear();
    next_seq_ = 0;
  }

 private:
  // (time, seq) order, evaluated without branches.
  static bool before(const Event& a, const Event& b) {
    const int earlier = a.time < b.time;
    const int tie = a.time == b.time;
    const int pushed_first = a.seq < b.seq;
    return (earlier | (tie & pushed_first)) != 0;
  }
  std::vector<Event> heap_;
  std::uint32_t next_seq_ = 0;
};

}  // namespace dtsim::engine
