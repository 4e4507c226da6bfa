/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Throughput of two runtimes over the cross-connected net_ring ports (EAL, no hugepages),
// 1 and then 2 lcores each, the same QPs and bytes: every QP WRITEs one way and SENDs the
// other (test/runtime/traffic.h). With 2 lcores, half the packets arrive on the other
// shard's queue and are handed over. Prints the median of the runs.
// Usage: bench_runtime [--runs R] [--mib M] [--mtu N] [--yield N]

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mr_runtime.h"
#include "ring_ports.h"
#include "traffic.h"

namespace {

using metaroce::runtime::Runtime;
using metaroce::runtime::ShardStats;
namespace mt = metaroce::testing;

struct Options {
  int runs = 5;
  uint32_t mib = 64;  // WRITE bytes in all, per run
  uint32_t mtu = 9000;
  uint32_t yield = 0;
};

uint64_t Packets(const Runtime& rt, const metaroce::port::StatCounter ShardStats::*c) {
  uint64_t t = 0;
  for (uint16_t i = 0; i < rt.num_shards(); i++) t += (rt.shard(i).stats().*c).Get();
  return t;
}

void Die(const std::string& what) {
  std::fprintf(stderr, "bench_runtime: %s\n", what.c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const long v = std::strtol(argv[i + 1], nullptr, 10);
    if (k == "--runs") {
      o.runs = static_cast<int>(v);
    } else if (k == "--mib") {
      o.mib = static_cast<uint32_t>(v);
    } else if (k == "--mtu") {
      o.mtu = static_cast<uint32_t>(v);
    } else if (k == "--yield") {
      o.yield = static_cast<uint32_t>(v);
    } else {
      Die("usage: bench_runtime [--runs R] [--mib M] [--mtu N] [--yield N]");
    }
  }
  absl::Status s = mt::EalAndRingPorts();
  if (!s.ok()) Die(std::string(s.message()));
  constexpr uint32_t kQps = 4;
  std::printf("%u QPs, %u MiB of WRITEs + %u MiB of SENDs per run, mtu %u, yield %u, %d runs\n",
              kQps, o.mib, o.mib / 4, o.mtu, o.yield, o.runs);
  for (uint16_t lcores = 1; lcores <= mt::kRingQueues; lcores++) {
    std::vector<double> mbps, mpps, secs;
    uint64_t handed = 0;
    for (int r = 0; r < o.runs; r++) {
      auto ca = mt::RingRuntimeConfig(mt::kRingPortA, 1, lcores, "", o.mtu);
      auto cb = mt::RingRuntimeConfig(mt::kRingPortB, 2, lcores, "", o.mtu);
      ca.yield_after_idle_polls = cb.yield_after_idle_polls = o.yield;
      auto a = Runtime::Open(ca);
      if (!a.ok()) Die(std::string(a.status().message()));
      auto b = Runtime::Open(cb);
      if (!b.ok()) Die(std::string(b.status().message()));
      mt::Traffic::Options to;
      to.qps_per_pair = kQps / (lcores * lcores);
      to.write_bytes = o.mib * 1024 * 1024 / kQps;
      to.send_bytes = to.write_bytes / 4;
      to.timeout = std::chrono::seconds(120);
      auto t = mt::Traffic::Setup(**a, **b, to);
      if (!t.ok()) Die(std::string(t.status().message()));
      s = (*t)->Run();
      if (!s.ok()) Die(std::string(s.message()));
      const std::vector<std::string> problems = (*t)->Problems();
      if (!problems.empty() || std::getenv("BENCH_VERBOSE") != nullptr) {
        for (Runtime* rt : {a->get(), b->get()}) {
          const metaroce::port::PortStats ps = rt->port_stats();
          for (uint16_t i = 0; i < rt->num_shards(); i++) {
            const auto& es = rt->shard(i).engine().stats();
            std::fprintf(
                stderr,
                "%s shard %u: tx %llu data %llu acks %llu probes %llu keepalive %llu tlp %llu dup "
                "%llu retx %llu rto %llu sack %llu path_fail %llu "
                "conn_fail %llu drops %llu\n",
                rt == a->get() ? "A" : "B", i, (unsigned long long)es.tx_packets,
                (unsigned long long)es.tx_data_pkts, (unsigned long long)es.tx_acks,
                (unsigned long long)es.tx_probes, (unsigned long long)es.keepalives,
                (unsigned long long)es.tail_loss_probes, (unsigned long long)es.rx_duplicate_pkts,
                (unsigned long long)es.tx_retransmits, (unsigned long long)es.lost_detected_rto,
                (unsigned long long)es.lost_detected_sack, (unsigned long long)es.path_failures,
                (unsigned long long)es.conn_failures,
                (unsigned long long)rt->shard(i).stats().handoff_drops.Get());
          }
          std::fprintf(stderr, "port: tx_errors %llu tx_no_buffer %llu rx_errors %llu\n",
                       (unsigned long long)ps.tx_errors, (unsigned long long)ps.tx_no_buffer,
                       (unsigned long long)ps.rx_errors);
        }
        if (!problems.empty()) Die(problems[0]);
      }
      const double sec = (*t)->seconds();
      const uint64_t pkts =
          Packets(**a, &ShardStats::tx_packets) + Packets(**b, &ShardStats::tx_packets);
      handed += Packets(**a, &ShardStats::handoffs_out) + Packets(**b, &ShardStats::handoffs_out);
      secs.push_back(sec);
      mbps.push_back((*t)->bytes() / sec / 1e6);
      mpps.push_back(pkts / sec / 1e6);
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    std::printf(
        "lcores %u x 2 runtimes: median %.3f s, %.0f MB/s payload, %.3f M packets/s "
        "(both directions, all shards); %llu packets handed over in all runs\n",
        lcores, median(secs), median(mbps), median(mpps), static_cast<unsigned long long>(handed));
  }
  return 0;
}
