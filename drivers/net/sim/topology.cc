/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include "absl/strings/str_cat.h"
#include "mr_sim_topology.h"

namespace metaroce::sim {
namespace {

constexpr uint64_t kBps100G = 100 * kBpsPerGbps;

// Plane 0 keeps the names of a single-plane fabric; plane p > 0 prefixes "plane<p>-".
std::string PlanePrefix(uint32_t plane) {
  return plane == 0 ? std::string() : absl::StrCat("plane", plane, "-");
}

HostConfig LeafHostConfig(uint32_t leaf, uint32_t h, uint32_t tx_queue_frames, uint32_t plane = 0) {
  HostConfig c;
  c.name = absl::StrCat(PlanePrefix(plane), "leaf", leaf, "-host", h);
  c.mac = LeafHostMac(leaf, h, plane);
  c.ipv4 = LeafHostIpv4(leaf, h, plane);
  c.ipv6 = LeafHostIpv6(leaf, h, plane);
  c.tx_queue_frames = tx_queue_frames;
  return c;
}

absl::Status Prefix(absl::string_view what, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

}  // namespace

wire::IpAddr LeafHostIpv4(uint32_t leaf, uint32_t host, uint32_t plane) {
  return wire::IpAddr::V4(10, static_cast<uint8_t>(plane), static_cast<uint8_t>(leaf),
                          static_cast<uint8_t>(host + 1));
}

wire::IpAddr LeafHostIpv6(uint32_t leaf, uint32_t host, uint32_t plane) {
  std::array<uint8_t, 16> b{0xfd, 0x00};
  b[10] = static_cast<uint8_t>(plane >> 8);
  b[11] = static_cast<uint8_t>(plane);
  b[12] = static_cast<uint8_t>(leaf >> 8);
  b[13] = static_cast<uint8_t>(leaf);
  b[14] = static_cast<uint8_t>((host + 1) >> 8);
  b[15] = static_cast<uint8_t>(host + 1);
  return wire::IpAddr::V6(b);
}

wire::MacAddr LeafHostMac(uint32_t leaf, uint32_t host, uint32_t plane) {
  wire::MacAddr m;
  m.bytes = {0x02,
             0,
             static_cast<uint8_t>(plane),
             0,
             static_cast<uint8_t>(leaf),
             static_cast<uint8_t>(host + 1)};
  return m;
}

std::vector<LinkId> Topology::PlaneLinks(uint32_t plane) const {
  std::vector<LinkId> v;
  const size_t per_plane_hosts = host_links.size() / planes;
  const size_t per_plane_fabric = fabric_links.size() / planes;
  v.insert(v.end(), host_links.begin() + plane * per_plane_hosts,
           host_links.begin() + (plane + 1) * per_plane_hosts);
  v.insert(v.end(), fabric_links.begin() + plane * per_plane_fabric,
           fabric_links.begin() + (plane + 1) * per_plane_fabric);
  return v;
}

uint64_t ScaledEcnThreshold(uint64_t bytes_per_100g, uint64_t rate_bps) {
  if (bytes_per_100g == kEcnDisabled) return kEcnDisabled;
  return static_cast<uint64_t>(static_cast<unsigned __int128>(bytes_per_100g) * rate_bps /
                               kBps100G);
}

absl::StatusOr<Topology> BuildBackToBack(Fabric& fabric, const BackToBackConfig& config) {
  if (auto s = Validate(config.link); !s.ok()) return Prefix("BackToBackConfig.link", s);
  Topology t;
  t.hosts_per_leaf = 2;
  for (uint32_t h = 0; h < 2; h++) {
    auto host = fabric.AddHost(LeafHostConfig(0, h, config.tx_queue_frames));
    if (!host.ok()) return Prefix("BackToBackConfig", host.status());
    t.hosts.push_back(*host);
  }
  auto link = fabric.Connect(NodeRef::OfHost(t.hosts[0]->id()), NodeRef::OfHost(t.hosts[1]->id()),
                             config.link);
  if (!link.ok()) return link.status();
  t.host_links = {*link, *link};
  return t;
}

// Adds plane @p plane's switches, hosts and links to @p out.
absl::Status AddPlane(Fabric& fabric, const LeafSpineConfig& c, SwitchConfig sc, uint32_t plane,
                      Topology* out);

absl::StatusOr<Topology> BuildLeafSpine(Fabric& fabric, const LeafSpineConfig& c) {
  if (c.planes == 0 || c.planes > kMaxSimPlanes) {
    return absl::InvalidArgumentError(
        absl::StrCat("LeafSpineConfig.planes is ", c.planes, ": set 1..", kMaxSimPlanes,
                     " (host addresses are 10.<plane>.<leaf>.<host+1>)"));
  }
  if (c.leaves == 0 || c.leaves > kMaxLeaves) {
    return absl::InvalidArgumentError(absl::StrCat("LeafSpineConfig.leaves is ", c.leaves,
                                                   ": set 1..", kMaxLeaves,
                                                   " (host addresses are 10.0.<leaf>.<host+1>)"));
  }
  if (c.spines == 0) {
    return absl::InvalidArgumentError("LeafSpineConfig.spines is 0: set at least 1");
  }
  if (c.hosts_per_leaf == 0 || c.hosts_per_leaf > kMaxHostsPerLeaf) {
    return absl::InvalidArgumentError(absl::StrCat("LeafSpineConfig.hosts_per_leaf is ",
                                                   c.hosts_per_leaf, ": set 1..", kMaxHostsPerLeaf,
                                                   " (host addresses are 10.0.<leaf>.<host+1>)"));
  }
  if (c.host_tx_queue_frames == 0) {
    return absl::InvalidArgumentError("LeafSpineConfig.host_tx_queue_frames is 0: set at least 1");
  }
  if (auto s = Validate(c.host_link); !s.ok()) return Prefix("LeafSpineConfig.host_link", s);
  if (auto s = Validate(c.red); !s.ok()) return Prefix("LeafSpineConfig", s);
  if (auto s = Validate(c.fabric_link); !s.ok()) return Prefix("LeafSpineConfig.fabric_link", s);
  if (c.leaf_uplink_delay_ps.size() > c.leaves) {
    return absl::InvalidArgumentError(absl::StrCat("LeafSpineConfig.leaf_uplink_delay_ps has ",
                                                   c.leaf_uplink_delay_ps.size(), " entries for ",
                                                   c.leaves, " leaves: give at most one per leaf"));
  }
  for (size_t l = 0; l < c.leaf_uplink_delay_ps.size(); l++) {
    LinkConfig up = c.fabric_link;
    if (c.leaf_uplink_delay_ps[l] != 0) up.delay_ps = c.leaf_uplink_delay_ps[l];
    if (auto s = Validate(up); !s.ok()) {
      return Prefix(absl::StrCat("LeafSpineConfig.leaf_uplink_delay_ps[", l, "]"), s);
    }
  }
  SwitchConfig sc;
  sc.port_buffer_bytes = c.port_buffer_bytes;
  sc.forwarding_latency_ps = c.switch_latency_ps;
  sc.pfc = c.pfc;
  if (auto s = Validate(sc); !s.ok()) return Prefix("LeafSpineConfig", s);

  Topology t;
  t.hosts_per_leaf = c.hosts_per_leaf;
  t.planes = c.planes;
  for (uint32_t plane = 0; plane < c.planes; plane++) {
    if (auto s = AddPlane(fabric, c, sc, plane, &t); !s.ok()) return s;
  }
  return t;
}

absl::Status AddPlane(Fabric& fabric, const LeafSpineConfig& c, SwitchConfig sc, uint32_t plane,
                      Topology* out) {
  Topology& t = *out;
  const size_t leaf0 = t.leaves.size();
  const size_t spine0 = t.spines.size();
  for (uint32_t l = 0; l < c.leaves; l++) {
    sc.name = absl::StrCat(PlanePrefix(plane), "leaf", l);
    auto id = fabric.AddSwitch(sc);
    if (!id.ok()) return id.status();
    t.leaves.push_back(*id);
  }
  for (uint32_t s = 0; s < c.spines; s++) {
    sc.name = absl::StrCat(PlanePrefix(plane), "spine", s);
    auto id = fabric.AddSwitch(sc);
    if (!id.ok()) return id.status();
    t.spines.push_back(*id);
  }
  auto set_ecn = [&](PortId port, uint64_t rate_bps) {
    PortQueueConfig q;
    q.buffer_bytes = c.port_buffer_bytes;
    q.ecn_threshold_bytes = ScaledEcnThreshold(c.ecn_threshold_bytes_per_100g, rate_bps);
    q.red = c.red;
    return fabric.SetPortQueue(port, q);
  };
  for (uint32_t l = 0; l < c.leaves; l++) {
    for (uint32_t h = 0; h < c.hosts_per_leaf; h++) {
      auto host = fabric.AddHost(LeafHostConfig(l, h, c.host_tx_queue_frames, plane));
      if (!host.ok()) return host.status();
      t.hosts.push_back(*host);
      auto link = fabric.Connect(NodeRef::OfHost((*host)->id()),
                                 NodeRef::OfSwitch(t.leaves[leaf0 + l]), c.host_link);
      if (!link.ok()) return link.status();
      t.host_links.push_back(*link);
      if (auto s = set_ecn(fabric.link(*link).port_b, c.host_link.rate_bps); !s.ok()) return s;
    }
  }
  for (uint32_t l = 0; l < c.leaves; l++) {
    LinkConfig up = c.fabric_link;
    if (l < c.leaf_uplink_delay_ps.size() && c.leaf_uplink_delay_ps[l] != 0) {
      up.delay_ps = c.leaf_uplink_delay_ps[l];
    }
    for (uint32_t s = 0; s < c.spines; s++) {
      auto link = fabric.Connect(NodeRef::OfSwitch(t.leaves[leaf0 + l]),
                                 NodeRef::OfSwitch(t.spines[spine0 + s]), up);
      if (!link.ok()) return link.status();
      t.fabric_links.push_back(*link);
      const LinkInfo info = fabric.link(*link);
      for (PortId p : {info.port_a, info.port_b}) {
        if (auto st = set_ecn(p, c.fabric_link.rate_bps); !st.ok()) return st;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace metaroce::sim
