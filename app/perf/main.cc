/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// mr-perf: the MetaRoCE benchmark, in the manner of testpmd and perftest.
// Two processes meet over TCP (the control channel), the client chooses the
// test, and both run it over MetaRoCE on any port driver. See doc/mr-perf.md.
//
//   mr-perf --listen 18515
//   mr-perf --connect 127.0.0.1:18515 --mode write_bw --size 64K --verify

#include <cstdio>
#include <cstring>

#include "perf.h"

namespace metaroce::perf {
namespace {

constexpr uint8_t kEndOfTests = 0xff;
/** How long a side keeps acknowledging after its last test. */
constexpr TimeNs kLingerNs = 300'000'000;
/** How long the client waits for the server to close when all is done. */
constexpr TimeNs kCloseWaitNs = 5'000'000'000;

bool Meet(Endpoint& ep, Control& ctl) {
  const Hello mine = ep.MyHello();
  Hello theirs{};
  if (!ctl.Send(&mine, sizeof(mine)) || !ctl.Recv(&theirs, sizeof(theirs))) {
    std::fprintf(stderr, "mr-perf: the peer closed the control connection\n");
    return false;
  }
  if (theirs.version != kControlVersion) {
    std::fprintf(stderr, "mr-perf: the peer speaks control version %u, this is %u\n",
                 theirs.version, kControlVersion);
    return false;
  }
  ep.SetPeer(theirs);
  return true;
}

// Waits for a control message while the device keeps running: the peer may
// still need ACKs (or retransmissions) for work it is finishing.
bool RecvPolling(Endpoint& ep, Control& ctl, void* p, size_t n) {
  for (uint32_t i = 0;; i++) {
    bool closed = false;
    if ((i % 64) == 0 && ctl.TryRecv(p, n, &closed)) return true;
    if (closed) return false;
    ep.dev().Poll();
  }
}

bool SendQps(Control& ctl, const std::vector<QpWire>& v) {
  return ctl.Send(v.data(), v.size() * sizeof(QpWire));
}

bool RecvQps(Endpoint& ep, Control& ctl, size_t n, std::vector<QpWire>* v) {
  v->resize(n);
  return RecvPolling(ep, ctl, v->data(), n * sizeof(QpWire));
}

int Server(const Options& o, Endpoint& ep) {
  auto ctl = Control::Listen(o.listen_port);
  if (ctl == nullptr || !Meet(ep, *ctl)) return 1;
  int rc = 0;
  for (;;) {
    TestSpec s{};
    if (!RecvPolling(ep, *ctl, &s, sizeof(s)) || s.mode == kEndOfTests) break;
    if (s.mode >= static_cast<uint8_t>(ModeId::kCount) || s.size == 0 || s.size > kMaxMsgBytes ||
        s.qps == 0 || s.qps > 256 || s.depth == 0 || s.depth > 4096) {
      std::fprintf(stderr, "mr-perf: the client asked for a test out of range\n");
      return 1;
    }
    std::vector<QpWire> theirs;
    if (auto st = ep.Setup(s); !st.ok()) {
      std::fprintf(stderr, "mr-perf: %s\n", std::string(st.message()).c_str());
      return 1;
    }
    if (!RecvQps(ep, *ctl, s.qps, &theirs)) break;
    if (auto st = ep.Connect(theirs); !st.ok()) {
      std::fprintf(stderr, "mr-perf: %s\n", std::string(st.message()).c_str());
      return 1;
    }
    if (!SendQps(*ctl, ep.MyQps())) break;
    const ServerReport rep = RunResponder(ep, s, *ctl);
    if (!ctl->Send(&rep, sizeof(rep))) break;
    if (rep.ok == 0) {
      std::fprintf(stderr,
                   "mr-perf: %s test of %u bytes failed: %s (%lu messages with wrong bytes)\n",
                   Mode(static_cast<ModeId>(s.mode)).name, s.size,
                   rep.error[0] != '\0' ? rep.error : "verification",
                   static_cast<unsigned long>(rep.verify_errors));
      rc = 1;
    } else if (!o.json) {
      std::printf(" server: %s %u bytes: %lu messages received%s, %lu verified\n",
                  Mode(static_cast<ModeId>(s.mode)).name, s.size,
                  static_cast<unsigned long>(rep.msgs_received), "",
                  static_cast<unsigned long>(rep.verified_msgs));
      std::fflush(stdout);
    }
    ep.Teardown();
  }
  ep.Linger(kLingerNs);
  PrintFooter(o, ep);
  // The port closes before the control connection does: the client waits
  // for that, so the server side's port is never polled while the client's
  // goes away (DPDK 22.11's memif server crashes on that).
  ep.Close();
  return rc;
}

int Client(const Options& o, Endpoint& ep) {
  auto ctl = Control::Connect(o.connect);
  if (ctl == nullptr || !Meet(ep, *ctl)) return 1;
  std::vector<uint32_t> sizes;
  if (o.sweep) {
    for (uint32_t sz = kSweepMinBytes; sz <= o.spec.size; sz *= 2) sizes.push_back(sz);
  } else {
    sizes.push_back(o.spec.size);
  }
  PrintHeader(o, ep);
  int rc = 0;
  for (uint32_t size : sizes) {
    TestSpec s = o.spec;
    s.size = size;
    if (s.iters == 0 && s.duration_ns == 0 && s.bytes == 0) {
      s.iters = Mode(o.mode).latency
                    ? 1000
                    : std::min<uint64_t>(5000, std::max<uint64_t>(1, (1ull << 30) / size));
    }
    if (auto st = ep.Setup(s); !st.ok()) {
      std::fprintf(stderr, "mr-perf: %s\n", std::string(st.message()).c_str());
      return 1;
    }
    std::vector<QpWire> theirs;
    if (!ctl->Send(&s, sizeof(s)) || !SendQps(*ctl, ep.MyQps()) ||
        !RecvQps(ep, *ctl, s.qps, &theirs)) {
      std::fprintf(stderr, "mr-perf: the server refused the test or went away (see its output)\n");
      return 1;
    }
    if (auto st = ep.Connect(theirs); !st.ok()) {
      std::fprintf(stderr, "mr-perf: %s\n", std::string(st.message()).c_str());
      return 1;
    }
    const uint64_t retx_before = ep.engine().stats().tx_retransmits;
    Result r;
    RunMode(ep, s, &r);
    ClientDone done{r.data_writes, r.data_sends, r.error.empty() ? 0u : 1u, 0};
    ServerReport rep{};
    if (!ctl->Send(&done, sizeof(done)) || !RecvPolling(ep, *ctl, &rep, sizeof(rep))) {
      if (r.error.empty()) r.error = "the server went away before reporting";
      std::snprintf(rep.error, sizeof(rep.error), "no report");
    }
    PrintResult(o, s, r, rep, ep.engine().stats().tx_retransmits - retx_before);
    if (!r.error.empty() || rep.ok == 0 || r.verify_errors != 0) {
      if (!o.json)
        std::fprintf(stderr, "mr-perf: %s\n",
                     r.error.empty() ? "the test failed" : r.error.c_str());
      rc = 1;
      break;
    }
    ep.Teardown();
  }
  if (rc == 0) {
    TestSpec end{};
    end.mode = kEndOfTests;
    ctl->Send(&end, sizeof(end));
  }
  ep.Linger(kLingerNs);
  PrintFooter(o, ep);
  // Keep answering until the server has closed its port and then the
  // control connection (or for kCloseWaitNs at most).
  const TimeNs until = ep.Now() + kCloseWaitNs;
  for (uint32_t i = 0; ep.Now() < until; i++) {
    ep.dev().Poll();
    uint8_t byte;
    bool closed = false;
    if ((i % 64) == 0 && !ctl->TryRecv(&byte, 1, &closed) && closed) break;
  }
  ep.Close();
  return rc;
}

}  // namespace
}  // namespace metaroce::perf

int main(int argc, char** argv) {
  using namespace metaroce::perf;
  Options o;
  if (const int rc = ParseOptions(argc, argv, &o); rc >= 0) return rc;
  auto ep = Endpoint::Open(o);
  if (!ep.ok()) {
    std::fprintf(stderr, "mr-perf: %s\n", std::string(ep.status().message()).c_str());
    return 1;
  }
  return o.listen_port != 0 ? Server(o, **ep) : Client(o, **ep);
}
