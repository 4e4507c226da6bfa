/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Planes (doc/transport.md, "Planes"): a host with a port on each of several
// parallel fabrics. The handshake tells each end the other's plane
// addresses; paths are spread over the planes both have (path i on plane
// i mod P), and the fabric does nothing special. A plane is checked before
// use and given up whole when it fails; its paths' probes bring it back.

#include <algorithm>

#include "engine_private.h"

namespace metaroce::transport {

void EngineImpl::AnnouncePlanes(wire::ConnBody* b) const {
  if (local_planes.size() <= 1) return;
  b->capabilities |= wire::caps::kPlanes;
  b->num_planes = static_cast<uint8_t>(local_planes.size() - 1);
  for (size_t i = 1; i < local_planes.size(); i++) wire::SetConnPlane(b, i - 1, local_planes[i].ip);
}

bool EngineImpl::PlanesValid(const wire::IpAddr& peer_ip, const wire::ConnBody& b) const {
  if ((b.capabilities & wire::caps::kPlanes) == 0) return true;
  for (size_t i = 0; i < b.num_planes; i++) {
    const wire::IpAddr ip = wire::ConnPlane(b, i);
    if (ip.v6 != peer_ip.v6 || ip == peer_ip) return false;
    for (size_t j = 0; j < i; j++) {
      if (wire::ConnPlane(b, j) == ip) return false;
    }
  }
  return true;
}

void EngineImpl::AdoptPlanes(TimeNs now, Connection* c, const wire::ConnBody& b) {
  const size_t peer_planes =
      (b.capabilities & wire::caps::kPlanes) != 0 ? size_t{1} + b.num_planes : 1;
  c->planes = static_cast<uint8_t>(std::min(local_planes.size(), peer_planes));
  for (uint8_t k = 1; k < c->planes; k++) {
    c->peer_plane_ip[k] = wire::ConnPlane(b, k - 1);
    c->peer_plane_mac[k] = c->peer.mac;  // until a frame arrives on the plane
  }
  ForgetEncap(c);
  for (TxPath& p : c->paths) {
    p.plane = PlaneOf(c, p.id);
    if (p.plane == 0) continue;
    // Unproven: the peer named the address, nothing came from it yet. The
    // probe's number is unguessable, so only a host that receives there can
    // answer it, and a peer cannot aim our traffic at someone else.
    SetPathState(c, &p, PathState::kFailed);
    p.probe_at = now;
    p.probe_seq = rng.NonZero32();
    p.unanswered_probes = 0;
  }
}

void EngineImpl::CheckPlane(TimeNs now, Connection* c, const TxPath& path) {
  if (c->planes <= 1) return;
  PlaneState& ps = c->plane_state[path.plane];
  if (ps.failed) return;
  uint32_t paths = 0, failed = 0;
  TimeNs since = kNever;  // the first failure among them
  for (const TxPath& p : c->paths) {
    if (p.plane != path.plane) continue;
    paths++;
    if (p.state == PathState::kFailed && p.failed_at != kNever) {
      failed++;
      since = std::min(since, p.failed_at);
    }
  }
  if (failed < std::min(config::kPlaneFailPaths, paths)) return;
  for (const TxPath& p : c->paths) {
    if (p.plane == path.plane && p.state == PathState::kActive && p.progress_at >= since) return;
  }
  ps.failed = true;
  ps.failures++;
  stats.plane_failures++;
  for (TxPath& p : c->paths) {
    if (p.plane == path.plane && p.state == PathState::kActive) FailPath(now, c, &p);
  }
}

void EngineImpl::PathAnswered(TimeNs now, Connection* c, const TxPath& path) {
  PlaneState& ps = c->plane_state[path.plane];
  if (!ps.failed) return;
  ps.failed = false;
  stats.plane_recoveries++;
  for (TxPath& p : c->paths) {
    if (p.plane != path.plane || p.state != PathState::kFailed) continue;
    p.probe_at = now;
    p.unanswered_probes = 0;
  }
}

std::vector<PlaneInfo> EngineImpl::PlaneInfos(const Connection& c) const {
  std::vector<PlaneInfo> v(c.planes);
  for (uint8_t k = 0; k < c.planes; k++) {
    PlaneInfo& pi = v[k];
    pi.plane = k;
    pi.local_ip = local_planes[k].ip;
    pi.peer_ip = PeerIp(&c, k);
    pi.failures = c.plane_state[k].failures;
  }
  for (const TxPath& p : c.paths) {
    PlaneInfo& pi = v[p.plane];
    pi.paths++;
    pi.active_paths += p.state == PathState::kActive;
    pi.tx_pkts += p.tx_pkts;
    pi.retx_pkts += p.retx_pkts;
  }
  for (PlaneInfo& pi : v) pi.up = pi.active_paths != 0;
  return v;
}

}  // namespace metaroce::transport
