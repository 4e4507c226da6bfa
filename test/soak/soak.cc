/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Soak: two processes over kernel UDP on loopback with faults on both sides,
// the peer killed and restarted (same address, same configuration) again and
// again, and hostile packets from a third socket all along. Every byte is
// verified: a WRITE that completed with success is read back, every SEND the
// requester saw succeed must have reached the responder with its bytes, and
// every work request completes (success or error) within a bound: nothing
// lost, nothing falsely completed, no hang.
//
//   test_soak [--seconds S] [--restarts N] [--faults SPEC]
//
// The parent is the survivor A; each child is one incarnation of B. A round
// is: a clean phase (traffic, drain, B's count of verified SENDs must equal
// A's successful SENDs), then a restart phase (traffic, SIGKILL of B under
// load, every outstanding work request must complete, B starts again).
// Exits 0 and prints the figures when every check held.

#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "mr_device.h"
#include "mr_wire.h"

namespace metaroce::soak {
namespace {

namespace tr = transport;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kSlots = 64;            ///< WRITE/READ-back slots in B's region
constexpr uint32_t kSlotBytes = 64 << 10;  ///< largest WRITE
constexpr uint32_t kSendBytes = 8 << 10;   ///< largest SEND
constexpr uint32_t kRecvs = 256;           ///< receives B keeps posted
constexpr uint32_t kDepth = 32;            ///< work requests A keeps outstanding
/** SEND source buffers: more than ever outstanding (kDepth + read-backs), so none is reused early.
 */
constexpr uint32_t kSendBufs = 4 * kDepth;
static_assert(kSendBufs > kDepth + kSlots);
constexpr uint64_t kDrainLimitNs = 5'000'000'000;  ///< "no hang": everything completes by then

pid_t g_child = -1;                    ///< the running B, killed when A fails
int g_ctl = -1;                        ///< its control socket: B's figures when A fails
std::string (*g_explain)() = nullptr;  ///< A's engine figures, printed when A fails

[[noreturn]] void Fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "soak: FAIL: %s%s%s\n", what, detail.empty() ? "" : ": ", detail.c_str());
  if (g_explain != nullptr) std::fprintf(stderr, "soak: %s\n", g_explain().c_str());
  if (g_ctl >= 0 && write(g_ctl, "stats\n", 6) == 6) {
    char b[512];
    const ssize_t n = read(g_ctl, b, sizeof(b) - 1);
    if (n > 0) std::fprintf(stderr, "soak: B: %.*s", static_cast<int>(n), b);
  }
  std::fflush(stderr);
  if (g_child > 0) kill(g_child, SIGKILL);
  _exit(1);
}

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/** Byte i of the payload of operation @p op (unique per operation). */
uint8_t PatternByte(uint64_t op, size_t i) {
  return static_cast<uint8_t>(Mix(op * 0x10001 + i / 8) >> (8 * (i % 8)));
}

void Fill(uint8_t* p, size_t len, uint64_t op) {
  for (size_t i = 0; i < len; i++) p[i] = PatternByte(op, i);
}

bool Matches(const uint8_t* p, size_t len, uint64_t op) {
  for (size_t i = 0; i < len; i++) {
    if (p[i] != PatternByte(op, i)) return false;
  }
  return true;
}

/** What B tells A (and A tells B) over the control socket, as one line. */
struct Info {
  uint16_t udp_port = 0;
  uint32_t qpn = 0;
  uint32_t rkey = 0;
  uint64_t base = 0;
};

void WriteLine(int fd, const std::string& s) {
  const std::string line = s + "\n";
  if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    Fail("control socket write");
  }
}

/** Reads one line; blocking. Empty on EOF. */
std::string ReadLine(int fd) {
  std::string s;
  char c;
  while (read(fd, &c, 1) == 1) {
    if (c == '\n') return s;
    s.push_back(c);
  }
  return s;
}

std::string Format(const Info& i) {
  char b[128];
  std::snprintf(b, sizeof(b), "%u %u %u %" PRIu64, i.udp_port, i.qpn, i.rkey, i.base);
  return b;
}

Info Parse(const std::string& s) {
  Info i;
  unsigned port = 0;
  if (std::sscanf(s.c_str(), "%u %u %u %" SCNu64, &port, &i.qpn, &i.rkey, &i.base) != 4) {
    Fail("control line", s);
  }
  i.udp_port = static_cast<uint16_t>(port);
  return i;
}

std::unique_ptr<Device> OpenDevice(uint16_t port, const std::string& faults) {
  DeviceConfig dc;
  dc.port = "udp:ip=127.0.0.1,port=" + std::to_string(port) + ",source_ports=16";
  dc.faults = faults;
  dc.telemetry = false;
  dc.engine.num_paths = 8;
  auto d = Device::Open(dc);
  if (!d.ok()) Fail("device", std::string(d.status().message()));
  return std::move(*d);
}

// ---- B: one incarnation of the responder ----

[[noreturn]] void RunB(int ctl, uint16_t port, const std::string& faults, uint64_t seq_base) {
  std::unique_ptr<Device> d = OpenDevice(port, faults);
  tr::Engine& e = d->engine();
  std::vector<uint8_t> mem(size_t{kSlots} * kSlotBytes + size_t{kRecvs} * kSendBytes);
  const uint32_t pd = *e.AllocPd();
  const uint32_t cq = *e.CreateCq(4 * kRecvs);
  const tr::MrInfo mr =
      *e.RegMr(pd, reinterpret_cast<uint64_t>(mem.data()), mem.size(), tr::access::kAll);
  const uint32_t qpn = *e.CreateQp({.pd = pd, .send_cq = cq, .recv_cq = cq, .max_recv_wr = kRecvs});
  const Info a = Parse(ReadLine(ctl));
  tr::PeerAddr peer = d->address();
  peer.udp_port = a.udp_port;
  if (!e.ConnectQp(qpn, peer, a.qpn).ok()) Fail("B: ConnectQp");
  uint8_t* recv_area = mem.data() + size_t{kSlots} * kSlotBytes;
  auto post_recv = [&](uint32_t i) {
    tr::RecvWr r;
    r.wr_id = i;
    r.sg.push_back(
        {reinterpret_cast<uint64_t>(recv_area + size_t{i} * kSendBytes), kSendBytes, mr.lkey});
    if (!e.PostRecv(qpn, r).ok()) Fail("B: PostRecv");
  };
  for (uint32_t i = 0; i < kRecvs; i++) post_recv(i);
  WriteLine(ctl,
            Format({d->address().udp_port, qpn, mr.rkey, reinterpret_cast<uint64_t>(mem.data())}));
  fcntl(ctl, F_SETFL, O_NONBLOCK);
  uint64_t verified = 0;
  std::string pending;
  for (;;) {
    d->Poll();
    tr::Completion c[32];
    const size_t n = e.PollCq(cq, c);
    for (size_t k = 0; k < n; k++) {
      if (c[k].status != tr::WcStatus::kSuccess) continue;  // A is gone or restarting
      const uint8_t* p = recv_area + size_t{c[k].wr_id} * kSendBytes;
      // A SEND carries its operation number in its first 8 bytes, then its pattern.
      uint64_t op;
      std::memcpy(&op, p, 8);
      if (c[k].byte_len < 8 || op < seq_base || !Matches(p + 8, c[k].byte_len - 8, op)) {
        Fail("B: a SEND arrived with wrong bytes", std::to_string(op));
      }
      verified++;
      post_recv(static_cast<uint32_t>(c[k].wr_id));
    }
    char ch;
    ssize_t got;
    while ((got = read(ctl, &ch, 1)) == 1) {
      if (ch != '\n') {
        pending.push_back(ch);
        continue;
      }
      if (pending == "count") WriteLine(ctl, std::to_string(verified));
      if (pending == "stats") {
        const tr::EngineStats& s = e.stats();
        char b[400];
        std::snprintf(b, sizeof(b),
                      "unknown_conn %" PRIu64 " unknown_stream %" PRIu64 " wrong_stream %" PRIu64
                      " beyond_window %" PRIu64 " bad_chunk %" PRIu64 " state_exhausted %" PRIu64
                      " naks %" PRIu64 " resend_naks %" PRIu64 " dup %" PRIu64
                      " conn_failures %" PRIu64 " restarts %" PRIu64 " qp %d",
                      s.rx_unknown_conn, s.rx_unknown_stream, s.rx_wrong_stream, s.rx_beyond_window,
                      s.rx_bad_chunk, s.rx_state_exhausted, s.tx_naks, s.tx_resend_naks,
                      s.rx_duplicate_pkts, s.conn_failures, s.conn_restarts,
                      static_cast<int>(e.GetQpState(qpn)));
        WriteLine(ctl, b);
      }
      pending.clear();
    }
    if (got == 0) _exit(0);  // A is gone
  }
}

// ---- A: the survivor ----

struct Op {
  uint64_t id = 0;
  tr::Opcode opcode = tr::Opcode::kWrite;
  uint32_t slot = 0;
  uint32_t len = 0;
  bool readback = false;  ///< the READ that checks a WRITE
};

struct Figures {
  uint64_t ops_ok = 0, ops_failed = 0, bytes_verified = 0, sends_ok = 0, hostile = 0;
  uint64_t restarts = 0;
};

class Survivor {
 public:
  Survivor(const std::string& faults, Figures* f) : faults_(faults), f_(f) {
    dev_ = OpenDevice(0, faults);
    tr::Engine& e = dev_->engine();
    mem_.resize(size_t{kSlots} * kSlotBytes * 2 + size_t{kSendBytes} * kSendBufs);
    pd_ = *e.AllocPd();
    cq_ = *e.CreateCq(8 * kDepth);
    mr_ = *e.RegMr(pd_, reinterpret_cast<uint64_t>(mem_.data()), mem_.size(), tr::access::kAll);
    hostile_ = socket(AF_INET, SOCK_DGRAM, 0);
  }

  /**
   * Starts the next incarnation of B at @p port (0: any) and connects a fresh
   * QP to it. B connects first, while A may still hold the connection to the
   * incarnation it killed: A learns of the restart from B's handshake, the
   * old QP's work fails at once, and only then is the new QP connected.
   */
  void StartPeer(uint16_t port, uint64_t seq_base) {
    tr::Engine& e = dev_->engine();
    const uint32_t next =
        *e.CreateQp({.pd = pd_, .send_cq = cq_, .recv_cq = cq_, .max_send_wr = 4 * kDepth});
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) Fail("socketpair");
    child_ = fork();
    if (child_ < 0) Fail("fork");
    if (child_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive A
      close(sv[0]);
      RunB(sv[1], port, faults_, seq_base);
    }
    close(sv[1]);
    ctl_ = sv[0];
    g_child = child_;
    g_ctl = ctl_;
    WriteLine(ctl_, Format({dev_->address().udp_port, next, 0, 0}));
    b_ = Parse(ReadLine(ctl_));
    Drain();  // the old QP's work requests
    if (qpn_ != 0 && !e.DestroyQp(qpn_).ok()) Fail("A: DestroyQp");
    qpn_ = next;
    tr::PeerAddr peer = dev_->address();
    peer.udp_port = b_.udp_port;
    if (!e.ConnectQp(qpn_, peer, b_.qpn).ok()) Fail("A: ConnectQp");
    seq_base_ = seq_base;
    sends_ok_ = 0;
  }

  uint16_t peer_port() const { return b_.udp_port; }
  uint64_t next_id() const { return next_id_; }

  /** Keeps kDepth operations in flight for @p ns. */
  void Traffic(uint64_t ns) {
    const tr::TimeNs start = dev_->Now();
    while (dev_->Now() - start < ns) {
      while (!dead_ && outstanding_.size() < kDepth && Post()) {
      }
      Step();
    }
  }

  /** Kills B under load, then keeps polling (no new work) for @p linger_ns. */
  void KillUnderLoad(uint64_t linger_ns) {
    KillPeer();
    const tr::TimeNs start = dev_->Now();
    while (dev_->Now() - start < linger_ns) Step();
  }

  /** Waits for every outstanding operation; a hang fails the soak. */
  void Drain() {
    const tr::TimeNs start = dev_->Now();
    while (!outstanding_.empty()) {
      if (dev_->Now() - start > kDrainLimitNs) {
        Fail("hang", std::to_string(outstanding_.size()) + " work requests never completed");
      }
      Step();
    }
  }

  /** After a clean drain: B verified exactly the SENDs A saw succeed. */
  void CheckSendCount() {
    WriteLine(ctl_, "count");
    const std::string got = ReadLine(ctl_);
    if (got != std::to_string(sends_ok_)) {
      Fail("a SEND completed with success but B did not get it",
           "A: " + std::to_string(sends_ok_) + ", B: " + got);
    }
  }

  void EndPeer() {
    KillPeer();
    Drain();
  }

  /** The engine figures that explain a failure. */
  std::string Explain() const {
    const tr::EngineStats& s = dev_->engine().stats();
    char b[512];
    std::snprintf(b, sizeof(b),
                  "A: conn_failures %" PRIu64 " restarts %" PRIu64 " path_failures %" PRIu64
                  " msg_probes %" PRIu64 " resend_requests %" PRIu64 " lost_rto %" PRIu64
                  " lost_sack %" PRIu64 " keepalives %" PRIu64 " stale_naks %" PRIu64
                  " outstanding %zu",
                  s.conn_failures, s.conn_restarts, s.path_failures, s.msg_probes,
                  s.resend_requests, s.lost_detected_rto, s.lost_detected_sack, s.keepalives,
                  s.rx_stale_naks, outstanding_.size());
    std::string out = b;
    for (const tr::ConnInfo& c : dev_->engine().GetConnections()) {
      char l[160];
      std::snprintf(l, sizeof(l), "; conn %08x -> %08x port %u %s, %u QPs, %u in flight", c.conn_id,
                    c.remote_conn_id, c.peer.udp_port, tr::ConnStateName(c.state), c.num_qps,
                    c.inflight);
      out += l;
    }
    return out;
  }

  void Finish(FILE* out) {
    const tr::EngineStats& s = dev_->engine().stats();
    uint64_t drops = s.rx_unknown_conn + s.rx_wrong_source + s.rx_bad_cookie;
    for (uint64_t v : s.rx_parse_drops) drops += v;
    std::fprintf(out,
                 "soak: A sent %" PRIu64 " packets (%" PRIu64 " retransmitted), received %" PRIu64
                 "; dropped %" PRIu64 " hostile or stale packets; %" PRIu64
                 " peer restarts seen, %" PRIu64 " QPs moved to a restarted peer\n",
                 s.tx_packets, s.tx_retransmits, s.rx_packets, drops, s.conn_restarts, s.qps_moved);
  }

 private:
  bool Post() {
    tr::Engine& e = dev_->engine();
    Op op;
    op.id = next_id_;
    const uint64_t r = Mix(op.id);
    op.slot = FreeSlot();
    const bool send = r % 3 == 0 || op.slot == kSlots;
    tr::SendWr wr;
    wr.wr_id = op.id;
    wr.flags = tr::send_flags::kSignaled;
    if (send) {
      op.opcode = tr::Opcode::kSend;
      op.len = 8 + static_cast<uint32_t>(r >> 8) % (kSendBytes - 8);
      uint8_t* buf = SendBuf(op.id);
      std::memcpy(buf, &op.id, 8);
      Fill(buf + 8, op.len - 8, op.id);
      wr.opcode = tr::Opcode::kSend;
      wr.sg.push_back({reinterpret_cast<uint64_t>(buf), op.len, mr_.lkey});
      op.slot = kSlots;
    } else {
      op.opcode = tr::Opcode::kWrite;
      op.len = 1 + static_cast<uint32_t>(r >> 8) % kSlotBytes;
      uint8_t* src = mem_.data() + size_t{op.slot} * kSlotBytes;
      Fill(src, op.len, op.id);
      wr.opcode = tr::Opcode::kWrite;
      wr.sg.push_back({reinterpret_cast<uint64_t>(src), op.len, mr_.lkey});
      wr.remote_addr = b_.base + uint64_t{op.slot} * kSlotBytes;
      wr.rkey = b_.rkey;
      busy_[op.slot] = true;
    }
    if (!e.PostSend(dev_->Now(), qpn_, wr).ok()) {
      if (!send) busy_[op.slot] = false;
      return false;
    }
    next_id_++;
    outstanding_.push_back(op);
    return true;
  }

  void PostReadback(const Op& w) {
    Op op = w;
    op.id = next_id_++;
    op.opcode = tr::Opcode::kRead;
    op.readback = true;
    readback_of_[op.slot] = w.id;
    uint8_t* dst = mem_.data() + size_t{kSlots + op.slot} * kSlotBytes;
    std::memset(dst, 0, op.len);
    tr::SendWr wr;
    wr.wr_id = op.id;
    wr.opcode = tr::Opcode::kRead;
    wr.flags = tr::send_flags::kSignaled;
    wr.sg.push_back({reinterpret_cast<uint64_t>(dst), op.len, mr_.lkey});
    wr.remote_addr = b_.base + uint64_t{op.slot} * kSlotBytes;
    wr.rkey = b_.rkey;
    if (!dev_->engine().PostSend(dev_->Now(), qpn_, wr).ok()) {
      busy_[op.slot] = false;  // the QP is in error: nothing to check
      return;
    }
    outstanding_.push_back(op);
  }

  void Step() {
    dev_->Poll();
    Inject();
    tr::Completion c[32];
    const size_t n = dev_->engine().PollCq(cq_, c);
    for (size_t k = 0; k < n; k++) Complete(c[k]);
  }

  void Complete(const tr::Completion& c) {
    if (outstanding_.empty() || outstanding_.front().id != c.wr_id) {
      Fail("completion out of order or unknown", std::to_string(c.wr_id));
    }
    const Op op = outstanding_.front();
    outstanding_.pop_front();
    if (c.status != tr::WcStatus::kSuccess) {
      // Only a killed peer may fail work; with faults alone nothing fails.
      if (!dead_) {
        Fail("a work request failed while the peer was alive",
             std::string(tr::WcStatusName(c.status)) + " (op " + std::to_string(op.id) +
                 ", opcode " + std::to_string(static_cast<int>(op.opcode)) + ")");
      }
      f_->ops_failed++;
      if (op.slot < kSlots) busy_[op.slot] = false;
      return;
    }
    f_->ops_ok++;
    switch (op.opcode) {
      case tr::Opcode::kSend:
        sends_ok_++;
        f_->sends_ok++;
        f_->bytes_verified += op.len;  // checked by B (CheckSendCount)
        break;
      case tr::Opcode::kWrite:
        if (dead_) {
          busy_[op.slot] = false;  // B is gone: its memory cannot be read back
        } else {
          PostReadback(op);
        }
        break;
      case tr::Opcode::kRead: {
        const uint8_t* got = mem_.data() + size_t{kSlots + op.slot} * kSlotBytes;
        if (!Matches(got, op.len, readback_of_[op.slot])) {
          Fail("a WRITE completed with success but its bytes are not at the peer",
               std::to_string(readback_of_[op.slot]));
        }
        f_->bytes_verified += op.len;
        busy_[op.slot] = false;
        break;
      }
      default: break;
    }
  }

  uint32_t FreeSlot() const {
    for (uint32_t i = 0; i < kSlots; i++) {
      const uint32_t s = static_cast<uint32_t>((next_id_ + i) % kSlots);
      if (!busy_[s]) return s;
    }
    return kSlots;
  }

  uint8_t* SendBuf(uint64_t id) {
    return mem_.data() + size_t{2} * kSlots * kSlotBytes + (id % kSendBufs) * kSendBytes;
  }

  void KillPeer() {
    if (child_ <= 0) return;
    kill(child_, SIGKILL);
    int st = 0;
    waitpid(child_, &st, 0);
    if (!WIFSIGNALED(st)) Fail("B exited by itself (a check in B failed)");
    close(ctl_);
    child_ = -1;
    g_child = -1;
    g_ctl = -1;
    dead_ = true;
    f_->restarts++;
  }

 public:
  void Revive() { dead_ = false; }

 private:
  // Packets an off-path host could send: well formed, valid CRC, but with
  // ids, nonces and cookies it can only guess. Aimed at both engines.
  void Inject() {
    if (++inject_tick_ % 8 != 0) return;
    const uint64_t r = Mix(inject_tick_);
    wire::Packet p;
    switch (r % 5) {
      case 0:
        p.type = wire::PacketType::kConnReq;
        p.conn.src_conn_id = static_cast<uint32_t>(r >> 8) | 1;
        p.conn.nonce = static_cast<uint32_t>(r >> 20);
        p.conn.cookie = (r >> 3) % 2 == 0 ? 0 : Mix(r);
        break;
      case 1: p.type = wire::PacketType::kConnClose; break;
      case 2: p.type = wire::PacketType::kConnReject; break;
      case 3:
        p.type = wire::PacketType::kAck;
        p.ack.cum_psn = static_cast<uint32_t>(r >> 32);
        break;
      default:
        p.type = wire::PacketType::kNak;
        p.nak.stream_id = static_cast<uint32_t>(r >> 12) | 1;
        p.nak.code = wire::NakCode::kRemoteAccess;
        break;
    }
    if (wire::ClassOf(p.type) == wire::PacketClass::kConn) {
      if (p.conn.src_conn_id == 0) p.conn.src_conn_id = static_cast<uint32_t>(r) | 1;
      p.conn.incarnation = Mix(r + 1) | 1;
      p.conn.min_version = p.conn.max_version = wire::kVersion;
      p.conn.num_paths = 8;
      p.conn.max_payload = 4096;
      p.conn.udp_port = 9;
      p.conn.stream_window = 64;
      if (p.type != wire::PacketType::kConnReq) {
        p.dst_conn_id = static_cast<uint32_t>(Mix(r + 2)) | 1;
        p.conn.cookie = 0;
        p.conn.reason = wire::ConnReason::kShutdown;
        p.conn.num_paths = 0;
      }
    } else {
      p.dst_conn_id = static_cast<uint32_t>(Mix(r + 3)) | 1;
    }
    uint8_t buf[256];
    auto n = wire::EncodeDatagram(p, buf);
    if (!n.ok()) Fail("hostile packet encode", std::string(n.status().message()));
    for (uint16_t port : {dev_->address().udp_port, b_.udp_port}) {
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_port = htons(port);
      to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (sendto(hostile_, buf, *n, 0, reinterpret_cast<sockaddr*>(&to), sizeof(to)) > 0) {
        f_->hostile++;
      }
    }
  }

  std::string faults_;
  Figures* f_;
  std::unique_ptr<Device> dev_;
  std::vector<uint8_t> mem_;
  uint32_t pd_ = 0, cq_ = 0, qpn_ = 0;
  tr::MrInfo mr_;
  Info b_;
  pid_t child_ = -1;
  int ctl_ = -1;
  int hostile_ = -1;
  bool dead_ = false;
  bool busy_[kSlots] = {};
  uint64_t readback_of_[kSlots] = {};
  std::deque<Op> outstanding_;
  uint64_t next_id_ = 1;
  uint64_t seq_base_ = 0;
  uint64_t sends_ok_ = 0;
  uint64_t inject_tick_ = 0;
};

int Usage(FILE* f, int rc) {
  std::fprintf(f,
               "usage: test_soak [--seconds S] [--restarts N] [--faults SPEC]\n"
               "  --seconds S   total traffic time, 2..3600 (default 20)\n"
               "  --restarts N  peer restarts, 1..1000 (default 4)\n"
               "  --faults SPEC fault stage on both engines (default drop=0.01,reorder=0.01:8,"
               "dup=0.005,corrupt=0.001)\n");
  return rc;
}

int Main(int argc, char** argv) {
  double seconds = 20;
  long restarts = 4;
  std::string faults = "drop=0.01,reorder=0.01:8,dup=0.005,corrupt=0.001";
  static const option kLong[] = {{"seconds", required_argument, nullptr, 's'},
                                 {"restarts", required_argument, nullptr, 'r'},
                                 {"faults", required_argument, nullptr, 'f'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "h", kLong, nullptr)) != -1) {
    char* end = nullptr;
    switch (ch) {
      case 's':
        seconds = std::strtod(optarg, &end);
        if (*end != '\0' || seconds < 2 || seconds > 3600) return Usage(stderr, 2);
        break;
      case 'r':
        restarts = std::strtol(optarg, &end, 10);
        if (*end != '\0' || restarts < 1 || restarts > 1000) return Usage(stderr, 2);
        break;
      case 'f': faults = optarg; break;
      case 'h': return Usage(stdout, 0);
      default: return Usage(stderr, 2);
    }
  }
  if (optind != argc) return Usage(stderr, 2);
  signal(SIGPIPE, SIG_IGN);
  Figures f;
  Survivor a(faults, &f);
  static Survivor* survivor = &a;
  g_explain = [] { return survivor->Explain(); };
  // Each round: traffic, a drain and B's count check; more traffic and B
  // killed under load; the next B at the same address. Every other restart
  // comes at once (the survivor learns of it from the handshake), the others
  // after the survivor's connection timed out.
  const uint64_t round_ns =
      static_cast<uint64_t>(seconds * 1e9 / static_cast<double>(restarts + 1));
  const Clock::time_point t0 = Clock::now();
  a.StartPeer(0, a.next_id());
  const uint16_t port = a.peer_port();  // every later B takes the same address
  a.Revive();
  for (long i = 0; i <= restarts; i++) {
    a.Traffic(round_ns / 2);
    a.Drain();
    a.CheckSendCount();
    if (i == restarts) break;
    a.Traffic(round_ns / 4 + Mix(static_cast<uint64_t>(i)) % (round_ns / 4));
    a.KillUnderLoad(i % 2 == 0 ? 0 : 700'000'000);
    a.StartPeer(port, a.next_id());
    a.Revive();
  }
  a.EndPeer();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("soak: %.1f s, %" PRIu64 " restarts, %" PRIu64 " work requests succeeded (%" PRIu64
              " SENDs), %" PRIu64 " failed with the peer dead, %.1f MiB verified, %" PRIu64
              " hostile packets injected\n",
              wall, f.restarts - 1, f.ops_ok, f.sends_ok, f.ops_failed,
              static_cast<double>(f.bytes_verified) / (1 << 20), f.hostile);
  a.Finish(stdout);
  std::printf("soak: PASS\n");
  return 0;
}

}  // namespace
}  // namespace metaroce::soak

int main(int argc, char** argv) { return metaroce::soak::Main(argc, argv); }
