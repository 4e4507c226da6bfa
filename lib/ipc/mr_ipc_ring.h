/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * Shared-memory segments between metaroced and an application: layouts of the
 * application segment (doorbell and async-event rings), the CQ segment and
 * the QP segment (send and receive rings), computed the same way on both
 * sides from the depths of the create reply.
 *
 * Lanes: a daemon runs several shards (threads), and each ring the daemon
 * drains (doorbells) or fills (completions, async events) has one lane per
 * shard, so every lane keeps one producer and one consumer: a shard drains
 * and fills only its own lanes, the shim polls all of them. The number of
 * lanes is HelloRep::lanes.
 *
 * Every ring is single producer / single consumer with free-running 32-bit
 * indices, each on its own cache line; an entry is written before the
 * producer index is published (release) and read after it is seen (acquire).
 * The shim serialises its own threads per ring. The daemon keeps its own copy
 * of every depth and every index it owns, and treats what the application
 * wrote (its indices, entries, flags) as untrusted: an index that moved by
 * more than the ring holds is a corrupt ring and fails the object, never a
 * read outside the segment.
 */

#ifndef METAROCE_MR_IPC_RING_H
#define METAROCE_MR_IPC_RING_H

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "mr_ipc.h"

namespace metaroce::ipc {

inline constexpr size_t kCacheLine = 64;
/** SGEs one send or receive ring entry holds (the device's max_sge). */
inline constexpr uint32_t kMaxSge = 16;
/** Inline data one send entry holds (the device's max_inline_data). */
inline constexpr uint32_t kMaxInlineBytes = 256;
/** Deepest ring (send, receive, completion): the device's max_qp_wr and max_cqe. */
inline constexpr uint32_t kMaxRingDepth = 1u << 15;
inline constexpr uint32_t kMaxQpsPerApp = 4096;
inline constexpr uint32_t kMaxSrqsPerApp = 1024;
/** Smallest power of two >= @p n (1 for 0). */
constexpr uint32_t RingDepth(uint32_t n) {
  uint32_t d = 1;
  while (d < n) d <<= 1;
  return d;
}
/**
 * Doorbell slots of a lane: at most one outstanding per ring (two per QP,
 * one per SRQ), so the ring never fills; a power of two, as every ring.
 */
inline constexpr uint32_t kDoorbellSlots = RingDepth(2 * kMaxQpsPerApp + kMaxSrqsPerApp);
/** Async events the daemon can have queued for one application (older ones are dropped). */
inline constexpr uint32_t kAsyncSlots = 256;

/** A ring index on a cache line of its own. */
struct alignas(kCacheLine) RingIndex {
  std::atomic<uint32_t> v{0};
};
static_assert(sizeof(RingIndex) == kCacheLine);
static_assert(std::atomic<uint32_t>::is_always_lock_free);

/** One scatter/gather element, as struct ibv_sge. */
struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};
static_assert(sizeof(Sge) == 16);

/** A send work request, as struct ibv_send_wr (values of the ibv_* enums). */
struct SqEntry {
  uint64_t wr_id = 0;
  uint32_t opcode = 0;      ///< enum ibv_wr_opcode
  uint32_t send_flags = 0;  ///< IBV_SEND_*; IBV_SEND_INLINE: data is in inline_data
  uint32_t imm_data = 0;    ///< network byte order, as the application gave it
  uint32_t num_sge = 0;     ///< 0..kMaxSge (0 with IBV_SEND_INLINE)
  uint32_t rkey = 0;
  uint32_t inline_len = 0;  ///< IBV_SEND_INLINE: bytes in inline_data
  uint64_t remote_addr = 0;
  uint64_t compare_add = 0;
  uint64_t swap = 0;
  uint8_t reserved[8] = {};
  union {
    Sge sge[kMaxSge];
    uint8_t inline_data[kMaxInlineBytes];
  };
};
static_assert(sizeof(SqEntry) == 64 + kMaxSge * sizeof(Sge));
static_assert(kMaxInlineBytes <= kMaxSge * sizeof(Sge));

/** A receive work request, as struct ibv_recv_wr. */
struct RqEntry {
  uint64_t wr_id = 0;
  uint32_t num_sge = 0;
  uint32_t reserved = 0;
  Sge sge[kMaxSge];
};
static_assert(sizeof(RqEntry) == 16 + kMaxSge * sizeof(Sge));

/** A completion, the fields of struct ibv_wc the daemon sets (values of the ibv_* enums). */
struct CqEntry {
  uint64_t wr_id = 0;
  uint32_t byte_len = 0;
  uint32_t imm_data = 0;  ///< network byte order (IBV_WC_WITH_IMM)
  uint32_t qp_num = 0;
  uint32_t src_qp = 0;
  uint8_t status = 0;     ///< enum ibv_wc_status
  uint8_t opcode = 0;     ///< enum ibv_wc_opcode
  uint16_t wc_flags = 0;  ///< IBV_WC_WITH_IMM, ...
  uint32_t reserved = 0;
};
static_assert(sizeof(CqEntry) == 32);

/** What rings the doorbell. */
enum class DoorbellKind : uint32_t { kSq = 1, kRq = 2, kSrq = 3 };

/** "Object @p handle has new entries": the daemon then drains that ring. */
struct Doorbell {
  uint32_t handle = 0;
  uint32_t kind = 0;  ///< DoorbellKind
};
static_assert(sizeof(Doorbell) == 8);

/** An asynchronous event, as struct ibv_async_event. */
struct AsyncEntry {
  uint32_t event_type = 0;  ///< enum ibv_event_type
  uint32_t handle = 0;      ///< the CQ, QP or SRQ handle, by event type (0 for device events)
};
static_assert(sizeof(AsyncEntry) == 8);

/**
 * One shard's lane of the application segment: the doorbells of the QPs and
 * SRQs that shard holds (CreateQpRep::lane), and the async events it raises.
 */
struct AppLane {
  RingIndex db_prod;     ///< application
  RingIndex db_cons;     ///< daemon
  RingIndex async_prod;  ///< daemon
  RingIndex async_cons;  ///< application
  /**
   * Daemon: 1 while the lane's shard sleeps until something happens. After
   * publishing a doorbell (seq_cst) the application reads it (seq_cst) and,
   * if set, writes the lane's kick eventfd; the shard sets it (seq_cst) before
   * it looks at the doorbell rings a last time and sleeps, so one of the two
   * always sees the other.
   */
  RingIndex shard_asleep;
  Doorbell doorbells[kDoorbellSlots];
  AsyncEntry async[kAsyncSlots];
};

/** Head of the application segment (kHello's reply fd); HelloRep::lanes AppLane follow. */
struct AppSegment {
  /** Daemon: 1 once it is shutting down (the socket's EOF tells the same when it dies). */
  RingIndex daemon_gone;
  /**
   * A futex word. Application: 1 while a thread sleeps in a CQ poll until
   * the next completion (it sets it, seq_cst, then looks at its CQ a last
   * time and waits while the word is 1). Daemon: after publishing
   * completions of this application (seq_cst) it reads the word and, if it
   * exchanges a 1 for 0, wakes every waiter (FutexWakeAll). Either side sees
   * the other, as with AppLane::shard_asleep.
   */
  RingIndex poll_wait;
};

/** Head of a CQ segment; its lanes' indices, then each lane's depth CqEntry, follow. */
struct CqSegment {
  /**
   * Application: 1 = signal the channel on the next completion, 2 = on the
   * next solicited one (ibv_req_notify_cq); the daemon clears it when it
   * signals (an exchange: one shard signals each arming).
   */
  RingIndex arm;
  RingIndex events;    ///< daemon: completion events signalled so far (ibv_get_cq_event)
  RingIndex overflow;  ///< daemon: 1 once a completion found its lane full (CQ in error)
};

/** One shard's lane of a CQ: completions of the QPs it holds. */
struct CqLane {
  RingIndex prod;  ///< daemon
  RingIndex cons;  ///< application
};

/**
 * Head of an SRQ segment; depth RqEntry follow at kSrqEntriesOffset. The
 * daemon copies each entry into the engine as it takes it, so a slot is free
 * again once `cons` passed it (receives complete in any order, on any QP).
 */
struct SrqSegment {
  RingIndex prod;      ///< application: receives posted
  RingIndex cons;      ///< daemon: receives taken (their slots are free)
  RingIndex doorbell;  ///< application sets it to 1 before ringing; daemon clears it
  RingIndex error;     ///< daemon: 1 once the application broke the ring (IBV_EVENT_SRQ_ERR)
};
inline constexpr size_t kSrqEntriesOffset = sizeof(SrqSegment);

/** Head of a QP segment; the send ring then the receive ring follow. */
struct QpSegment {
  RingIndex sq_prod;     ///< application: send entries posted
  RingIndex sq_cons;     ///< daemon: send entries taken
  RingIndex sq_retired;  ///< daemon: send WRs finished (signalled or not): their slots are free
  RingIndex rq_prod;
  RingIndex rq_cons;
  RingIndex rq_retired;
  RingIndex sq_doorbell;  ///< application sets it to 1 before ringing; daemon clears it
  RingIndex rq_doorbell;
  RingIndex status;  ///< daemon: QpStatus
};
inline constexpr size_t kSqOffset = sizeof(QpSegment);

constexpr size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

/** Lane @p lane's indices in a CQ segment. */
constexpr size_t CqLaneOffset(uint32_t lane) { return sizeof(CqSegment) + lane * sizeof(CqLane); }
/** Lane @p lane's entries in a CQ segment of @p lanes lanes of @p depth entries. */
constexpr size_t CqEntriesOffset(uint32_t depth, uint32_t lanes, uint32_t lane) {
  return CqLaneOffset(lanes) + size_t{lane} * depth * sizeof(CqEntry);
}
/** Bytes of a CQ segment of @p lanes lanes of @p depth entries. */
constexpr size_t CqSegmentBytes(uint32_t depth, uint32_t lanes) {
  return RoundUp(CqEntriesOffset(depth, lanes, lanes), 4096);
}
/** Offset of the receive ring in a QP segment with @p sq_depth send entries. */
constexpr size_t RqOffset(uint32_t sq_depth) {
  return kSqOffset + size_t{sq_depth} * sizeof(SqEntry);
}
/** Bytes of a QP segment. */
constexpr size_t QpSegmentBytes(uint32_t sq_depth, uint32_t rq_depth) {
  return RoundUp(RqOffset(sq_depth) + size_t{rq_depth} * sizeof(RqEntry), 4096);
}
/** Bytes of an SRQ segment of @p depth entries. */
constexpr size_t SrqSegmentBytes(uint32_t depth) {
  return RoundUp(kSrqEntriesOffset + size_t{depth} * sizeof(RqEntry), 4096);
}
/** Lane @p lane of the application segment. */
constexpr size_t AppLaneOffset(uint32_t lane) {
  return sizeof(AppSegment) + size_t{lane} * sizeof(AppLane);
}
/** Bytes of the application segment of @p lanes lanes. */
constexpr size_t AppSegmentBytes(uint32_t lanes) { return RoundUp(AppLaneOffset(lanes), 4096); }

/** Lane @p lane of the segment at @p seg (lane below the segment's lanes). */
inline AppLane* LaneOf(AppSegment* seg, uint32_t lane) {
  return reinterpret_cast<AppLane*>(reinterpret_cast<uint8_t*>(seg) + AppLaneOffset(lane));
}
inline CqLane* LaneOf(CqSegment* seg, uint32_t lane) {
  return reinterpret_cast<CqLane*>(reinterpret_cast<uint8_t*>(seg) + CqLaneOffset(lane));
}

}  // namespace metaroce::ipc

#endif  // METAROCE_MR_IPC_RING_H
