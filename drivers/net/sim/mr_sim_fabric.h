/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * The simulated fabric: a deterministic discrete-event simulator that carries
 * Ethernet frames between hosts through output-queued switches. Build it with
 * AddHost / AddSwitch / Connect (or a builder from mr_sim_topology.h), attach
 * an Endpoint to each host, and run it with RunUntil / RunUntilIdle.
 *
 * Model, per frame: the sending port serialises it at the link rate
 * ((max(len, 60) + overhead) * 8 / rate, rounded up to a picosecond); when the
 * last bit is out the link's faults apply and the frame arrives at the far end
 * after the propagation delay (plus the receiving switch's forwarding
 * latency). A switch routes it by destination IP to an output port (ECMP over
 * equal-cost next hops, chosen by a per-switch seeded hash of the 5-tuple),
 * drops it if that port's buffer would overflow, sets CE if the queue is above
 * the ECN threshold, and queues it. A host hands it to its endpoint.
 */

#ifndef METAROCE_MR_SIM_FABRIC_H
#define METAROCE_MR_SIM_FABRIC_H

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mr_sim_config.h"
#include "mr_sim_endpoint.h"
#include "mr_sim_stats.h"
#include "mr_sim_time.h"
#include "mr_sim_trace.h"
#include "mr_wire_frame.h"

namespace metaroce::sim {

/** Index of a switch in its fabric. */
using SwitchId = uint32_t;
/** Index of a link in its fabric. */
using LinkId = uint32_t;

/** A host or a switch, as a link end. */
struct NodeRef {
  enum class Kind : uint8_t { kHost, kSwitch };
  Kind kind = Kind::kHost;
  uint32_t index = 0;

  static constexpr NodeRef OfHost(HostId h) { return {Kind::kHost, h}; }
  static constexpr NodeRef OfSwitch(SwitchId s) { return {Kind::kSwitch, s}; }
  friend bool operator==(const NodeRef&, const NodeRef&) = default;
};

/** A link: end a's port, end b's port, its parameters and routing state. */
struct LinkInfo {
  NodeRef node_a;
  NodeRef node_b;
  PortId port_a = 0;  ///< direction A->B leaves from here
  PortId port_b = 0;
  LinkConfig config;
  bool routable = true;  ///< false after a reconvergence removed it from routing
};

/** Which links SetAllLinkFaults() touches. */
enum class LinkScope : uint8_t {
  kAll,          ///< every link
  kSwitchLinks,  ///< links between two switches
  kHostLinks,    ///< links with a host at one end
};

/** See the file comment. One Fabric per simulation; not thread-safe. */
class Fabric {
 public:
  /** An empty fabric whose every random stream derives from @p seed. */
  explicit Fabric(uint64_t seed);
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  /** The simulation seed. */
  uint64_t seed() const;

  // ---- Building --------------------------------------------------------------

  /** Adds a host. @return the host (owned by the fabric), or InvalidArgument. */
  absl::StatusOr<Host*> AddHost(const HostConfig& config);
  /** Adds a switch with no ports yet; Connect() adds them. */
  absl::StatusOr<SwitchId> AddSwitch(const SwitchConfig& config);
  /**
   * Connects two nodes with a full-duplex link. A host takes one link; each
   * link adds a port to a switch. Routes are recomputed before the next run.
   */
  absl::StatusOr<LinkId> Connect(NodeRef a, NodeRef b, const LinkConfig& config);
  /** Overrides one switch port's buffer and ECN threshold. */
  absl::Status SetPortQueue(PortId port, const PortQueueConfig& config);

  // ---- Faults ----------------------------------------------------------------

  /**
   * Replaces the faults of one link (one or both directions). Takes effect
   * for frames leaving from now on. A blackhole's reconvergence is scheduled
   * here. Clearing the blackhole (blackhole_at_ps = kSimTimeNever) of a link
   * that was removed from routing puts it back at once.
   */
  absl::Status SetLinkFaults(LinkId link, const FaultConfig& faults,
                             LinkDirection dir = LinkDirection::kBoth);
  /** SetLinkFaults(l, faults, kBoth) for every link in @p scope. */
  absl::Status SetAllLinkFaults(const FaultConfig& faults, LinkScope scope = LinkScope::kAll);

  // ---- Running ---------------------------------------------------------------

  /** Current simulated time. */
  SimTime Now() const;
  /** Runs every event at or before @p t, then sets Now() to @p t (if later). */
  void RunUntil(SimTime t);
  /**
   * Runs events until none are left or the next one is after @p limit. Now()
   * is the time of the last event run (it does not jump to @p limit).
   * @return true when no events are left (no frame in flight, no timer armed)
   */
  bool RunUntilIdle(SimTime limit = kSimTimeNever);
  /**
   * Runs @p fn at time @p at (not before Now()), in order with other events.
   * For workload control (start a flow, cut a link); allocates, so not for
   * per-packet use: endpoints have Host::SetTimer().
   */
  void ScheduleCallback(SimTime at, std::function<void()> fn);

  // ---- Looking ---------------------------------------------------------------

  size_t num_hosts() const;     ///< hosts added (ids 0..n-1)
  size_t num_switches() const;  ///< switches added (ids 0..n-1)
  size_t num_links() const;     ///< links connected (ids 0..n-1)
  size_t num_ports() const;     ///< ports: one per host plus one per switch link end
  /** Host by id; must be < num_hosts(). */
  Host* host(HostId id);
  /** Host owning an IPv4 or IPv6 address, or nullptr. */
  Host* FindHost(const wire::IpAddr& addr);
  /** Name of a switch (SwitchConfig::name or "switch<id>"). */
  const std::string& switch_name(SwitchId id) const;
  /** A switch's ports in the order its links were connected. */
  const std::vector<PortId>& switch_ports(SwitchId id) const;
  /** Frames a switch dropped because it had no route (counted at the switch). */
  uint64_t switch_no_route_drops(SwitchId id) const;
  /** Link ends and parameters. */
  LinkInfo link(LinkId id) const;
  /** Node owning a port. */
  NodeRef port_owner(PortId port) const;
  /** Counters of a port's output queue and outgoing link direction. */
  const PortStats& port_stats(PortId port) const;
  /** Sum over all ports of the drops for @p cause (kNoRoute: over switches). */
  uint64_t total_drops(DropCause cause) const;
  /** Events run so far (stale timer entries excluded). */
  uint64_t events_processed() const;
  /** Events waiting in the heap. */
  size_t pending_events() const;
  /** Frames inside the fabric (queued, on a wire). */
  size_t frames_in_flight() const;

  // ---- Determinism -------------------------------------------------------------

  /** Hash of every trace record so far (see mr_sim_trace.h). */
  uint64_t trace_hash() const;
  /** Trace records so far. */
  uint64_t trace_records() const;
  /** Calls @p observer with every trace record (empty function: none). */
  void SetTraceObserver(std::function<void(const TraceRecord&)> observer);

 private:
  std::unique_ptr<FabricImpl> impl_;
};

}  // namespace metaroce::sim

#endif  // METAROCE_MR_SIM_FABRIC_H
