/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Packets/s of the udp driver on loopback, 64-byte datagrams in bursts of 32,
// busy-polling receivers (two threads, one per port):
//   oneway  A blasts at B; B counts what it receives
//   raw     the same with plain sockets and no driver (environment.md's 0.83 M
//           packets/s for kernel UDP loopback was measured like this)
//   echo    A keeps a window of packets out, B sends each one back
// Usage: bench_udp [--seconds S] [--runs R] [--ip 127.0.0.1|::1] [--source-ports K]

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mr_port.h"

namespace {

using metaroce::port::Port;
using metaroce::port::RxPacket;
using metaroce::transport::TxSlot;
using Clock = std::chrono::steady_clock;

constexpr uint16_t kBurst = 32;
constexpr uint32_t kBytes = 64;
constexpr uint32_t kEchoWindow = 256;

struct Options {
  double seconds = 2;
  int runs = 5;
  std::string ip = "127.0.0.1";
  int source_ports = 1;
};

std::unique_ptr<Port> Open(const Options& o) {
  auto p = metaroce::port::OpenPort("udp:ip=" + o.ip + ",port=0,source_ports=" +
                                    std::to_string(o.source_ports) + ",rcvbuf=4194304");
  if (!p.ok()) {
    std::fprintf(stderr, "bench_udp: %s\n", std::string(p.status().message()).c_str());
    std::exit(1);
  }
  return std::move(*p);
}

// Fills up to @p n slots of @p from addressed to @p to; returns how many it got.
uint16_t Prepare(Port& from, const Port& to, TxSlot* slots, uint16_t n, uint64_t* seq) {
  const uint16_t got = from.TxAlloc(0, slots, n);
  const auto& pool = from.info().source_ports;
  for (uint16_t i = 0; i < got; i++) {
    TxSlot& s = slots[i];
    std::memset(s.buf, 0, kBytes);
    std::memcpy(s.buf, seq, sizeof(*seq));
    s.len = kBytes;
    s.addr.dst = to.info().ip;
    s.addr.dst_port = to.info().udp_port;
    s.addr.src_port = pool[(*seq)++ % pool.size()];
  }
  return got;
}

// A blasts for the duration; returns packets/s received at B.
double OneWay(const Options& o, double* tx_rate) {
  auto a = Open(o);
  auto b = Open(o);
  std::atomic<bool> stop{false};
  uint64_t received = 0;
  std::thread rx([&] {
    RxPacket pkts[kBurst];
    while (!stop.load(std::memory_order_relaxed)) received += b->RxBurst(0, pkts, kBurst);
  });
  TxSlot slots[kBurst];
  uint64_t seq = 0, sent = 0;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(o.seconds);
  while (Clock::now() < end) {
    const uint16_t n = Prepare(*a, *b, slots, kBurst, &seq);
    sent += a->TxBurst(0, slots, n);
  }
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let the last ones land
  stop = true;
  rx.join();
  *tx_rate = sent / secs;
  return received / secs;
}

// Round trips per second with kEchoWindow packets outstanding.
double Echo(const Options& o) {
  auto a = Open(o);
  auto b = Open(o);
  std::atomic<bool> stop{false};
  std::thread echo([&] {
    RxPacket pkts[kBurst];
    TxSlot slots[kBurst];
    const auto& pool = b->info().source_ports;
    uint64_t k = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const uint16_t n = b->RxBurst(0, pkts, kBurst);
      if (n == 0) continue;
      const uint16_t got = b->TxAlloc(0, slots, n);
      for (uint16_t i = 0; i < got; i++) {
        std::memcpy(slots[i].buf, pkts[i].data.data(), pkts[i].data.size());
        slots[i].len = static_cast<uint32_t>(pkts[i].data.size());
        slots[i].addr.dst = pkts[i].addr.src;
        slots[i].addr.dst_port = a->info().udp_port;
        slots[i].addr.src_port = pool[k++ % pool.size()];
      }
      b->TxBurst(0, slots, got);
    }
  });
  RxPacket pkts[kBurst];
  TxSlot slots[kBurst];
  uint64_t seq = 0, back = 0, out = 0;
  auto last_rx = Clock::now();
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(o.seconds);
  while (Clock::now() < end) {
    const uint16_t n = a->RxBurst(0, pkts, kBurst);
    back += n;
    out -= std::min<uint64_t>(out, n);
    if (n > 0) last_rx = Clock::now();
    // A lost packet would shrink the window for good: reopen it after a quiet 10 ms.
    if (n == 0 && Clock::now() - last_rx > std::chrono::milliseconds(10)) out = 0;
    if (out + kBurst <= kEchoWindow) {
      const uint16_t m = Prepare(*a, *b, slots, kBurst, &seq);
      out += a->TxBurst(0, slots, m);
    }
  }
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  stop = true;
  echo.join();
  return back / secs;
}

// The same one-way blast with plain sockets (one sendmmsg/recvmmsg of 32 per
// call, no driver): the kernel's figure on this machine in this run.
double RawOneWay(const Options& o) {
  const int family = o.ip == "::1" ? AF_INET6 : AF_INET;
  auto open = [&](sockaddr_storage* addr, socklen_t* len) {
    const int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    std::memset(addr, 0, sizeof(*addr));
    if (family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(addr);
      a->sin_family = AF_INET;
      inet_pton(AF_INET, o.ip.c_str(), &a->sin_addr);
      *len = sizeof(sockaddr_in);
    } else {
      auto* a = reinterpret_cast<sockaddr_in6*>(addr);
      a->sin6_family = AF_INET6;
      inet_pton(AF_INET6, o.ip.c_str(), &a->sin6_addr);
      *len = sizeof(sockaddr_in6);
    }
    const int rcvbuf = 4194304;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    if (bind(fd, reinterpret_cast<sockaddr*>(addr), *len) != 0) {
      std::perror("bench_udp: bind");
      std::exit(1);
    }
    getsockname(fd, reinterpret_cast<sockaddr*>(addr), len);
    return fd;
  };
  sockaddr_storage a_addr, b_addr;
  socklen_t a_len, b_len;
  const int a = open(&a_addr, &a_len);
  const int b = open(&b_addr, &b_len);
  std::atomic<bool> stop{false};
  uint64_t received = 0;
  std::thread rx([&] {
    std::vector<uint8_t> mem(kBurst * 2048);
    mmsghdr msgs[kBurst];
    iovec iov[kBurst];
    while (!stop.load(std::memory_order_relaxed)) {
      std::memset(msgs, 0, sizeof(msgs));
      for (uint32_t i = 0; i < kBurst; i++) {
        iov[i] = {mem.data() + i * 2048, 2048};
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
      }
      const int r = recvmmsg(b, msgs, kBurst, MSG_DONTWAIT, nullptr);
      if (r > 0) received += r;
    }
  });
  uint8_t payload[kBytes] = {};
  mmsghdr msgs[kBurst];
  iovec iov[kBurst];
  std::memset(msgs, 0, sizeof(msgs));
  for (uint32_t i = 0; i < kBurst; i++) {
    iov[i] = {payload, kBytes};
    msgs[i].msg_hdr.msg_name = &b_addr;
    msgs[i].msg_hdr.msg_namelen = b_len;
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
  }
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(o.seconds);
  while (Clock::now() < end) sendmmsg(a, msgs, kBurst, MSG_DONTWAIT);
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stop = true;
  rx.join();
  close(a);
  close(b);
  return received / secs;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--seconds") {
      o.seconds = std::atof(argv[i + 1]);
    } else if (k == "--runs") {
      o.runs = std::max(1, std::atoi(argv[i + 1]));
    } else if (k == "--ip") {
      o.ip = argv[i + 1];
    } else if (k == "--source-ports") {
      o.source_ports = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr,
                   "usage: bench_udp [--seconds S] [--runs R] [--ip 127.0.0.1|::1] "
                   "[--source-ports K]\n");
      return 2;
    }
  }
  if (o.ip != "127.0.0.1" && o.ip != "::1") {
    std::fprintf(stderr, "bench_udp: loopback only (127.0.0.1 or ::1)\n");
    return 2;
  }
  std::vector<double> rx, tx, raw, echo;
  for (int r = 0; r < o.runs; r++) {  // interleaved, so noise hits all alike
    double t = 0;
    raw.push_back(RawOneWay(o));
    rx.push_back(OneWay(o, &t));
    tx.push_back(t);
    echo.push_back(Echo(o));
  }
  std::printf("udp driver, %s, %u B datagrams, bursts of %u, %d source port(s), median of %d\n",
              o.ip.c_str(), kBytes, kBurst, o.source_ports, o.runs);
  std::printf("  one-way: sent %.3f M packets/s, received %.3f M packets/s\n", Median(tx) / 1e6,
              Median(rx) / 1e6);
  std::printf(
      "  plain sockets, same run: received %.3f M packets/s"
      " (environment.md: 0.83)\n",
      Median(raw) / 1e6);
  std::printf("  echo:    %.3f M round trips/s (%.3f M packets/s both ways), window %u\n",
              Median(echo) / 1e6, 2 * Median(echo) / 1e6, kEchoWindow);
  return 0;
}
