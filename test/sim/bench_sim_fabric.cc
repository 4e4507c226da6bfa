/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// bench_sim_fabric: events per second of the simulated fabric. A leaf-spine
// fabric where every host keeps its NIC busy with 4 KiB frames sprayed over 64
// source ports, and answers a quarter of what it receives (like ACKs); light
// loss and reordering on every link. Two traffic patterns:
//   perm    host i sends to host (i + N/2) mod N (every flow crosses a spine)
//   random  every frame to a random peer (worst case: no congestion control,
//           so output queues fill to the buffer limit and caches go cold)
// Prints the figures and the trace hash (same arguments => same hash).
//
//   bench_sim_fabric [leaves=8] [spines=8] [hosts=8] [us=2000] [seed=1]
//                    [txq=8] [pattern=perm|random]

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "mr_sim.h"
#include "sim_workload.h"

namespace {

using namespace metaroce::sim;

struct Args {
  uint32_t leaves = 8, spines = 8, hosts = 8, txq = 8;
  long us = 2000;
  uint64_t seed = 1;
  std::string pattern = "perm";
};

bool Parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; i++) {
    const char* eq = std::strchr(argv[i], '=');
    if (eq == nullptr) return false;
    const std::string key(argv[i], static_cast<size_t>(eq - argv[i]));
    const char* v = eq + 1;
    if (key == "pattern") {
      a->pattern = v;
      if (a->pattern != "perm" && a->pattern != "random") return false;
      continue;
    }
    const long n = std::strtol(v, nullptr, 10);
    if (key == "leaves")
      a->leaves = static_cast<uint32_t>(n);
    else if (key == "spines")
      a->spines = static_cast<uint32_t>(n);
    else if (key == "hosts")
      a->hosts = static_cast<uint32_t>(n);
    else if (key == "us")
      a->us = n;
    else if (key == "seed")
      a->seed = static_cast<uint64_t>(n);
    else if (key == "txq")
      a->txq = static_cast<uint32_t>(n);
    else
      return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!Parse(argc, argv, &a)) {
    std::fprintf(stderr,
                 "usage: bench_sim_fabric [leaves=8] [spines=8] [hosts=8] [us=2000] [seed=1] "
                 "[txq=8] [pattern=perm|random]\n");
    return 2;
  }
  LeafSpineConfig c;
  c.leaves = a.leaves;
  c.spines = a.spines;
  c.hosts_per_leaf = a.hosts;
  // An engine paces and keeps a few frames queued at the NIC, not a full ring.
  c.host_tx_queue_frames = a.txq;
  const SimTime duration = a.us * kPsPerUs;

  Fabric fabric(a.seed);
  auto topo = BuildLeafSpine(fabric, c);
  if (!topo.ok()) {
    std::fprintf(stderr, "bench_sim_fabric: %s\n", std::string(topo.status().message()).c_str());
    return 2;
  }
  FaultConfig f;
  f.loss_probability = 0.001;
  f.reorder_probability = 0.01;
  f.reorder_max_delay_ps = 1 * kPsPerUs;
  if (auto s = fabric.SetAllLinkFaults(f); !s.ok()) return 2;
  testing::WorkloadConfig w;
  w.frame_bytes_min = 4096;
  w.frame_bytes_max = 4096;
  w.fill_nic = true;
  w.digest = false;  // measure the fabric, not the receiver's hashing
  w.mean_gap_ps = 1 * kPsPerUs;
  w.stop_at_ps = duration;
  std::vector<std::unique_ptr<testing::WorkloadEndpoint>> eps;
  const std::vector<Host*>& hosts = topo->hosts;
  if (a.pattern == "random") {
    eps = testing::StartWorkload(hosts, w);
  } else {
    for (size_t i = 0; i < hosts.size(); i++) {
      Host* peer = hosts[(i + hosts.size() / 2) % hosts.size()];
      eps.push_back(
          std::make_unique<testing::WorkloadEndpoint>(hosts[i], std::vector<Host*>{peer}, w));
    }
  }

  const auto t0 = std::chrono::steady_clock::now();
  fabric.RunUntilIdle();
  const auto t1 = std::chrono::steady_clock::now();
  const double wall = std::chrono::duration<double>(t1 - t0).count();

  uint64_t rx = 0, tx = 0, rx_bytes = 0;
  for (const auto& ep : eps) {
    rx += ep->rx_frames;
    tx += ep->tx_frames;
    rx_bytes += ep->rx_bytes;
  }
  const double events = static_cast<double>(fabric.events_processed());
  const double sim_s = static_cast<double>(fabric.Now()) / kPsPerSec;
  std::printf("topology          %u leaves x %u spines x %u hosts (%zu hosts), 400G links\n",
              c.leaves, c.spines, c.hosts_per_leaf, hosts.size());
  std::printf("pattern           %s, nic tx queue %u frames\n", a.pattern.c_str(),
              c.host_tx_queue_frames);
  std::printf("simulated time    %.3f ms\n", sim_s * 1e3);
  std::printf("wall time         %.3f s\n", wall);
  std::printf("events            %.0f\n", events);
  std::printf("events/s          %.2f M\n", events / wall / 1e6);
  std::printf("frames sent       %llu (%.2f M/s wall)\n", static_cast<unsigned long long>(tx),
              static_cast<double>(tx) / wall / 1e6);
  std::printf("frames delivered  %llu, %.1f Gbit/s per host (simulated)\n",
              static_cast<unsigned long long>(rx),
              static_cast<double>(rx_bytes) * 8 / sim_s / 1e9 / static_cast<double>(hosts.size()));
  std::printf("queue drops       %llu\n",
              static_cast<unsigned long long>(fabric.total_drops(DropCause::kQueueFull)));
  std::printf("trace hash        %016llx (%llu records)\n",
              static_cast<unsigned long long>(fabric.trace_hash()),
              static_cast<unsigned long long>(fabric.trace_records()));
  return 0;
}
