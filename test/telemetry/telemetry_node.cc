/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// A process for check_telemetry.py: two metaroce::Device in one process, over two
// net_ring ethdevs cross-connected by rte_rings (--mode ring, EAL from the DPDK
// driver) or over kernel UDP sockets on 127.0.0.1 (--mode udp, EAL from
// telemetry::StartEal()). A WRITEs 4 MiB to B with 1 % loss on B's receive side,
// then the process prints one JSON line (engine indices, connection ids) and
// keeps polling, serving telemetry, until its standard input closes. A line
// "write" on standard input WRITEs again and answers {"written": true}.
//
//   telemetry_node --mode ring|udp --prefix P [--shconf] [--huge]

// DPDK 22.11 headers use ++/-- on volatile members (-Wvolatile in C++20).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wvolatile"
#include <rte_errno.h>
#include <rte_ethdev.h>
#pragma GCC diagnostic pop
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "mr_device.h"
#include "mr_net_dpdk.h"
#include "mr_telemetry.h"
#include "ring_pair.h"

namespace metaroce {
namespace {

using namespace transport;

constexpr size_t kWriteBytes = 4 << 20;
constexpr TimeNs kWriteTimeoutNs = 30'000'000'000;

struct Options {
  std::string mode;
  std::string prefix;
  bool shconf = false;
  bool huge = false;
};

struct Side {
  std::unique_ptr<Device> dev;
  uint32_t pd = 0, cq = 0, qpn = 0;
  std::vector<uint8_t> mem;
  MrInfo mr;
};

int Fail(const std::string& what) {
  fprintf(stderr, "telemetry_node: %s\n", what.c_str());
  return 1;
}

absl::Status RingPorts(const Options& o) {
  std::vector<std::string> eal;
  if (!o.huge) eal = {"--no-huge", "-m", "256"};
  eal.insert(eal.end(), {"--no-pci", absl::StrCat("--file-prefix=", o.prefix), "--lcores=0@(0-1)"});
  if (!o.shconf) eal.push_back("--no-shconf");
  if (absl::Status s = dpdk::InitEal(eal); !s.ok()) return s;
  return testing::MakeRingPair("mra", "mrb");
}

void PollBoth(Side* s) {
  s[0].dev->Poll();
  s[1].dev->Poll();
}

// A WRITEs kWriteBytes to B; true when it completed successfully.
bool Write(Side* s) {
  SendWr wr;
  wr.wr_id = 1;
  wr.opcode = Opcode::kWrite;
  wr.sg.push_back({reinterpret_cast<uint64_t>(s[0].mem.data()), kWriteBytes, s[0].mr.lkey});
  wr.remote_addr = reinterpret_cast<uint64_t>(s[1].mem.data());
  wr.rkey = s[1].mr.rkey;
  Engine& a = s[0].dev->engine();
  if (!a.PostSend(s[0].dev->Now(), s[0].qpn, wr).ok()) return false;
  const TimeNs end = s[0].dev->Now() + kWriteTimeoutNs;
  Completion c[4];
  while (s[0].dev->Now() < end) {
    PollBoth(s);
    if (a.PollCq(s[0].cq, c) > 0) return c[0].status == WcStatus::kSuccess;
  }
  return false;
}

int Run(const Options& o) {
  if (o.mode == "ring") {
    if (absl::Status st = RingPorts(o); !st.ok()) return Fail(st.ToString());
  } else if (o.mode == "udp") {
    if (absl::Status st = telemetry::StartEal(o.prefix); !st.ok()) return Fail(st.ToString());
  } else {
    return Fail("--mode must be ring or udp");
  }
  Side s[2];
  const char* names[2] = {"node_a", "node_b"};
  for (int i = 0; i < 2; i++) {
    DeviceConfig cfg;
    cfg.name = names[i];
    cfg.port = o.mode == "ring" ? absl::StrCat("dpdk:port=net_ring_mr", i == 0 ? "a" : "b",
                                               ",ip=10.9.0.", i + 1, ",mac=02:00:00:00:09:0", i + 1)
                                : "udp:ip=127.0.0.1,port=0";
    if (i == 1) cfg.faults = "drop=0.01";
    cfg.engine.max_payload = 1024;
    cfg.engine.num_paths = 8;
    cfg.engine.seed = 11 + i;
    cfg.engine.conn_fail_after_ns = 10'000'000'000;
    auto d = Device::Open(cfg);
    if (!d.ok()) return Fail(d.status().ToString());
    s[i].dev = std::move(*d);
    Engine& e = s[i].dev->engine();
    s[i].pd = *e.AllocPd();
    s[i].cq = *e.CreateCq(1024);
    QpAttr qa;
    qa.pd = s[i].pd;
    qa.send_cq = qa.recv_cq = s[i].cq;
    s[i].qpn = *e.CreateQp(qa);
    s[i].mem.assign(kWriteBytes, static_cast<uint8_t>(0x10 + i));
    auto mr =
        e.RegMr(s[i].pd, reinterpret_cast<uint64_t>(s[i].mem.data()), kWriteBytes, access::kAll);
    if (!mr.ok()) return Fail(mr.status().ToString());
    s[i].mr = *mr;
  }
  for (int i = 0; i < 2; i++) {
    absl::Status st = s[i].dev->engine().ConnectQp(s[i].qpn, s[1 - i].dev->address(), s[1 - i].qpn);
    if (!st.ok()) return Fail(st.ToString());
  }
  if (!Write(s)) return Fail("the 4 MiB WRITE did not complete");
  if (memcmp(s[0].mem.data(), s[1].mem.data(), kWriteBytes) != 0) return Fail("WRITE corrupted");
  // Publish what the WRITE did before saying so.
  const TimeNs until = s[0].dev->Now() + 3 * telemetry::kTelemetryPublishNs;
  while (s[0].dev->Now() < until) PollBoth(s);
  const auto ca = s[0].dev->engine().GetConnections();
  const auto cb = s[1].dev->engine().GetConnections();
  if (ca.size() != 1 || cb.size() != 1) return Fail("expected one connection each");
  printf(
      "{\"engines\": {\"node_a\": %lld, \"node_b\": %lld}, \"conns\": {\"node_a\": %u, "
      "\"node_b\": %u}}\n",
      static_cast<long long>(s[0].dev->telemetry_index()),
      static_cast<long long>(s[1].dev->telemetry_index()), ca[0].conn_id, cb[0].conn_id);
  fflush(stdout);

  std::string line;
  for (uint64_t iter = 0;; iter++) {
    PollBoth(s);
    if (iter % 256 != 0) continue;
    pollfd in = {STDIN_FILENO, POLLIN, 0};
    if (poll(&in, 1, 0) <= 0) continue;
    char buf[256];
    const ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
    if (n <= 0) break;  // the checker closed our input: done
    line.append(buf, static_cast<size_t>(n));
    for (size_t nl; (nl = line.find('\n')) != std::string::npos; line.erase(0, nl + 1)) {
      if (line.substr(0, nl) == "write") {
        const bool ok = Write(s);
        printf("{\"written\": %s}\n", ok ? "true" : "false");
        fflush(stdout);
      }
    }
  }
  // Let the last ACKs go out.
  const TimeNs drain = s[0].dev->Now() + 20'000'000;
  while (s[0].dev->Now() < drain) PollBoth(s);
  return 0;
}

}  // namespace
}  // namespace metaroce

int main(int argc, char** argv) {
  metaroce::Options o;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--mode" && i + 1 < argc) {
      o.mode = argv[++i];
    } else if (a == "--prefix" && i + 1 < argc) {
      o.prefix = argv[++i];
    } else if (a == "--shconf") {
      o.shconf = true;
    } else if (a == "--huge") {
      o.huge = true;
    } else {
      fprintf(stderr, "usage: telemetry_node --mode ring|udp --prefix P [--shconf] [--huge]\n");
      return 2;
    }
  }
  if (o.prefix.empty()) return metaroce::Fail("--prefix is required");
  return metaroce::Run(o);
}
