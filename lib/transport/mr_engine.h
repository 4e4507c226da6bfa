/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * The MetaRoCE protocol engine of one host. Pure and deterministic: it does
 * no I/O, reads no clock, starts no thread and keeps no global state. The
 * caller passes the time into every call, hands received frames to
 * OnFrame()/OnDatagram(), collects packets to send with PollTx() and calls
 * back no later than NextDeadline(). The same engine runs over DPDK, kernel
 * UDP sockets and the simulated fabric.
 */

#ifndef METAROCE_MR_ENGINE_H
#define METAROCE_MR_ENGINE_H

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "mr_config.h"
#include "mr_memory.h"
#include "mr_transport_types.h"
#include "mr_wire.h"

namespace metaroce::transport {

/** What PollTx() writes and OnFrame()/OnDatagram() expect. */
enum class Framing : uint8_t {
  kEthernet,  ///< whole Ethernet frames (DPDK, simulated fabric)
  kUdp,       ///< UDP payloads; addresses travel in TxSlot::addr (kernel sockets)
};

/** Where one plane (a port on one of several parallel fabrics) of this host is. */
struct PlaneAddr {
  wire::IpAddr ip;
  wire::MacAddr mac;
};

/** Engine configuration; Create() rejects values out of range with a message. */
struct EngineConfig {
  wire::IpAddr local_ip;  ///< this host's address (IPv4 or IPv6): plane 0
  wire::MacAddr local_mac;
  /**
   * Planes 1..P-1 of this host (doc/transport.md, "Planes"): one port per
   * parallel fabric, each with its own address of local_ip's family, at most
   * wire::kMaxPlanes - 1. A connection to a peer of Q planes spreads its paths
   * over min(P, Q): path i on plane i mod that. PollTx says in TxSlot::plane
   * which port sends a packet. Needs num_paths >= P. Empty: one plane.
   */
  std::vector<PlaneAddr> extra_planes;
  uint16_t udp_port = wire::kDefaultUdpPort;
  Framing framing = Framing::kEthernet;
  uint16_t num_paths = config::kPaths;              ///< 1..kMaxPaths
  uint16_t max_payload = config::kMaxPayloadBytes;  ///< 256..9000
  uint32_t path_window_pkts = config::kPathWindowPkts;
  uint32_t conn_window_pkts = config::kConnWindowPkts;
  /**
   * ECN AIMD byte windows per path and per connection (doc/congestion.md),
   * starting at the packet windows' worth of full packets. false: the packet
   * windows alone (for experiments and comparison).
   */
  bool congestion_control = true;
  /**
   * A new connection's congestion window (doc/congestion.md, "Slow start"):
   * it doubles per round trip until the first congestion signal or the full
   * window. 0: start at the full window.
   */
  uint32_t initial_window_bytes = config::kInitialWindowBytes;
  /**
   * Window pacing (doc/congestion.md, "Window pacing"): 101..1000, a
   * connection sends at this share (in %) of its congestion window per
   * smoothed RTT (config::kCcPacingGainPct, 120, is Linux's ratio), more in
   * slow start, and at most at the peer's rate hint. 0 (the default, by
   * measurement): the hint alone paces.
   */
  uint32_t pacing_gain_pct = 0;
  /**
   * This host's inbound capacity, shared max-min among the senders of the
   * last interval and returned in every ACK as the sender's rate hint
   * (doc/congestion.md); the link rate, less what other traffic needs.
   * 0: no hints (senders are limited by their windows alone).
   */
  uint64_t rx_capacity_mbps = 0;
  /**
   * Queueing delay above the connection's base RTT at which a path's window
   * shrinks (doc/congestion.md): the signal where nothing marks CE. 0: ECN
   * and timeouts alone.
   */
  TimeNs cc_delay_target_ns = config::kCcDelayTargetNs;
  TimeNs rto_min_ns = config::kRtoMinNs;
  TimeNs rto_max_ns = config::kRtoMaxNs;
  TimeNs rto_initial_ns = config::kRtoInitialNs;
  /**
   * A path timeout that comes after the peer answered and then fell silent
   * for rto_min, while another path waits too and no window was cut since,
   * waits for this much silence (config::kRtoSilentNs; a stalled peer);
   * 0 or at most rto_min_ns: no wait.
   */
  TimeNs rto_silent_ns = config::kRtoSilentNs;
  bool tail_loss_probe = true;            ///< re-send the newest packet after 2 SRTT of silence
  TimeNs tlp_min_ns = config::kTlpMinNs;  ///< shortest wait before a tail-loss probe
  uint32_t ack_every_pkts = config::kAckEveryPkts;
  TimeNs ack_delay_ns = config::kAckDelayNs;
  uint32_t path_fail_timeouts = config::kPathFailTimeouts;
  uint32_t path_health_window_pkts = config::kPathHealthWindowPkts;
  uint32_t path_fail_loss_pct = config::kPathFailLossPct;
  TimeNs path_probe_interval_ns = config::kPathProbeIntervalNs;
  TimeNs conn_fail_after_ns = config::kConnFailAfterNs;  ///< all paths failed, or peer silent
  TimeNs keepalive_ns = config::kKeepaliveNs;            ///< probe a connection silent this long
  TimeNs msg_probe_min_ns = config::kMsgProbeMinNs;      ///< first wait for a stream ACK
  TimeNs msg_probe_max_ns = config::kMsgProbeMaxNs;      ///< longest wait between message probes
  TimeNs conn_retry_ns = config::kConnRetryNs;  ///< longest CONN_REQ wait (the first: rto_min)
  /** Messages per stream this receiver tracks; announced in the handshake, the peer keeps to it. */
  uint32_t stream_window_msgs = config::kStreamWindowMsgs;
  uint32_t max_connections = config::kMaxConnections;
  /** Connections to one peer IP address (several engines may share a host). */
  uint32_t max_connections_per_host = config::kMaxConnectionsPerHost;
  /** A connection without local QPs this long is closed (CONN_CLOSE) and forgotten. */
  TimeNs conn_idle_ns = config::kConnIdleNs;
  /** A path's packet overtaken by a later one is lost only once it is this late (reordering). */
  TimeNs reorder_window_ns = config::kReorderWindowNs;
  /** Bytes of per-chunk arrival state the peer's incomplete messages may hold, per connection. */
  uint64_t rx_msg_state_bytes = config::kRxMsgStateBytes;
  uint8_t dscp = config::kDscp;
  /**
   * Source ports paths may use. Empty: any in the dynamic range. A driver that
   * can only send from ports it bound (kernel UDP sockets) lists them here.
   */
  std::vector<uint16_t> source_ports;
  /**
   * 0 (the default): keys, ids, nonces and source ports come from a CSPRNG
   * keyed by the OS. Non-zero: a reproducible engine (simulation, tests): the
   * CSPRNG is keyed from this seed and the incarnation. Never for production.
   */
  uint64_t seed = 0;
  /**
   * This engine instance's id in the handshake, which tells a restarted peer
   * from the old one. 0 (the default): drawn from the OS, new for every
   * engine. Only a reproducible simulation sets it, and must never give two
   * lifetimes of one engine the same value.
   */
  uint64_t incarnation = 0;
  /**
   * QP numbers are below 2^24 (as verbs programs print them) and end in these
   * bits: qpn % 2^qpn_tag_bits == qpn_tag, so that a peer can tell something
   * from a QP's number (metaroced numbers its QPs itself instead, through
   * CreateQp(attr, qpn)). 0..kMaxQpnTagBits.
   */
  uint8_t qpn_tag_bits = 0;
  uint32_t qpn_tag = 0;
};

/** QP numbers are below this (24 bits, as in verbs). */
inline constexpr uint32_t kQpnSpace = 1u << 24;
/** Largest EngineConfig::qpn_tag_bits. */
inline constexpr uint8_t kMaxQpnTagBits = 8;

/** Longest message a work request may carry (verbs' max_msg_sz). */
inline constexpr uint64_t kMaxMessageBytes = wire::kMaxMessageBytes;

/** Largest num_paths. */
inline constexpr uint16_t kMaxPaths = 1024;

/** Where a peer engine is reached. */
struct PeerAddr {
  wire::IpAddr ip;
  wire::MacAddr mac;  ///< next hop (Framing::kEthernet)
  uint16_t udp_port = wire::kDefaultUdpPort;
};

/** QP creation attributes (a subset of ibv_qp_init_attr + ibv_qp_attr). */
struct QpAttr {
  uint32_t pd = 0;
  uint32_t send_cq = 0;
  uint32_t recv_cq = 0;
  uint32_t max_send_wr = 256;
  uint32_t max_recv_wr = 256;
  uint32_t max_sge = 16;
  uint8_t rnr_retry = 7;             ///< 7 = retry forever, as in verbs
  TimeNs min_rnr_delay_ns = 10'000;  ///< what this QP asks senders to wait when it has no receive
  uint32_t retry_cnt = config::kMsgRetries;
  bool sq_sig_all = false;
  /** Remote operations peers may do through this QP (access::kRemote*), as qp_access_flags. */
  uint32_t remote_access = access::kRemoteWrite | access::kRemoteRead | access::kRemoteAtomic;
  /** Non-zero: the QP takes its receives from this SRQ (max_recv_wr is then unused). */
  uint32_t srq = 0;
};

/** A shared receive queue as QuerySrq() reports it. */
struct SrqInfo {
  uint32_t max_wr = 0;
  uint32_t max_sge = 0;
  uint32_t limit = 0;   ///< armed limit, 0 once its event fired
  uint32_t posted = 0;  ///< receives it holds (not yet bound to a QP's message)
};

/** A registered memory region. */
struct MrInfo {
  uint32_t lkey = 0;
  uint32_t rkey = 0;
};

/** One buffer PollTx() may fill. */
struct TxSlot {
  uint8_t* buf = nullptr;
  uint32_t cap = 0;
  uint32_t len = 0;        ///< out: bytes written
  uint8_t plane = 0;       ///< out: the plane (port) to send it from (EngineConfig::extra_planes)
  wire::FrameInfo addr;    ///< out, Framing::kUdp: addresses, ports and ECN for the socket
  void* cookie = nullptr;  ///< the buffer's owner (e.g. an mbuf); the engine leaves it alone
};

/** Engine-wide counters. Drops are by wire::ParseError or by the reasons below. */
struct EngineStats {
  uint64_t rx_packets = 0;
  uint64_t rx_bytes = 0;
  uint64_t rx_parse_drops[static_cast<size_t>(wire::ParseError::kCount)] = {};
  uint64_t rx_unknown_conn = 0;    ///< dst_conn_id matches no connection
  uint64_t rx_wrong_source = 0;    ///< source address is not the connection's peer
  uint64_t rx_bad_path = 0;        ///< path_id beyond the peer's announced paths
  uint64_t rx_unknown_stream = 0;  ///< stream_id matches no QP of that connection
  uint64_t rx_beyond_window = 0;   ///< PSN or MSN outside the receive window
  uint64_t rx_bad_chunk = 0;       ///< offset/length not on the connection's chunk grid
  uint64_t rx_wrong_stream = 0;    ///< source stream is not the peer QP of the stream it targets
  uint64_t rx_state_exhausted =
      0;  ///< chunks dropped: the connection's message state is at its bound
  uint64_t rx_bad_stream_acks = 0;   ///< stream ACKs past every message the QP posted (ignored)
  uint64_t rx_stale_naks = 0;        ///< RNR NAKs about an earlier attempt of a message (ignored)
  uint64_t rx_bad_cookie = 0;        ///< CONN_REQs with a missing, stale or forged cookie
  uint64_t rx_conn_refused = 0;      ///< CONN_REQs rejected (limits, parameters, version)
  uint64_t rx_duplicate_pkts = 0;    ///< PSN already received
  uint64_t rx_duplicate_chunks = 0;  ///< data chunks already placed: needless retransmissions
  uint64_t rx_ce_pkts = 0;
  uint64_t tx_packets = 0;
  uint64_t tx_bytes = 0;
  uint64_t tx_data_pkts = 0;
  uint64_t tx_retransmits = 0;
  uint64_t tx_acks = 0;
  uint64_t tx_naks = 0;
  uint64_t tx_probes = 0;
  uint64_t tx_conn_retries = 0;     ///< CONN_RETRY cookies sent
  uint64_t msg_probes = 0;          ///< messages probed for their stream acknowledgement
  uint64_t resend_requests = 0;     ///< NAK RESENDs received (chunks the peer did not place)
  uint64_t tx_resend_naks = 0;      ///< NAK RESENDs sent
  uint64_t keepalives = 0;          ///< probes sent because the peer was silent
  uint64_t lost_detected_sack = 0;  ///< losses found from a SACK gap
  uint64_t lost_detected_rto = 0;   ///< losses found by a retransmission timeout
  uint64_t rto_timeouts = 0;  ///< retransmission timeouts (each declares a path's old packets lost)
  /** Of those, shown needless: the oldest packet declared lost arrived after all (a stall). */
  uint64_t spurious_timeouts = 0;
  uint64_t tail_loss_probes =
      0;  ///< newest packets sent again after 2 SRTT of silence (or tlp_floor)
  /** Of the probes, those whose packet arrived after all (its ACK was late): CheckTailProbe. */
  uint64_t needless_tail_probes = 0;
  uint64_t tail_loss_rescues = 0;  ///< of those unanswered, the newest sent on another path
  /**
   * ACKs sent for their rate hint alone: new senders told more than twice
   * the equal part that more new senders left them (doc/congestion.md).
   */
  uint64_t share_pushes = 0;
  /** Levels computed again because senders said IDLE (doc/congestion.md). */
  uint64_t share_reallocations = 0;
  /** Newest packets sent again at an RTO while the whole connection was silent (a stall?). */
  uint64_t stall_probes = 0;
  /** Of those unanswered while other paths settled later packets: timed out at once. */
  uint64_t silent_path_timeouts = 0;
  uint64_t path_failures = 0;
  uint64_t path_loss_failures = 0;  ///< of those, for losing much more than the other paths
  uint64_t plane_failures = 0;      ///< planes given up whole: their paths failed together
  uint64_t plane_recoveries = 0;    ///< failed planes that answered a probe again
  uint64_t cc_repaths = 0;  ///< paths moved to a fresh source port after congested round trips
  /** Of the moves, the new ports probed first (soon after a reroute: config::kPlbCarefulNs). */
  uint64_t cc_repath_probes = 0;
  uint64_t cc_delay_cuts = 0;  ///< path windows cut for queueing delay above the target
  uint64_t conn_failures = 0;
  uint64_t conn_restarts = 0;  ///< connections failed because the peer engine restarted
  uint64_t qps_moved =
      0;  ///< QPs connected after the old peer was last heard: moved to the new one
  uint64_t conn_idle_closed = 0;  ///< connections closed for having no QPs (CONN_CLOSE sent)
  uint64_t conn_evicted = 0;      ///< idle connections closed to make room for a new one
  uint64_t cq_overflows = 0;      ///< completions a full CQ could not take (the CQ is in error)
  uint64_t control_dropped = 0;   ///< NAKs / probe replies / rejects over the queue bound
};

/** Per-path figures of one connection, for telemetry and tests. */
struct PathInfo {
  uint16_t path_id = 0;
  uint16_t src_port = 0;
  uint8_t plane = 0;
  bool active = false;
  uint32_t inflight = 0;
  uint32_t window = 0;
  TimeNs srtt_ns = 0;
  TimeNs rto_ns = 0;
  uint64_t tx_pkts = 0;
  uint64_t retx_pkts = 0;
  uint64_t lost_pkts = 0;
  uint64_t ce_pkts = 0;
  uint64_t failures = 0;
  uint32_t cwnd_bytes = 0;      ///< congestion window (doc/congestion.md)
  uint32_t inflight_bytes = 0;  ///< bytes in flight, as the window counts them
  uint64_t cc_cuts = 0;         ///< window decreases (CE-marked round trips, timeouts)
  uint64_t repaths = 0;         ///< moved to a fresh source port after congested round trips
};

/** One plane of a connection: both ends' addresses on it and what its paths do. */
struct PlaneInfo {
  uint8_t plane = 0;
  wire::IpAddr local_ip;
  wire::IpAddr peer_ip;
  bool up = true;             ///< false: failed whole, its paths are being probed
  uint32_t paths = 0;         ///< local paths on it
  uint32_t active_paths = 0;  ///< of those, carrying data
  uint64_t failures = 0;      ///< times it failed whole
  uint64_t tx_pkts = 0;       ///< data packets sent on its paths
  uint64_t retx_pkts = 0;
};

/** Per-connection figures (one connection per peer engine), for telemetry and tests. */
struct ConnInfo {
  /** Where the connection is in its life. */
  enum class State : uint8_t {
    kConnecting,  ///< CONN_REQ sent or being answered, not yet established
    kUp,          ///< established: data flows
    kFailed,      ///< given up (every path failed, peer silent, rejected or closed)
  };
  uint32_t conn_id = 0;         ///< local id: the dst_conn_id of what the peer sends
  uint32_t remote_conn_id = 0;  ///< the peer's id (0 until up)
  PeerAddr peer;
  State state = State::kConnecting;
  uint32_t num_qps = 0;           ///< local QPs on it
  uint16_t peer_paths = 0;        ///< paths the peer announced (its sending paths)
  uint32_t chunk_bytes = 0;       ///< payload per packet agreed with the peer (0 until up)
  uint64_t tx_pkts = 0;           ///< every packet sent on it (data, control)
  uint64_t tx_bytes = 0;          ///< their bytes as handed to the port (frame or UDP payload)
  uint64_t rx_pkts = 0;           ///< valid packets received on it (data, ACK, NAK, probe)
  uint64_t rx_bytes = 0;          ///< their bytes as received (frame or UDP payload)
  uint64_t retx_pkts = 0;         ///< data packets sent again, all paths
  uint64_t lost_pkts = 0;         ///< data packets declared lost, all paths
  uint32_t inflight = 0;          ///< data packets in flight, all paths
  uint32_t window = 0;            ///< connection window (packets)
  uint32_t cwnd_bytes = 0;        ///< connection congestion window over all paths
  uint32_t inflight_bytes = 0;    ///< bytes in flight, all paths
  uint64_t cc_cuts = 0;           ///< connection window decreases
  uint32_t rate_hint_mbps = 0;    ///< the share this receiver gives the peer; 0: no limit
  uint32_t peer_hint_mbps = 0;    ///< the share the peer gives us (its last ACK), paced to; 0: none
  uint32_t pace_mbps = 0;         ///< the pacer's rate: min(window / RTT x gain, hint); 0: none
  TimeNs srtt_ns = 0;             ///< smoothed RTT over all its paths' samples (0: none yet)
  uint64_t ce_rx_pkts = 0;        ///< CE-marked data packets received from the peer
  uint64_t ce_echoed_pkts = 0;    ///< CE marks the peer reported on our packets (sum of paths)
  std::vector<PathInfo> paths;    ///< local paths, by path id
  std::vector<PlaneInfo> planes;  ///< planes in use (min of both ends'; one until up)
};

/** The receiver's fair-share allocator (doc/congestion.md), for telemetry and tests. */
struct ShareInfo {
  uint64_t capacity_mbps = 0;  ///< EngineConfig::rx_capacity_mbps (0: no hints)
  TimeNs interval_ns = 0;      ///< the allocation interval now
  uint32_t level_mbps = 0;     ///< the max-min level of the last allocation (0: none yet)
  uint32_t measured = 0;       ///< senders the last allocation was computed over
  uint32_t listed = 0;         ///< senders with data in the current interval
  struct Sender {
    uint32_t conn_id = 0;
    PeerAddr peer;
    uint32_t measured_mbps = 0;  ///< its rate over the last interval
    uint32_t hint_mbps = 0;      ///< what its ACKs carry now (0: none)
  };
  std::vector<Sender> senders;  ///< connections whose ACKs carry a hint now, in engine order
};

/** An asynchronous event (as ibv_async_event): something went wrong outside a completion. */
struct AsyncEvent {
  enum class Type : uint8_t {
    kCqError,   ///< the CQ overflowed and is in error (IBV_EVENT_CQ_ERR); id is the CQ
    kQpFatal,   ///< the QP entered the error state outside a completion (IBV_EVENT_QP_FATAL)
    kSrqLimit,  ///< the SRQ holds fewer receives than its armed limit (IBV_EVENT_SRQ_LIMIT_REACHED)
  };
  Type type = Type::kCqError;
  uint32_t id = 0;
};

/** "connecting", "up" or "failed". */
const char* ConnStateName(ConnInfo::State s);

class EngineImpl;

/** The protocol engine of one host. Not thread-safe: one thread drives it. */
class Engine {
 public:
  /** Validates @p cfg; @p mem must outlive the engine. */
  static absl::StatusOr<std::unique_ptr<Engine>> Create(const EngineConfig& cfg, MemoryAccess* mem);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // ---- Verbs-level control path ----
  /**
   * A protection domain. @p owner tags every memory access made under it
   * (MemoryAccess): a daemon passes the application that holds the PD.
   */
  absl::StatusOr<uint32_t> AllocPd(uint64_t owner = 0);
  absl::Status DeallocPd(uint32_t pd);
  /** Registers [addr, addr+len) with @p access (access::*). */
  absl::StatusOr<MrInfo> RegMr(uint32_t pd, uint64_t addr, uint64_t len, uint32_t access);
  /**
   * RegMr() with the keys another engine's RegMr() returned for the same
   * region: a daemon with several engines registers each region in all of
   * them under one lkey and rkey. AlreadyExists when this engine uses the
   * keys' slot.
   */
  absl::StatusOr<MrInfo> RegMr(uint32_t pd, uint64_t addr, uint64_t len, uint32_t access,
                               const MrInfo& keys);
  absl::Status DeregMr(uint32_t lkey);
  absl::StatusOr<uint32_t> CreateCq(uint32_t depth);
  absl::Status DestroyCq(uint32_t cq);
  /** Returns the QP number (the stream id peers send to). */
  absl::StatusOr<uint32_t> CreateQp(const QpAttr& attr);
  /**
   * CreateQp() under QP number @p qpn, which the caller chose (a daemon that
   * numbers QPs across its engines): non-zero, below kQpnSpace, ending in
   * EngineConfig::qpn_tag, and not in use here (AlreadyExists).
   */
  absl::StatusOr<uint32_t> CreateQp(const QpAttr& attr, uint32_t qpn);
  absl::Status DestroyQp(uint32_t qpn);
  /**
   * Connects QP @p qpn to QP @p remote_qpn of the engine at @p peer. QPs of
   * this engine connected to the same peer share one connection. Work may be
   * posted at once; it is sent when the connection is up.
   */
  absl::Status ConnectQp(uint32_t qpn, const PeerAddr& peer, uint32_t remote_qpn);
  /**
   * What ibv_modify_qp changes after creation: remote_access, retry_cnt,
   * rnr_retry and min_rnr_delay_ns of @p attr (the rest is ignored). Work
   * posted from now on uses the new retry budgets.
   */
  absl::Status UpdateQp(uint32_t qpn, const QpAttr& attr);
  QpState GetQpState(uint32_t qpn) const;
  /**
   * A shared receive queue in @p pd: QPs created with QpAttr::srq take their
   * receives from it, in the order they were posted, each when the first
   * packet of the message that consumes it arrives.
   */
  absl::StatusOr<uint32_t> CreateSrq(uint32_t pd, uint32_t max_wr, uint32_t max_sge);
  /** Fails while a QP uses it; receives it still holds go without completions (as verbs). */
  absl::Status DestroySrq(uint32_t srq);
  /** Arms the limit event: kSrqLimit once the SRQ holds fewer than @p limit receives (0 disarms).
   */
  absl::Status ArmSrqLimit(uint32_t srq, uint32_t limit);
  absl::StatusOr<SrqInfo> QuerySrq(uint32_t srq) const;

  // ---- Data path ----
  absl::Status PostSend(TimeNs now, uint32_t qpn, const SendWr& wr);
  absl::Status PostRecv(uint32_t qpn, const RecvWr& wr);
  absl::Status PostSrqRecv(uint32_t srq, const RecvWr& wr);
  /** Moves up to out.size() completions of @p cq into @p out; returns how many. */
  size_t PollCq(uint32_t cq, std::span<Completion> out);
  /** Moves up to out.size() pending asynchronous events into @p out; returns how many. */
  size_t PollAsyncEvents(std::span<AsyncEvent> out);
  /**
   * Moves into @p out the CQs that were given completions since the last call
   * (each once, in the order they got their first), up to out.size(); returns
   * how many. Lets a poller visit only CQs with work.
   */
  size_t TakeReadyCqs(std::span<uint32_t> out);
  /**
   * Puts QP @p qpn in the error state at once (ibv_modify_qp to ERR): its
   * outstanding work and receives complete flushed, its peer is not told.
   */
  absl::Status SetQpError(uint32_t qpn);
  /** True when @p cq overflowed (completions were lost; its QPs are in error). */
  bool CqInError(uint32_t cq) const;
  /** Completions of @p cq that PollCq() has not taken yet. */
  size_t CqPending(uint32_t cq) const;

  // ---- Packets and time ----
  /** A received Ethernet frame (Framing::kEthernet). */
  void OnFrame(TimeNs now, std::span<const uint8_t> frame);
  /** A received UDP payload with its addresses (Framing::kUdp). */
  void OnDatagram(TimeNs now, const wire::FrameInfo& addr, std::span<const uint8_t> payload);
  /** Runs due timers and fills up to slots.size() packets; returns how many. */
  size_t PollTx(TimeNs now, std::span<TxSlot> slots);
  /**
   * Earliest time the engine needs PollTx() again without new input (kNever:
   * none); 0 while connections the last PollTx()'s slots did not reach wait
   * for their turn.
   */
  TimeNs NextDeadline() const;
  /** True when the engine has packets it could send now (PollTx would fill a slot). */
  bool HasPendingTx() const;

  // ---- Observability ----
  const EngineStats& stats() const;
  /** Paths of the connection to @p peer_ip (empty if there is none). */
  std::vector<PathInfo> GetPaths(const wire::IpAddr& peer_ip,
                                 uint16_t peer_udp_port = wire::kDefaultUdpPort) const;
  /**
   * Every connection with its paths, in creation order (failed ones until no
   * QP refers to them). Allocates: for telemetry snapshots, not per packet.
   */
  std::vector<ConnInfo> GetConnections() const;
  /** The fair-share allocator's state at the latest PollTx() time. Allocates. */
  ShareInfo GetShareInfo() const;
  /**
   * Senders the fair share counts now: the more of those of the last
   * allocation and those with data in the current interval.
   */
  uint32_t ShareSenders() const;
  /** ShareSenders() split: those that want more, and those limited elsewhere with their rates. */
  struct ShareDemand {
    uint32_t wanting = 0;
    uint32_t limited = 0;
    uint64_t limited_mbps = 0;
  };
  ShareDemand GetShareDemand() const;
  /**
   * The inbound capacity to share out from the next allocation on: a runtime
   * whose shards share one host's link sets each shard's part. False (and
   * nothing changes) when hints are off (rx_capacity_mbps 0 at Create()) or
   * @p mbps is 0 or above UINT32_MAX.
   */
  bool SetRxCapacity(uint64_t mbps);

 private:
  explicit Engine(std::unique_ptr<EngineImpl> impl);
  std::unique_ptr<EngineImpl> impl_;
  friend class EnginePeer;
};

}  // namespace metaroce::transport

#endif  // METAROCE_MR_ENGINE_H
