/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include "ring_ports.h"

// DPDK 22.11 headers use ++/-- on volatile members (-Wvolatile in C++20).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wvolatile"
#include <rte_errno.h>
#pragma GCC diagnostic pop

#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "mr_net_dpdk.h"
#include "ring_pair.h"
#include "traffic.h"

namespace metaroce::testing {

absl::Status EalAndRingPorts() {
  static std::once_flag once;
  static absl::Status status;
  std::call_once(once, [] {
    // As test/dpdk: no hugepages, no PCI scan, no shared files; the main thread (and the
    // shard threads it starts, which inherit its CPUs) free to run on either vCPU.
    status = dpdk::InitEal({"--no-huge", "-m", "512", "--no-pci", "--no-shconf",
                            "--file-prefix=mr_rt_test", "--no-telemetry", "--lcores=0@(0-1)"});
    if (!status.ok()) return;
    status = MakeRingPair("rta", "rtb", kRingQueues);
  });
  return status;
}

runtime::RuntimeConfig RingRuntimeConfig(const char* port, int host, uint16_t lcores,
                                         const std::string& faults, uint32_t mtu) {
  runtime::RuntimeConfig cfg;
  cfg.port = absl::StrCat("dpdk:port=", port, ",ip=10.7.0.", host, ",mac=02:00:00:00:07:0", host,
                          ",udp_port=4800,mtu=", mtu);
  cfg.faults = faults;
  cfg.lcores = lcores;
  cfg.engine = TestEngineConfig(300 + host);
  return cfg;
}

}  // namespace metaroce::testing
