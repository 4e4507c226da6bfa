/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Output: perftest-like tables, or one JSON object per line (--json).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "mr_port_fault.h"
#include "perf.h"

namespace metaroce::perf {
namespace {

constexpr char kRule[] =
    "---------------------------------------------------------------------------------------------";

struct LatStats {
  double min = 0, max = 0, median = 0, avg = 0, stdev = 0, p99 = 0, p999 = 0;
};

LatStats Summarize(std::vector<double> v) {
  LatStats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto pct = [&v](double p) {
    return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
  };
  s.min = v.front();
  s.max = v.back();
  s.median = pct(0.5);
  s.p99 = pct(0.99);
  s.p999 = pct(0.999);
  double sum = 0, sq = 0;
  for (double x : v) sum += x;
  s.avg = sum / static_cast<double>(v.size());
  for (double x : v) sq += (x - s.avg) * (x - s.avg);
  s.stdev = std::sqrt(sq / static_cast<double>(v.size()));
  return s;
}

std::string PortLine(Endpoint& ep) {
  const port::PortInfo& pi = ep.dev().port_info();
  return absl::StrCat(pi.driver, " ", pi.ip.ToString(), ":", pi.udp_port);
}

}  // namespace

void PrintHeader(const Options& o, Endpoint& ep) {
  if (o.json) return;
  const ModeInfo& m = Mode(o.mode);
  std::printf("%s\n %s  (%s)\n", kRule, m.name, m.help);
  std::printf(" Port: %s   Paths: %u   QPs: %u   Depth: %u   Verify: %s\n", PortLine(ep).c_str(),
              o.dev.engine.num_paths, o.spec.qps, o.spec.depth,
              o.spec.verify ? "every byte" : "off");
  if (!o.dev.faults.empty()) std::printf(" Faults: %s\n", o.dev.faults.c_str());
  std::printf("%s\n", kRule);
  if (m.latency) {
    std::printf(" %-10s %-12s %10s %10s %10s %10s %10s %10s %10s %8s\n", "#bytes", "#iterations",
                "t_min[us]", "t_max[us]", "t_median", "t_avg[us]", "t_stdev", "99%[us]",
                "99.9%[us]", "retx");
  } else {
    std::printf(" %-10s %-12s %14s %10s %14s %10s %10s\n", "#bytes", "#messages", "BW avg[MiB/s]",
                "BW[Gb/s]", "MsgRate[Mpps]", "retx", "verified");
  }
}

void PrintResult(const Options& o, const TestSpec& s, const Result& r, const ServerReport& sr,
                 uint64_t retransmits) {
  const ModeInfo& m = Mode(static_cast<ModeId>(s.mode));
  const double secs = r.seconds > 0 ? r.seconds : 1e-9;
  const double mib_s = static_cast<double>(r.bytes) / secs / (1 << 20);
  const double gbit_s = static_cast<double>(r.bytes) * 8 / secs / 1e9;
  const double mpps = static_cast<double>(r.msgs) / secs / 1e6;
  const LatStats l = Summarize(r.lat_us);
  const uint64_t verified = r.verified_msgs + sr.verified_msgs;
  const uint64_t errors = r.verify_errors + sr.verify_errors;
  const bool ok = r.error.empty() && sr.ok != 0 && errors == 0;
  if (o.json) {
    std::string j = absl::StrFormat(
        "{\"mode\":\"%s\",\"size\":%u,\"qps\":%u,\"depth\":%u,\"paths\":%u,\"verify\":%s,"
        "\"faults\":\"%s\",\"messages\":%u,\"bytes\":%u,\"seconds\":%.6f,\"bw_mib_s\":%.2f,"
        "\"gbit_s\":%.4f,\"mpps\":%.4f,\"retransmits\":%u,\"verified\":%u,\"verify_errors\":%u",
        m.name, s.size, s.qps, s.depth, o.dev.engine.num_paths, s.verify ? "true" : "false",
        o.dev.faults, r.msgs, r.bytes, r.seconds, mib_s, gbit_s, mpps, retransmits, verified,
        errors);
    if (m.latency) {
      absl::StrAppendFormat(&j,
                            ",\"lat_us\":{\"min\":%.3f,\"median\":%.3f,\"avg\":%.3f,\"stdev\":%.3f,"
                            "\"p99\":%.3f,\"p999\":%.3f,\"max\":%.3f}",
                            l.min, l.median, l.avg, l.stdev, l.p99, l.p999, l.max);
    }
    if (static_cast<ModeId>(s.mode) == ModeId::kMixed) {
      absl::StrAppendFormat(&j,
                            ",\"ops\":{\"write_imm\":%u,\"send\":%u,\"read\":%u,\"fetch_add\":%u,"
                            "\"cmp_swap\":%u}",
                            r.op_counts[0], r.op_counts[1], r.op_counts[2], r.op_counts[3],
                            r.op_counts[4]);
    }
    std::string err = r.error.empty() ? std::string(sr.error) : r.error;
    for (char& ch : err) {
      if (ch == '"' || ch == '\\') ch = '\'';
    }
    absl::StrAppendFormat(&j, ",\"server_received\":%u,\"ok\":%s,\"error\":\"%s\"}",
                          sr.msgs_received, ok ? "true" : "false", err);
    std::printf("%s\n", j.c_str());
  } else if (m.latency) {
    std::printf(" %-10u %-12lu %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %8lu\n", s.size,
                static_cast<unsigned long>(r.msgs), l.min, l.max, l.median, l.avg, l.stdev, l.p99,
                l.p999, static_cast<unsigned long>(retransmits));
  } else {
    std::printf(" %-10u %-12lu %14.2f %10.3f %14.4f %10lu %10s\n", s.size,
                static_cast<unsigned long>(r.msgs), mib_s, gbit_s, mpps,
                static_cast<unsigned long>(retransmits),
                s.verify ? std::to_string(verified).c_str() : "-");
  }
  if (!o.json && !ok) {
    std::printf(" FAILED: %s%s%s\n", r.error.empty() ? "" : r.error.c_str(),
                sr.error[0] != '\0' ? absl::StrCat(" server: ", sr.error).c_str() : "",
                errors != 0 ? absl::StrCat(" ", errors, " messages with wrong bytes").c_str() : "");
  }
  std::fflush(stdout);
}

void PrintFooter(const Options& o, Endpoint& ep) {
  const transport::EngineStats& st = ep.engine().stats();
  const auto paths = ep.engine().GetPaths(ep.peer().ip, ep.peer().udp_port);
  transport::ConnInfo conn;  // the connection to the peer: its window, hints and pacer
  for (const transport::ConnInfo& c : ep.engine().GetConnections()) {
    if (c.peer.ip == ep.peer().ip && c.peer.udp_port == ep.peer().udp_port) conn = c;
  }
  if (o.json) {
    std::string j = absl::StrFormat(
        "{\"engine\":{\"tx_packets\":%u,\"rx_packets\":%u,\"rx_duplicate_chunks\":%u,"
        "\"retransmits\":%u,\"lost_sack\":%u,\"lost_rto\":%u,\"rto_timeouts\":%u,"
        "\"spurious_timeouts\":%u,\"tail_loss_probes\":%u,\"needless_tail_probes\":%u,"
        "\"stall_probes\":%u,"
        "\"silent_path_timeouts\":%u,\"path_failures\":%u},"
        "\"conn\":{\"cwnd_bytes\":%u,\"cc_cuts\":%u,\"srtt_us\":%.2f,"
        "\"rate_hint_mbps\":%u,\"peer_hint_mbps\":%u,\"pace_mbps\":%u},\"paths\":[",
        st.tx_packets, st.rx_packets, st.rx_duplicate_chunks, st.tx_retransmits,
        st.lost_detected_sack, st.lost_detected_rto, st.rto_timeouts, st.spurious_timeouts,
        st.tail_loss_probes, st.needless_tail_probes, st.stall_probes, st.silent_path_timeouts,
        st.path_failures, conn.cwnd_bytes, conn.cc_cuts, static_cast<double>(conn.srtt_ns) / 1e3,
        conn.rate_hint_mbps, conn.peer_hint_mbps, conn.pace_mbps);
    for (size_t i = 0; i < paths.size(); i++) {
      const transport::PathInfo& p = paths[i];
      absl::StrAppendFormat(&j,
                            "%s{\"path\":%u,\"src_port\":%u,\"active\":%s,\"srtt_us\":%.2f,"
                            "\"rto_us\":%.1f,\"window\":%u,\"cwnd_bytes\":%u,\"cc_cuts\":%u,"
                            "\"repaths\":%u,\"tx\":%u,\"retx\":%u,\"lost\":%u,"
                            "\"ce\":%u,\"failures\":%u}",
                            i == 0 ? "" : ",", p.path_id, p.src_port, p.active ? "true" : "false",
                            static_cast<double>(p.srtt_ns) / 1e3,
                            static_cast<double>(p.rto_ns) / 1e3, p.window, p.cwnd_bytes, p.cc_cuts,
                            p.repaths, p.tx_pkts, p.retx_pkts, p.lost_pkts, p.ce_pkts, p.failures);
    }
    std::printf("%s]}\n", j.c_str());
    return;
  }
  std::printf(
      "%s\n Engine: %lu packets sent, %lu received, %lu retransmitted (%lu by SACK gap, "
      "%lu by %lu timeouts (%lu spurious), %lu tail-loss probes (%lu needless), %lu stall "
      "probes), "
      "%lu path failures\n",
      kRule, static_cast<unsigned long>(st.tx_packets), static_cast<unsigned long>(st.rx_packets),
      static_cast<unsigned long>(st.tx_retransmits),
      static_cast<unsigned long>(st.lost_detected_sack),
      static_cast<unsigned long>(st.lost_detected_rto), static_cast<unsigned long>(st.rto_timeouts),
      static_cast<unsigned long>(st.spurious_timeouts),
      static_cast<unsigned long>(st.tail_loss_probes),
      static_cast<unsigned long>(st.needless_tail_probes),
      static_cast<unsigned long>(st.stall_probes), static_cast<unsigned long>(st.path_failures));
  std::printf(
      " Connection: window %.1f KB (%lu cuts), srtt %.2f us, rate hint sent %u Mbit/s, "
      "received %u Mbit/s, pacer %s\n",
      static_cast<double>(conn.cwnd_bytes) / 1e3, static_cast<unsigned long>(conn.cc_cuts),
      static_cast<double>(conn.srtt_ns) / 1e3, conn.rate_hint_mbps, conn.peer_hint_mbps,
      conn.pace_mbps == 0 ? "off" : absl::StrCat(conn.pace_mbps, " Mbit/s").c_str());
  if (auto fs = port::FaultStatsOf(ep.dev().port())) {
    std::printf(" Fault stage: dropped %lu of %lu received packets\n",
                static_cast<unsigned long>(fs->dropped + fs->burst_dropped),
                static_cast<unsigned long>(fs->rx_in));
  }
  if (!paths.empty()) {
    std::printf(" %-5s %-9s %-7s %10s %10s %7s %9s %6s %12s %8s %8s %6s %6s\n", "path", "src_port",
                "active", "srtt[us]", "rto[us]", "window", "cwnd[KB]", "cuts", "tx_pkts", "retx",
                "lost", "ce", "fails");
    for (const transport::PathInfo& p : paths) {
      std::printf(" %-5u %-9u %-7s %10.2f %10.1f %7u %9.1f %6lu %12lu %8lu %8lu %6lu %6lu\n",
                  p.path_id, p.src_port, p.active ? "yes" : "no",
                  static_cast<double>(p.srtt_ns) / 1e3, static_cast<double>(p.rto_ns) / 1e3,
                  p.window, static_cast<double>(p.cwnd_bytes) / 1e3,
                  static_cast<unsigned long>(p.cc_cuts), static_cast<unsigned long>(p.tx_pkts),
                  static_cast<unsigned long>(p.retx_pkts), static_cast<unsigned long>(p.lost_pkts),
                  static_cast<unsigned long>(p.ce_pkts), static_cast<unsigned long>(p.failures));
    }
  }
  std::printf("%s\n", kRule);
  std::fflush(stdout);
}

}  // namespace metaroce::perf
