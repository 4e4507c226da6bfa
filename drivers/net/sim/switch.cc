/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Switch forwarding: destination lookup and per-switch seeded ECMP.

#include "fabric_private.h"

namespace metaroce::sim {

PortId FabricImpl::Route(const SwitchState& s, SwitchId sw, const Frame& f) const {
  if (f.dst_host == kNoIndex) return kNoIndex;
  const HostRoute& hr = host_routes_[f.dst_host];
  if (hr.edge == kNoIndex) return kNoIndex;
  if (hr.edge == sw) return links_[hr.link].info.routable ? hr.edge_port : kNoIndex;
  const RouteGroup g = s.routes[switches_[hr.edge].edge_index];
  if (g.count == 0) return kNoIndex;
  if (g.count == 1) return s.route_ports[g.first];
  // Seeded per switch so that consecutive tiers make independent choices.
  const uint64_t x = Mix64(f.flow_hash ^ s.ecmp_seed);
  const auto pick = static_cast<uint32_t>((static_cast<unsigned __int128>(x) * g.count) >> 64);
  return s.route_ports[g.first + pick];
}

void FabricImpl::Forward(SwitchId sw, PortId ingress, FrameHandle h) {
  SwitchState& s = switches_[sw];
  const Frame& f = frames_[h];
  TraceFrame(TraceKind::kArrive, ingress, h, 0);
  const PortId out = Route(s, sw, f);
  if (out == kNoIndex) {
    s.no_route_drops++;
    Trace(TraceKind::kDrop, sw, &f, static_cast<uint64_t>(DropCause::kNoRoute));
    frames_.Free(h);
    return;
  }
  if (ports_[ingress].pfc_xoff_bytes != 0 && !PfcAdmit(ingress, out, h)) return;
  Enqueue(out, h);
}

}  // namespace metaroce::sim
