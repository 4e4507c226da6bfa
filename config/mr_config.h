/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * Build-wide tunables, one line of reason each. Protocol constants fixed by
 * the wire format live in lib/wire/mr_wire_defs.h; what an operator may
 * change at run time lives in the daemon's configuration, with these as the
 * defaults.
 */

#ifndef METAROCE_MR_CONFIG_H
#define METAROCE_MR_CONFIG_H

#include <cstddef>
#include <cstdint>

namespace metaroce::config {

/** Lowest UDP source port a path uses: the IANA dynamic range, away from services. */
inline constexpr uint16_t kPathSourcePortMin = 49152;

/** DSCP for MetaRoCE traffic: AF31, a common lossy RDMA class; ECN bits are separate. */
inline constexpr uint8_t kDscp = 26;

/** Largest frame the capture and decode tools handle: a 9000-byte MTU plus headers. */
inline constexpr uint32_t kMaxFrameBytes = 9216;

// ---- Transport engine defaults (EngineConfig fields start from these) ----

/** Paths per connection: enough distinct source ports to spread over 8 spines. */
inline constexpr uint16_t kPaths = 8;

/** Largest payload per packet: a 4 KiB RDMA MTU, as on AI fabrics. */
inline constexpr uint16_t kMaxPayloadBytes = 4096;

/** Packets in flight per path; at most 255 so the receiver's 256-bit SACK covers them all. */
inline constexpr uint32_t kPathWindowPkts = 64;

/** Packets in flight per connection, over all paths. */
inline constexpr uint32_t kConnWindowPkts = 512;

/**
 * A new connection's congestion window, grown by slow start (doubling per
 * round trip) until the first congestion signal. The full window (2.2 MB)
 * of each of 8 new senders overflowed a 1 MiB switch buffer in the first
 * round trip (652 drops in the 8-sender incast test, with hints). Measured
 * there and with 16 and 32 senders (doc/congestion.md): 128 KiB still
 * dropped 12 packets with 8, 64 KiB none with 8 but 96 with 16 and 341 with
 * 32, 48 KiB 32 and 213, 32 KiB none with 16 and 85 with 32, and converged
 * soonest with 8 (280 us against 400); software hosts' write_bw moved by
 * nothing beyond the noise. A 400 Gbit/s x 3 us BDP (150 KB) is three round
 * trips away; a software host of ~1 MB BDP, six.
 */
inline constexpr uint32_t kInitialWindowBytes = 32 * 1024;

// ---- Congestion control (lib/transport/congestion.cc, doc/congestion.md) ----

/**
 * Spraying follows the paths' congestion windows, but a path's turn adds at
 * least the widest window >> this (1/16): a path cut far below the others
 * still carries a packet in 16 turns, which keeps its RTT and marks
 * measured (and its window growing back), and bounds the turns a choice
 * takes.
 */
inline constexpr uint32_t kSprayMinShareShift = 4;

/** Fixed-point bits of the marked-fraction estimate alpha (1.0 = 1 << this): 0.1 % steps. */
inline constexpr uint32_t kCcAlphaFracBits = 10;

/**
 * alpha moves by g = 2^-this of the difference each round trip: DCTCP's
 * g = 1/16 (Alizadeh et al., SIGCOMM 2010, section 3.4), stable for windows
 * up to the 1.5 BDP paths keep.
 */
inline constexpr uint32_t kCcAlphaGainShift = 4;
static_assert(kCcAlphaGainShift < kCcAlphaFracBits, "g must be representable in alpha's steps");

/**
 * A round trip counts as congested when at least this share of its packets
 * (in 1 / 256) came back CE-marked: Linux PLB's tcp_plb_cong_thresh default
 * of 128, i.e. half (Qureshi et al., "PLB", SIGCOMM 2022).
 */
inline constexpr uint32_t kCcCongestedRoundShare256 = 128;

/**
 * A path congested for this many round trips in a row, while another path
 * of its connection is clear, moves to a fresh source port (another ECMP
 * route). PLB re-paths a whole TCP connection after 12 rounds, to bound the
 * reordering it causes; a MetaRoCE path is one of many and its receiver
 * tolerates reordering, so it moves sooner.
 */
inline constexpr uint32_t kCcRepathRounds = 4;

/**
 * Queueing delay a path may add above its connection's base (smallest) RTT
 * before its window shrinks, the signal where nothing marks CE (a software
 * receiver's queue, memif, loopback, a fabric without ECN). Measured on the
 * 2-vCPU reference machine (doc/congestion.md): a 64 KiB write_bw with the
 * packet windows alone queued 0.2-0.7 ms over memif and about 1 ms over
 * kernel UDP; a target of 100 us kept it there but cost throughput under
 * load (a stall of either process drains a short queue, and the receiver
 * idles); 250 us keeps the throughput and cuts the queue by 2-4x. Far above
 * what ECN lets a switch queue, so on an ECN fabric the marks act first.
 */
inline constexpr uint64_t kCcDelayTargetNs = 250'000;

/**
 * A window above the delay target shrinks by (rtt - target) / rtt times
 * this (in 1 / 256), Swift's beta of 0.8 (Kumar et al., section 3.1),
 * at most by kCcMaxDelayCut256 and once per round trip.
 */
inline constexpr uint32_t kCcDelayGain256 = 205;
/** The largest delay cut (1 / 256): half, as after a mark with alpha = 1. */
inline constexpr uint32_t kCcMaxDelayCut256 = 128;
static_assert(kCcMaxDelayCut256 < 256 && kCcDelayGain256 <= 256);

/**
 * The base RTT is the smallest sample of this period, so that a route that
 * became longer for good does not read as queueing forever (BBR's min_rtt
 * window, Cardwell et al., ACM Queue 2016).
 */
inline constexpr uint64_t kCcBaseRttWindowNs = 10'000'000'000;

/**
 * The receiver re-allocates its inbound capacity this often, over the
 * senders measured in the interval: about two base round trips of a
 * data-center fabric, so that a new sender gets its share in its first
 * round trips and a departed one's is handed out again within a few.
 */
inline constexpr uint64_t kFairShareIntervalNs = 20'000;

/**
 * ... and at least as long as each sender of the last interval takes to send
 * this many full packets at an equal share. Measured over fewer, one packet
 * more or less is over 10 % of a rate, senders read as limited elsewhere and
 * the level inflates: with 32 senders at 100 Gbit/s, 20 us hold under two
 * packets each, and the hint (4.8 Gbit/s against a share of 3.1) bound no one.
 */
inline constexpr uint32_t kFairSharePktsPerSender = 8;

/**
 * Senders that a receiver told more than their equal part (as new senders
 * arrive, the first are told C, C/2, ...) are told the part again, by an ACK
 * of their own, each time its senders have grown by this share (in %) since
 * the last telling, when they were told more than this share over it: so
 * that new senders together send at most about this share over the link
 * until they hear. With every doubling (100), 63 senders opening together
 * were told C/32 to C/63 and sent 1.3 x the link: 0.72 BDPs at the receiver
 * and completion 94.9 % of N S / C (mr-sim incast, 3 seeds); with 25, 0.21 and 95.2 %.
 * Geometric, so each sender still costs O(1) ACKs per step.
 */
inline constexpr uint32_t kFairSharePushStepPct = 25;

/**
 * A receiver computes its level again, within an interval, each time this
 * share (in %) of the senders it was computed over said IDLE (nothing more
 * queued): their parts go to the senders still sending from those senders'
 * next ACKs, not an interval or two later. A fifth: the counterpart of
 * kFairSharePushStepPct (senders growing by a quarter), so each sender costs
 * O(1) allocations.
 */
inline constexpr uint32_t kFairShareLeftStepPct = 20;
static_assert(kFairShareLeftStepPct > 0 && kFairShareLeftStepPct <= 100);

/**
 * A sender that reached less than this share (in %) of the water level is
 * limited elsewhere (its own link, its application, another bottleneck) and
 * keeps what it uses; the rest is split among the others. Below 100 so that
 * senders held to the level, which measure a little under it, still count
 * as wanting more.
 */
inline constexpr uint32_t kFairShareLimitedPct = 90;

/**
 * A receiver whose arrivals came mostly CE-marked over an interval holds
 * back up to capacity >> this from the next allocation, so that a queue at
 * its link drains (fair_share.cc ShareDrainMbps): 1/8. Measured in the
 * incast tests (doc/congestion.md): 1/4 drained past empty (the marks lag
 * the queue by its own delay) and cost up to 9 % of goodput with 32
 * senders, 1/16 left 8 senders a 63 KB queue; counting the marks linearly
 * from the first (not from half) cost 13 % with 32 senders, whose jitter
 * marks a share of packets at any load.
 */
inline constexpr uint32_t kFairShareDrainShift = 3;
/**
 * ... and only over this share of its bytes marked, in proportion to what
 * is over it: (f - 75 %) / 25 % of the most. From half (2 f - 1), 32 paced
 * senders of random phases held their load at 94 % of the link in the
 * incast tests: at 96 % their arrivals queue past the ECN threshold now and
 * then (an M/D/1 queue holds rho^2 / 2 (1 - rho) = 12 packets), half their
 * bytes came marked and the drain took 4 Gbit/s for good. A standing queue
 * marks nearly every byte either way (doc/congestion.md).
 */
inline constexpr uint32_t kFairShareDrainFromPct = 75;
static_assert(kFairShareDrainFromPct >= 50 && kFairShareDrainFromPct < 100);

/**
 * Window pacing, where it is turned on (EngineConfig::pacing_gain_pct; off
 * by default, doc/congestion.md "Window pacing" has the measurements): a
 * connection sends at this share (in %) of its window per smoothed RTT, and
 * at the slow-start share while its window is in slow start: Linux TCP's
 * pacing ratios (net.ipv4.tcp_pacing_ca_ratio = 120, tcp_pacing_ss_ratio =
 * 200). Above 100 so that the pacer spreads a window over its round trip
 * without holding it below what the ACK clock would send.
 */
inline constexpr uint32_t kCcPacingGainPct = 120;
inline constexpr uint32_t kCcPacingSlowStartGainPct = 200;
static_assert(kCcPacingGainPct > 100 && kCcPacingSlowStartGainPct >= kCcPacingGainPct);

/**
 * A window-paced connection may send window >> this back to back after a
 * pause (its pacer's credit). Measured over net_memif (64 KiB write_bw): a
 * credit of one packet let each poll of a software host send one or two
 * packets and halved the bandwidth; window / 8 cost 25 %, window / 4 5 %,
 * window / 2 nothing.
 */
inline constexpr uint32_t kCcPacingBurstShift = 1;

/** Lowest retransmission timeout: several fabric RTTs, well above ACK coalescing delay. */
inline constexpr uint64_t kRtoMinNs = 100'000;

/**
 * A timeout shown spurious (the oldest packet it declared lost arrived
 * after all: the peer or this host stalled, not the path) keeps the
 * connection's RTO at least 5/4 of what that packet took, halved after
 * each this long with no spurious timeout. A peer that stalls once keeps
 * its paths' RTOs from re-sending what a stall holds for a while, and a
 * fabric of real losses never raises it. On the 2-vCPU reference machine
 * a descheduled peer stalls for 0.1-4 ms many times a second: 64 B
 * WRITEs of depth 4 over memif made 120-1,400 needless timeouts a second
 * (idle to loaded), half as many with it (doc/congestion.md). A needless
 * tail-loss probe (its packet arrived, the ACK was late) raises the
 * connection's probe floor the same way, halved as often.
 */
inline constexpr uint64_t kRtoFloorHalfLifeNs = 100'000'000;

/**
 * Only a spurious timeout (or needless probe) whose packet took this many of
 * the connection's smallest round trips raises that floor (or the probe's):
 * a stall of a host, not a queue.
 * A long-haul flow's RTO fires spuriously when the short flows beside it
 * fill a queue (1.5-3 round trips); a floor from those held its real tail
 * losses back (mr-sim longhaul-loss at 0.1 %: 0.968 -> 0.929 of lossless).
 */
inline constexpr uint32_t kRtoFloorStallRtts = 8;

/** Highest retransmission timeout after backoff. */
inline constexpr uint64_t kRtoMaxNs = 20'000'000;

/** Shortest wait (2 SRTT otherwise) before re-sending the newest packet of a silent path. */
inline constexpr uint64_t kTlpMinNs = 10'000;

/** RTO before the first RTT sample. */
inline constexpr uint64_t kRtoInitialNs = 1'000'000;

/**
 * A path's RTO that comes while nothing at all has arrived from the peer
 * for rto_min waits until the peer has been silent this long: a connection
 * gone quiet as a whole is a stalled peer or host far more often than a loss
 * of everything in flight (whose tail the loss probes repair sooner). On the
 * 2-vCPU reference machine a loopback peer falls silent for 0.1-0.5 ms many
 * times a second (doc/congestion.md); as long as the first RTO, so a peer
 * never heard from waits no longer than before.
 */
inline constexpr uint64_t kRtoSilentNs = 5 * kRtoInitialNs;

/** A receiver acknowledges at least every this many data packets per path. */
inline constexpr uint32_t kAckEveryPkts = 4;

/** Longest a receiver delays an ACK: short against the RTO, long enough to coalesce. */
inline constexpr uint64_t kAckDelayNs = 5'000;

/** Consecutive timeouts after which a path is declared failed and re-probed. */
inline constexpr uint32_t kPathFailTimeouts = 3;

/** Packets per path over which its loss ratio is judged. */
inline constexpr uint32_t kPathHealthWindowPkts = 64;

/**
 * A path losing at least this share of its packets in a window, and over three
 * times what the other paths lose, is failed and re-probed on a new port.
 */
inline constexpr uint32_t kPathFailLossPct = 20;

/**
 * Paths of one plane that, failed with no path of that plane getting through
 * since, mean the plane is down: the rest of its paths fail at once (a plane
 * of one path fails with it). Two, so that one bad link (one ECMP route) never
 * takes a plane down, while a dead plane costs one path's timeouts, not all.
 */
inline constexpr uint32_t kPlaneFailPaths = 2;

/** Interval between probes of a failed path (each on a fresh source port). */
inline constexpr uint64_t kPathProbeIntervalNs = 200'000;

/**
 * Probes of a rerouted path (silent while the peer answered on its other
 * paths: a dead route, not a dead peer) that come 2 SRTT apart, doubling,
 * before the path_probe_interval_ns schedule. A fresh port crosses a dead
 * spine of S again with chance 1/S each way, so three quick tries find a
 * live route for all but (2/S)^3 of paths (1/64 with S = 8); more would
 * only add probes for a peer that stopped answering.
 */
inline constexpr uint32_t kRerouteQuickProbes = 3;

/**
 * For this long after one of its paths was rerouted (fell silent while the
 * others delivered: the fabric has a dead route), a connection's PLB moves
 * probe the new source port first and move only when the probe is answered,
 * keeping the congested but working port meanwhile. Otherwise a fresh port
 * lands on the dead route with chance 1/S and its window is lost: under a
 * spine dark for good (mr-sim `spine`, 64 hosts, seed 1) 3,000 moves made 400
 * reroutes and held throughput at 0.85 of before; probing first, 0.96. Not
 * always: the probe's round trip slows moves off a hot spine
 * (HotSpine: A's median share on the hot spine 0.19 -> 0.22). 10 ms spans
 * the reconvergence times mr-sim sweeps (0.1-10 ms).
 */
inline constexpr uint64_t kPlbCarefulNs = 10'000'000;

/**
 * A connection fails when every path has been failed this long. Long enough
 * that a peer process descheduled on a busy host is not declared dead.
 */
inline constexpr uint64_t kConnFailAfterNs = 500'000'000;

/** A connection with QPs probes its peer after this long without hearing from it. */
inline constexpr uint64_t kKeepaliveNs = 100'000'000;

/**
 * A delivered message waits at least this long for its stream ACK before the
 * first message probe; the waits double up to kMsgProbeMaxNs, so kMsgRetries
 * probes span about a third of a second.
 */
inline constexpr uint64_t kMsgProbeMinNs = 4'000'000;
inline constexpr uint64_t kMsgProbeMaxNs = 100'000'000;

/**
 * Destroyed QPs per connection whose accepted messages are remembered, so that
 * a probe whose stream ACK was lost (the last message before a program exits)
 * is answered with that ACK instead of failing at the peer. Programs that
 * churn QPs faster than a probe's retries (about a third of a second) between
 * one host pair are rare; the oldest is forgotten first.
 */
inline constexpr uint32_t kClosedStreamsPerConn = 64;

/**
 * Smallest direct-mapped lookup cache for QPs and connections (slots of 16
 * bytes): 1 KiB per engine and per table covers the QPs and connections of a
 * host with a few dozen, where nothing evicts; it grows to twice the live
 * objects, so hits stay likely at any scale.
 */
inline constexpr size_t kDirectCacheMinSlots = 64;

/**
 * Longest interval between CONN_REQ retransmissions while a connection is
 * being set up; the first comes after rto_min and the waits double up to it.
 */
inline constexpr uint64_t kConnRetryNs = 1'000'000;

/** Chunks a message sends before the next QP (or response) takes its turn. */
inline constexpr uint32_t kTxQuantumChunks = 16;

/** Unacknowledged messages per stream a receiver keeps state for (bounds peer-driven state). */
inline constexpr uint32_t kStreamWindowMsgs = 1024;

/** Message probes (re-sent last chunk) before a requester gives up on a message. */
inline constexpr uint32_t kMsgRetries = 7;

/** Connections an engine keeps, including ones peers open. */
inline constexpr uint32_t kMaxConnections = 4096;

/** Connections to one peer IP: room for many engines per host, not for one host to fill the table.
 */
inline constexpr uint32_t kMaxConnectionsPerHost = 64;

/** A connection no local QP uses is closed after this long: peers cannot hold state here for good.
 */
inline constexpr uint64_t kConnIdleNs = 10'000'000'000;

/**
 * A packet overtaken on its own path is declared lost only once it is this
 * late after its successor would have been expected: adaptive-routing fabrics
 * reorder within a path by a few microseconds, and loss recovery waits no longer.
 */
inline constexpr uint64_t kReorderWindowNs = 4'000;

/**
 * Chunk-arrival state the peer's incomplete messages may hold per connection:
 * 64 MiB tracks 2 GiB messages of 4 KiB chunks on 1024 streams at once.
 * Chunks beyond it are dropped and recovered by message probes (NAK RESEND).
 */
inline constexpr uint64_t kRxMsgStateBytes = 64ull << 20;

/**
 * Handshake cookies are valid for the time slot they were made in and the
 * next: 1 to 2 s, long enough for any RTT, too short to stockpile.
 */
inline constexpr uint64_t kCookieSlotNs = 1'000'000'000;

/** NAK RESENDs (one missing range each) a receiver answers one message probe with. */
inline constexpr uint32_t kResendRangesPerProbe = 4;

/**
 * CRC-32C of this many bytes and more goes to ISA-L's crc32_iscsi (PCLMUL
 * folding), shorter runs to the three-stream crc32 loop: ISA-L's set-up
 * costs more below. Measured (AMD EPYC, AVX-512): 128 B 19 vs 28 ns, 256 B
 * 33 vs 24 ns, 4 KiB 188 vs 90 ns (doc/transport-figures.md).
 */
inline constexpr size_t kCrc32cIsalMinBytes = 256;

}  // namespace metaroce::config

#endif  // METAROCE_MR_CONFIG_H
