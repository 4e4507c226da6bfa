/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * Verbs-level types of the transport engine: work requests, completions,
 * access flags and QP states. They mirror libibverbs closely so the verbs
 * shim maps them one to one, but carry no rdma-core dependency.
 */

#ifndef METAROCE_MR_TRANSPORT_TYPES_H
#define METAROCE_MR_TRANSPORT_TYPES_H

#include <cstdint>

#include "absl/container/inlined_vector.h"

namespace metaroce::transport {

/** Engine time: nanoseconds on the caller's clock. The engine never reads a clock. */
using TimeNs = uint64_t;
/** "No deadline". */
inline constexpr TimeNs kNever = UINT64_MAX;

/** Memory region access rights (values as IBV_ACCESS_*). */
namespace access {
inline constexpr uint32_t kLocalWrite = 1u << 0;
inline constexpr uint32_t kRemoteWrite = 1u << 1;
inline constexpr uint32_t kRemoteRead = 1u << 2;
inline constexpr uint32_t kRemoteAtomic = 1u << 3;
inline constexpr uint32_t kAll = kLocalWrite | kRemoteWrite | kRemoteRead | kRemoteAtomic;
}  // namespace access

/** Send work request operations. */
enum class Opcode : uint8_t {
  kWrite,
  kWriteImm,
  kSend,
  kSendImm,
  kRead,
  kAtomicFetchAdd,
  kAtomicCompSwap,
};

/** Send work request flags (values as IBV_SEND_*). */
namespace send_flags {
inline constexpr uint32_t kFence = 1u << 0;
inline constexpr uint32_t kSignaled = 1u << 1;
inline constexpr uint32_t kSolicited = 1u << 2;
}  // namespace send_flags

/** One scatter/gather element: local memory covered by the region of lkey. */
struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

using SgList = absl::InlinedVector<Sge, 4>;

/** A send-queue work request. */
struct SendWr {
  uint64_t wr_id = 0;
  Opcode opcode = Opcode::kSend;
  uint32_t flags = send_flags::kSignaled;
  SgList sg;
  uint32_t imm = 0;          ///< kWriteImm, kSendImm
  uint64_t remote_addr = 0;  ///< WRITE, READ, ATOMIC
  uint32_t rkey = 0;         ///< WRITE, READ, ATOMIC
  uint64_t compare_add = 0;  ///< ATOMIC: add value or compare value
  uint64_t swap = 0;         ///< kAtomicCompSwap
};

/** A receive-queue work request. */
struct RecvWr {
  uint64_t wr_id = 0;
  SgList sg;
};

/** Completion status (same meaning as enum ibv_wc_status). */
enum class WcStatus : uint8_t {
  kSuccess,
  kLocLenErr,  ///< receive buffer smaller than the message
  kLocQpOpErr,
  kLocProtErr,  ///< local lkey / bounds / access failure
  kWrFlushErr,  ///< flushed because the QP entered the error state
  kBadRespErr,
  kRemInvReqErr,  ///< responder: invalid request (e.g. its receive was too small)
  kRemAccessErr,  ///< responder: bad rkey, bounds or permission
  kRemOpErr,
  kRetryExcErr,     ///< transport retries exhausted: the connection failed
  kRnrRetryExcErr,  ///< receiver-not-ready retries exhausted
  kGeneralErr,
};

/** What a completion completes (same meaning as enum ibv_wc_opcode). */
enum class WcOpcode : uint8_t {
  kSend,
  kRdmaWrite,
  kRdmaRead,
  kCompSwap,
  kFetchAdd,
  kRecv,
  kRecvRdmaWithImm,
};

/** One completion-queue entry. */
struct Completion {
  uint64_t wr_id = 0;
  WcStatus status = WcStatus::kSuccess;
  WcOpcode opcode = WcOpcode::kSend;
  bool has_imm = false;
  uint32_t imm = 0;
  uint32_t byte_len = 0;  ///< receives and READs: bytes placed
  uint32_t qp_num = 0;
};

/** QP states (as enum ibv_qp_state; RTR/RTS are one "connected" state here). */
enum class QpState : uint8_t { kReset, kInit, kReady, kError };

/** Name of a completion status ("success", "remote access error", ...). */
const char* WcStatusName(WcStatus s);

}  // namespace metaroce::transport

#endif  // METAROCE_MR_TRANSPORT_TYPES_H
