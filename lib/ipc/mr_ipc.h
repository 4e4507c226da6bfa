/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * The channel between metaroced and the applications it serves (doc/daemon.md).
 *
 * Control: one SOCK_SEQPACKET Unix socket per application. Every request is
 * one datagram, a CtlHeader followed by the body of its op; the daemon answers
 * each with one datagram carrying the same op and seq, a status (0 or a
 * positive errno value) and the reply body, plus file descriptors (SCM_RIGHTS)
 * where the op says so. Control calls are rare: simple beats fast here.
 *
 * Fast path: shared-memory rings (mr_ipc_ring.h) in memfd segments the daemon
 * creates and passes to the application, no syscall per work request or
 * completion. Everything an application writes (requests, ring entries,
 * indices) is untrusted input to the daemon: it validates every field.
 *
 * Plain structs with fixed-width fields only; both sides are built from this
 * header, so the layout is pinned with static_asserts, not versioned per field.
 */

#ifndef METAROCE_MR_IPC_H
#define METAROCE_MR_IPC_H

#include <cstddef>
#include <cstdint>

namespace metaroce::ipc {

/** Bumped whenever anything in this header or mr_ipc_ring.h changes layout or meaning. */
inline constexpr uint32_t kAbiVersion = 6;
/** Where the daemon listens unless told otherwise (config `socket`, env METAROCE_SOCKET). */
inline constexpr char kDefaultSocketPath[] = "/run/metaroce/metaroced.sock";
/** Environment variable that overrides the socket path for applications. */
inline constexpr char kSocketEnv[] = "METAROCE_SOCKET";
/** Largest control datagram either side sends. */
inline constexpr size_t kMaxCtlBytes = 512;
/** Most lanes a segment has (mr_ipc_ring.h): one per shard of the daemon (runtime::kMaxShards). */
inline constexpr uint32_t kMaxLanes = 16;
/** Most descriptors one datagram carries (kHello's: two, then one per lane). */
inline constexpr int kMaxCtlFds = 2 + kMaxLanes;
/** A lane not known yet (CreateQpRep::lane of a QP placed at RTR). */
inline constexpr uint32_t kNoLane = 0xffffffff;
/** Length of the device name (ibv_get_device_name), with its NUL. */
inline constexpr size_t kDeviceNameBytes = 16;

/** Control operations. */
enum class Op : uint16_t {
  /**
   * First message: versions, limits. Reply fds: [app segment, async-event
   * eventfd, then each lane's kick eventfd (AppLane::shard_asleep)].
   */
  kHello = 1,
  kAllocPd = 2,             ///< -> handle
  kDeallocPd = 3,           ///< handle
  kRegMr = 4,               ///< RegMrReq [+ memfd] -> RegMrRep
  kDeregMr = 5,             ///< handle
  kCreateCompChannel = 6,   ///< fds: [eventfd the daemon signals] -> handle
  kDestroyCompChannel = 7,  ///< handle
  kCreateCq = 8,            ///< CreateCqReq -> CreateCqRep, fds: [CQ segment]
  kDestroyCq = 9,           ///< handle
  kCreateQp = 10,           ///< CreateQpReq -> CreateQpRep, fds: [QP segment]
  kConnectQp =
      11,  ///< ConnectQpReq -> ConnectQpRep (the RTR transition): the QP joins its peer's stream
  kDestroyQp = 12,   ///< handle
  kQueryQp = 13,     ///< handle -> QueryQpRep
  kSetQpError = 14,  ///< handle: the QP enters the error state, its work is flushed
  kModifyQp = 15,    ///< ModifyQpReq: the attributes of ibv_modify_qp the engine keeps
  kCreateSrq = 16,   ///< CreateSrqReq -> CreateSrqRep, fds: [SRQ segment]
  kDestroySrq = 17,  ///< handle; EBUSY while a QP uses it
  kModifySrq = 18,   ///< ModifySrqReq: arm the limit event (IBV_SRQ_LIMIT)
  kQuerySrq = 19,    ///< handle -> QuerySrqRep
};

/** Starts every datagram, both directions. */
struct CtlHeader {
  uint16_t op = 0;  ///< Op
  uint16_t reserved = 0;
  uint32_t seq = 0;       ///< chosen by the application, echoed in the reply
  int32_t status = 0;     ///< reply: 0 or a positive errno value; request: 0
  uint32_t body_len = 0;  ///< bytes after the header
};
static_assert(sizeof(CtlHeader) == 16);

/** A request or reply that names one object (DeallocPd, DeregMr, Destroy*, AllocPd's reply). */
struct HandleMsg {
  uint32_t handle = 0;
  uint32_t reserved = 0;
};
static_assert(sizeof(HandleMsg) == 8);

struct HelloReq {
  uint32_t abi_version = kAbiVersion;
  uint32_t reserved = 0;
};
static_assert(sizeof(HelloReq) == 8);

/** What the shim reports through ibv_query_device / ibv_query_port / ibv_query_gid. */
struct HelloRep {
  uint32_t abi_version = kAbiVersion;
  uint32_t app_id = 0;  ///< this application's number in the daemon (telemetry)
  char device_name[kDeviceNameBytes] = {};
  uint64_t node_guid = 0;  ///< non-zero, stable for the daemon's address
  uint8_t gid[16] = {};    ///< RoCEv2-style: ::ffff:a.b.c.d for IPv4, the address for IPv6
  uint16_t lid = 0;        ///< non-zero; LID-only address vectors resolve through it
  uint16_t udp_port = 0;   ///< the daemon's UDP destination port (shard 0)
  uint32_t mtu_bytes = 0;  ///< payload per packet (ibv_mtu rounds down to it)
  uint64_t max_msg_bytes = 0;
  uint64_t max_mr_bytes = 0;  ///< per application (config `max_mr_bytes`)
  uint32_t max_qp = 0;        ///< the per-application limits of the config
  uint32_t max_cq = 0;
  uint32_t max_mr = 0;
  uint32_t max_pd = 0;
  uint32_t max_qp_wr = 0;
  uint32_t max_cqe = 0;
  uint32_t max_sge = 0;
  uint32_t max_inline = 0;
  uint32_t max_qp_rd_atom = 0;  ///< READs/atomics one QP may have outstanding
  uint32_t max_comp_channels = 0;
  uint32_t link_speed_mbps = 0;  ///< 0: unknown
  uint32_t max_srq = 0;          ///< SRQs per application (max_srq_wr is max_qp_wr)
  uint32_t lanes = 0;            ///< lanes of every segment: the daemon's shards, 1..kMaxLanes
  uint32_t reserved = 0;
};
static_assert(sizeof(HelloRep) == 128);

/** How the daemon reaches a region's bytes. */
enum class MrMemory : uint32_t {
  kCrossMemory = 0,  ///< process_vm_readv/writev into the application (any memory)
  kSharedFd = 1,     ///< the memfd passed with the request backs [map_va, map_va + map_len)
};

struct RegMrReq {
  uint32_t pd = 0;
  uint32_t access = 0;  ///< IBV_ACCESS_* (optional bits already dropped)
  uint64_t addr = 0;    ///< the application's address of the region
  uint64_t length = 0;
  uint64_t iova = 0;    ///< what remote peers name it by (ibv_reg_mr_iova2); = addr usually
  uint32_t memory = 0;  ///< MrMemory
  uint32_t reserved = 0;
  uint64_t map_va = 0;      ///< kSharedFd: application address of the memfd's byte map_offset
  uint64_t map_len = 0;     ///< kSharedFd: bytes of the memfd mapped there (covers the region)
  uint64_t map_offset = 0;  ///< kSharedFd: file offset of map_va
};
static_assert(sizeof(RegMrReq) == 64);

struct RegMrRep {
  uint32_t handle = 0;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  uint32_t memory = 0;  ///< the MrMemory the daemon uses (it may fall back to kCrossMemory)
};
static_assert(sizeof(RegMrRep) == 16);

struct CreateCqReq {
  uint32_t depth = 0;    ///< entries asked for (cqe); the ring has the next power of two
  uint32_t channel = 0;  ///< comp channel handle, 0: none
};
static_assert(sizeof(CreateCqReq) == 8);

struct CreateCqRep {
  uint32_t handle = 0;
  uint32_t depth = 0;          ///< ring entries (>= the request)
  uint64_t segment_bytes = 0;  ///< size of the CQ segment
};
static_assert(sizeof(CreateCqRep) == 16);

struct CreateQpReq {
  uint32_t pd = 0;
  uint32_t send_cq = 0;
  uint32_t recv_cq = 0;
  uint32_t max_send_wr = 0;
  uint32_t max_recv_wr = 0;
  uint32_t max_send_sge = 0;
  uint32_t max_recv_sge = 0;
  uint32_t max_inline = 0;
  uint32_t sq_sig_all = 0;
  uint32_t srq = 0;  ///< SRQ handle, 0: none (the QP then has its own receive ring)
};
static_assert(sizeof(CreateQpReq) == 40);

struct CreateQpRep {
  uint32_t handle = 0;
  uint32_t qpn = 0;          ///< < 2^24, as verbs programs print and parse it
  uint32_t sq_depth = 0;     ///< ring entries (power of two >= max_send_wr)
  uint32_t rq_depth = 0;     ///< 1 (an unused slot) for a QP on an SRQ
  uint32_t max_send_wr = 0;  ///< granted caps (written back into ibv_qp_init_attr.cap)
  uint32_t max_recv_wr = 0;
  uint32_t max_send_sge = 0;
  uint32_t max_recv_sge = 0;
  uint32_t max_inline = 0;
  /** The shard holding the QP: its doorbells go to this lane; kNoLane: placed at RTR. */
  uint32_t lane = 0;
  uint64_t segment_bytes = 0;
};
static_assert(sizeof(CreateQpRep) == 48);

/** The RTR transition: where the peer QP lives. */
struct ConnectQpReq {
  uint32_t qp = 0;
  uint32_t dest_qpn = 0;
  uint8_t dest_gid[16] = {};  ///< as in ibv_ah_attr.grh.dgid; all zero: use dest_lid
  uint16_t dest_lid = 0;
  uint8_t min_rnr_timer = 0;  ///< IB encoding (0..31), what this QP asks senders to wait
  uint8_t rnr_retry = 0;      ///< 0..7, 7 = forever
  uint8_t retry_cnt = 0;      ///< 0..7
  uint8_t timeout = 0;        ///< IB encoding (4.096 us * 2^timeout), 0: the engine's default
  uint8_t reserved[2] = {};
};
static_assert(sizeof(ConnectQpReq) == 32);

/** Where the QP lives from now on. */
struct ConnectQpRep {
  uint32_t lane = 0;  ///< its doorbells go to this lane
  uint32_t reserved = 0;
};
static_assert(sizeof(ConnectQpRep) == 8);

/** Which fields of ModifyQpReq are given (the IBV_QP_* attribute they come from). */
namespace modify {
inline constexpr uint32_t kAccess = 1u << 0;       ///< IBV_QP_ACCESS_FLAGS
inline constexpr uint32_t kRetryCnt = 1u << 1;     ///< IBV_QP_RETRY_CNT
inline constexpr uint32_t kRnrRetry = 1u << 2;     ///< IBV_QP_RNR_RETRY
inline constexpr uint32_t kMinRnrTimer = 1u << 3;  ///< IBV_QP_MIN_RNR_TIMER
}  // namespace modify

/** Sent by every ibv_modify_qp that names one of the attributes of `modify`. */
struct ModifyQpReq {
  uint32_t qp = 0;
  uint32_t mask = 0;          ///< modify::* bits
  uint32_t access_flags = 0;  ///< IBV_ACCESS_REMOTE_{WRITE,READ,ATOMIC} (others ignored)
  uint8_t retry_cnt = 0;      ///< 0..7
  uint8_t rnr_retry = 0;      ///< 0..7, 7 = forever
  uint8_t min_rnr_timer = 0;  ///< IB encoding 0..31
  uint8_t reserved = 0;
};
static_assert(sizeof(ModifyQpReq) == 16);

struct CreateSrqReq {
  uint32_t pd = 0;
  uint32_t max_wr = 0;   ///< receives outstanding in the ring (the ring has the next power of two)
  uint32_t max_sge = 0;  ///< <= HelloRep::max_sge
  uint32_t srq_limit = 0;  ///< armed limit (IBV_EVENT_SRQ_LIMIT_REACHED below it), 0: none
};
static_assert(sizeof(CreateSrqReq) == 16);

struct CreateSrqRep {
  uint32_t handle = 0;
  uint32_t depth = 0;    ///< ring entries (power of two >= max_wr)
  uint32_t max_wr = 0;   ///< granted (written back into ibv_srq_init_attr.attr)
  uint32_t max_sge = 0;  ///< granted
  uint64_t segment_bytes = 0;
  uint32_t lane = 0;  ///< the shard holding the SRQ: its doorbells go to this lane
  uint32_t reserved = 0;
};
static_assert(sizeof(CreateSrqRep) == 32);

/** ibv_modify_srq with IBV_SRQ_LIMIT: the event fires once the SRQ holds fewer receives. */
struct ModifySrqReq {
  uint32_t srq = 0;
  uint32_t srq_limit = 0;  ///< 0 disarms
};
static_assert(sizeof(ModifySrqReq) == 8);

struct QuerySrqRep {
  uint32_t max_wr = 0;
  uint32_t max_sge = 0;
  uint32_t srq_limit = 0;  ///< 0 once the event fired (as verbs: it must be armed again)
  uint32_t posted = 0;     ///< receives the SRQ holds now (taken from the ring, not yet used)
};
static_assert(sizeof(QuerySrqRep) == 16);

/** QP states the daemon reports (the engine's view; the shim keeps RESET/INIT/RTR/RTS/SQD). */
enum class QpStatus : uint32_t { kIdle = 0, kReady = 1, kError = 2 };

struct QueryQpRep {
  uint32_t status = 0;  ///< QpStatus
  uint32_t reserved = 0;
};
static_assert(sizeof(QueryQpRep) == 8);

}  // namespace metaroce::ipc

#endif  // METAROCE_MR_IPC_H
