/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The one-way latency of a port driver alone, no transport: the floor under
// mr-perf's write_lat on the same port (devtools/peer-compare.sh). Two
// processes busy-poll one port each; the pinger sends a packet of a 64 B
// WRITE's size to its peer and waits for the echoer to send one back, and
// reports half of each round trip, as mr-perf does.
//
//   bench_port_pingpong --port SPEC --peer IP:PORT[@MAC] --echo [--seconds S]
//   bench_port_pingpong --port SPEC --peer IP:PORT[@MAC] [--seconds S] [--payload N]
//
// SPEC is any port driver's ("dpdk:...", "udp:..."); MAC is the peer's, for
// drivers that send whole Ethernet frames. The pinger prints one JSON line:
// {"mode":"port_pingpong","driver":...,"frame_bytes":...,"iters":...,
//  "lat_us":{"median":...,"min":...,"p99":...}}. The echoer stops after
// --seconds plus 10 s without a packet.

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "mr_port.h"
#include "mr_wire_frame.h"
#include "mr_wire_packet.h"

namespace metaroce {
namespace {

using port::Port;
using port::RxPacket;
using transport::Framing;
using transport::TxSlot;

constexpr uint64_t kWarmupIters = 1000;
constexpr uint64_t kEchoIdleNs = 10'000'000'000;  // the echoer gives up after this long alone
constexpr uint16_t kBurst = 32;

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

[[noreturn]] void Fail(const std::string& why) {
  std::fprintf(stderr, "bench_port_pingpong: %s\n", why.c_str());
  std::exit(2);
}

struct Options {
  std::string port;
  wire::FrameInfo peer;  ///< dst, dst_port, eth_dst
  bool echo = false;
  double seconds = 3;
  // A 64 B WRITE's datagram: its headers before the payload, the payload, the CRC.
  uint32_t payload =
      static_cast<uint32_t>(wire::PayloadOffset(wire::PacketType::kWrite)) + 64 + wire::kCrcBytes;
};

// "IP:PORT[@MAC]"
wire::FrameInfo ParsePeer(const std::string& s) {
  wire::FrameInfo f;
  const std::vector<std::string> at = absl::StrSplit(s, '@');
  const size_t colon = at[0].rfind(':');
  uint32_t port = 0;
  if (at.size() > 2 || colon == std::string::npos ||
      !absl::SimpleAtoi(at[0].substr(colon + 1), &port) || port == 0 || port > 65535) {
    Fail("--peer takes IP:PORT or IP:PORT@MAC, not '" + s + "'");
  }
  if (!wire::IpAddr::Parse(at[0].substr(0, colon), &f.dst)) {
    Fail("--peer: '" + at[0].substr(0, colon) + "' is not an IP address");
  }
  f.dst_port = static_cast<uint16_t>(port);
  auto& m = f.eth_dst.bytes;
  char tail = 0;
  if (at.size() == 2 && std::sscanf(at[1].c_str(), "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx%c", &m[0], &m[1],
                                    &m[2], &m[3], &m[4], &m[5], &tail) != 6) {
    Fail("--peer: '" + at[1] + "' is not a MAC address (xx:xx:xx:xx:xx:xx)");
  }
  return f;
}

Options Parse(int argc, char** argv) {
  Options o;
  bool have_peer = false;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Fail(a + " needs a value");
      return argv[++i];
    };
    if (a == "--port") {
      o.port = value();
    } else if (a == "--peer") {
      o.peer = ParsePeer(value());
      have_peer = true;
    } else if (a == "--echo") {
      o.echo = true;
    } else if (a == "--seconds") {
      if (!absl::SimpleAtod(value(), &o.seconds) || o.seconds <= 0 || o.seconds > 3600) {
        Fail("--seconds takes a number of seconds in (0, 3600]");
      }
    } else if (a == "--payload") {
      if (!absl::SimpleAtoi(value(), &o.payload) || o.payload < 8 || o.payload > 9000) {
        Fail("--payload takes a UDP payload size in bytes, 8..9000");
      }
    } else {
      Fail("unknown argument '" + a + "' (see the comment at the top of bench_port_pingpong.cc)");
    }
  }
  if (o.port.empty() || !have_peer) Fail("--port SPEC and --peer IP:PORT[@MAC] are required");
  return o;
}

class Pinger {
 public:
  Pinger(Port& p, const Options& o) : port_(p) {
    const port::PortInfo& info = p.info();
    frame_ = o.peer;
    frame_.eth_src = info.mac;
    frame_.src = info.ip;
    frame_.src_port = info.source_ports.empty() ? info.udp_port : info.source_ports[0];
    if (info.framing == Framing::kEthernet) encap_ = wire::EncapBytes(info.ip.v6, false);
  }

  /** Sends one packet of @p payload UDP payload bytes, the first 8 of them @p seq. */
  bool Send(uint32_t payload, uint64_t seq) {
    TxSlot s;
    if (port_.TxAlloc(0, &s, 1) != 1) return false;
    if (s.cap < encap_ + payload) Fail("the port's buffers are smaller than one packet");
    std::memset(s.buf + encap_, 0, payload);
    std::memcpy(s.buf + encap_, &seq, sizeof(seq));
    if (port_.info().framing == Framing::kEthernet) {
      auto n = wire::EncodeUdpFrame(frame_, payload, {s.buf, s.cap});
      if (!n.ok()) Fail(std::string(n.status().message()));
      s.len = static_cast<uint32_t>(*n);
    } else {
      s.len = payload;
      s.addr = frame_;
    }
    return port_.TxBurst(0, &s, 1) == 1;
  }

  /** The UDP payload bytes of a received packet. */
  uint32_t PayloadOf(const RxPacket& p) const {
    return p.data.size() > encap_ ? static_cast<uint32_t>(p.data.size() - encap_) : 0;
  }
  /** The sequence number Send() put in @p p; false if it is too short to carry one. */
  bool SeqOf(const RxPacket& p, uint64_t* seq) const {
    if (PayloadOf(p) < sizeof(*seq)) return false;
    std::memcpy(seq, p.data.data() + encap_, sizeof(*seq));
    return true;
  }
  size_t frame_bytes(uint32_t payload) const { return encap_ + payload; }

 private:
  Port& port_;
  wire::FrameInfo frame_;
  size_t encap_ = 0;
};

int Echo(Port& p, const Options& o) {
  Pinger out(p, o);
  RxPacket pkts[kBurst];
  uint64_t echoed = 0, last = NowNs();
  const uint64_t give_up = static_cast<uint64_t>(o.seconds * 1e9) + kEchoIdleNs;
  while (NowNs() - last < give_up) {
    const uint16_t n = p.RxBurst(0, pkts, kBurst);
    for (uint16_t i = 0; i < n; i++) {
      uint64_t seq = 0;
      if (!out.SeqOf(pkts[i], &seq)) continue;
      while (!out.Send(out.PayloadOf(pkts[i]), seq)) {
      }
      echoed++;
    }
    if (n != 0) last = NowNs();
  }
  std::fprintf(stderr, "bench_port_pingpong: echoed %lu packets\n", (unsigned long)echoed);
  return 0;
}

int Ping(Port& p, const Options& o) {
  Pinger out(p, o);
  RxPacket pkts[kBurst];
  std::vector<double> us;
  const uint64_t end = NowNs() + static_cast<uint64_t>(o.seconds * 1e9);
  for (uint64_t seq = 0;; seq++) {
    const uint64_t start = NowNs();
    if (start >= end) break;
    if (!out.Send(o.payload, seq)) continue;
    bool back = false;
    while (!back) {
      const uint16_t n = p.RxBurst(0, pkts, kBurst);
      for (uint16_t i = 0; i < n; i++) {
        uint64_t got = 0;
        back |= out.SeqOf(pkts[i], &got) && got == seq;
      }
      if (!back && NowNs() - start > 1'000'000'000) Fail("no echo within 1 s: is the echoer up?");
    }
    if (seq >= kWarmupIters) us.push_back(static_cast<double>(NowNs() - start) / 2e3);
  }
  if (us.empty()) Fail("no round trip measured: run longer (--seconds)");
  std::sort(us.begin(), us.end());
  std::printf(
      "{\"mode\":\"port_pingpong\",\"driver\":\"%s\",\"frame_bytes\":%zu,\"iters\":%zu,"
      "\"lat_us\":{\"median\":%.3f,\"min\":%.3f,\"p99\":%.3f}}\n",
      p.info().driver.c_str(), out.frame_bytes(o.payload), us.size(), us[us.size() / 2], us[0],
      us[us.size() * 99 / 100]);
  return 0;
}

}  // namespace
}  // namespace metaroce

int main(int argc, char** argv) {
  using namespace metaroce;
  const Options o = Parse(argc, argv);
  auto p = port::OpenPort(o.port);
  if (!p.ok()) Fail(std::string(p.status().message()));
  return o.echo ? Echo(**p, o) : Ping(**p, o);
}
