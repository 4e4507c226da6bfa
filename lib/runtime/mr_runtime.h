/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * The run-to-completion multi-lcore runtime (doc/runtime.md): N shards, each
 * one engine on one receive/transmit queue (or one port of its own), each
 * polled by its own thread: rx burst -> steer -> engine -> application ->
 * engine timers and tx burst, with no locks on the fast path. A shard is
 * identified by the UDP destination port it receives on (base + index), so a
 * connection's packets, sprayed over many UDP source ports, all reach the
 * same shard.
 */

#ifndef METAROCE_MR_RUNTIME_H
#define METAROCE_MR_RUNTIME_H

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "mr_port.h"
#include "mr_port_driver.h"
#include "mr_transport.h"

namespace metaroce::runtime {

/** Most shards one runtime may have. */
inline constexpr uint16_t kMaxShards = 16;
/** Packets moved per rx burst, hand-off drain and tx burst. */
inline constexpr uint16_t kBurst = 32;
/**
 * Transmit steps one poll runs while packets to the shard itself come back
 * into its engine (Shard::PollTx): data, its ACK, and what that frees. Bounded
 * so that two of its QPs talking to each other cannot hold the shard.
 */
inline constexpr uint32_t kMaxLoopbackRounds = 4;
/** Hand-off descriptors each shard owns (packets it may have in other shards' rings). */
inline constexpr uint32_t kHandoffDescriptors = 1024;
/** Capacity of each shard's inbound hand-off ring (a power of two). */
inline constexpr uint32_t kHandoffRingSlots = 2048;

/** How to start a runtime. */
struct RuntimeConfig {
  /**
   * Port driver spec as for DeviceConfig::port: "udp:ip=127.0.0.1,port=0"
   * (one port per shard), or "dpdk:...,queues=N" (one port, one queue per
   * shard; queues= may be left out and is then set to lcores).
   */
  std::string port;
  /** Optional fault stage (lib/port/mr_port_fault.h) in front of every shard's port. */
  std::string faults;
  /**
   * Planes 1..P-1 (doc/transport.md, "Planes"): a port spec each, opened like
   * `port` (a port per shard for udp, queues= per shard otherwise), with the
   * plane's own address, the same UDP port, framing and source ports. Every
   * shard's engine then has a port on every plane. Empty: one plane.
   */
  std::vector<port::PlaneSpec> planes;
  /** Shards (and threads), 1..kMaxShards. */
  uint16_t lcores = 1;
  /** Optional: pin shard i's thread to CPU cpus[i] (empty: threads inherit the caller's CPUs). */
  std::vector<int> cpus;
  /**
   * Engine settings as in DeviceConfig::engine: addresses, framing, UDP
   * port and source ports come from the port; shard i gets seed + i.
   */
  transport::EngineConfig engine;
  /**
   * 0 (default): busy poll, never give the CPU away. N: sched_yield() after N
   * consecutive idle iterations, for machines with fewer CPUs than busy
   * threads (tests on a shared 2-vCPU host).
   */
  uint32_t yield_after_idle_polls = 0;
  /** Name in telemetry and logs; shard i publishes as "NAME/shard<i>". Empty: "DRIVER:IP:PORT". */
  std::string name;
  /** Publish each shard's engine to DPDK telemetry (doc/observability.md) while polling. */
  bool telemetry = true;
  /** Pace each shard's transmission to this many bytes per second (mr_port_pacer.h); 0: unpaced. */
  uint64_t pace_bytes_per_sec = 0;
  /**
   * How shard i's engine reaches memory: memory[i] (it must outlive the
   * runtime). Empty: this process's own memory (transport::ProcessMemory).
   */
  std::vector<transport::MemoryAccess*> memory;
};

/** A shard's counters: written by its thread, readable from any thread (relaxed). */
struct ShardStats {
  port::StatCounter iterations;      ///< loop iterations (Poll() calls)
  port::StatCounter idle_polls;      ///< iterations that received, took and sent nothing
  port::StatCounter rx_packets;      ///< packets its queue or port received (before hand-off)
  port::StatCounter tx_packets;      ///< packets it handed to TxBurst()
  port::StatCounter handoffs_out;    ///< received packets passed to the shard they belong to
  port::StatCounter handoffs_in;     ///< packets other shards passed to it
  port::StatCounter handoff_drops;   ///< for another shard, dropped: no descriptor or ring full
  port::StatCounter handoff_copies;  ///< of handoffs_out, copied (the port could not detach them)
  port::StatCounter looped_back;  ///< packets to the shard itself, given back to its engine unsent
};

class Runtime;
struct ShardState;

/** One lcore: one engine, one rx/tx queue (or one port of its own). */
class Shard {
 public:
  ~Shard();
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  /** 0..num_shards()-1. */
  uint16_t index() const { return index_; }
  /**
   * The verbs-level API of this shard's engine. Not thread-safe: call it before
   * Runtime::Run(), after it returned, or from the app callback on this shard's thread.
   */
  transport::Engine& engine() { return *engine_; }
  const transport::Engine& engine() const { return *engine_; }
  /** Where peers reach THIS shard (its own UDP destination port). */
  transport::PeerAddr address() const;
  /**
   * Monotonic nanoseconds from the TSC (rte_get_tsc_cycles() scaled by
   * rte_get_tsc_hz()) when EAL is up, else CLOCK_MONOTONIC; starts near
   * CLOCK_MONOTONIC and never goes back for this shard, even when its thread
   * moves between CPUs whose TSCs differ slightly. Any thread.
   */
  transport::TimeNs Now() const;
  /** Counters; any thread. */
  const ShardStats& stats() const { return stats_; }
  /** The UDP destination port this shard receives on. */
  uint16_t udp_port() const { return udp_port_; }
  /** The receive/transmit queue of its port it polls. */
  uint16_t queue() const { return queue_; }
  /** Planes: ports it polls, one per plane (RuntimeConfig::planes). */
  size_t num_planes() const { return ports_.size(); }
  const port::Port& plane_port(size_t plane) const { return *ports_[plane]; }

  /**
   * One iteration without the application: receive a burst (handing other
   * shards' packets to them), take the packets handed to this shard, run the
   * engine's due timers and transmit. Run() calls it on the shard's thread; a
   * program may call it itself when Run() is not running, from one thread per
   * shard (tests drive all shards from one thread). Returns packets received,
   * taken and sent.
   */
  size_t Poll();
  /**
   * A descriptor that polls readable when packets for this shard arrive
   * (Port::RxEventFd), or -1 when the shard must be polled: its port has
   * none, or other shards hand it packets (software steering).
   */
  int RxEventFd();

 private:
  friend class Runtime;
  Shard();
  size_t PollRx();       ///< one burst, more when the loop comes back late (port::RxBurstsFor)
  size_t PollRxBurst();  ///< one receive burst of every plane's port, and the packets handed over
  size_t ReceiveBurst(port::Port* port);  ///< one burst of @p port, others' packets handed on
  size_t TakeHandoffs();                  ///< the packets other shards handed to this one
  /** A telemetry snapshot of its engine when one is due (every loop iteration asks). */
  void PublishIfDue();
  /**
   * Publishes how many senders its engine's fair share counts and takes its
   * part of the host's capacity by the count over every shard (every loop
   * iteration; lock-free: a relaxed atomic per shard).
   */
  void ShareCapacity();
  /** A packet for this shard's engine: a frame, or a datagram with its addresses. */
  void Deliver(transport::TimeNs now, std::span<const uint8_t> data, const wire::FrameInfo& addr);
  size_t PollTx();
  /** A packet this shard built for shard @p to of its runtime: a copy goes into its ring. */
  void HandToShard(uint16_t to, const transport::TxSlot& t, const wire::FrameInfo& rx);

  uint16_t index_ = 0;
  uint16_t udp_port_ = 0;
  uint16_t queue_ = 0;
  const Runtime* rt_ = nullptr;
  port::Port* port_ = nullptr;      ///< plane 0's
  std::vector<port::Port*> ports_;  ///< by plane
  transport::ProcessMemory mem_;
  std::unique_ptr<transport::Engine> engine_;
  std::unique_ptr<ShardState> st_;
  ShardStats stats_;
  mutable std::atomic<transport::TimeNs> last_now_{0};  // what Now() returned last
  uint64_t capacity_mbps_ = 0;  ///< its engine's part of the host's capacity (0: hints off)
};

/** N shards on one port spec, run by one thread each. */
class Runtime {
 public:
  /** How received packets reach the shard they belong to. */
  enum class Steering {
    kSinglePort,    ///< one shard: nothing to steer
    kPortPerShard,  ///< a port per shard (udp): the kernel steers by destination port
    kFlowRules,     ///< one port, a device rule per shard port (rte_flow) sends it to its queue
    kSoftware,      ///< one port: each shard passes other shards' packets on through rte_rings
  };

  /**
   * Opens the port(s), creates one engine per shard (shard i on UDP port
   * base + i, base being the port's udp_port) and sets up steering: flow
   * rules when the port takes them, else software hand-off. Errors name the
   * argument to fix.
   */
  static absl::StatusOr<std::unique_ptr<Runtime>> Open(const RuntimeConfig& cfg);
  /** Run() must have returned. Gives back packets left in hand-off rings, then closes. */
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /** Shards: cfg.lcores. */
  uint16_t num_shards() const { return static_cast<uint16_t>(shards_.size()); }
  /** Shard @p i, 0..num_shards()-1. */
  Shard& shard(uint16_t i) { return *shards_[i]; }
  const Shard& shard(uint16_t i) const { return *shards_[i]; }
  /** How packets reach their shard, as Open() decided. */
  Steering steering() const { return steering_; }
  /** The port shard @p i polls (with its fault stage, if any). */
  const port::Port& port_of(uint16_t i) const { return *shards_[i]->port_; }
  /** Port counters summed over the runtime's ports. Any thread. */
  port::PortStats port_stats() const;

  /**
   * Runs one thread per shard (pinned to cfg.cpus[i] if given, registered
   * with EAL when it is up), each looping Poll() with @p app(shard) between
   * receive and transmit, busy polling (see yield_after_idle_polls). Returns
   * once every shard's @p app has returned false once (that shard keeps
   * polling its engine until all are done, so ACKs still flow), or when Stop()
   * is called. @p app runs on the shards' threads concurrently, each call with
   * its own shard; a null @p app polls until Stop().
   * @return OK; FailedPrecondition if Run() is already running; an error
   *         naming the shard and CPU if a thread could not be started or pinned.
   */
  absl::Status Run(std::function<bool(Shard&)> app);
  /** Makes the running Run() return (or the next one, if none runs). Thread-safe. */
  void Stop() { stop_.store(true, std::memory_order_relaxed); }

 private:
  friend class Shard;
  Runtime() = default;
  // Picks the clock: the TSC when EAL knows its rate, else CLOCK_MONOTONIC (clock.cc).
  void InitClock();
  // The clock's reading; not clamped (the TSCs of two CPUs may differ by a few cycles).
  transport::TimeNs ClockNs() const;
  // Shard @p i's thread: register with EAL, loop, unregister.
  void ShardMain(uint16_t i, const std::function<bool(Shard&)>& app);

  RuntimeConfig cfg_;
  Steering steering_ = Steering::kSinglePort;
  bool steer_in_software_ = false;  // shards look at UDP destination ports (single port, N shards)
  uint16_t base_udp_port_ = 0;      // shard i receives on base_udp_port_ + i (single port)
  double ns_per_cycle_ = 0;         // 0: CLOCK_MONOTONIC
  uint64_t base_cycles_ = 0;
  transport::TimeNs base_ns_ = 0;
  std::vector<std::unique_ptr<port::Port>> ports_;  // destroyed after the shards
  std::vector<std::unique_ptr<Shard>> shards_;
  /**
   * Each shard's fair-share demand (Shard::ShareCapacity), a cache line each:
   * senders that want more, senders limited elsewhere and what those use.
   */
  struct alignas(64) ShareCount {
    std::atomic<uint32_t> wanting{0};
    std::atomic<uint32_t> limited{0};
    std::atomic<uint64_t> limited_mbps{0};
  };
  std::unique_ptr<ShareCount[]> share_counts_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> running_{false};
  std::atomic<uint16_t> apps_done_{0};
};

/** "single_port", "port_per_shard", "flow_rules", "software". */
const char* SteeringName(Runtime::Steering s);

}  // namespace metaroce::runtime

#endif  // METAROCE_MR_RUNTIME_H
