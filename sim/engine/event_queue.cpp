#include "engine/event_queue.hpp"

#include <cstdint>

#include "core/errors.hpp"

namespace dtsim::engine {

void EventQueue::reject_push(core::TimeNs time) {
  if (time > core::kMaxTimeNs) core::reject_time(time);
  throw core::InternalError("more than 2^31 events pushed into one event queue");
}

void EventQueue::reject_pop() { throw core::InternalError("pop() from an empty event queue"); }

// Another event at the open slot's time. A second one moves the slot's events to a FIFO (the first one
// too), which stays open wherever the heap moves the slot.
void EventQueue::join_open_slot(core::TimeNs time, std::uint32_t seq, std::uint32_t payload) {
  if (open_ == Open::single) {
    Slot& slot = heap_[open_slot_];
    if (free_fifos_.empty()) {
      open_fifo_ = static_cast<std::uint32_t>(fifos_.size());
      fifos_.emplace_back();
    } else {
      open_fifo_ = free_fifos_.back();
      free_fifos_.pop_back();
    }
    fifos_[open_fifo_].events.push_back(Event{slot.time, slot.key() >> 1, slot.item()});
    slot.tag = Slot::make_tag(slot.key() | kFifoFlag, open_fifo_);
    open_ = Open::fifo;
  }
  fifos_[open_fifo_].events.push_back(Event{time, seq, payload});
}

Event EventQueue::pop_from_fifo() {
  const std::uint32_t index = heap_.front().item();
  Fifo& fifo = fifos_[index];
  const Event event = fifo.events[fifo.head++];
  if (fifo.head == fifo.events.size()) {
    fifo.events.clear();
    fifo.head = 0;
    free_fifos_.push_back(index);
    // The heap moves: a single open slot closes, and so does this slot if it is open.
    if (open_ == Open::single || (open_ == Open::fifo && open_fifo_ == index)) open_ = Open::none;
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
  open_ = Open::none;
  next_seq_ = 0;
  size_ = 0;
}

}  // namespace dtsim::engine
