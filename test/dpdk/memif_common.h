/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// What the two processes of the memif test share: addresses, sizes, one host's
// setup and a line-based exchange over pipes.

#ifndef METAROCE_TEST_DPDK_MEMIF_COMMON_H
#define METAROCE_TEST_DPDK_MEMIF_COMMON_H

#include <poll.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "device_endpoint.h"
#include "mr_device.h"

namespace metaroce::testing::memif {

inline constexpr size_t kMemBytes = 5u << 20;
inline constexpr uint32_t kWriteBytes = 4u << 20;
inline constexpr uint32_t kSendBytes = 100000;

/** The port of one side: role server (the gtest process) or client (the peer program). */
inline std::string PortSpec(bool server, const std::string& socket, uint32_t mtu) {
  const std::string role = server ? "server" : "client";
  return absl::StrCat("dpdk:eal=--no-huge;-m;512;--no-pci;--no-shconf;--file-prefix=mr_memif_",
                      role, ";--no-telemetry;--lcores=0@(0-1);--vdev=net_memif0|role=", role,
                      "|socket=", socket, "|socket-abstract=no,port=net_memif0,ip=10.7.0.",
                      server ? 1 : 2, ",mac=02:00:00:00:07:0", server ? 1 : 2, ",mtu=", mtu);
}

/** The other side's address. */
inline transport::PeerAddr PeerOf(bool server) {
  const uint8_t n = server ? 2 : 1;
  transport::PeerAddr a;
  a.ip = wire::IpAddr::V4(10, 7, 0, n);
  a.mac.bytes = {2, 0, 0, 0, 7, n};
  a.udp_port = wire::kDefaultUdpPort;
  return a;
}

/** One side: a device, a QP, a buffer registered for everything. */
struct Host : DeviceEndpoint {
  /** @p mtu above 1500: jumbo frames, as chains of memif buffers; payloads of 4 KiB. */
  absl::Status Open(bool server, const std::string& socket, uint32_t mtu) {
    DeviceConfig cfg;
    cfg.port = PortSpec(server, socket, mtu);
    cfg.engine.max_payload = mtu > 1500 ? 4096 : 1024;
    cfg.engine.seed = server ? 1 : 2;
    // Two processes on a loaded 2-vCPU machine: a peer may not run for longer than
    // the default 20 ms before the connection is declared dead.
    cfg.engine.conn_fail_after_ns = 10'000'000'000;
    auto d = Device::Open(cfg);
    if (!d.ok()) return d.status();
    return Init(std::move(*d), kMemBytes);
  }
};

/** Reads one line from @p fd without blocking past what is there; true when a line is complete. */
inline bool TryReadLine(int fd, std::string* partial, std::string* line) {
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLHUP)) != 0) {
    char c;
    if (read(fd, &c, 1) != 1) return false;
    if (c == '\n') {
      *line = *partial;
      partial->clear();
      return true;
    }
    *partial += c;
  }
  return false;
}

/** Writes @p line and a newline to @p fd. */
inline bool WriteLine(int fd, const std::string& line) {
  const std::string s = line + "\n";
  return write(fd, s.data(), s.size()) == static_cast<ssize_t>(s.size());
}

}  // namespace metaroce::testing::memif

#endif  // METAROCE_TEST_DPDK_MEMIF_COMMON_H
