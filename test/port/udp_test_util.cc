/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include "udp_test_util.h"

#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace metaroce::testing {

absl::StatusOr<std::unique_ptr<port::Port>> OpenLoopback(const std::string& ip,
                                                         const std::string& extra) {
  if (ip != "127.0.0.1" && ip != "::1") {
    return absl::InvalidArgumentError(absl::StrCat("tests use loopback only, not ", ip));
  }
  std::string spec = absl::StrCat("udp:ip=", ip, ",port=0");
  if (!extra.empty()) absl::StrAppend(&spec, ",", extra);
  return port::OpenPort(spec);
}

absl::StatusOr<std::unique_ptr<port::Port>> OpenWithFixedSourcePorts(const std::string& ip,
                                                                     uint32_t k) {
  // Above the usual ephemeral range start (32768..60999 on Linux) is still
  // shared with it, so a range may be taken: move on to the next one.
  uint32_t base = 40000 + (static_cast<uint32_t>(getpid()) * 97u) % 20000u;
  absl::Status last;
  for (int attempt = 0; attempt < 50; attempt++) {
    auto p = OpenLoopback(ip, absl::StrCat("source_ports=", k, ",first_source_port=", base));
    if (p.ok() || !absl::IsUnavailable(p.status())) return p;
    last = p.status();
    base = 40000 + (base - 40000 + 1009u) % 20000u;
  }
  return last;
}

std::vector<Received> Receive(port::Port& p, size_t want, std::chrono::milliseconds timeout) {
  std::vector<Received> got;
  const auto end = std::chrono::steady_clock::now() + timeout;
  port::RxPacket pkts[32];
  while (got.size() < want && std::chrono::steady_clock::now() < end) {
    const uint16_t n = p.RxBurst(0, pkts, 32);
    for (uint16_t i = 0; i < n; i++) {
      got.push_back({{pkts[i].data.begin(), pkts[i].data.end()}, pkts[i].addr});
    }
  }
  return got;
}

}  // namespace metaroce::testing
