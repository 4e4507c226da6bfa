/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Shortest-path routes with equal-cost multipath, recomputed when a link
// leaves routing. Every switch keeps, for each edge switch (one with hosts),
// the ports on shortest paths towards it; ECMP picks among them.

#include <deque>

#include "fabric_private.h"

namespace metaroce::sim {

void FabricImpl::ComputeRoutes() {
  routes_dirty_ = false;
  edge_switches_.clear();
  for (SwitchState& s : switches_) s.edge_index = kNoIndex;
  for (const HostRoute& hr : host_routes_) {
    if (hr.edge != kNoIndex && switches_[hr.edge].edge_index == kNoIndex) {
      switches_[hr.edge].edge_index = 0;  // mark; numbered below in switch order
    }
  }
  for (SwitchId i = 0; i < switches_.size(); i++) {
    if (switches_[i].edge_index != kNoIndex) {
      switches_[i].edge_index = static_cast<uint32_t>(edge_switches_.size());
      edge_switches_.push_back(i);
    }
  }
  // Neighbour switch of a port over a routable switch-to-switch link, or kNoIndex.
  auto next_switch = [&](PortId port) -> uint32_t {
    const PortState& p = ports_[port];
    if (p.peer == kNoIndex || !links_[p.link].info.routable) return kNoIndex;
    const NodeRef o = ports_[p.peer].owner;
    return o.kind == NodeRef::Kind::kSwitch ? o.index : kNoIndex;
  };
  for (SwitchState& s : switches_) {
    s.routes.assign(edge_switches_.size(), RouteGroup{});
    s.route_ports.clear();
  }
  std::vector<uint32_t> dist(switches_.size());
  std::deque<SwitchId> frontier;
  for (size_t e = 0; e < edge_switches_.size(); e++) {
    std::fill(dist.begin(), dist.end(), kNoIndex);
    dist[edge_switches_[e]] = 0;
    frontier.assign(1, edge_switches_[e]);
    while (!frontier.empty()) {
      const SwitchId x = frontier.front();
      frontier.pop_front();
      for (PortId port : switches_[x].ports) {
        const uint32_t y = next_switch(port);
        if (y != kNoIndex && dist[y] == kNoIndex) {
          dist[y] = dist[x] + 1;
          frontier.push_back(y);
        }
      }
    }
    for (SwitchId x = 0; x < switches_.size(); x++) {
      if (dist[x] == kNoIndex || dist[x] == 0) continue;
      SwitchState& s = switches_[x];
      RouteGroup g{static_cast<uint32_t>(s.route_ports.size()), 0};
      for (PortId port : s.ports) {
        const uint32_t y = next_switch(port);
        if (y != kNoIndex && dist[y] + 1 == dist[x]) {
          s.route_ports.push_back(port);
          g.count++;
        }
      }
      s.routes[e] = g;
    }
  }
}

void FabricImpl::OnReconverge(LinkId link, uint32_t gen) {
  (void)gen;  // checked by the run loop
  LinkState& l = links_[link];
  if (!l.info.routable) return;
  l.info.routable = false;
  Trace(TraceKind::kRouteChange, link, nullptr, 0);
  ComputeRoutes();
}

}  // namespace metaroce::sim
