/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "format_private.h"
#include "mr_wire.h"

namespace metaroce::telemetry {
namespace {

using transport::ConnInfo;
using transport::PathInfo;

void AddPeer(Dict& d, const ConnInfo& c) {
  d.AddString("peer_ip", c.peer.ip.ToString());
  d.AddU64("peer_udp_port", c.peer.udp_port);
}

// A page of @p total items from @p first, at most @p per_reply: adds "total",
// "first" and "next" to @p d and returns the items' [begin, end).
struct Page {
  size_t begin, end;
};
Page AddPage(Dict& d, size_t total, size_t first, size_t per_reply) {
  const size_t begin = std::min(first, total);
  const size_t end = std::min(total, begin + per_reply);
  d.AddU64("total", total);
  d.AddU64("first", begin);
  d.AddU64("next", end);
  return {begin, end};
}

}  // namespace

Dict FormatEngines(const std::vector<std::pair<uint32_t, std::string>>& engines) {
  // Room for the command name and the "more" entry; a name's JSON is at most 6 times its bytes.
  constexpr size_t kBudgetBytes = kMaxReplyBytes - 128;
  Dict d;
  size_t bytes = 2;
  size_t i = 0;
  for (; i < engines.size() && i + 1 < kMaxDictEntries; i++) {
    const std::string key = absl::StrCat(engines[i].first);
    const size_t entry = key.size() + JsonString(engines[i].second).size() + 4;
    if (bytes + entry > kBudgetBytes) break;
    bytes += entry;
    d.AddString(key, engines[i].second);
  }
  if (i < engines.size()) d.AddU64("more", engines.size() - i);
  return d;
}

Dict FormatStats(const Snapshot& s, transport::TimeNs now) {
  const transport::EngineStats& st = s.stats;
  Dict d;
  d.AddU64("engine", s.engine);
  d.AddString("name", s.name);
  d.AddU64("snapshot_seq", s.seq);
  d.AddU64("snapshot_age_ns", s.seq != 0 && now > s.taken_at_ns ? now - s.taken_at_ns : 0);
  uint64_t up = 0;
  for (const ConnInfo& c : s.conns) up += c.state == ConnInfo::State::kUp;
  d.AddU64("connections", s.conns.size());
  d.AddU64("connections_up", up);
  d.AddU64("rx_packets", st.rx_packets);
  d.AddU64("rx_bytes", st.rx_bytes);
  d.AddU64("rx_duplicate_pkts", st.rx_duplicate_pkts);
  d.AddU64("rx_duplicate_chunks", st.rx_duplicate_chunks);
  d.AddU64("rx_ce_pkts", st.rx_ce_pkts);
  d.AddU64("tx_packets", st.tx_packets);
  d.AddU64("tx_bytes", st.tx_bytes);
  d.AddU64("tx_data_pkts", st.tx_data_pkts);
  d.AddU64("tx_retransmits", st.tx_retransmits);
  d.AddU64("tx_acks", st.tx_acks);
  d.AddU64("tx_naks", st.tx_naks);
  d.AddU64("tx_probes", st.tx_probes);
  d.AddU64("keepalives", st.keepalives);
  d.AddU64("lost_detected_sack", st.lost_detected_sack);
  d.AddU64("lost_detected_rto", st.lost_detected_rto);
  d.AddU64("rto_timeouts", st.rto_timeouts);
  d.AddU64("spurious_timeouts", st.spurious_timeouts);
  d.AddU64("tail_loss_probes", st.tail_loss_probes);
  d.AddU64("needless_tail_probes", st.needless_tail_probes);
  d.AddU64("stall_probes", st.stall_probes);
  d.AddU64("share_pushes", st.share_pushes);
  d.AddU64("share_reallocations", st.share_reallocations);
  d.AddU64("silent_path_timeouts", st.silent_path_timeouts);
  d.AddU64("path_failures", st.path_failures);
  d.AddU64("path_loss_failures", st.path_loss_failures);
  d.AddU64("plane_failures", st.plane_failures);
  d.AddU64("plane_recoveries", st.plane_recoveries);
  d.AddU64("cc_repaths", st.cc_repaths);
  d.AddU64("cc_repath_probes", st.cc_repath_probes);
  d.AddU64("cc_delay_cuts", st.cc_delay_cuts);
  d.AddU64("conn_failures", st.conn_failures);
  d.AddU64("cq_overflows", st.cq_overflows);
  d.AddU64("control_dropped", st.control_dropped);

  // Received packets dropped, by reason: the parser's (wire::ParseError names), then the engine's.
  uint64_t total = 0;
  Dict drops;
  for (size_t i = 1; i < static_cast<size_t>(wire::ParseError::kCount); i++) {
    drops.AddU64(wire::ParseErrorName(static_cast<wire::ParseError>(i)), st.rx_parse_drops[i]);
    total += st.rx_parse_drops[i];
  }
  const std::pair<const char*, uint64_t> engine_drops[] = {
      {"unknown_conn", st.rx_unknown_conn},   {"wrong_source", st.rx_wrong_source},
      {"bad_path", st.rx_bad_path},           {"unknown_stream", st.rx_unknown_stream},
      {"beyond_window", st.rx_beyond_window}, {"bad_chunk", st.rx_bad_chunk},
  };
  for (const auto& [name, n] : engine_drops) {
    drops.AddU64(name, n);
    total += n;
  }
  d.AddU64("rx_drops_total", total);
  d.AddDict("rx_drops") = std::move(drops);
  if (s.has_port) {
    Dict& p = d.AddDict("port");
    p.AddU64("rx_packets", s.port.rx_packets);
    p.AddU64("rx_bytes", s.port.rx_bytes);
    p.AddU64("rx_errors", s.port.rx_errors);
    p.AddU64("tx_packets", s.port.tx_packets);
    p.AddU64("tx_bytes", s.port.tx_bytes);
    p.AddU64("tx_errors", s.port.tx_errors);
    p.AddU64("tx_no_buffer", s.port.tx_no_buffer);
  }
  return d;
}

Dict FormatConns(const Snapshot& s, size_t first) {
  Dict d;
  d.AddU64("engine", s.engine);
  const Page page = AddPage(d, s.conns.size(), first, kConnsPerReply);
  Dict& conns = d.AddDict("conns");
  for (size_t i = page.begin; i < page.end; i++) {
    const ConnInfo& c = s.conns[i];
    Dict& e = conns.AddDict(absl::StrCat(c.conn_id));
    AddPeer(e, c);
    e.AddString("state", transport::ConnStateName(c.state));
    e.AddU64("remote_conn_id", c.remote_conn_id);
    e.AddU64("qps", c.num_qps);
    uint64_t active = 0, failures = 0, srtt_sum = 0, srtt_n = 0, srtt_min = 0, srtt_max = 0;
    for (const PathInfo& p : c.paths) {
      active += p.active;
      failures += p.failures;
      if (p.srtt_ns != 0) {
        srtt_sum += p.srtt_ns;
        srtt_min = srtt_n == 0 ? p.srtt_ns : std::min<uint64_t>(srtt_min, p.srtt_ns);
        srtt_max = std::max<uint64_t>(srtt_max, p.srtt_ns);
        srtt_n++;
      }
    }
    e.AddU64("paths", c.paths.size());
    e.AddU64("paths_active", active);
    e.AddU64("peer_paths", c.peer_paths);
    e.AddU64("planes", c.planes.size());
    e.AddU64("planes_up", std::count_if(c.planes.begin(), c.planes.end(),
                                        [](const transport::PlaneInfo& p) { return p.up; }));
    e.AddU64("chunk_bytes", c.chunk_bytes);
    e.AddU64("srtt_ns", srtt_n != 0 ? srtt_sum / srtt_n : 0);
    e.AddU64("srtt_min_ns", srtt_min);
    e.AddU64("srtt_max_ns", srtt_max);
    e.AddU64("window_pkts", c.window);
    e.AddU64("inflight_pkts", c.inflight);
    e.AddU64("cwnd_bytes", c.cwnd_bytes);
    e.AddU64("inflight_bytes", c.inflight_bytes);
    e.AddU64("cc_cuts", c.cc_cuts);
    e.AddU64("rate_hint_mbps", c.rate_hint_mbps);
    e.AddU64("peer_hint_mbps", c.peer_hint_mbps);
    e.AddU64("pace_mbps", c.pace_mbps);
    e.AddU64("tx_pkts", c.tx_pkts);
    e.AddU64("tx_bytes", c.tx_bytes);
    e.AddU64("rx_pkts", c.rx_pkts);
    e.AddU64("rx_bytes", c.rx_bytes);
    e.AddU64("retx_pkts", c.retx_pkts);
    e.AddU64("lost_pkts", c.lost_pkts);
    e.AddU64("ce_rx_pkts", c.ce_rx_pkts);
    e.AddU64("ce_echoed_pkts", c.ce_echoed_pkts);
    e.AddU64("path_failures", failures);
  }
  return d;
}

Dict FormatAllocator(const Snapshot& s, size_t first) {
  const transport::ShareInfo& a = s.share;
  Dict d;
  d.AddU64("engine", s.engine);
  d.AddU64("capacity_mbps", a.capacity_mbps);
  d.AddU64("interval_ns", a.interval_ns);
  d.AddU64("level_mbps", a.level_mbps);
  d.AddU64("measured", a.measured);
  d.AddU64("listed", a.listed);
  const Page page = AddPage(d, a.senders.size(), first, kSharesPerReply);
  Dict& senders = d.AddDict("senders");
  for (size_t i = page.begin; i < page.end; i++) {
    const transport::ShareInfo::Sender& x = a.senders[i];
    Dict& e = senders.AddDict(absl::StrCat(x.conn_id));
    e.AddString("peer_ip", x.peer.ip.ToString());
    e.AddU64("peer_udp_port", x.peer.udp_port);
    e.AddU64("measured_mbps", x.measured_mbps);
    e.AddU64("hint_mbps", x.hint_mbps);
  }
  return d;
}

absl::StatusOr<Dict> FormatPaths(const Snapshot& s, uint32_t conn_id, size_t first) {
  auto it = std::find_if(s.conns.begin(), s.conns.end(),
                         [&](const ConnInfo& c) { return c.conn_id == conn_id; });
  if (it == s.conns.end()) {
    return absl::NotFoundError(absl::StrCat("engine ", s.engine, " has no connection ", conn_id));
  }
  const ConnInfo& c = *it;
  Dict d;
  d.AddU64("engine", s.engine);
  d.AddU64("conn", c.conn_id);
  AddPeer(d, c);
  d.AddString("state", transport::ConnStateName(c.state));
  const Page page = AddPage(d, c.paths.size(), first, kPathsPerReply);
  Dict& paths = d.AddDict("paths");
  for (size_t i = page.begin; i < page.end; i++) {
    const PathInfo& p = c.paths[i];
    Dict& e = paths.AddDict(absl::StrCat(p.path_id));
    e.AddU64("src_port", p.src_port);
    e.AddU64("plane", p.plane);
    e.AddU64("active", p.active ? 1 : 0);
    e.AddU64("srtt_ns", p.srtt_ns);
    e.AddU64("rto_ns", p.rto_ns);
    e.AddU64("window_pkts", p.window);
    e.AddU64("inflight_pkts", p.inflight);
    e.AddU64("cwnd_bytes", p.cwnd_bytes);
    e.AddU64("inflight_bytes", p.inflight_bytes);
    e.AddU64("cc_cuts", p.cc_cuts);
    e.AddU64("repaths", p.repaths);
    e.AddU64("tx_pkts", p.tx_pkts);
    e.AddU64("retx_pkts", p.retx_pkts);
    e.AddU64("lost_pkts", p.lost_pkts);
    e.AddU64("ce_pkts", p.ce_pkts);
    e.AddU64("failures", p.failures);
  }
  return d;
}

}  // namespace metaroce::telemetry
