/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * Ready-made topologies: two hosts back to back (unit tests) and a 2-tier
 * leaf-spine, optionally as P parallel planes. Host addresses are
 * deterministic and purely simulated: host h (0-based) under leaf l of plane
 * p is 10.<p>.<l>.<h+1> and fd00::<p>:<l>:<h+1>, MAC 02:00:<p>:00:<l>:<h+1>;
 * back to back, the hosts are leaf 0 hosts 0 and 1.
 */

#ifndef METAROCE_MR_SIM_TOPOLOGY_H
#define METAROCE_MR_SIM_TOPOLOGY_H

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "mr_sim_config.h"
#include "mr_sim_endpoint.h"
#include "mr_sim_fabric.h"

namespace metaroce::sim {

/** ECN threshold per 100 Gbit/s of port rate: 1.6 us of queue at any speed (80 KB at 400G). */
inline constexpr uint64_t kDefaultEcnThresholdBytesPer100G = 20'000;

/** Largest leaf count, hosts per leaf and planes the address plan allows. */
inline constexpr uint32_t kMaxLeaves = 256;
inline constexpr uint32_t kMaxHostsPerLeaf = 254;
inline constexpr uint32_t kMaxSimPlanes = 8;

/** Address of host @p host under leaf @p leaf of plane @p plane (see the file comment). */
wire::IpAddr LeafHostIpv4(uint32_t leaf, uint32_t host, uint32_t plane = 0);
/** @copydoc LeafHostIpv4 */
wire::IpAddr LeafHostIpv6(uint32_t leaf, uint32_t host, uint32_t plane = 0);
/** @copydoc LeafHostIpv4 */
wire::MacAddr LeafHostMac(uint32_t leaf, uint32_t host, uint32_t plane = 0);

/** Two hosts joined by one link. */
struct BackToBackConfig {
  LinkConfig link;
  uint32_t tx_queue_frames = kDefaultTxQueueFrames;
};

/**
 * L leaves x S spines, every leaf linked to every spine, H hosts per leaf;
 * with planes = P, P such fabrics side by side and unconnected, a host being
 * one NIC port (one sim::Host) per plane.
 */
struct LeafSpineConfig {
  uint32_t planes = 1;          ///< 1..kMaxSimPlanes
  uint32_t leaves = 2;          ///< 1..kMaxLeaves
  uint32_t spines = 2;          ///< >= 1
  uint32_t hosts_per_leaf = 2;  ///< 1..kMaxHostsPerLeaf
  LinkConfig host_link;         ///< host <-> leaf
  LinkConfig fabric_link;       ///< leaf <-> spine
  /**
   * Per leaf, the one-way delay of its links to the spines (missing or 0:
   * fabric_link's). A leaf whose uplinks are long is a second site, joined
   * to the site of the spines and the other leaves by those few long links
   * (mr-sim longhaul).
   */
  std::vector<SimTime> leaf_uplink_delay_ps;
  uint64_t port_buffer_bytes = kDefaultPortBufferBytes;  ///< every switch port
  /** Each port marks above this many bytes per 100 Gbit/s of its rate; kEcnDisabled: never. */
  uint64_t ecn_threshold_bytes_per_100g = kDefaultEcnThresholdBytesPer100G;
  /** RED marking at every port, as given (not scaled); on, it replaces the threshold above. */
  RedConfig red;
  SimTime switch_latency_ps = 0;  ///< forwarding latency of every switch
  uint32_t host_tx_queue_frames = kDefaultTxQueueFrames;
  PfcConfig pfc;  ///< every switch (off: lossy)
};

/** What a builder made. */
struct Topology {
  /** Plane-major, then leaf-major: hosts[(plane * leaves + leaf) * hosts_per_leaf + h]. */
  std::vector<Host*> hosts;
  std::vector<LinkId> host_links;  ///< same order as hosts; end a is the host
  std::vector<SwitchId> leaves;    ///< plane-major; empty back to back
  std::vector<SwitchId> spines;    ///< plane-major
  /** [(plane * leaves + leaf) * spines + spine]; end a is the leaf. */
  std::vector<LinkId> fabric_links;
  uint32_t hosts_per_leaf = 0;
  uint32_t planes = 1;

  uint32_t leaves_per_plane() const { return static_cast<uint32_t>(leaves.size()) / planes; }
  uint32_t spines_per_plane() const { return static_cast<uint32_t>(spines.size()) / planes; }
  /** Host @p h under leaf @p leaf, on @p plane. */
  Host* host(uint32_t leaf, uint32_t h, uint32_t plane = 0) const {
    return hosts[(plane * std::max(leaves_per_plane(), 1u) + leaf) * hosts_per_leaf + h];
  }
  /** Link between a leaf and a spine of @p plane. */
  LinkId fabric_link(uint32_t leaf, uint32_t spine, uint32_t plane = 0) const {
    return fabric_links[(plane * leaves_per_plane() + leaf) * spines_per_plane() + spine];
  }
  /** Every link of @p plane, host links first: for plane-wide faults. */
  std::vector<LinkId> PlaneLinks(uint32_t plane) const;
};

/** ECN threshold of a port of rate @p rate_bps (kEcnDisabled stays disabled). */
uint64_t ScaledEcnThreshold(uint64_t bytes_per_100g, uint64_t rate_bps);

/** Adds two hosts and a link between them to @p fabric. */
absl::StatusOr<Topology> BuildBackToBack(Fabric& fabric, const BackToBackConfig& config);

/**
 * Adds a leaf-spine fabric to @p fabric (switches named leaf<l> and spine<s>,
 * hosts leaf<l>-host<h>). InvalidArgument names the parameter to fix.
 */
absl::StatusOr<Topology> BuildLeafSpine(Fabric& fabric, const LeafSpineConfig& config);

}  // namespace metaroce::sim

#endif  // METAROCE_MR_SIM_TOPOLOGY_H
