/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/*
 * Internal state of the fabric. FabricImpl owns every component in flat
 * vectors indexed by id; events name their target by index. The work is split
 * by purpose: build.cc (hosts, switches, links, settings), fabric.cc (the run
 * loop, dispatch, trace), port.cc (output queues and serialisation),
 * channel.cc (link faults and propagation), switch.cc (forwarding),
 * routing.cc (route computation), host.cc (the Host handle, timers and
 * delivery), fabric_api.cc (the public Fabric front).
 */

#ifndef METAROCE_SIM_FABRIC_PRIVATE_H
#define METAROCE_SIM_FABRIC_PRIVATE_H

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "addr_table_private.h"
#include "event_queue_private.h"
#include "fifo_private.h"
#include "frame_pool_private.h"
#include "mr_sim_config.h"
#include "mr_sim_endpoint.h"
#include "mr_sim_fabric.h"
#include "mr_sim_rng.h"
#include "mr_sim_stats.h"
#include "mr_sim_trace.h"

namespace metaroce::sim {

inline constexpr uint32_t kNoIndex = UINT32_MAX;

/** An output port and the link direction leaving it. */
struct PortState {
  NodeRef owner;
  LinkId link = kNoIndex;
  PortId peer = kNoIndex;  ///< port at the far end
  uint64_t rate_bps = 0;
  SimTime delay_ps = 0;  ///< propagation plus the receiving switch's latency
  uint32_t overhead_bytes = 0;
  // Output queue; the head is the frame being serialised while busy.
  Fifo<FrameHandle> queue;
  uint64_t queue_bytes = 0;
  bool busy = false;
  bool is_switch_port = false;  ///< switch ports are byte-bounded, mark ECN and sample occupancy
  uint64_t buffer_bytes = UINT64_MAX;
  uint64_t ecn_threshold_bytes = kEcnDisabled;
  RedConfig red;           ///< replaces the threshold while enabled()
  Rng mark_rng;            ///< RED's draws, a stream of their own (faults draw from rng)
  SimTime tx_done_at = 0;  ///< when the frame being serialised ends (while busy)
  // PFC, as an ingress of a switch with it on (pfc_xoff_bytes != 0): the
  // bytes of the frames it brought that are queued in the switch.
  uint64_t pfc_xoff_bytes = 0;  ///< 0: PFC off at this port
  uint64_t pfc_xon_bytes = 0;
  uint64_t pfc_headroom_bytes = 0;
  uint64_t pfc_ingress_bytes = 0;
  bool pfc_xoff_sent = false;  ///< the upstream is (or is about to be) paused
  // As a transmitter: paused by the peer's PAUSE.
  bool pfc_paused = false;
  SimTime pfc_paused_since = 0;
  // Faults of the outgoing direction.
  FaultConfig faults;
  bool has_faults = false;  ///< anything besides a never-starting blackhole
  bool ge_bad = false;      ///< Gilbert-Elliott state
  SimTime ge_at = 0;        ///< when it was last drawn (GilbertElliottConfig::step_ps)
  Rng rng;
  PortStats stats;
};

struct LinkState {
  LinkInfo info;
  uint32_t reconverge_gen = 0;  ///< invalidates reconvergence events of older fault configs
};

/** Next hops towards one edge switch: a range of SwitchState::route_ports. */
struct RouteGroup {
  uint32_t first = 0;
  uint32_t count = 0;
};

struct SwitchState {
  std::string name;
  SwitchConfig config;
  uint64_t ecmp_seed = 0;
  std::vector<PortId> ports;
  std::vector<RouteGroup> routes;  ///< by edge index (FabricImpl::edge_switches_)
  std::vector<PortId> route_ports;
  uint32_t edge_index = kNoIndex;  ///< set when hosts hang off this switch
  uint64_t no_route_drops = 0;
};

/** Where a host hangs off the switched fabric. */
struct HostRoute {
  SwitchId edge = kNoIndex;  ///< switch at the other end of the host's link, if any
  PortId edge_port = kNoIndex;
  LinkId link = kNoIndex;
};

class FabricImpl {
 public:
  explicit FabricImpl(uint64_t seed);

  // fabric.cc: building and running.
  absl::StatusOr<Host*> AddHost(const HostConfig& config);
  absl::StatusOr<SwitchId> AddSwitch(const SwitchConfig& config);
  absl::StatusOr<LinkId> Connect(NodeRef a, NodeRef b, const LinkConfig& config);
  absl::Status SetPortQueue(PortId port, const PortQueueConfig& config);
  absl::Status SetLinkFaults(LinkId link, const FaultConfig& faults, LinkDirection dir);
  void RunLoop(SimTime limit);
  void ScheduleCallback(SimTime at, std::function<void()> fn);
  void Schedule(SimTime t, EventKind kind, uint32_t target, uint32_t aux) {
    events_.Push(t, kind, target, aux);
  }
  void Trace(TraceKind kind, uint32_t component, const Frame* f, uint64_t arg);
  void TraceFrame(TraceKind kind, uint32_t component, FrameHandle h, uint64_t arg) {
    Trace(kind, component, &frames_[h], arg);
  }
  Host* FindHost(const wire::IpAddr& addr);
  uint32_t LookupHost(const wire::IpAddr& addr) const;

  // port.cc: output queues.
  /** Queues a frame at an output port (switch ports: buffer check and ECN). */
  void Enqueue(PortId port, FrameHandle h);
  void OnTxDone(PortId port);
  SimTime WireTimePs(const PortState& p, size_t frame_bytes) const;
  /** Starts serialising the head frame of an idle, unpaused port with a queue. */
  void StartTx(PortId port);

  // pfc.cc: priority flow control at switch ingress ports.
  /** Admits a frame arriving at @p ingress of a PFC switch; false: dropped (headroom used up). */
  bool PfcAdmit(PortId ingress, PortId out, FrameHandle h);
  /** A frame accounted to an ingress left its output queue. */
  void PfcRelease(FrameHandle h);
  /** Sends PAUSE (@p pause) or resume from @p ingress to its upstream port. */
  void PfcSend(PortId ingress, bool pause);
  /** A PAUSE or resume reached @p port. */
  void OnPfc(PortId port, bool pause);

  // channel.cc: the link direction after a port.
  void Transmit(PortId port, FrameHandle h);
  void OnArrive(PortId ingress, FrameHandle h);
  void Drop(PortId port, FrameHandle h, DropCause cause);

  // switch.cc
  void Forward(SwitchId sw, PortId ingress, FrameHandle h);
  PortId Route(const SwitchState& s, SwitchId sw, const Frame& f) const;

  // routing.cc
  void ComputeRoutes();
  void OnReconverge(LinkId link, uint32_t gen);

  // host.cc
  bool HostSend(Host& host, std::span<const uint8_t> frame);
  void HostSetTimer(Host& host, SimTime deadline);
  /** Handles a timer heap entry; true when the timer is due (OnTimer must run). */
  bool TimerDue(const Event& e);
  void OnTimer(HostId id);
  void Deliver(HostId id, FrameHandle h);

  uint64_t seed_;
  SimTime now_ = 0;
  EventQueue events_;
  FramePool frames_;
  uint64_t next_frame_id_ = 1;
  uint64_t events_processed_ = 0;
  TraceHash trace_;
  std::function<void(const TraceRecord&)> observer_;

  std::vector<std::unique_ptr<Host>> hosts_;
  std::vector<HostRoute> host_routes_;
  std::vector<SwitchState> switches_;
  std::vector<PortState> ports_;
  std::vector<LinkState> links_;
  std::vector<SwitchId> edge_switches_;
  AddrTable addr_to_host_;
  bool routes_dirty_ = true;

  std::vector<std::function<void()>> callbacks_;
  std::vector<uint32_t> free_callbacks_;
};

// Inline: on every frame's way (Enqueue, OnTxDone).
inline SimTime FabricImpl::WireTimePs(const PortState& p, size_t frame_bytes) const {
  const uint64_t wire = std::max<uint64_t>(frame_bytes, kMinWireFrameBytes) + p.overhead_bytes;
  return SerializationPs(wire, p.rate_bps);
}

inline void FabricImpl::StartTx(PortId port) {
  PortState& p = ports_[port];
  if (p.busy || p.pfc_paused || p.queue.empty()) return;
  p.busy = true;
  p.tx_done_at = now_ + WireTimePs(p, frames_[p.queue.front()].bytes.size());
  Schedule(p.tx_done_at, EventKind::kTxDone, port, 0);
}

}  // namespace metaroce::sim

#endif  // METAROCE_SIM_FABRIC_PRIVATE_H
