/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/*
 * Engine internals. Object model (doc/transport.md):
 *   Connection  one per peer host: paths, windows, message pool, queues
 *   TxPath      one per local path: PSN space, in-flight ring, RTT, health;
 *               on one plane (planes.cc)
 *   RxPath      one per peer path: cumulative PSN + 256-bit SACK, ACK state
 *   Qp          one per local QP = stream: send queue, receive queue, the
 *               receive window of the peer's messages, completion order
 *   TxMsg       a message this host sends: a request, or a READ/ATOMIC response
 */

#ifndef METAROCE_TRANSPORT_ENGINE_PRIVATE_H
#define METAROCE_TRANSPORT_ENGINE_PRIVATE_H

#include <array>
#include <bit>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "chunk_set_private.h"
#include "congestion_private.h"
#include "direct_cache_private.h"
#include "fair_share_private.h"
#include "mr_engine.h"
#include "protection_private.h"
#include "ring_private.h"
#include "secure_rng_private.h"

namespace metaroce::transport {

/** Control packets (NAKs, probe replies, rejects) queued at most, whatever peers send. */
inline constexpr size_t kMaxQueuedControl = 1024;

/** Reference to a pooled TxMsg; gen tells a reused slot from the old message. */
struct MsgRef {
  uint32_t idx = 0;
  uint32_t gen = 0;
};

/**
 * The scalar state of a TxMsg: reset to these defaults in one assignment
 * when a pooled slot is taken again (TxMsg::Recycle), with no destructor,
 * constructor or heap work for the members that own memory.
 */
struct TxMsgFields {
  uint32_t gen = 0;
  uint32_t epoch = 0;  ///< bumped when every chunk must be sent again (RNR)
  bool in_use = false;
  bool is_response = false;
  uint32_t qpn = 0;  ///< local QP (requests) or the local QP that answers (responses)
  wire::PacketType type = wire::PacketType::kWrite;
  uint32_t msn = 0;
  uint32_t len = 0;
  uint32_t num_chunks = 1;
  uint32_t next_chunk = 0;  ///< first chunk never sent
  bool on_ready = false;    ///< queued for first transmission
  bool fifo = false;        ///< queued as its QP's current message (not an RNR resend or response)
  uint32_t quantum = 0;     ///< chunks sent in the current turn
  uint64_t src_va = 0;      ///< a READ response's source (a request's is TxMsg::sg)
  // Header fields.
  uint64_t remote_va = 0;
  uint32_t rkey = 0;
  uint32_t imm = 0;
  uint32_t recv_seq = 0;
  uint64_t operand0 = 0;
  uint64_t operand1 = 0;
  uint64_t orig = 0;
  bool solicited = false;
  // Requester state.
  Opcode opcode = Opcode::kSend;
  uint64_t wr_id = 0;
  bool signaled = false;
  bool fence = false;
  bool done = false;  ///< accepted by the responder, or response complete
  WcStatus status = WcStatus::kSuccess;
  bool atomic_done = false;
  uint32_t retries_left = 0;  ///< message probes left
  TimeNs probe_at = kNever;   ///< when to probe if still not done
  TimeNs probe_backoff = 0;
  uint32_t rnr_left = 0;
  TimeNs rnr_resume_at = kNever;
};

/** A message this host sends. */
struct TxMsg : TxMsgFields {
  SgList sg;               ///< a request's gather list
  ChunkSet delivered;      ///< chunks acknowledged at the path level
  ChunkSet resp_received;  ///< READ: response chunks placed

  /** Makes a pooled slot a new message of generation @p next_gen, keeping its members' memory. */
  void Recycle(uint32_t next_gen) {
    static_cast<TxMsgFields&>(*this) = TxMsgFields{};
    gen = next_gen;
    in_use = true;
    sg.clear();
    delivered.Reset(0);
    resp_received.Reset(0);
  }
};

/** Why a chunk is sent again. */
enum class RetxKind : uint8_t {
  kLoss,      ///< its packet was lost (SACK gap, timeout, failed path)
  kTailLoss,  ///< tail-loss probe: the newest packet of a silent path, on another path
  kMsgProbe,  ///< message probe: every chunk arrived but no stream ACK came (MSG_PROBE flag)
  kResend,    ///< the receiver did not place it (NAK RESEND)
};

/** Chunks [chunk, chunk + count) of a message to send again. */
struct RetxChunk {
  MsgRef msg;
  uint32_t chunk = 0;
  uint32_t count = 1;
  uint16_t prefer_path = UINT16_MAX;  ///< UINT16_MAX: any
  uint16_t avoid_path = UINT16_MAX;   ///< a path not to use while another has room
  RetxKind kind = RetxKind::kLoss;
  /** A stall probe: first in line, past the windows (EngineImpl::PathHasRoom). */
  bool past_window = false;
};

/** One in-flight data packet of a path. */
struct Inflight {
  bool live = false;
  bool probe = false;  ///< a message probe: its chunk had arrived already
  bool copy = false;   ///< a tail-loss probe or rescue: the original's loss is what counts
  uint32_t epoch = 0;
  MsgRef msg;
  uint32_t chunk = 0;
  uint32_t bytes = 0;  ///< as sent (frame or datagram): what the congestion windows count
  TimeNs sent_at = 0;
};

enum class PathState : uint8_t { kActive, kFailed };

/** Sender state of one local path. */
struct TxPath {
  static constexpr uint32_t kMaxRing = 256;  ///< psn - una < 256: the SACK reaches every packet
  uint16_t id = 0;
  uint16_t src_port = 0;
  uint8_t plane = 0;  ///< PlaneOf(its connection, id)
  PathState state = PathState::kActive;
  uint32_t next_psn = 0;
  uint32_t una = 0;  ///< oldest PSN not yet settled (acked or declared lost)
  uint32_t inflight = 0;
  uint64_t spray_credit = 0;   ///< its window, added at each turn it had room (PickPath)
  std::vector<Inflight> ring;  ///< power of two >= window, <= kMaxRing; index psn & mask
  uint32_t mask = 0;
  Inflight& At(uint32_t psn) { return ring[psn & mask]; }
  const Inflight& At(uint32_t psn) const { return ring[psn & mask]; }
  uint32_t window = 0;  ///< packets: the ring's limit (cc bounds the bytes)
  CcWindow cc;
  bool has_rtt = false;
  TimeNs srtt = 0;
  TimeNs rttvar = 0;
  TimeNs rto = 0;
  uint32_t timeouts = 0;  ///< consecutive
  /**
   * The last timeout (PathTimeout), until an ACK says whether the oldest
   * packet it declared lost arrived after all (CheckTimeout): when, that
   * PSN, when it was sent, and the window before the timeout cut it.
   */
  TimeNs timeout_at = kNever;
  uint32_t timeout_psn = 0;
  TimeNs timeout_sent_at = 0;
  uint32_t timeout_cwnd = 0;
  /**
   * The last tail-loss probe, until an ACK says whether the packet it
   * repeated arrived after all (CheckTailProbe): when, that PSN, and when it
   * was sent.
   */
  TimeNs tlp_at = kNever;
  uint32_t tlp_psn = 0;
  TimeNs tlp_psn_sent_at = 0;
  /**
   * Failed for falling silent while other paths delivered later packets (its
   * route is dead, not the peer): its first probes come quickly (ProbeWait).
   */
  bool rerouting = false;
  /** A PLB move waiting for its probe (kPlbCarefulNs): the port, and the probe's number and time.
   */
  uint16_t plb_port = 0;  ///< 0: none
  wire::ProbeBody plb_probe{};
  bool plb_probe_due = false;  ///< the probe is still to go out
  TimeNs plb_expires = 0;      ///< unanswered by then: forgotten
  /** The last stall probe (RtoDeadline): the next waits a backed-off RTO after it. */
  TimeNs stall_probe_at = 0;
  TimeNs progress_at = 0;        ///< last ACK that settled a packet of this path
  TimeNs delivered_sent_at = 0;  ///< newest send time of a packet of this path the peer got
  TimeNs last_sent_at = 0;       ///< newest data packet (not a probe)
  bool tlp_sent = false;         ///< a tail-loss probe went out since
  bool rescue_sent = false;      ///< the newest chunk went out on another path after the probe
  uint32_t highest_acked = 0;    ///< newest PSN known to have arrived (valid while has_acked)
  bool has_acked = false;
  TimeNs reorder_at = kNever;  ///< when a hole below highest_acked is late enough to be lost
  TimeNs failed_at = kNever;
  TimeNs probe_at = kNever;
  uint32_t probe_seq = 0;
  /**
   * Source ports of the last probes, by probe_seq % kProbePortsKept: a reply
   * that comes back after the next probe went out (a slow, loaded peer) still
   * proves its port works.
   */
  std::array<uint16_t, 4> probe_ports{};
  uint32_t unanswered_probes = 0;  ///< since the path failed; spaces the probes out
  uint32_t last_rx_pkts = 0;       ///< ACK counters already accounted
  uint32_t last_ce_pkts = 0;
  uint64_t tx_pkts = 0, retx_pkts = 0, lost_pkts = 0, ce_pkts = 0, failures = 0;
  uint64_t repaths = 0;  ///< moved to a fresh source port for congestion
  // Loss health: packets sent and lost in the current window, and the loss
  // ratio of the last complete window.
  uint32_t health_sent = 0;
  uint32_t health_lost = 0;
  double loss_ratio = 0;
};

/** Receiver state of one peer path. */
struct RxPath {
  static constexpr uint32_t kWords = 5;  ///< cum itself plus the 256 PSNs the SACK reaches
  uint32_t cum = 0;                      ///< every PSN before it arrived or was given up
  uint64_t bits[kWords] = {};            ///< bit i: PSN cum + i arrived (bit 0 is always clear)
  uint32_t rx_pkts = 0;
  uint32_t ce_pkts = 0;
  uint32_t echo_ts = 0;
  TimeNs echo_rx_at = 0;
  bool echo_ce = false;
  bool has_echo = false;  ///< echo_ts is a data packet's (the path has received one)
  uint32_t unacked = 0;
  bool queued = false;  ///< on the connection's ACK queue
  bool ack_now = false;
  TimeNs ack_due = kNever;
  uint32_t last_qpn = 0;    ///< local QP of the last data packet: its stream ACK rides along
  uint16_t reply_port = 0;  ///< our source port for ACKs/NAKs/probe replies of this path
};

enum class ConnState : uint8_t { kConnecting, kEstablished, kFailed };

struct PendingNak {
  uint16_t path_id;
  wire::NakBody nak;
};

/**
 * A stream whose QP was destroyed, as far as it had accepted the peer's
 * messages (config::kClosedStreamsPerConn).
 */
struct ClosedStream {
  uint32_t qpn = 0;
  uint32_t remote_qpn = 0;
  uint32_t msn_next = 0;
  bool ack_pending = false;  ///< send its stream ACK with the next ACK of the connection
};

/** A plane of a connection (planes.cc). */
struct PlaneState {
  bool failed = false;  ///< failed whole: its paths are probed, the first answer brings it back
  uint64_t failures = 0;
};

/**
 * A lower bound a peer's stall raised (RaiseStallFloor): 5/4 of the stall,
 * halved each config::kRtoFloorHalfLifeNs with no new stall (at the next RTT
 * sample), gone below the bound's own minimum.
 */
struct StallFloor {
  TimeNs ns = 0;
  TimeNs at = 0;  ///< set or last halved at
  void Decay(TimeNs now, TimeNs gone_below);
};

struct Connection {
  uint32_t local_id = 0;
  uint32_t remote_id = 0;
  ConnState state = ConnState::kConnecting;
  PeerAddr peer;
  uint32_t nonce = 0;   ///< of our CONN_REQ
  uint64_t cookie = 0;  ///< the peer's CONN_RETRY cookie, echoed in our CONN_REQ
  uint64_t peer_incarnation = 0;
  uint32_t peer_stream_window = 0;  ///< messages per stream the peer's receiver tracks
  TimeNs idle_since = kNever;       ///< no local QP since (kNever: has QPs, or not stamped yet)
  bool close_pending = false;       ///< send CONN_CLOSE, then forget it
  wire::ConnReason close_reason = wire::ConnReason::kNone;
  uint64_t rx_state_bytes = 0;  ///< chunk-arrival bitmaps of the peer's incomplete messages
  TimeNs req_at = 0;            ///< next CONN_REQ (kConnecting)
  uint8_t req_waits = 0;        ///< CONN_REQs sent unanswered: the next wait doubles
  bool accept_pending = false;
  uint32_t accept_nonce = 0;
  /** The peer advertised caps::kRateHint: our openings carry our hint. */
  bool peer_reads_hint = false;
  /** The peer advertised caps::kIdle: our data says when we have nothing more queued. */
  bool peer_takes_idle = false;
  uint16_t peer_paths = 0;
  uint32_t chunk_bytes = 0;  ///< min of both sides' max_payload
  /**
   * Planes in use: min of both sides' (1 until established). The peer's
   * plane 0 is peer.ip / peer.mac; planes 1.. are below, the MACs learnt
   * from what arrives on them.
   */
  uint8_t planes = 1;
  std::array<wire::IpAddr, wire::kMaxPlanes> peer_plane_ip{};
  std::array<wire::MacAddr, wire::kMaxPlanes> peer_plane_mac{};
  std::array<PlaneState, wire::kMaxPlanes> plane_state{};
  /**
   * Per plane, the headers of our frames to the peer there, built on the
   * plane's first frame (Ethernet framing) and forgotten when an address
   * they hold changes (ForgetEncap()).
   */
  std::vector<wire::EncapTemplate> encap;
  std::vector<TxPath> paths;
  std::vector<RxPath> rx_paths;
  uint32_t inflight = 0;
  CcWindow cc;                   ///< bounds the bytes in flight over all paths
  uint32_t next_path = 0;        ///< spraying round robin
  TimeNs delivered_sent_at = 0;  ///< newest send time of a data packet the peer acknowledged
  uint64_t spray_full = 0;  ///< the credit that sends a packet: the widest path window (PickPath)
  /** With several planes, the widest window of each plane's paths (PickPath). */
  std::array<uint64_t, wire::kMaxPlanes> spray_plane_full{};
  /**
   * Paths in kFailed and paths with plb_probe_due (SetPathState(),
   * SetPlbProbeDue()): a visit looks for probes to send only when there
   * are some, not across every path.
   */
  uint16_t failed_paths = 0;
  uint16_t plb_probes_due = 0;
  std::vector<TxMsg> msgs;
  std::vector<uint32_t> free_msgs;
  Ring<MsgRef> ready;
  Ring<RetxChunk> retx;
  Ring<PendingNak> naks;
  Ring<std::pair<uint16_t, wire::ProbeBody>> probe_replies;
  TimeNs probe_min = kNever;  ///< earliest message probe or RNR resume of its QPs
  Ring<uint16_t> ack_queue;   ///< rx paths with an ACK pending
  /**
   * The peer's clock (tx_ts_ns) on the newest ACK_REQ packet: a packet sent
   * before it that arrives after it (on a slower path) is acknowledged at
   * once too, as if it had come in time for the request (rx.cc, AckAsked).
   */
  uint32_t ack_asked_ts = 0;
  bool ack_asked = false;            ///< ack_asked_ts holds a request
  std::vector<uint32_t> qps;         ///< local QPs on this connection
  std::vector<uint32_t> dirty;       ///< local QPs whose stream ACK must be sent
  std::vector<ClosedStream> closed;  ///< a ring, the oldest at closed_next once full
  uint32_t closed_next = 0;
  uint32_t closed_acks = 0;  ///< entries of closed with ack_pending
  // The receiver's fair share (fair_share.cc): this connection as a sender to us ...
  uint64_t share_bytes = 0;      ///< bytes of its data packets in the current interval
  uint64_t share_ce_bytes = 0;   ///< of which arrived CE-marked
  bool share_listed = false;     ///< on share_senders
  TimeNs share_listed_at = 0;    ///< when it was put on share_senders
  TimeNs share_until = 0;        ///< its ACKs carry our hint until (it sent recently)
  uint32_t hint_sent_mbps = 0;   ///< in our last ACK or opening (observability)
  uint32_t share_last_mbps = 0;  ///< its rate over the last allocation interval (observability)
  TimeNs share_measured_at = kNever;  ///< the end of the last interval it was measured over
  bool share_new = false;   ///< first listed in the current interval: its demand is unknown
  bool share_idle = false;  ///< its last data packet said IDLE: counted out until it sends again
  uint32_t share_idle_mbps = 0;  ///< then: the hint its ACKs carry (the level it was measured at)
  bool share_returned = false;  ///< it sends again: at most that hint until an interval measures it
  bool share_left_counted = false;  ///< counted in share_left
  uint32_t share_demand_mbps = 0;   ///< what the last allocation took it to want
  // ... and the peer's hint for what we send.
  uint32_t peer_hint_mbps = 0;  ///< 0: no limit
  // The pacer (rx.cc UpdatePacer, tx.cc Emit): min(window / RTT x gain, hint).
  TimeNs srtt = 0;                ///< smoothed RTT of every path's samples (0: none yet)
  uint32_t pace_mbps = 0;         ///< 0: not paced
  uint32_t pace_burst_bytes = 0;  ///< window pacing: its credit after a pause (0: the hint's)
  TimeNs pace_at = 0;             ///< no data packet before
  bool pace_armed = false;  ///< pace_at is a deadline: set by a send, cleared by the visit after
  TimeNs all_failed_since = kNever;
  TimeNs last_reroute_at = kNever;  ///< a path of it was last rerouted (Reroute)
  bool pace_phase_due = false;      ///< the pacer draws its random phase at the next send
  // The delay signal (congestion.cc): queueing is RTT above the base.
  TimeNs base_rtt = kNever;   ///< smallest RTT sample of any of its paths
  StallFloor rto_floor;       ///< every path's RTO is at least this (CheckTimeout)
  StallFloor tlp_floor;       ///< every path's tail-loss probe waits at least this (CheckTailProbe)
  TimeNs base_rtt_at = 0;     ///< taken at; renewed when older than config::kCcBaseRttWindowNs
  TimeNs last_rx_at = 0;      ///< any valid packet from the peer
  TimeNs heard_again_at = 0;  ///< the first packet after rto_min or more of the peer's silence
  /**
   * A QP joined while it was established with none: nothing was kept alive
   * before, so the peer's silence counts from the next poll (ConnDeadline
   * is then due), not from last_rx_at.
   */
  bool qps_rejoined = false;
  TimeNs keepalive_at = 0;  ///< earliest next keep-alive probe
  bool keepalive_pending = false;
  // Work lists (timers.cc).
  bool on_active = false;    ///< on the engine's active list
  TimeNs timer_at = kNever;  ///< its live timer-heap entry (kNever: none); <= its deadline
  // Observability only (GetConnections): packets and bytes sent on it, valid
  // packets and bytes received on it, and the CE-marked data packets among them.
  uint64_t tx_pkts = 0, tx_bytes = 0, rx_pkts = 0, rx_bytes = 0, rx_ce_pkts = 0;
};

/** A posted receive. */
struct PostedRecv {
  uint64_t wr_id = 0;
  SgList sg;
  uint64_t total = 0;
  uint32_t pd = 0;  ///< its queue's PD: the SGEs' lkeys are checked against it
};

/** A shared receive queue. */
struct Srq {
  uint32_t pd = 0;
  uint64_t owner = 0;  ///< its PD's owner: only QPs of the same owner use it
  uint32_t max_wr = 0;
  uint32_t max_sge = 0;
  uint32_t limit = 0;  ///< armed limit event, 0: none
  uint32_t qps = 0;    ///< QPs taking receives from it
  Ring<PostedRecv> pool;
};

/** Receive-side state of one message of the peer's on a stream. */
struct RxMsg {
  bool active = false;
  uint32_t msn = 0;
  wire::PacketType type = wire::PacketType::kWrite;
  uint32_t len = 0;
  ChunkSet got;
  bool failed = false;                           ///< refused for good (access, length)
  WcStatus local_status = WcStatus::kLocLenErr;  ///< failed: how its receive completes here
  uint64_t state_bytes = 0;                      ///< of `got`, charged to the connection
  wire::NakCode fail_code = wire::NakCode::kRemoteAccess;
  wire::NakDetail fail_detail = wire::NakDetail::kNone;
  TimeNs nak_at = 0;  ///< last NAK sent for it (rate limit)
  bool nak_sent = false;
  uint32_t recv_seq = 0;
  uint32_t imm = 0;
  bool solicited = false;
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint64_t operand0 = 0;
  uint64_t operand1 = 0;
};

struct Qp {
  uint32_t qpn = 0;
  QpAttr attr;
  uint64_t owner = 0;  ///< its PD's owner tag: every MemoryAccess call for it passes this
  QpState state = QpState::kReset;
  uint32_t conn = 0;  ///< local id of its connection
  /** The same connection; it outlives its QPs (a failed one is dropped only once none is left). */
  Connection* connection = nullptr;
  uint32_t remote_qpn = 0;
  /** connection->rx_pkts when ConnectQp ran: unchanged, nothing was heard from the peer since. */
  uint64_t rx_mark = 0;
  // Send side.
  Ring<MsgRef> sq;         ///< posting order
  uint32_t sq_sched = 0;   ///< sq index of the first message not yet released to the scheduler
  uint32_t sq_tx = 0;      ///< sq index of the message whose chunks go out now
  bool tx_queued = false;  ///< that message is on the connection's ready queue
  uint32_t next_msn = 0;
  uint32_t next_recv_seq = 0;
  uint32_t peer_msn_next = 0;  ///< from stream ACKs
  uint32_t rd_atomic_pending = 0;
  bool flushed = false;         ///< FailQp ran: work requests and receives flushed
  bool has_failed_msg = false;  ///< a message of the peer's was refused: nothing after it is placed
  uint32_t failed_msn = 0;
  // Receive side.
  /** Its own receives, or (attr.srq) those bound to the peer's messages so far. */
  Ring<PostedRecv> rq;
  uint32_t rq_base = 0;  ///< recv_seq of rq.front()
  uint32_t msn_next = 0;
  /** Messages from msn_next on; a power-of-two ring that grows as far as the peer runs ahead. */
  std::vector<RxMsg> window;
  bool dirty = false;

  /** The slot of @p msn if the ring covers it, else nullptr. */
  RxMsg* Window(uint32_t msn) {
    const uint32_t d = msn - msn_next;
    return d < window.size() ? &window[msn & (window.size() - 1)] : nullptr;
  }
  /** The slot of @p msn, growing the ring to cover it. */
  RxMsg& WindowGrow(uint32_t msn) {
    const uint32_t d = msn - msn_next;
    if (d >= window.size()) {
      std::vector<RxMsg> bigger(std::bit_ceil(std::max<uint32_t>(d + 1, 8)));
      for (RxMsg& m : window) {
        if (m.active) bigger[m.msn & (bigger.size() - 1)] = std::move(m);
      }
      window = std::move(bigger);
    }
    return window[msn & (window.size() - 1)];
  }
};

class EngineImpl {
 public:
  EngineImpl(const EngineConfig& cfg, MemoryAccess* mem);

  // engine.cc: verbs.
  absl::StatusOr<uint32_t> AllocPd(uint64_t owner);
  uint32_t NewQpn();
  absl::Status DeallocPd(uint32_t pd);
  absl::StatusOr<uint32_t> CreateCq(uint32_t depth);
  absl::Status DestroyCq(uint32_t cq);
  /** @p qpn: the caller's number (checked), 0: NewQpn(). */
  absl::StatusOr<uint32_t> CreateQp(const QpAttr& attr, uint32_t qpn);
  absl::Status DestroyQp(uint32_t qpn);
  absl::Status ConnectQp(uint32_t qpn, const PeerAddr& peer, uint32_t remote_qpn);
  absl::Status SetQpError(uint32_t qpn);
  absl::Status UpdateQp(uint32_t qpn, const QpAttr& attr);
  size_t TakeReadyCqs(std::span<uint32_t> out);
  absl::Status PostSend(TimeNs now, uint32_t qpn, const SendWr& wr);
  absl::Status PostRecv(uint32_t qpn, const RecvWr& wr);
  // srq.cc: shared receive queues.
  absl::StatusOr<uint32_t> CreateSrq(uint32_t pd, uint32_t max_wr, uint32_t max_sge);
  absl::Status DestroySrq(uint32_t srq);
  absl::Status ArmSrqLimit(uint32_t srq, uint32_t limit);
  absl::StatusOr<SrqInfo> QuerySrq(uint32_t srq) const;
  absl::Status PostSrqRecv(uint32_t srq, const RecvWr& wr);
  /** A receive of @p wr for a queue in @p pd of @p max_sge SGEs (lkeys checked). */
  absl::StatusOr<PostedRecv> MakeRecv(uint32_t pd, uint32_t max_sge, const RecvWr& wr) const;
  /**
   * Whether the receive that message @p msn (numbered @p recv_seq by the peer)
   * consumes is there. A QP on an SRQ binds SRQ receives to itself, in
   * order, up to that one, but only as far as its stream window allows.
   */
  bool ReceivePosted(Qp* qp, uint32_t recv_seq, uint32_t msn);
  size_t PollCq(uint32_t cq, std::span<Completion> out);
  std::vector<PathInfo> GetPaths(const wire::IpAddr& ip, uint16_t udp_port) const;
  std::vector<ConnInfo> GetConnections() const;  // introspect.cc
  ShareInfo GetShareInfo() const;                // introspect.cc

  // rx.cc: packets in.
  void OnFrame(TimeNs now, std::span<const uint8_t> frame);
  void OnDatagram(TimeNs now, const wire::FrameInfo& addr, std::span<const uint8_t> payload);

  // tx.cc: packets out and timers.
  size_t PollTx(TimeNs now, std::span<TxSlot> slots);
  TimeNs NextDeadline() const;
  bool HasPendingTx() const;

  EngineConfig cfg;
  /** This host's planes: local_ip / local_mac first, then cfg.extra_planes. */
  std::vector<PlaneAddr> local_planes;
  const CcLimits path_cc;  ///< window limits of one path
  const CcLimits conn_cc;  ///< of a connection
  MemoryAccess* mem;
  uint64_t incarnation;  ///< this engine instance, in every handshake packet
  SecureRng rng;
  uint8_t cookie_key[16];  ///< keys the handshake cookies (never leaves the engine)
  EngineStats stats;
  MrTable mrs;
  struct Pd {
    uint32_t qps = 0;    ///< QPs using it
    uint64_t owner = 0;  ///< AllocPd's tag, passed to MemoryAccess
    uint32_t srqs = 0;   ///< SRQs in it
  };
  absl::flat_hash_map<uint32_t, Pd> pds;
  struct Cq {
    Ring<Completion> entries;
    uint32_t depth = 0;
    bool error = false;  ///< overflowed: completions were lost
    bool ready = false;  ///< on ready_cqs
  };
  absl::flat_hash_map<uint32_t, Cq> cqs;
  Ring<AsyncEvent> events;
  std::vector<uint32_t> fatal_qps;  ///< QPs of an overflowed CQ, flushed at the next PollTx
  absl::flat_hash_map<uint32_t, std::unique_ptr<Qp>> qps;
  absl::flat_hash_map<uint32_t, Srq> srqs;
  uint32_t next_srq = 1;
  absl::flat_hash_map<uint32_t, std::unique_ptr<Connection>> conns;  ///< by local id
  std::vector<uint32_t> conn_order;  ///< local ids in creation order: deterministic iteration
  struct LooseReply {
    PeerAddr to;
    wire::Packet packet;
  };
  Ring<LooseReply> loose_tx;  ///< replies without a connection (CONN_REJECT)
  /** A peer engine: its address and the UDP port it receives on. */
  using PeerKey = std::pair<wire::IpAddr, uint16_t>;
  absl::flat_hash_map<PeerKey, uint32_t> conn_by_peer;
  uint32_t next_pd = 1;
  uint32_t next_cq = 1;
  uint32_t next_qpn = 1;
  /**
   * Work lists (timers.cc). A connection that may have something to send or
   * a changed deadline is on `active` (Touch); every other one has a timer
   * entry no later than its deadline, or needs none. A poll visits the active
   * list and the due entries only, so idle connections cost nothing.
   */
  struct Timer {
    TimeNs at;
    uint32_t conn;
  };
  /** Local ids, in the order they got work: the line is [active_head, end). */
  std::vector<uint32_t> active;
  size_t active_head = 0;
  std::span<const uint32_t> Line() const {
    return std::span<const uint32_t>(active).subspan(active_head);
  }
  std::vector<uint32_t> more;  ///< visited and still busy when the slots ran out
  bool line_left = false;      ///< the last poll's slots ran out before the line did
  /** Min-heap by `at` (mutable: NextDeadline settles its top); moved or gone entries are stale. */
  mutable std::vector<Timer> timers;
  bool reap_pending = false;  ///< a failed connection may have no QP left: forget it
  uint32_t rx_len = 0;  ///< bytes of the frame or datagram being handled (per-connection counters)
  /**
   * The packet being handled and its encapsulation, kept across calls so that
   * receiving one does not construct a Packet (~300 bytes zeroed per packet).
   * The parser sets every field of the type's body; the other bodies hold
   * earlier packets' values, and no handler reads a body not of its type.
   */
  wire::Packet rx_pkt;
  wire::FrameInfo rx_info;
  /** The same on the way out: SendChunk's data packet (only its data body is set) and Emit's
   * encapsulation. */
  wire::Packet tx_pkt;
  wire::FrameInfo tx_info;
  TimeNs seen_now = 0;  ///< the latest PollTx's time: the pacer's "now" where no time is given
  // The receiver's fair share (rx.cc): senders of the current interval.
  TimeNs share_from = 0;                ///< start of the current interval
  uint32_t share_mbps = 0;              ///< the level ACKs carry (0: none measured yet)
  std::vector<uint32_t> share_senders;  ///< connections with data in the interval
  size_t share_last_senders = 0;        ///< how many the level was computed over
  size_t share_pushed_senders = 0;      ///< share_senders' size when shares were last pushed
  FairShareLimited share_last_limited;  ///< of those, limited elsewhere (what they used)
  uint64_t share_drain_mbps = 0;        ///< what the last allocation held back to drain a queue
  uint32_t share_roll_mbps = 0;         ///< the level the interval's end computed (before any IDLE)
  size_t share_left = 0;                ///< senders of the last allocation that said IDLE since
  size_t share_listed_idle = 0;         ///< of share_senders, those that said IDLE since
  /** The allocation interval: kFairShareIntervalNs, longer for many senders
   * (kFairSharePktsPerSender). */
  TimeNs ShareIntervalNs() const;
  std::vector<uint64_t> share_rates_;    ///< scratch
  std::vector<uint32_t> share_measured;  ///< the senders the level was computed over

 private:
  // ---- planes (planes.cc) ----
  /** The plane of path @p path_id of @p c: both ends compute the same one. */
  static uint8_t PlaneOf(const Connection* c, uint16_t path_id) {
    return c->planes <= 1 ? 0 : static_cast<uint8_t>(path_id % c->planes);
  }
  const wire::IpAddr& PeerIp(const Connection* c, uint8_t plane) const {
    return plane == 0 ? c->peer.ip : c->peer_plane_ip[plane];
  }
  /** Our planes 1.. for a CONN_REQ / CONN_ACCEPT. */
  void AnnouncePlanes(wire::ConnBody* b) const;
  /** False when a peer's plane list cannot be used (family, duplicates). */
  bool PlanesValid(const wire::IpAddr& peer_ip, const wire::ConnBody& b) const;
  /**
   * At establishment: the planes both ends have, and each path's. A path on
   * plane 1.. carries nothing before a probe on it is answered from the
   * address the peer named: the handshake proved only plane 0 reaches it.
   */
  void AdoptPlanes(TimeNs now, Connection* c, const wire::ConnBody& b);
  /**
   * After @p path failed: when another path of its plane failed too and none
   * of the plane's paths got through since, the plane is down, and every
   * path on it fails now instead of one timeout after another.
   */
  void CheckPlane(TimeNs now, Connection* c, const TxPath& path);
  /** A probe of @p path was answered: if its plane was down, probe its other paths at once. */
  void PathAnswered(TimeNs now, Connection* c, const TxPath& path);
  std::vector<PlaneInfo> PlaneInfos(const Connection& c) const;
  static PathInfo PathInfoOf(const TxPath& p);

  // ---- connection set-up (engine.cc, handshake.cc) ----
  Connection* ConnFor(const PeerAddr& peer);
  Connection* NewConnection(const PeerAddr& peer);
  bool MakeRoomFor(const wire::IpAddr& ip);  ///< within the limits, evicting an idle one if need be
  /** Moves a QP that never heard from @p from's peer, and its queued work, to @p to. */
  void MoveQp(Qp* qp, Connection* from, Connection* to);
  void SetUpPaths(Connection* c);
  void Establish(TimeNs now, Connection* c, const wire::ConnBody& body);
  uint16_t FreshPort(const Connection* c);  ///< a source port no other path of @p c uses
  uint64_t Cookie(TimeNs slot, const wire::IpAddr& ip, const wire::ConnBody& req) const;
  bool CookieValid(TimeNs now, const wire::IpAddr& ip, const wire::ConnBody& req) const;
  void QueueLoose(const PeerAddr& to, const wire::Packet& p);
  void FillOpening(const Connection* c, wire::PacketType type, uint32_t nonce,
                   wire::Packet* p) const;
  /** The QP, or nullptr. The last one found is remembered: a packet asks for its QP several times.
   */
  Qp* FindQp(uint32_t qpn) {
    if (Qp* qp = qp_cache.Get(qpn, QpCacheHash(qpn))) return qp;
    auto it = qps.find(qpn);
    if (it == qps.end()) return nullptr;
    qp_cache.Put(qpn, QpCacheHash(qpn), it->second.get());
    return it->second.get();
  }
  /** QP numbers count up above the engine's tag bits: consecutive ones, consecutive slots. */
  uint32_t QpCacheHash(uint32_t qpn) const { return qpn >> cfg.qpn_tag_bits; }
  Connection* FindConn(uint32_t id) {
    if (Connection* c = conn_cache.Get(id, id)) return c;
    auto it = conns.find(id);
    if (it == conns.end()) return nullptr;
    conn_cache.Put(id, id, it->second.get());
    return it->second.get();
  }
  DirectCache<Qp> qp_cache;            ///< in front of qps; erased with the QP
  DirectCache<Connection> conn_cache;  ///< in front of conns; erased with the connection

  // ---- messages (engine.cc) ----
  MsgRef AllocMsg(Connection* c);
  static uint32_t ChunksOf(uint64_t len, uint32_t chunk_bytes);
  TxMsg* Msg(Connection* c, MsgRef r) {
    if (r.idx >= c->msgs.size()) return nullptr;
    TxMsg& m = c->msgs[r.idx];
    return m.in_use && m.gen == r.gen ? &m : nullptr;
  }
  void FreeMsg(Connection* c, MsgRef r);
  void ReleaseSends(Qp* qp);  ///< hands posted messages to the scheduler as order rules allow
  void FeedTx(Connection* c, Qp* qp);  ///< queues the QP's next message with unsent chunks
  void Ready(Connection* c, MsgRef r);

  // ---- completions (engine.cc) ----
  void PushCqe(uint32_t cq, const Completion& c);
  std::vector<uint32_t> ready_cqs;  ///< CQs given completions since the last TakeReadyCqs()
  void FailFatalQps();              ///< QPs whose CQ overflowed: flush them now
  void CompleteSends(Qp* qp);       ///< send completions, in posting order
  void FailQp(Qp* qp, WcStatus first_status);
  void FailConnection(Connection* c);

  // ---- receive (rx.cc) ----
  void HandlePacket(TimeNs now, const wire::FrameInfo& from, const wire::Packet& p);
  void HandleConn(TimeNs now, const wire::FrameInfo& from, const wire::Packet& p);
  void HandleConnReq(TimeNs now, const wire::FrameInfo& from, const wire::Packet& p);
  void HandleAck(TimeNs now, Connection* c, const wire::Packet& p);
  /** The peer accepted every message of @p qp before @p next (stream ACK or response). */
  void StreamAccepted(TimeNs now, Connection* c, Qp* qp, uint32_t next);
  void HandleNak(TimeNs now, Connection* c, const wire::Packet& p);
  void HandleProbe(TimeNs now, Connection* c, const wire::Packet& p);
  void HandleData(TimeNs now, Connection* c, const wire::FrameInfo& from, const wire::Packet& p);
  bool RecordPsn(TimeNs now, Connection* c, const wire::FrameInfo& from, const wire::Packet& p);
  void HandleRequest(TimeNs now, Connection* c, Qp* qp, const wire::Packet& p);
  void HandleResponse(TimeNs now, Connection* c, Qp* qp, const wire::Packet& p);
  void AdvanceReceiver(TimeNs now, Connection* c, Qp* qp);
  void QueueNak(TimeNs now, Connection* c, Qp* qp, RxMsg* m, const wire::Packet& p,
                wire::NakCode code, wire::NakDetail detail);
  void QueueResend(Connection* c, uint32_t requester_stream, const wire::Packet& p, const RxMsg* m,
                   uint32_t nchunks);  ///< NAK RESEND for what @p m lacks
  void ReleaseRxMsg(Connection* c, RxMsg* m);
  void RememberClosed(Connection* c, const Qp& qp);  ///< DestroyQp: what the stream accepted
  /** A probe for a destroyed stream's accepted message: queues its stream ACK. */
  bool AckClosedStream(Connection* c, const wire::Packet& p);
  void RefuseAfter(Qp* qp, uint32_t msn);  ///< the responder refuses every message after msn
  /** Writes @p data at @p offset of @p sg, each SGE's lkey checked against @p pd. */
  bool Scatter(Qp* qp, uint32_t pd, const SgList& sg, uint64_t offset,
               std::span<const uint8_t> data);
  /** Settles @p psn as arrived; returns its bytes (0: already settled). */
  uint32_t Delivered(TimeNs now, Connection* c, TxPath* path, uint32_t psn);
  void CongestionOnAck(TimeNs now, Connection* c, TxPath* path, uint32_t acked_bytes,
                       uint32_t rx_pkts, uint32_t ce_pkts);
  /** A data packet of rx_len bytes from @p c; @p idle: it said IDLE. */
  void AccountShare(TimeNs now, Connection* c, bool ce, bool idle);
  /**
   * @p c has nothing more queued for us: off the senders at once, and once a
   * fifth of those the level was computed over have left, the level again
   * over the others (their next ACKs carry it).
   */
  void SenderLeft(Connection* c);
  /** Max-min over share_measured's demands less the senders that left. */
  void Reallocate();
  /** No message is posted after @p m on @p qp (with EndsBurst: the sender goes idle, IDLE). */
  static bool NothingPostedAfter(const Qp* qp, const TxMsg* m);
  /**
   * @p c is about to send to us (its opening arrived, or ours carries our
   * hint): listed as a new sender of the current interval, so that the hint
   * our opening carries, and every new sender's, count it.
   */
  void ExpectSender(TimeNs now, Connection* c);
  /** Sends its part now to every new sender told more than twice it (rx.cc). */
  void PushShares();
  /** The same for @p s: listed and established (a request of ours carried an older part). */
  void PushShareTo(Connection* s);
  /** Ends the allocation interval if it is due; returns the length of the one that was in force. */
  TimeNs RollShare(TimeNs now);
  /** @p c sends in the current interval (its ACKs carry our hint for 2 x @p interval). */
  void ListSender(TimeNs now, Connection* c, TimeNs interval);
  /** A peer listed for its opening that acknowledged our data since but sent none. */
  static bool OnlyReceives(const Connection* s);
  /** Takes @p c off the senders at once (it only receives). */
  void UnlistReceiver(Connection* c);
  /** The hint of an opening the peer sent (REQ with a cookie, ACCEPT), where it carries one. */
  void TakeOpeningHint(Connection* c, const wire::ConnBody& b);
  uint32_t HintFor(TimeNs now, const Connection* c) const;  ///< rate_hint of an ACK to c
  /** While new senders outnumber those the level was computed over: C / senders (else 0). */
  uint32_t EqualPartMbps() const;
  /** The pacer's rate after an ACK changed the window, the RTT or the hint. */
  void UpdatePacer(Connection* c);
  /** PLB: @p path takes @p port (its route) for congested round trips. */
  void MovePath(Connection* c, TxPath* path, uint16_t port);
  /** The path's state and plb_probe_due, kept with their counts in the connection. */
  static void SetPathState(Connection* c, TxPath* path, PathState s);
  static void SetPlbProbeDue(Connection* c, TxPath* path, bool due);
  /** Paced: the connection may not send data at @p now (doc/congestion.md, "The pacer"). */
  bool Paced(const Connection* c, TimeNs now) const {
    return c->pace_mbps != 0 && c->pace_at > now;
  }
  /** One full packet's time at @p c's pacer rate (bytes x 8000 / Mbit/s = ns); pace_mbps != 0. */
  TimeNs PacketGapNs(const Connection* c) const {
    return uint64_t{path_cc.mss_bytes} * 8'000 / c->pace_mbps;
  }
  /** The pacer's next packet at a random part of one packet's time from @p now. */
  void StartAtRandomPhase(TimeNs now, Connection* c);
  void MarkAckPending(Connection* c, uint16_t path_id);
  /** Whether data packet @p p asks for its ACK at once; an ACK_REQ asks for every queued path's. */
  bool AckAsked(Connection* c, const wire::Packet& p);

  // ---- work lists and timers (timers.cc) ----
  /** @p c may have something to send, or its deadline moved: the next poll visits it. */
  void Touch(Connection* c);
  /** After a visit: a timer entry for @p c no later than its deadline. */
  void Schedule(Connection* c);
  void RunTimers(TimeNs now);  ///< connections whose deadline is due join the active list
  /** Drops stale entries and moves early ones until the top is its connection's deadline. */
  void SettleTimers() const;
  void PushTimer(Connection* c, TimeNs at) const;
  Timer PopTimer() const;
  Connection* TimerOwner(const Timer& t) const;  ///< nullptr: the entry is stale
  /** Visits the active list: timers due, then packets into @p slots. */
  size_t VisitActive(TimeNs now, std::span<TxSlot> slots);
  bool ConnHasPendingTx(const Connection* c) const;
  /** engine_checks builds: aborts unless every connection obeys the work-list rules. */
  void CheckWorkLists(const char* where) const;
  void ConnTimers(TimeNs now, Connection* c);
  TimeNs ConnDeadline(const Connection* c) const;

  // ---- transmit (tx.cc) ----
  void ReapFailed();  ///< forgets failed connections no QP refers to
  /** One connection's turn: the stages of kTxStages, in order, into @p slots. */
  size_t ConnTx(TimeNs now, Connection* c, std::span<TxSlot> slots);
  /** What a connection's turn has filled so far. */
  struct TxTurn {
    TimeNs now;
    std::span<TxSlot> slots;
    size_t n = 0;
    bool over = false;  ///< a stage ended the turn (closing, or still connecting)
    bool full() const { return n >= slots.size(); }
    TxSlot* slot() { return &slots[n]; }
  };
  /** A step of the send policy; ConnTx runs them in the order of kTxStages. */
  struct TxStage {
    const char* name;
    void (EngineImpl::*run)(Connection* c, TxTurn& t);
  };
  static const TxStage kTxStages[];
  void TxClose(Connection* c, TxTurn& t);            ///< CONN_CLOSE, then the turn is over
  void TxHandshake(Connection* c, TxTurn& t);        ///< CONN_REQ (nothing after it), CONN_ACCEPT
  void TxKeepalive(Connection* c, TxTurn& t);        ///< a probe on an active path
  void TxProbeReplies(Connection* c, TxTurn& t);     ///< answers to the peer's probes
  void TxPathProbes(Connection* c, TxTurn& t);       ///< failed paths tried on a fresh port
  void TxPlbProbes(Connection* c, TxTurn& t);        ///< ports a careful PLB move would take
  void TxNaks(Connection* c, TxTurn& t);             ///< queued NAKs
  void TxAcks(Connection* c, TxTurn& t);             ///< ACKs that are due
  void TxRetransmissions(Connection* c, TxTurn& t);  ///< lost, probed and resent chunks
  void TxNewData(Connection* c, TxTurn& t);          ///< chunks never sent, sprayed over paths
  /** Our source port for control packets about the peer's path @p path_id. */
  uint16_t ControlPort(const Connection* c, uint16_t path_id) const;
  bool EmitOpening(Connection* c, wire::PacketType type, uint32_t nonce, TxTurn& t);
  /**
   * @p p may carry a packet now; a stall @p probe (one packet, sent to learn
   * what arrived) goes past the windows, as RFC 8985's probe goes past
   * cwnd: they may be full of packets that are lost. (Tail-loss probes do
   * not: they come while data flows, and past the windows of every path of
   * thousands of connections they overflowed an incast's queue.)
   */
  bool PathHasRoom(const Connection* c, const TxPath& p, bool probe = false) const;
  TxPath* PickPath(Connection* c, int prefer, int avoid = -1, bool probe = false);
  /**
   * The last chunk of @p m ends the sender's burst: it asks for the ACK of
   * everything sent so far (ACK_REQ). A one-packet message with more behind
   * it leaves its ACK to the receiver's count (ack_every_pkts): one ACK per
   * message made small messages cost an ACK per path per poll. (A longer
   * message's last packet asks anyway, SendChunk.)
   */
  bool EndsBurst(const Connection* c, const Qp* qp, const TxMsg* m) const;
  /** The next packet on @p p asks for an ACK at once (ACK_REQ): a held one would stall the window.
   */
  bool WantsAckNow(const Connection* c, const TxPath& p) const;
  /**
   * The largest congestion window of @p c's active paths, a full turn's
   * credit, and with several planes each plane's largest (PickPath).
   */
  static void SprayWidths(Connection* c);
  /** What SendChunk did. */
  enum class Sent : uint8_t { kOk, kNoRoom, kGone };
  Sent SendChunk(TimeNs now, Connection* c, TxPath* path, MsgRef ref, uint32_t chunk, RetxKind kind,
                 bool retx, TxSlot* slot);
  void FailResponse(TimeNs now, Connection* c, MsgRef ref, wire::NakDetail why);
  /** Fills tx_info with the addresses of a frame to @p c's peer (or to slot->addr) on @p plane. */
  wire::FrameInfo& FrameTo(const Connection* c, uint8_t plane, const TxSlot* slot);
  /** The headers of Ethernet frames to @p c's peer on @p plane (unbuilt: not encodable). */
  const wire::EncapTemplate& Encap(Connection* c, uint8_t plane);
  /** Drops @p c's header templates: an address in them changed. */
  static void ForgetEncap(Connection* c);
  /** Encodes @p p into @p slot, from @p src_port of our @p plane to the peer's same plane. */
  bool Emit(TimeNs now, Connection* c, uint8_t plane, uint16_t src_port, wire::Packet* p,
            TxSlot* slot, wire::Ecn ecn);
  void BuildAck(TimeNs now, Connection* c, uint16_t path_id, wire::Packet* p);
  void DeclareLost(TimeNs now, Connection* c, TxPath* path, uint32_t psn, bool by_rto);
  void AdvanceUna(TxPath* path);
  /**
   * srtt + max(4 rttvar, rto_min): a path's ACKs give many samples per round
   * trip, so rttvar decays within one and srtt + 4 rttvar alone hugs srtt;
   * host jitter of rto_min above srtt must not fire it (Linux's floor).
   */
  TimeNs RtoOf(const Connection* c, const TxPath& p) const {
    return std::min(std::max(p.srtt + std::max(4 * p.rttvar, cfg.rto_min_ns), c->rto_floor.ns),
                    cfg.rto_max_ns);
  }
  /**
   * After a timeout of @p path, whether ACK @p a shows the oldest packet it
   * declared lost arrived after all: a spurious timeout, whose window cut is
   * undone and whose delay raises the connection's RTO floor.
   */
  void CheckTimeout(TimeNs now, Connection* c, TxPath* path, const wire::AckBody& a);
  /**
   * After a tail-loss probe of @p path, whether ACK @p a shows the packet it
   * repeated arrived after all: a needless probe, whose delay raises the
   * connection's probe floor (tlp_floor) as a spurious timeout raises its RTO's.
   */
  void CheckTailProbe(TimeNs now, Connection* c, TxPath* path, const wire::AckBody& a);
  /**
   * A packet of @p c took @p took to be acknowledged although it arrived: if
   * that is a stall of a host (config::kRtoFloorStallRtts), not a queue,
   * raises @p floor to 5/4 of it, at most @p cap, and returns true.
   */
  static bool RaiseStallFloor(TimeNs now, const Connection* c, TimeNs took, TimeNs cap,
                              StallFloor* floor);
  /**
   * Whether ACK @p a of a path shows that @p psn, in question since
   * @p *asked_at, arrived; it can only if it echoes a packet sent before
   * then. Clears @p *asked_at when it does, and when the ACK echoes a later
   * packet (whose una_psn moves the receiver past @p psn either way).
   */
  static bool ShownArrived(const wire::AckBody& a, TimeNs* asked_at, uint32_t psn);
  /**
   * What RtoDeadline() asks of a connection's other paths, gathered in one
   * pass so that a deadline over all paths costs one pass, not one per path.
   */
  struct PeerSilence {
    bool gathered = false;  ///< the rest is set by GatherSilence()
    TimeNs newest_hold;     ///< the latest window cut's hold_until, all paths
    uint16_t waiting;       ///< active paths waiting for a packet sent before their last progress
    std::array<uint16_t, wire::kMaxPlanes> waiting_on;  ///< of those, per plane
  };
  void GatherSilence(const Connection* c, PeerSilence* s) const;
  /**
   * When @p p (with packets in flight) times out: its RTO; while the peer
   * seems stalled, a stall probe instead (*stall set) until the peer has been
   * silent for rto_silent_ns. @p s: the connection's PeerSilence, gathered on
   * first use.
   */
  TimeNs RtoDeadline(const Connection* c, const TxPath& p, PeerSilence* s,
                     bool* stall = nullptr) const;
  /** RtoDeadline(c, p) <= now, looking at the other paths only when the RTO itself is due. */
  bool RtoDue(const Connection* c, const TxPath& p, TimeNs now, bool* stall) const {
    *stall = false;
    if (p.At(p.una).sent_at + p.rto > now) return false;  // never earlier than the RTO
    PeerSilence s;
    return RtoDeadline(c, p, &s, stall) <= now;
  }
  /** The peer seems stalled at @p path's RTO: its newest packet again, the RTO backed off. */
  void StallProbe(TimeNs now, Connection* c, TxPath* path);
  /** @p path timed out: its packets sent at least @p age ago are lost and go again on other paths.
   */
  void PathTimeout(TimeNs now, Connection* c, TxPath* path, TimeNs age);
  /** @p path fell silent while the others answered: failed, and probed on a fresh port at once. */
  void Reroute(TimeNs now, Connection* c, TxPath* path);
  /** @p p has delivered nothing sent at or after its newest data packet, and is quiet. */
  bool Silent(const Connection* c, const TxPath& p, TimeNs now) const;
  /** How long after its last probe a failed path is probed again. */
  TimeNs ProbeWait(const TxPath& p) const;
  TimeNs TlpWait(const Connection* c, const TxPath& p) const;
  TimeNs TlpDeadline(const Connection* c, const TxPath& p) const;
  TimeNs RescueDeadline(const Connection* c, const TxPath& p) const;
  /** Another active path of @p c delivered a packet sent after @p t: the peer got it. */
  bool OthersProgressedSince(const Connection* c, const TxPath& path, TimeNs t) const;
  /**
   * Queues the newest live chunk of @p path for a tail-loss probe, rescue or
   * stall probe; returns its PSN (path->next_psn if none is live).
   */
  uint32_t QueueNewest(Connection* c, TxPath* path, uint16_t prefer, uint16_t avoid,
                       bool past_window = false);
  void FailPath(TimeNs now, Connection* c, TxPath* path);
  void CheckPathHealth(TimeNs now, Connection* c, TxPath* path);
  void DetectLoss(TimeNs now, Connection* c, TxPath* path);  ///< holes below highest_acked

  friend class EnginePeer;
};

}  // namespace metaroce::transport

#endif  // METAROCE_TRANSPORT_ENGINE_PRIVATE_H
