/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Building the fabric: hosts, switches, links, queue and fault settings.

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "fabric_private.h"

namespace metaroce::sim {
namespace {

bool HasFaults(const FaultConfig& f) {
  return f.loss_probability > 0 || f.burst_loss.enabled || f.corrupt_probability > 0 ||
         f.duplicate_probability > 0 || f.reorder_probability > 0 ||
         f.blackhole_at_ps != kSimTimeNever;
}

SimTime SaturatingAdd(SimTime a, SimTime b) {
  return (a > kSimTimeNever - b) ? kSimTimeNever : a + b;
}

}  // namespace

FabricImpl::FabricImpl(uint64_t seed) : seed_(seed) {}

absl::StatusOr<Host*> FabricImpl::AddHost(const HostConfig& config) {
  if (auto s = Validate(config); !s.ok()) return s;
  const auto id = static_cast<HostId>(hosts_.size());
  HostConfig c = config;
  if (c.name.empty()) c.name = absl::StrCat("host", id);
  const bool has_v6 = c.ipv6.v6;
  if (addr_to_host_.Find(c.ipv4) != AddrTable::kNotFound ||
      (has_v6 && addr_to_host_.Find(c.ipv6) != AddrTable::kNotFound)) {
    return absl::InvalidArgumentError(
        absl::StrCat("host '", c.name, "': address ", c.ipv4.ToString(), has_v6 ? " or " : "",
                     has_v6 ? c.ipv6.ToString() : "",
                     " is already used by another host; pick unique addresses"));
  }
  const auto port = static_cast<PortId>(ports_.size());
  PortState& p = ports_.emplace_back();
  p.owner = NodeRef::OfHost(id);
  p.rng = Rng(DeriveSeed(seed_, ComponentId(ComponentKind::kChannel, port)));
  hosts_.push_back(std::unique_ptr<Host>(
      new Host(this, id, c, port, DeriveSeed(seed_, ComponentId(ComponentKind::kHost, id)))));
  host_routes_.emplace_back();
  addr_to_host_.Insert(c.ipv4, id);
  if (has_v6) addr_to_host_.Insert(c.ipv6, id);
  return hosts_.back().get();
}

absl::StatusOr<SwitchId> FabricImpl::AddSwitch(const SwitchConfig& config) {
  if (auto s = Validate(config); !s.ok()) return s;
  const auto id = static_cast<SwitchId>(switches_.size());
  SwitchState& s = switches_.emplace_back();
  s.config = config;
  s.name = config.name.empty() ? absl::StrCat("switch", id) : config.name;
  s.ecmp_seed = DeriveSeed(seed_, ComponentId(ComponentKind::kSwitch, id));
  routes_dirty_ = true;
  return id;
}

absl::StatusOr<LinkId> FabricImpl::Connect(NodeRef a, NodeRef b, const LinkConfig& config) {
  if (auto s = Validate(config); !s.ok()) return s;
  if (a == b) return absl::InvalidArgumentError("Connect: both ends are the same node");
  for (const NodeRef& n : {a, b}) {
    if (n.kind == NodeRef::Kind::kHost) {
      if (n.index >= hosts_.size()) {
        return absl::InvalidArgumentError(absl::StrCat("Connect: no host ", n.index, " (",
                                                       hosts_.size(), " hosts); add it first"));
      }
      if (ports_[hosts_[n.index]->port()].link != kNoIndex) {
        return absl::InvalidArgumentError(
            absl::StrCat("Connect: host '", hosts_[n.index]->name(), "' already has its one link"));
      }
    } else if (n.index >= switches_.size()) {
      return absl::InvalidArgumentError(absl::StrCat("Connect: no switch ", n.index, " (",
                                                     switches_.size(), " switches); add it first"));
    }
  }
  const auto id = static_cast<LinkId>(links_.size());
  auto port_of = [&](NodeRef n) -> PortId {
    if (n.kind == NodeRef::Kind::kHost) return hosts_[n.index]->port();
    const auto port = static_cast<PortId>(ports_.size());
    PortState& p = ports_.emplace_back();
    const SwitchState& s = switches_[n.index];
    p.owner = n;
    p.is_switch_port = true;
    p.buffer_bytes = s.config.port_buffer_bytes;
    p.ecn_threshold_bytes = s.config.ecn_threshold_bytes;
    p.rng = Rng(DeriveSeed(seed_, ComponentId(ComponentKind::kChannel, port)));
    switches_[n.index].ports.push_back(port);
    return port;
  };
  const PortId pa = port_of(a);
  const PortId pb = port_of(b);
  auto latency_of = [&](NodeRef n) {
    return n.kind == NodeRef::Kind::kSwitch ? switches_[n.index].config.forwarding_latency_ps : 0;
  };
  for (auto [from, to, to_node] : {std::tuple{pa, pb, b}, std::tuple{pb, pa, a}}) {
    PortState& p = ports_[from];
    p.link = id;
    p.peer = to;
    p.rate_bps = config.rate_bps;
    p.delay_ps = config.delay_ps + latency_of(to_node);
    p.overhead_bytes = config.overhead_bytes;
  }
  // PFC at a switch's end: its thresholds, and the headroom for this link.
  for (auto [in, node] : {std::pair{pa, a}, std::pair{pb, b}}) {
    if (node.kind != NodeRef::Kind::kSwitch) continue;
    const PfcConfig& pfc = switches_[node.index].config.pfc;
    if (!pfc.enabled) continue;
    PortState& p = ports_[in];
    p.pfc_xoff_bytes = pfc.xoff_bytes;
    p.pfc_xon_bytes = pfc.xon_bytes;
    p.pfc_headroom_bytes = pfc.headroom_bytes != 0
                               ? pfc.headroom_bytes
                               : PfcHeadroomBytes(config, p.delay_ps, ports_[p.peer].delay_ps);
  }
  LinkState& l = links_.emplace_back();
  l.info = LinkInfo{a, b, pa, pb, config, true};
  // A host's way into the switched fabric.
  for (auto [host, other, sw_port] : {std::tuple{a, b, pb}, std::tuple{b, a, pa}}) {
    if (host.kind == NodeRef::Kind::kHost && other.kind == NodeRef::Kind::kSwitch) {
      host_routes_[host.index] = HostRoute{other.index, sw_port, id};
    }
  }
  routes_dirty_ = true;
  return id;
}

absl::Status FabricImpl::SetPortQueue(PortId port, const PortQueueConfig& config) {
  if (auto s = Validate(config); !s.ok()) return s;
  if (port >= ports_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("SetPortQueue: no port ", port));
  }
  PortState& p = ports_[port];
  if (!p.is_switch_port) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SetPortQueue: port ", port, " is a host NIC; set HostConfig::tx_queue_frames instead"));
  }
  p.buffer_bytes = config.buffer_bytes;
  p.ecn_threshold_bytes = config.ecn_threshold_bytes;
  p.red = config.red;
  p.mark_rng = Rng(DeriveSeed(seed_, ComponentId(ComponentKind::kMark, port)));
  return absl::OkStatus();
}

absl::Status FabricImpl::SetLinkFaults(LinkId link, const FaultConfig& faults, LinkDirection dir) {
  if (auto s = Validate(faults); !s.ok()) return s;
  if (link >= links_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("SetLinkFaults: no link ", link, " (", links_.size(), " links)"));
  }
  LinkState& l = links_[link];
  for (PortId port : {l.info.port_a, l.info.port_b}) {
    const bool a_to_b = port == l.info.port_a;
    if (dir == LinkDirection::kAtoB && !a_to_b) continue;
    if (dir == LinkDirection::kBtoA && a_to_b) continue;
    PortState& p = ports_[port];
    p.faults = faults;
    p.has_faults = HasFaults(faults);
    p.ge_bad = false;
    p.ge_at = 0;
  }
  const bool any_blackhole = ports_[l.info.port_a].faults.blackhole_at_ps != kSimTimeNever ||
                             ports_[l.info.port_b].faults.blackhole_at_ps != kSimTimeNever;
  if (faults.reconverge_after_ps != kSimTimeNever) {
    l.reconverge_gen++;
    const SimTime at = SaturatingAdd(faults.blackhole_at_ps, faults.reconverge_after_ps);
    Schedule(std::max(at, now_), EventKind::kReconverge, link, l.reconverge_gen);
  } else if (!any_blackhole) {
    l.reconverge_gen++;  // cancel a pending reconvergence
    if (!l.info.routable) {
      l.info.routable = true;  // repaired: back into routing at once
      routes_dirty_ = true;
      Trace(TraceKind::kRouteChange, link, nullptr, 1);
    }
  }
  return absl::OkStatus();
}

}  // namespace metaroce::sim
