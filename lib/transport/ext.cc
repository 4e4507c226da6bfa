/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The C extension API (mr_ext.h) over Engine::GetConnections().

#include "mr_ext.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "mr_engine.h"

namespace metaroce::transport {
namespace {

static_assert(MR_EXT_MAX_PLANES == wire::kMaxPlanes);

const Engine& EngineOf(const mr_engine* e) { return *reinterpret_cast<const Engine*>(e); }

mr_ext_addr AddrOf(const wire::IpAddr& a) {
  mr_ext_addr out{};
  out.family = a.v6 ? 6 : 4;
  std::memcpy(out.bytes, a.bytes.data(), a.v6 ? 16 : 4);
  return out;
}

// Writes what the caller's struct has room for: an older caller's smaller struct gets a prefix.
template <typename T>
void Put(const T& v, void* out, size_t i, size_t elem_size) {
  std::memcpy(static_cast<uint8_t*>(out) + i * elem_size, &v, std::min(elem_size, sizeof(T)));
}

mr_ext_plane ToExt(const PlaneInfo& p) {
  mr_ext_plane e{};
  e.plane = p.plane;
  e.local = AddrOf(p.local_ip);
  e.peer = AddrOf(p.peer_ip);
  e.up = p.up;
  e.paths = p.paths;
  e.paths_active = p.active_paths;
  e.failures = p.failures;
  e.tx_pkts = p.tx_pkts;
  e.retx_pkts = p.retx_pkts;
  return e;
}

mr_ext_path ToExt(const PathInfo& p) {
  mr_ext_path e{};
  e.path_id = p.path_id;
  e.plane = p.plane;
  e.src_port = p.src_port;
  e.active = p.active;
  e.srtt_ns = p.srtt_ns;
  e.rto_ns = p.rto_ns;
  e.cwnd_bytes = p.cwnd_bytes;
  e.inflight_bytes = p.inflight_bytes;
  e.tx_pkts = p.tx_pkts;
  e.retx_pkts = p.retx_pkts;
  e.lost_pkts = p.lost_pkts;
  e.ce_pkts = p.ce_pkts;
  e.failures = p.failures;
  e.repaths = p.repaths;
  return e;
}

// The per-connection queries: the checks, the lookup, then each item of
// what @p items picks out of the connection, converted.
template <typename Out, typename Items>
int QueryItems(const mr_engine* engine, uint32_t conn_id, Out* out, size_t max, size_t elem_size,
               size_t* total, Items items) {
  if (engine == nullptr || total == nullptr || (out == nullptr && max != 0) || elem_size == 0) {
    return -EINVAL;
  }
  const std::vector<ConnInfo> conns = EngineOf(engine).GetConnections();
  auto c = std::find_if(conns.begin(), conns.end(),
                        [conn_id](const ConnInfo& ci) { return ci.conn_id == conn_id; });
  if (c == conns.end()) return -ENOENT;
  const auto& list = items(*c);
  *total = list.size();
  for (size_t i = 0; i < std::min(max, list.size()); i++) Put(ToExt(list[i]), out, i, elem_size);
  return 0;
}

}  // namespace
}  // namespace metaroce::transport

using namespace metaroce::transport;

extern "C" size_t mr_ext_query_conns(const mr_engine* engine, mr_ext_conn* out, size_t max,
                                     size_t elem_size) {
  if (engine == nullptr) return 0;
  const std::vector<ConnInfo> conns = EngineOf(engine).GetConnections();
  if (out == nullptr || elem_size == 0) return conns.size();
  for (size_t i = 0; i < std::min(max, conns.size()); i++) {
    const ConnInfo& c = conns[i];
    mr_ext_conn e{};
    e.conn_id = c.conn_id;
    e.remote_conn_id = c.remote_conn_id;
    e.peer = AddrOf(c.peer.ip);
    e.peer_udp_port = c.peer.udp_port;
    e.state = c.state == ConnInfo::State::kUp       ? MR_EXT_CONN_UP
              : c.state == ConnInfo::State::kFailed ? MR_EXT_CONN_FAILED
                                                    : MR_EXT_CONN_CONNECTING;
    e.planes = static_cast<uint8_t>(c.planes.size());
    for (const PlaneInfo& p : c.planes) e.planes_up += p.up;
    e.paths = static_cast<uint32_t>(c.paths.size());
    for (const PathInfo& p : c.paths) e.paths_active += p.active;
    e.qps = c.num_qps;
    e.rate_hint_mbps = c.rate_hint_mbps;
    e.peer_hint_mbps = c.peer_hint_mbps;
    e.pace_mbps = c.pace_mbps;
    e.tx_pkts = c.tx_pkts;
    e.rx_pkts = c.rx_pkts;
    e.retx_pkts = c.retx_pkts;
    e.lost_pkts = c.lost_pkts;
    Put(e, out, i, elem_size);
  }
  return conns.size();
}

extern "C" int mr_ext_query_planes(const mr_engine* engine, uint32_t conn_id, mr_ext_plane* out,
                                   size_t max, size_t elem_size, size_t* total) {
  return QueryItems(engine, conn_id, out, max, elem_size, total,
                    [](const ConnInfo& c) -> const std::vector<PlaneInfo>& { return c.planes; });
}

extern "C" int mr_ext_query_paths(const mr_engine* engine, uint32_t conn_id, mr_ext_path* out,
                                  size_t max, size_t elem_size, size_t* total) {
  return QueryItems(engine, conn_id, out, max, elem_size, total,
                    [](const ConnInfo& c) -> const std::vector<PathInfo>& { return c.paths; });
}
