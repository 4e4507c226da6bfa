/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/*
 * The event heap: a 4-ary min-heap of small plain events ordered by
 * (time, insertion sequence), so events at the same time run in the order
 * they were scheduled. Four children share two cache lines and the tree is
 * half as deep as a binary heap. The backing vector keeps its capacity, so
 * pushing allocates only while the heap grows past its largest size so far.
 */

#ifndef METAROCE_SIM_EVENT_QUEUE_PRIVATE_H
#define METAROCE_SIM_EVENT_QUEUE_PRIVATE_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include "mr_sim_time.h"

namespace metaroce::sim {

/** What an event does; target and aux are interpreted by kind. */
enum class EventKind : uint8_t {
  kTxDone,      ///< target: port whose head frame finished serialising
  kArrive,      ///< target: ingress port; aux: frame handle
  kTimer,       ///< target: host; aux: timer generation
  kReconverge,  ///< target: link; aux: link generation
  kCallback,    ///< target: callback slot
  kPfc,         ///< target: port a PAUSE reached; aux: 1 pause, 0 resume
};

struct Event {
  SimTime time;
  uint64_t seq;
  uint32_t target;
  uint32_t aux;
  EventKind kind;
};
static_assert(sizeof(Event) == 32, "keep events small: the heap moves them around");

class EventQueue {
 public:
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.front(); }

  void Push(SimTime time, EventKind kind, uint32_t target, uint32_t aux) {
    Event e{time, next_seq_++, target, aux, kind};
    size_t i = heap_.size();
    heap_.push_back(e);
    // Sift the hole up.
    while (i > 0) {
      const size_t parent = (i - 1) / kArity;
      if (!Less(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }

  Event Pop() {
    const Event top = heap_.front();
    const Event last = heap_.back();
    heap_.pop_back();
    const size_t n = heap_.size();
    if (n > 0) {
      // Sift the hole at the root down, then drop `last` into it.
      size_t i = 0;
      for (;;) {
        const size_t first = kArity * i + 1;
        if (first >= n) break;
        size_t child = first;
        const size_t end = first + kArity < n ? first + kArity : n;
        for (size_t c = first + 1; c < end; c++) {
          if (Less(heap_[c], heap_[child])) child = c;
        }
        if (!Less(heap_[child], last)) break;
        heap_[i] = heap_[child];
        i = child;
      }
      heap_[i] = last;
    }
    return top;
  }

  /** Events pushed so far (the next sequence number). */
  uint64_t pushed() const { return next_seq_; }

 private:
  static constexpr size_t kArity = 4;
  // (time, seq) as one 128-bit number: time is never negative.
  static bool Less(const Event& a, const Event& b) {
    using U = unsigned __int128;
    return (static_cast<U>(a.time) << 64 | a.seq) < (static_cast<U>(b.time) << 64 | b.seq);
  }
  std::vector<Event> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace metaroce::sim

#endif  // METAROCE_SIM_EVENT_QUEUE_PRIVATE_H
