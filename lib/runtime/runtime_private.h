/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Internals of the runtime: the software hand-off between shards (descriptors and
// rte_rings) and the steering decisions, which the unit tests call directly.

#ifndef METAROCE_RUNTIME_RUNTIME_PRIVATE_H
#define METAROCE_RUNTIME_RUNTIME_PRIVATE_H

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "mr_port.h"
#include "mr_port_pacer.h"
#include "mr_port_tx.h"
#include "mr_runtime.h"
#include "mr_telemetry.h"

struct rte_ring;

namespace metaroce::runtime {

/**
 * A packet on its way from the shard that received it to the shard it belongs
 * to. Descriptors belong to the receiving shard (owner), travel through the
 * destination's inbound ring and come back through the owner's free ring.
 */
struct alignas(64) Handoff {
  std::span<const uint8_t> data;  ///< in the port's buffer (handle) or in copy
  wire::FrameInfo addr;
  void* handle = nullptr;      ///< Port::DetachRx() handle; nullptr: data is in copy
  port::Port* port = nullptr;  ///< the port to give the handle back to
  uint16_t owner = 0;          ///< the shard whose descriptor this is
  std::vector<uint8_t> copy;   ///< the packet, when the port could not detach it
};

/**
 * An rte_ring of pointers in memory of its own (rte_ring_init(), so no EAL is
 * needed): any thread enqueues, one thread (its owner) dequeues.
 */
class HandoffRing {
 public:
  /** A ring holding exactly @p slots pointers. */
  static absl::StatusOr<std::unique_ptr<HandoffRing>> Create(const std::string& name,
                                                             uint32_t slots);
  ~HandoffRing();
  HandoffRing(const HandoffRing&) = delete;
  HandoffRing& operator=(const HandoffRing&) = delete;

  /** Enqueues up to @p n of @p objs (lock-free, any thread); returns how many. */
  unsigned Enqueue(void* const* objs, unsigned n);
  /** Dequeues up to @p n into @p objs (the owner's thread only); returns how many. */
  unsigned Dequeue(void** objs, unsigned n);
  /** Pointers in the ring now. */
  unsigned Count() const;

 private:
  HandoffRing() = default;
  rte_ring* ring_ = nullptr;
  void* mem_ = nullptr;
};

/** What a shard owns besides its engine: burst arrays and its hand-off state. */
struct ShardState {
  std::array<port::RxPacket, kBurst> rx;
  std::array<transport::TxSlot, kBurst> tx;
  // Software steering only (one port, several shards):
  std::unique_ptr<HandoffRing> inbound;  ///< packets other shards pass to this one
  std::unique_ptr<HandoffRing> free;     ///< this shard's descriptors not in use
  std::vector<Handoff> descriptors;      ///< kHandoffDescriptors, never resized
  std::array<std::array<Handoff*, kBurst>, kMaxShards> out{};  ///< staged, per destination
  std::array<uint16_t, kMaxShards> num_out{};
  std::unique_ptr<telemetry::Publisher> publisher;  ///< null: telemetry off
  port::TxPacer pacer;
  port::TxStepState tx_step;
};

/** Creates the hand-off rings and descriptors of shard @p index. */
absl::Status InitHandoff(uint16_t index, ShardState* st);

// ---- Steering decisions (steer.cc) ----

/**
 * The UDP destination port of a received packet: addr.dst_port for kUdp; for
 * frames read from Ethernet (one optional VLAN tag), IPv4 or IPv6, UDP.
 * @return false if the frame is not UDP over IP or is too short.
 */
bool UdpDstPort(transport::Framing framing, const port::RxPacket& p, uint16_t* port);

/**
 * The shard a packet belongs to: its UDP destination port minus @p base, if
 * that is below @p num_shards; -1 otherwise (not a shard's port, or unreadable:
 * the receiving shard keeps it and its engine counts the drop).
 */
int ShardOf(transport::Framing framing, const port::RxPacket& p, uint16_t base,
            uint16_t num_shards);

/** A shard's fair-share demand: Engine::ShareDemand, summed over shards for the runtime. */
using ShardDemand = transport::Engine::ShareDemand;

/**
 * The part of the host's inbound capacity @p host_mbps that a shard of
 * demand @p mine, of the runtime's @p all over @p num_shards shards, shares
 * out: max-min across the shards. Senders limited elsewhere keep what they
 * use; what is left is split among the senders that want more in proportion
 * to their number (every one of the host gets an equal part whichever shard
 * serves it), or, when none wants more, among all senders. A shard without
 * senders keeps room for the one that may come; without any, an equal part
 * per shard. At least 1.
 */
uint64_t ShardCapacityMbps(uint64_t host_mbps, const ShardDemand& mine, const ShardDemand& all,
                           uint16_t num_shards);

/** True for drivers with one queue per port, where each shard opens a port of its own (udp). */
bool PortPerShard(const std::string& driver);

/**
 * The spec shard @p index opens when each shard has its own port (udp):
 * port=N becomes N + index (0 stays 0: the kernel picks), first_source_port=P
 * becomes P + index * source_ports. Errors when a port would pass 65535.
 */
absl::StatusOr<std::string> ShardPortSpec(const port::PortArgs& args, uint16_t index);

/**
 * The spec of the one port @p num_shards shards share: queues= set to
 * @p num_shards when missing (num_shards > 1); an error when it is given and differs.
 */
absl::StatusOr<std::string> SharedPortSpec(const port::PortArgs& args, uint16_t num_shards);

/** "driver:key=value,..." back from parsed arguments. */
std::string JoinSpec(const port::PortArgs& args);

/**
 * The engine configuration of one shard: @p base with the port's addresses,
 * framing and source ports, @p udp_port, seed + @p index, and max_payload cut
 * to what the port's frames hold (as Device::Open does).
 */
absl::StatusOr<transport::EngineConfig> ShardEngineConfig(const transport::EngineConfig& base,
                                                          const port::PortInfo& info,
                                                          uint16_t udp_port, uint16_t index);

}  // namespace metaroce::runtime

#endif  // METAROCE_RUNTIME_RUNTIME_PRIVATE_H
