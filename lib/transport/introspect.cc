/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Read-only views of the engine's state for telemetry and tests.

#include "engine_private.h"
#include "mr_engine.h"

namespace metaroce::transport {
namespace {

ConnInfo::State PublicState(ConnState s) {
  switch (s) {
    case ConnState::kConnecting: return ConnInfo::State::kConnecting;
    case ConnState::kEstablished: return ConnInfo::State::kUp;
    case ConnState::kFailed: return ConnInfo::State::kFailed;
  }
  return ConnInfo::State::kFailed;
}

}  // namespace

const char* ConnStateName(ConnInfo::State s) {
  switch (s) {
    case ConnInfo::State::kConnecting: return "connecting";
    case ConnInfo::State::kUp: return "up";
    case ConnInfo::State::kFailed: return "failed";
  }
  return "unknown";
}

PathInfo EngineImpl::PathInfoOf(const TxPath& p) {
  return PathInfo{p.id,       p.src_port,  p.plane,       p.state == PathState::kActive,
                  p.inflight, p.window,    p.srtt,        p.rto,
                  p.tx_pkts,  p.retx_pkts, p.lost_pkts,   p.ce_pkts,
                  p.failures, p.cc.cwnd,   p.cc.inflight, p.cc.cuts,
                  p.repaths};
}

std::vector<ConnInfo> Engine::GetConnections() const { return impl_->GetConnections(); }

ShareInfo Engine::GetShareInfo() const { return impl_->GetShareInfo(); }

ShareInfo EngineImpl::GetShareInfo() const {
  ShareInfo si;
  si.capacity_mbps = cfg.rx_capacity_mbps;
  if (cfg.rx_capacity_mbps == 0) return si;
  si.interval_ns = ShareIntervalNs();
  si.level_mbps = share_mbps;
  si.measured = static_cast<uint32_t>(share_last_senders);
  si.listed = static_cast<uint32_t>(share_senders.size());
  for (uint32_t id : conn_order) {
    auto it = conns.find(id);
    if (it == conns.end()) continue;
    const Connection& c = *it->second;
    const uint32_t hint = HintFor(seen_now, &c);
    if (hint == 0) continue;
    si.senders.push_back({c.local_id, c.peer, c.share_last_mbps, hint});
  }
  return si;
}

std::vector<ConnInfo> EngineImpl::GetConnections() const {
  std::vector<ConnInfo> v;
  v.reserve(conn_order.size());
  for (uint32_t id : conn_order) {
    auto it = conns.find(id);
    if (it == conns.end()) continue;
    const Connection& c = *it->second;
    ConnInfo ci;
    ci.conn_id = c.local_id;
    ci.remote_conn_id = c.state == ConnState::kConnecting ? 0 : c.remote_id;
    ci.peer = c.peer;
    ci.state = PublicState(c.state);
    ci.num_qps = static_cast<uint32_t>(c.qps.size());
    ci.peer_paths = c.peer_paths;
    ci.chunk_bytes = c.chunk_bytes;
    ci.tx_pkts = c.tx_pkts;
    ci.tx_bytes = c.tx_bytes;
    ci.rx_pkts = c.rx_pkts;
    ci.rx_bytes = c.rx_bytes;
    ci.inflight = c.inflight;
    ci.window = cfg.conn_window_pkts;
    ci.cwnd_bytes = c.cc.cwnd;
    ci.inflight_bytes = c.cc.inflight;
    ci.cc_cuts = c.cc.cuts;
    ci.rate_hint_mbps = c.hint_sent_mbps;
    ci.peer_hint_mbps = c.peer_hint_mbps;
    ci.pace_mbps = c.pace_mbps;
    ci.srtt_ns = c.srtt;
    ci.ce_rx_pkts = c.rx_ce_pkts;
    ci.paths.reserve(c.paths.size());
    for (const TxPath& p : c.paths) {
      ci.retx_pkts += p.retx_pkts;
      ci.lost_pkts += p.lost_pkts;
      ci.ce_echoed_pkts += p.ce_pkts;
      ci.paths.push_back(PathInfoOf(p));
    }
    ci.planes = PlaneInfos(c);
    v.push_back(std::move(ci));
  }
  return v;
}

}  // namespace metaroce::transport
