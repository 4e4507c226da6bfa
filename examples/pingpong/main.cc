/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// mr-pingpong: the smallest complete program on the embedding API. Two
// processes exchange (address, QP number, buffer address, rkey) over a TCP
// connection, as perftest does, then ping-pong SEND messages and finish with
// one RDMA WRITE of the whole buffer that the server checks byte for byte.
//
//   mr-pingpong --port udp:ip=127.0.0.1,port=4800 --listen 18515
//   mr-pingpong --port udp:ip=127.0.0.1,port=4801 --connect 127.0.0.1:18515
//
// Add --faults drop=0.01 on either side to watch the transport recover. Over a
// dpdk port, --no-mac connects with the peer's MAC left zero: the driver finds it
// by ARP / IPv6 ND (and the final stats show how).

#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "mr_device.h"
#include "mr_net_dpdk.h"
#include "mr_port_fault.h"

namespace {

using namespace metaroce;
using namespace metaroce::transport;

struct Options {
  DeviceConfig dev;
  uint16_t listen_port = 0;
  std::string listen_addr = "127.0.0.1";  // IPv4 address the server listens on
  bool no_mac = false;                    // connect with a zero peer MAC
  std::string connect;                    // host:port
  uint32_t iters = 1000;
  uint32_t size = 64;
};

// What each side tells the other before any MetaRoCE packet flows.
struct Hello {
  uint8_t ip[16];
  uint8_t v6;
  uint8_t mac[6];
  uint16_t udp_port;
  uint32_t qpn;
  uint32_t rkey;
  uint64_t addr;
  uint64_t len;
};

int Usage(FILE* to, int rc) {
  std::fprintf(to,
               "usage: mr-pingpong --port DRIVER:ARGS (--listen TCPPORT | --connect HOST:TCPPORT)\n"
               "                   [--faults SPEC] [--iters N] [--size BYTES] [--no-mac]\n"
               "  --port     port driver and arguments, e.g. udp:ip=127.0.0.1,port=4800\n"
               "  --faults   fault injection in front of the port, e.g. drop=0.01\n"
               "  --listen   wait for the peer's TCP connection on [IPV4:]TCPPORT (server;\n"
               "             the address defaults to 127.0.0.1)\n"
               "  --connect  connect to the server's TCP port to exchange addresses (client)\n"
               "  --iters    ping-pong round trips (default 1000)\n"
               "  --size     message size in bytes (default 64)\n"
               "  --no-mac   ignore the peer's MAC: the port must resolve it (dpdk: ARP / ND)\n");
  return rc;
}

bool Exchange(const Options& o, const Hello& mine, Hello* theirs) {
  int fd = -1;
  if (o.listen_port != 0) {
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, o.listen_addr.c_str(), &a.sin_addr);  // checked in main()
    a.sin_port = htons(o.listen_port);
    if (bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(ls, 1) != 0) {
      std::perror("mr-pingpong: listen");
      return false;
    }
    fd = accept(ls, nullptr, nullptr);
    close(ls);
  } else {
    const size_t colon = o.connect.rfind(':');
    uint32_t port = 0;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    if (colon == std::string::npos || !absl::SimpleAtoi(o.connect.substr(colon + 1), &port) ||
        port == 0 || port > 65535 ||
        inet_pton(AF_INET, o.connect.substr(0, colon).c_str(), &a.sin_addr) != 1) {
      std::fprintf(stderr, "mr-pingpong: --connect takes IPV4:PORT, not '%s'\n", o.connect.c_str());
      return false;
    }
    a.sin_port = htons(static_cast<uint16_t>(port));
    fd = socket(AF_INET, SOCK_STREAM, 0);
    for (int tries = 0; connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0; tries++) {
      if (tries == 100) {
        std::perror("mr-pingpong: connect");
        return false;
      }
      usleep(50'000);
    }
  }
  if (fd < 0) return false;
  const bool ok = write(fd, &mine, sizeof(mine)) == sizeof(mine) &&
                  recv(fd, theirs, sizeof(*theirs), MSG_WAITALL) == sizeof(*theirs);
  close(fd);
  return ok;
}

int Run(const Options& o) {
  auto dev = Device::Open(o.dev);
  if (!dev.ok()) {
    std::fprintf(stderr, "mr-pingpong: %s\n", std::string(dev.status().message()).c_str());
    return 1;
  }
  Device& d = **dev;
  Engine& e = d.engine();
  const bool server = o.listen_port != 0;
  std::vector<uint8_t> buf(std::max<size_t>(o.size, 1) * 2 + (1 << 20));
  const uint64_t base = reinterpret_cast<uint64_t>(buf.data());
  const uint32_t pd = *e.AllocPd();
  const uint32_t cq = *e.CreateCq(256);
  const MrInfo mr = *e.RegMr(pd, base, buf.size(), access::kAll);
  const uint32_t qpn = *e.CreateQp({.pd = pd, .send_cq = cq, .recv_cq = cq});

  Hello mine{}, theirs{};
  const PeerAddr me = d.address();
  std::memcpy(mine.ip, me.ip.bytes.data(), 16);
  mine.v6 = me.ip.v6;
  std::memcpy(mine.mac, me.mac.bytes.data(), 6);
  mine.udp_port = me.udp_port;
  mine.qpn = qpn;
  mine.rkey = mr.rkey;
  mine.addr = base;
  mine.len = buf.size();
  if (!Exchange(o, mine, &theirs)) return 1;
  PeerAddr peer;
  peer.ip.v6 = theirs.v6 != 0;
  std::memcpy(peer.ip.bytes.data(), theirs.ip, 16);
  if (!o.no_mac) std::memcpy(peer.mac.bytes.data(), theirs.mac, 6);
  peer.udp_port = theirs.udp_port;
  if (auto st = e.ConnectQp(qpn, peer, theirs.qpn); !st.ok()) {
    std::fprintf(stderr, "mr-pingpong: %s\n", std::string(st.message()).c_str());
    return 1;
  }

  auto post_recv = [&] {
    RecvWr r;
    r.sg.push_back({base + o.size, o.size, mr.lkey});
    return e.PostRecv(qpn, r);
  };
  // The client sends from the start of its buffer; the server echoes what it
  // received (its receive buffer follows).
  auto send = [&](uint64_t id) {
    SendWr s;
    s.wr_id = id;
    s.opcode = Opcode::kSend;
    if (o.size != 0) s.sg.push_back({server ? base + o.size : base, o.size, mr.lkey});
    return e.PostSend(d.Now(), qpn, s);
  };
  // Completions counted by kind; wait() runs the device until one more of
  // the given kind than already consumed has arrived (fails on an error or
  // after 10 s), so no completion is ever dropped while waiting for another.
  uint64_t sends_done = 0, recvs_done = 0, sends_used = 0, recvs_used = 0;
  auto wait = [&](bool recv) -> bool {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    Completion c;
    while ((recv ? recvs_done <= recvs_used : sends_done <= sends_used)) {
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr, "mr-pingpong: no completion within 10 s\n");
        return false;
      }
      // This loop polls again at once: the reply to a message just received
      // may leave with its ACK (Device::Replies).
      d.Poll(Device::Replies::kNextPoll);
      while (e.PollCq(cq, {&c, 1}) == 1) {
        if (c.status != WcStatus::kSuccess) {
          std::fprintf(stderr, "mr-pingpong: completion failed: %s\n", WcStatusName(c.status));
          return false;
        }
        (c.opcode == WcOpcode::kRecv ? recvs_done : sends_done)++;
      }
    }
    (recv ? recvs_used : sends_used)++;
    return true;
  };

  if (!post_recv().ok()) return 1;
  const auto start = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < o.iters; i++) {
    if (server) {
      if (!wait(true) || !post_recv().ok() || !send(i).ok() || !wait(false)) return 1;
    } else {
      std::memset(buf.data(), static_cast<int>(i), o.size);
      if (!send(i).ok() || !wait(false) || !wait(true) || !post_recv().ok()) return 1;
      if (o.size != 0 && buf[o.size] != static_cast<uint8_t>(i)) {
        std::fprintf(stderr, "mr-pingpong: reply %u carried the wrong bytes\n", i);
        return 1;
      }
    }
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Finally the client WRITEs 1 MiB into the server's buffer, then tells it
  // with a SEND; the server checks every byte.
  const uint32_t big = 1 << 20;
  uint8_t* region = buf.data() + 2 * std::max<size_t>(o.size, 1);
  if (!server) {
    for (uint32_t i = 0; i < big; i++) region[i] = static_cast<uint8_t>(i * 7 + 3);
    SendWr w;
    w.opcode = Opcode::kWrite;
    w.sg.push_back({reinterpret_cast<uint64_t>(region), big, mr.lkey});
    w.remote_addr = theirs.addr + (reinterpret_cast<uint64_t>(region) - base);
    w.rkey = theirs.rkey;
    if (!e.PostSend(d.Now(), qpn, w).ok() || !send(o.iters).ok() || !wait(false) || !wait(false)) {
      return 1;
    }
  } else {
    if (!wait(true)) return 1;
    for (uint32_t i = 0; i < big; i++) {
      if (region[i] != static_cast<uint8_t>(i * 7 + 3)) {
        std::fprintf(stderr, "mr-pingpong: WRITE byte %u is wrong\n", i);
        return 1;
      }
    }
  }
  // Keep answering for a moment: the peer may still need an ACK (or to
  // re-send a lost packet) before its last work requests complete.
  const auto linger = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  while (std::chrono::steady_clock::now() < linger) d.Poll();
  const EngineStats& st = e.stats();
  std::printf("%s: %u round trips of %u bytes, %.2f us per round trip; 1 MiB WRITE %s\n",
              server ? "server" : "client", o.iters, o.size, secs * 1e6 / o.iters,
              server ? "verified" : "done");
  std::printf(
      "  engine: packets sent %lu, received %lu, retransmitted %lu (%lu tail-loss probes)\n",
      static_cast<unsigned long>(st.tx_packets), static_cast<unsigned long>(st.rx_packets),
      static_cast<unsigned long>(st.tx_retransmits),
      static_cast<unsigned long>(st.tail_loss_probes));
  if (auto fs = port::FaultStatsOf(d.port())) {
    std::printf("  fault stage: dropped %lu of %lu received packets\n",
                static_cast<unsigned long>(fs->dropped + fs->burst_dropped),
                static_cast<unsigned long>(fs->rx_in));
  }
  if (auto ns = dpdk::NeighStatsOf(d.port())) {
    std::printf(
        "  neighbours: requests sent %lu, answered %lu; replies learnt %lu, requests learnt %lu;"
        " frames dropped unresolved %lu, malformed %lu\n",
        static_cast<unsigned long>(ns->requests_sent),
        static_cast<unsigned long>(ns->requests_answered),
        static_cast<unsigned long>(ns->replies_learnt),
        static_cast<unsigned long>(ns->requests_learnt),
        static_cast<unsigned long>(ns->unresolved_drops),
        static_cast<unsigned long>(ns->malformed));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  static const option kLong[] = {{"port", required_argument, nullptr, 'p'},
                                 {"faults", required_argument, nullptr, 'f'},
                                 {"listen", required_argument, nullptr, 'l'},
                                 {"connect", required_argument, nullptr, 'c'},
                                 {"iters", required_argument, nullptr, 'n'},
                                 {"size", required_argument, nullptr, 's'},
                                 {"no-mac", no_argument, nullptr, 'm'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  int c;
  uint32_t v;
  while ((c = getopt_long(argc, argv, "p:f:l:c:n:s:mh", kLong, nullptr)) != -1) {
    switch (c) {
      case 'p': o.dev.port = optarg; break;
      case 'f': o.dev.faults = optarg; break;
      case 'l': {
        const std::string arg = optarg;
        const size_t colon = arg.rfind(':');
        if (colon != std::string::npos) o.listen_addr = arg.substr(0, colon);
        in_addr ignored;
        if (!absl::SimpleAtoi(arg.substr(colon + 1), &v) || v == 0 || v > 65535 ||
            inet_pton(AF_INET, o.listen_addr.c_str(), &ignored) != 1) {
          std::fprintf(stderr, "mr-pingpong: --listen takes [IPV4:]TCPPORT (port 1-65535)\n");
          return 2;
        }
        o.listen_port = static_cast<uint16_t>(v);
        break;
      }
      case 'm': o.no_mac = true; break;
      case 'c': o.connect = optarg; break;
      case 'n':
        if (!absl::SimpleAtoi(optarg, &o.iters) || o.iters == 0) {
          std::fprintf(stderr, "mr-pingpong: --iters takes a positive number\n");
          return 2;
        }
        break;
      case 's':
        if (!absl::SimpleAtoi(optarg, &o.size) || o.size > (64u << 20)) {
          std::fprintf(stderr, "mr-pingpong: --size takes 0..67108864 bytes\n");
          return 2;
        }
        break;
      case 'h': return Usage(stdout, 0);
      default: return Usage(stderr, 2);
    }
  }
  if (o.dev.port.empty() || (o.listen_port == 0) == o.connect.empty() || optind != argc) {
    return Usage(stderr, 2);
  }
  return Run(o);
}
