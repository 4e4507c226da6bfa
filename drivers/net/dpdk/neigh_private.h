/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Neighbour resolution of the dpdk driver (doc/dpdk-driver.md, "Neighbour resolution"):
// the ARP / IPv6 ND frame codec and the neighbour table (pure, no EAL: neigh_frame.cc,
// neigh_table.cc), and the glue that hooks them into a port's bursts (neigh.cc).

#ifndef METAROCE_NET_DPDK_NEIGH_PRIVATE_H
#define METAROCE_NET_DPDK_NEIGH_PRIVATE_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "mr_net_dpdk.h"

struct rte_mbuf;
struct rte_mempool;

namespace metaroce::dpdk {

/** Least time between two requests (ARP request / NS) for an unresolved address. */
inline constexpr int64_t kNeighRequestIntervalNs = 100'000'000;
/** A learnt entry unconfirmed this long is still used, but refreshed by unicast requests. */
inline constexpr int64_t kNeighRefreshAfterNs = 30'000'000'000;
/** Least time between two refresh requests for one address. */
inline constexpr int64_t kNeighRefreshIntervalNs = 1'000'000'000;
/** A learnt entry unconfirmed this long is unresolved again (frames to it are dropped). */
inline constexpr int64_t kNeighExpireAfterNs = 60'000'000'000;
/** Most entries in a port's table (static ones included); the oldest learnt one makes room. */
inline constexpr size_t kMaxNeighEntries = 1024;
/** Bytes of the largest frame the codec builds: Ethernet + IPv6 + NS/NA with one option. */
inline constexpr size_t kNeighFrameBytes = 86;
/** Frames shorter than this (without FCS) are padded with zeros: the Ethernet minimum. */
inline constexpr size_t kMinEthFrameBytes = 60;

// ---- Codec (neigh_frame.cc) ----

/** What a neighbour frame says. */
enum class NeighOp : uint8_t {
  kArpRequest,
  kArpReply,
  kSolicit,  ///< ICMPv6 neighbour solicitation (type 135)
  kAdvert,   ///< ICMPv6 neighbour advertisement (type 136)
};

/** A parsed ARP or NS/NA frame. */
struct NeighMsg {
  NeighOp op = NeighOp::kArpRequest;
  wire::MacAddr eth_src;
  /** ARP: sender protocol address; NS: IPv6 source; NA: the target (whose MAC it tells). */
  wire::IpAddr sender_ip;
  /**
   * ARP: sender hardware address; NS: source link-layer option; NA: target
   * link-layer option; eth_src when the NS/NA has no such option.
   */
  wire::MacAddr sender_mac;
  /** ARP: target protocol address; NS/NA: the target address. */
  wire::IpAddr target_ip;
  /** NS from :: (duplicate address detection): there is no sender to learn or answer. */
  bool dad = false;
};

/** How ParseNeighFrame() went. */
enum class NeighParse : uint8_t {
  kNotNeigh,   ///< not ARP nor ICMPv6 NS/NA: a frame for the engine
  kOk,         ///< *msg is filled
  kMalformed,  ///< ARP or NS/NA, but short or invalid (RFC 826, RFC 4861 7.1)
};

/**
 * True if @p frame is ARP (ethertype 0x0806) or, by its first headers, an
 * ICMPv6 NS/NA: the frames the driver keeps from the engine. Untagged frames
 * only. Reads at most the first 55 bytes.
 */
bool IsNeighFrame(std::span<const uint8_t> frame);

/**
 * Parses an ARP (Ethernet/IPv4, request or reply) or ICMPv6 NS/NA frame and
 * checks it: ARP hardware/protocol types and sizes; for ND the hop limit of
 * 255, code 0, the ICMPv6 checksum, option lengths, a unicast target; a
 * multicast or zero link-layer address is malformed.
 */
NeighParse ParseNeighFrame(std::span<const uint8_t> frame, NeighMsg* msg);

/**
 * Builds an ARP request from (@p mac, @p ip) for @p target into @p out:
 * broadcast, or unicast to @p to (a refresh). Returns the frame's length
 * (padded to kMinEthFrameBytes), 0 if @p out is too small or an address is not IPv4.
 */
size_t BuildArpRequest(const wire::MacAddr& mac, const wire::IpAddr& ip, const wire::IpAddr& target,
                       const wire::MacAddr* to, std::span<uint8_t> out);

/** Builds the ARP reply "@p ip is at @p mac" to (@p to_mac, @p to_ip); as BuildArpRequest(). */
size_t BuildArpReply(const wire::MacAddr& mac, const wire::IpAddr& ip, const wire::MacAddr& to_mac,
                     const wire::IpAddr& to_ip, std::span<uint8_t> out);

/**
 * Builds an NS from (@p mac, @p ip) for @p target with a source link-layer
 * option: to the target's solicited-node multicast group, or unicast to
 * @p to and @p target (a refresh). Returns the length, 0 if @p out is too
 * small or an address is not IPv6.
 */
size_t BuildNeighSolicit(const wire::MacAddr& mac, const wire::IpAddr& ip,
                         const wire::IpAddr& target, const wire::MacAddr* to,
                         std::span<uint8_t> out);

/**
 * Builds the NA "@p ip is at @p mac" (override flag, target link-layer option)
 * to (@p to_mac, @p to_ip); @p solicited sets the S flag (clear when answering
 * DAD to all-nodes). As BuildNeighSolicit().
 */
size_t BuildNeighAdvert(const wire::MacAddr& mac, const wire::IpAddr& ip,
                        const wire::MacAddr& to_mac, const wire::IpAddr& to_ip, bool solicited,
                        std::span<uint8_t> out);

/**
 * The destination IP of an untagged or 802.1Q-tagged IPv4/IPv6 frame; false
 * for other or too short frames.
 */
bool FrameDestination(std::span<const uint8_t> frame, wire::IpAddr* dst);

// ---- Table (neigh_table.cc) ----

/**
 * One port's neighbours: static entries, learnt ones, and unresolved ones
 * waiting for an answer. Decides what to answer, what to learn and when to
 * ask; builds those frames but sends nothing. Times are monotonic
 * nanoseconds from the caller. Not thread-safe (Neigh locks it).
 */
class NeighTable {
 public:
  /** A table for the port (@p ip, @p mac) holding @p statics. */
  NeighTable(const wire::IpAddr& ip, const wire::MacAddr& mac,
             const std::vector<StaticNeigh>& statics);

  /**
   * Handles a received frame for which IsNeighFrame() holds: learns the
   * sender where allowed and, for a request for this port's address, writes
   * the answer into @p reply. Returns the answer's length, 0 for none.
   */
  size_t OnFrame(std::span<const uint8_t> frame, int64_t now_ns, std::span<uint8_t> reply);

  /** Where a frame to some address goes. */
  struct Resolution {
    bool ok = false;    ///< false: unresolved, drop the frame (counted in unresolved_drops)
    wire::MacAddr mac;  ///< when ok: the destination MAC
    int64_t valid_until_ns = 0;  ///< when ok: the answer holds until then without asking again
    size_t request_len = 0;      ///< non-zero: a request to send was written into the buffer
  };

  /**
   * The MAC for @p dst: static, learnt, or this port's own. An unknown or
   * expired address is unresolved and gets a broadcast request at most every
   * kNeighRequestIntervalNs; a learnt entry older than kNeighRefreshAfterNs is
   * still used and gets a unicast request at most every kNeighRefreshIntervalNs.
   * A request is written into @p request (kNeighFrameBytes suffice).
   */
  Resolution Resolve(const wire::IpAddr& dst, int64_t now_ns, std::span<uint8_t> request);

  /** The MAC of a resolved or static entry for @p ip. */
  std::optional<wire::MacAddr> Lookup(const wire::IpAddr& ip) const;
  /** Counts a request or answer that could not be sent. */
  void CountSendFailure() { stats_.send_failures++; }
  /** The counters (entries filled in). */
  NeighStats stats() const;
  /** Changes whenever an entry's MAC changes or an entry stops being usable. */
  uint64_t generation() const { return generation_; }
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    wire::MacAddr mac;
    bool resolved = false;
    bool is_static = false;
    int64_t confirmed_ns = 0;  ///< resolved: when ARP/ND last said so
    int64_t next_request_ns = std::numeric_limits<int64_t>::min();  ///< earliest next request
  };

  // Stores @p mac for @p ip (an existing learnt entry, or a new one if @p create); false if
  // the entry is static or absent and not created.
  bool Learn(const wire::IpAddr& ip, const wire::MacAddr& mac, int64_t now_ns, bool create);
  // A new entry for @p ip, making room if the table is full; nullptr if every entry is static.
  Entry* Insert(const wire::IpAddr& ip);
  // Writes a request for @p target (unicast to @p to if set) into @p out.
  size_t Request(const wire::IpAddr& target, const wire::MacAddr* to, std::span<uint8_t> out);

  wire::IpAddr ip_;
  wire::MacAddr mac_;
  absl::flat_hash_map<wire::IpAddr, Entry> entries_;
  NeighStats stats_;
  uint64_t generation_ = 0;
};

// ---- Port glue (neigh.cc) ----

/**
 * A dpdk port's neighbour resolution: the table behind a lock, and what the
 * port's bursts call. Requests and answers go out on the transmit queue of
 * the burst that caused them, in mbufs from the port's pool.
 */
class Neigh {
 public:
  /** For ethdev @p port_id, its pool @p pool and the addresses of @p info (which outlives it). */
  Neigh(uint16_t port_id, rte_mempool* pool, const port::PortInfo& info,
        const std::vector<StaticNeigh>& statics);
  ~Neigh();
  Neigh(const Neigh&) = delete;
  Neigh& operator=(const Neigh&) = delete;

  /**
   * RxBurst hook: if @p m holds an ARP or NS/NA frame, handles it (answer,
   * learn, count), frees @p m and returns true; otherwise returns false.
   */
  bool OnRx(uint16_t queue, rte_mbuf* m);

  /**
   * TxBurst hook for a frame about to be sent on @p queue: fills a zero
   * destination MAC of an IPv4/IPv6 frame. False: the destination is
   * unresolved, the caller drops the frame (a request may have been sent).
   * @p now_ns is 0 until a first call reads the clock, then reused by the
   * other frames of the burst.
   */
  bool OnTx(uint16_t queue, std::span<uint8_t> frame, int64_t* now_ns);

  /** The counters. Thread-safe. */
  NeighStats stats() const;

 private:
  // The last resolution of one transmit queue, used without the lock while the
  // table's generation is unchanged and it is still valid.
  struct TxCache {
    bool valid = false;
    wire::IpAddr ip;
    wire::MacAddr mac;
    uint64_t generation = 0;
    int64_t valid_until_ns = 0;
  };

  // Sends @p frame on @p queue in a new mbuf; counts a failure.
  void Send(uint16_t queue, std::span<const uint8_t> frame);

  const uint16_t port_id_;
  rte_mempool* const pool_;
  const port::PortInfo& info_;
  mutable std::mutex mu_;
  NeighTable table_;  // guarded by mu_
  std::atomic<uint64_t> generation_{0};
  std::vector<TxCache> cache_;  // one per transmit queue, each touched by its queue's thread
};

}  // namespace metaroce::dpdk

#endif  // METAROCE_NET_DPDK_NEIGH_PRIVATE_H
