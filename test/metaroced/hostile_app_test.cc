/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// A real metaroced and applications that speak its protocol by hand
// (lib/ipc): malformed and hostile control messages and ring contents are
// refused or fail only the sender's own objects; the daemon keeps serving,
// and another application's memory is never touched.

#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "mr_ipc.h"
#include "mr_ipc_ring.h"
#include "mr_ipc_socket.h"

#ifndef MR_METAROCED
#error "MR_METAROCED: path of the metaroced binary"
#endif

namespace metaroce::ipc {
namespace {

// IBV_* values used below (no verbs.h: this is the daemon's wire, not the API).
constexpr uint32_t kIbvAccessLocalWrite = 1, kIbvAccessRemoteWrite = 2;
constexpr uint32_t kIbvWrRdmaWrite = 0, kIbvWrSend = 2, kIbvSendSignaled = 2;
constexpr uint8_t kIbvWcSuccess = 0, kIbvWcWrFlushErr = 5;
constexpr uint8_t kIbvWcRecv = 128;
// The daemon's descriptor limit as the test starts it: its own raises it to the hard limit.
constexpr rlim_t kDaemonNofileSoft = 256;
constexpr uint32_t kIbvEventSrqErr = 14;

/** The RTR of QP @p qp to QP @p dest_qpn on this host (127.0.0.1). */
ConnectQpReq LoopbackRtr(uint32_t qp, uint32_t dest_qpn) {
  ConnectQpReq c;
  c.qp = qp;
  c.dest_qpn = dest_qpn;
  c.dest_gid[10] = c.dest_gid[11] = 0xff;
  c.dest_gid[12] = 127;
  c.dest_gid[15] = 1;
  return c;
}

/** One application session spoken by hand. */
class Session {
 public:
  explicit Session(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
    ok_ = connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  }
  ~Session() {
    if (app_ != nullptr) munmap(app_, AppSegmentBytes(lanes_));
    for (const int k : kicks_) close(k);
    if (fd_ >= 0) close(fd_);
  }
  bool connected() const { return ok_; }
  int fd() const { return fd_; }

  /** Sends @p op with @p body (+ @p fds); returns the status, reply body and fds. */
  int Call(Op op, const void* body, size_t len, std::vector<uint8_t>* reply = nullptr,
           std::vector<int>* fds = nullptr, const int* send_fds = nullptr, int nsend = 0) {
    CtlHeader h;
    h.op = static_cast<uint16_t>(op);
    h.seq = ++seq_;
    if (SendCtl(fd_, h, body, len, send_fds, nsend) != 0) return -1;
    uint8_t buf[kMaxCtlBytes];
    int got[kMaxCtlFds];
    int n = 0;
    const ssize_t r = RecvCtl(fd_, buf, sizeof(buf), got, &n);
    if (r <= 0) return -1;  // the daemon hung up
    CtlHeader rh;
    std::memcpy(&rh, buf, sizeof(rh));
    if (reply != nullptr) reply->assign(buf + sizeof(rh), buf + r);
    for (int i = 0; i < n; i++) {
      if (fds != nullptr) {
        fds->push_back(got[i]);
      } else {
        close(got[i]);
      }
    }
    return rh.status;
  }
  int Hello() {
    HelloReq req;
    std::vector<uint8_t> rep;
    std::vector<int> fds;
    const int st = Call(Op::kHello, &req, sizeof(req), &rep, &fds);
    HelloRep h;
    if (st == 0 && rep.size() == sizeof(h)) {
      std::memcpy(&h, rep.data(), sizeof(h));
      EXPECT_GE(h.lanes, 1u);
      EXPECT_EQ(fds.size(), 2 + h.lanes);
    }
    if (st == 0 && rep.size() == sizeof(h) && fds.size() == 2 + h.lanes) {
      lanes_ = h.lanes;
      app_ = static_cast<AppSegment*>(
          mmap(nullptr, AppSegmentBytes(lanes_), PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0));
      for (uint32_t l = 0; l < lanes_; l++) kicks_.push_back(dup(fds[2 + l]));
    }
    for (int f : fds) close(f);
    return st;
  }
  uint32_t Handle(Op op, const void* body, size_t len, int* st) {
    std::vector<uint8_t> rep;
    *st = Call(op, body, len, &rep);
    uint32_t h = 0;
    if (*st == 0 && rep.size() >= 4) std::memcpy(&h, rep.data(), 4);
    return h;
  }
  uint32_t lanes() const { return lanes_; }
  AppLane* lane(uint32_t l) const { return LaneOf(app_, l); }
  /**
   * A create request whose reply carries one segment: copies the reply into
   * @p rep and maps the segment (rep->segment_bytes) at *@p seg.
   */
  template <typename Rep, typename Seg>
  int CreateMapped(Op op, const void* req, size_t len, Rep* rep, Seg** seg) {
    std::vector<uint8_t> body;
    std::vector<int> fds;
    const int st = Call(op, req, len, &body, &fds);
    if (st == 0 && fds.size() == 1 && body.size() == sizeof(Rep)) {
      std::memcpy(rep, body.data(), sizeof(Rep));
      *seg = static_cast<Seg*>(
          mmap(nullptr, rep->segment_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0));
    }
    for (int f : fds) close(f);
    return st;
  }
  /** Puts @p d on lane @p l's doorbell ring and wakes its shard if it sleeps, as the shim does. */
  void Ring(Doorbell d, uint32_t l) {
    AppLane* a = lane(l);
    const uint32_t p = a->db_prod.v.load();
    a->doorbells[p & (kDoorbellSlots - 1)] = d;
    a->db_prod.v.store(p + 1);
    if (a->shard_asleep.v.load() != 0) {
      const uint64_t one = 1;
      EXPECT_EQ(write(kicks_[l], &one, sizeof(one)), 8);
    }
  }

 private:
  int fd_ = -1;
  bool ok_ = false;
  uint32_t seq_ = 0;
  AppSegment* app_ = nullptr;
  uint32_t lanes_ = 0;
  std::vector<int> kicks_;
};

/** An application's QP, with a region and a CQ, set up through the protocol. */
struct Endpoint {
  explicit Endpoint(Session* s) : s(s) {}
  Session* s;
  uint32_t pd = 0, cq = 0, qp = 0, qpn = 0;
  RegMrRep mr;
  std::vector<uint8_t> buf = std::vector<uint8_t>(1 << 16);
  CqSegment* cqs = nullptr;
  size_t cq_bytes = 0;
  uint32_t cq_depth = 0;
  QpSegment* qps = nullptr;
  size_t qp_bytes = 0;
  uint32_t sq_depth = 0, rq_depth = 0;
  uint32_t lane = 0;  ///< the QP's from RTR on: its doorbells, and its completions in the CQ

  void Build(uint32_t cq_entries = 64) {
    int st;
    pd = s->Handle(Op::kAllocPd, nullptr, 0, &st);
    ASSERT_EQ(st, 0);
    RegMrReq r;
    r.pd = pd;
    r.access = kIbvAccessLocalWrite | kIbvAccessRemoteWrite;
    r.addr = r.iova = reinterpret_cast<uint64_t>(buf.data());
    r.length = buf.size();
    std::vector<uint8_t> rep;
    ASSERT_EQ(s->Call(Op::kRegMr, &r, sizeof(r), &rep), 0);
    std::memcpy(&mr, rep.data(), sizeof(mr));
    CreateCqReq c;
    c.depth = cq_entries;
    CreateCqRep cr;
    ASSERT_EQ(s->CreateMapped(Op::kCreateCq, &c, sizeof(c), &cr, &cqs), 0);
    cq = cr.handle;
    cq_depth = cr.depth;
    cq_bytes = cr.segment_bytes;
    CreateQpReq q;
    q.pd = pd;
    q.send_cq = q.recv_cq = cq;
    q.max_send_wr = q.max_recv_wr = 16;
    q.max_send_sge = q.max_recv_sge = 1;
    CreateQpRep qr;
    ASSERT_EQ(s->CreateMapped(Op::kCreateQp, &q, sizeof(q), &qr, &qps), 0);
    qp = qr.handle;
    qpn = qr.qpn;
    sq_depth = qr.sq_depth;
    rq_depth = qr.rq_depth;
    qp_bytes = qr.segment_bytes;
    EXPECT_EQ(qr.lane, kNoLane);  // placed at RTR, on its host pair's shard
  }
  ~Endpoint() {
    if (cqs != nullptr) munmap(cqs, cq_bytes);
    if (qps != nullptr) munmap(qps, qp_bytes);
  }
  void Connect(uint32_t peer_qpn) {
    const ConnectQpReq c = LoopbackRtr(qp, peer_qpn);
    std::vector<uint8_t> rep;
    ASSERT_EQ(s->Call(Op::kConnectQp, &c, sizeof(c), &rep), 0);
    ConnectQpRep cr;
    ASSERT_EQ(rep.size(), sizeof(cr));
    std::memcpy(&cr, rep.data(), sizeof(cr));
    lane = cr.lane;
    ASSERT_LT(lane, s->lanes());
  }
  SqEntry* Sq(uint32_t pos) {
    return reinterpret_cast<SqEntry*>(reinterpret_cast<uint8_t*>(qps) + kSqOffset) +
           (pos & (sq_depth - 1));
  }
  void Ring() {
    if (qps->sq_doorbell.v.exchange(1) != 0) return;
    s->Ring(Doorbell{qp, static_cast<uint32_t>(DoorbellKind::kSq)}, lane);
  }
  /** Posts a signalled WRITE of its first @p len bytes to offset @p to of its own region. */
  void PostWriteToSelf(uint64_t wr_id, uint32_t len, size_t to) {
    SqEntry* w = Sq(0);
    w->wr_id = wr_id;
    w->opcode = kIbvWrRdmaWrite;
    w->send_flags = kIbvSendSignaled;
    w->num_sge = 1;
    w->sge[0] = Sge{reinterpret_cast<uint64_t>(buf.data()), len, mr.lkey};
    w->remote_addr = reinterpret_cast<uint64_t>(buf.data()) + to;
    w->rkey = mr.rkey;
    qps->sq_prod.v.store(1);
    Ring();
  }
  /** The same, and its completion's status. */
  int WriteToSelf(uint64_t wr_id, uint32_t len, size_t to) {
    PostWriteToSelf(wr_id, len, to);
    return WaitCompletion();
  }
  /** The CQ's lane of this QP's completions. */
  CqLane* CqLaneOfQp() const { return LaneOf(cqs, lane); }
  /** Waits (2 s) for a completion in this QP's lane; false if none came. */
  bool WaitEntry(CqEntry* out) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    CqLane* l = CqLaneOfQp();
    while (std::chrono::steady_clock::now() < until) {
      const uint32_t cons = l->cons.v.load();
      if (l->prod.v.load(std::memory_order_acquire) != cons) {
        *out = reinterpret_cast<const CqEntry*>(
            reinterpret_cast<uint8_t*>(cqs) +
            CqEntriesOffset(cq_depth, s->lanes(), lane))[cons & (cq_depth - 1)];
        l->cons.v.store(cons + 1, std::memory_order_release);
        return true;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return false;
  }
  /** Waits (2 s) for a completion; returns its status, or -1. */
  int WaitCompletion() {
    CqEntry e;
    return WaitEntry(&e) ? e.status : -1;
  }
};

/** Two applications attached to the daemon, each with a QP, a CQ and a region. */
struct TwoApps {
  explicit TwoApps(const std::string& sock) : sa(sock), sb(sock), a(&sa), b(&sb) {}
  void Build() {
    ASSERT_EQ(sa.Hello(), 0);
    ASSERT_EQ(sb.Hello(), 0);
    ASSERT_NO_FATAL_FAILURE(a.Build());
    ASSERT_NO_FATAL_FAILURE(b.Build());
  }
  Session sa, sb;
  Endpoint a, b;
};

class HostileAppTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mr_hostile_XXXXXX";
    dir_ = mkdtemp(tmpl);
    sock_ = dir_ + "/d.sock";
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives the test
      const std::string log = dir_ + "/d.log";
      freopen(log.c_str(), "w", stdout);
      freopen(log.c_str(), "a", stderr);
      rlimit nofile{};
      getrlimit(RLIMIT_NOFILE, &nofile);
      nofile.rlim_cur = std::min(nofile.rlim_max, kDaemonNofileSoft);
      setrlimit(RLIMIT_NOFILE, &nofile);
      execl(MR_METAROCED, "metaroced", "--socket", sock_.c_str(), "--port",
            "udp:ip=127.0.0.1,port=0", "--set", "dataplane.yield_after_idle_polls=16",
            // No EAL (it would raise the descriptor limit itself: see
            // TheDaemonRaisesItsDescriptorLimitToTheHardOne).
            "--set", "daemon.telemetry=false", static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 100; i++) {
      Session s(sock_);
      if (s.connected()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "metaroced did not start";
  }
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int st = 0;
      waitpid(pid_, &st, 0);
      EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "metaroced did not exit cleanly";
    }
    std::string cmd = "rm -rf " + dir_;
    (void)system(cmd.c_str());
  }
  bool DaemonAlive() { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }
  /** CPU time the daemon used so far (user + system), in seconds. */
  double DaemonCpuSeconds() {
    FILE* f = fopen(("/proc/" + std::to_string(pid_) + "/stat").c_str(), "r");
    if (f == nullptr) return -1;
    char buf[1024] = {};
    const size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    // Fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
    const char* p = std::strrchr(buf, ')');
    if (n == 0 || p == nullptr) return -1;
    unsigned long long utime = 0, stime = 0;
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) !=
        2) {
      return -1;
    }
    return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }

  std::string dir_, sock_;
  pid_t pid_ = -1;
};

TEST_F(HostileAppTest, MalformedControlMessagesAreRefusedAndTheDaemonServesOn) {
  {
    Session s(sock_);
    ASSERT_TRUE(s.connected());
    // Anything before Hello ends the session.
    int st;
    s.Handle(Op::kAllocPd, nullptr, 0, &st);
    EXPECT_EQ(st, EPROTO);
  }
  Session s(sock_);
  ASSERT_EQ(s.Hello(), 0);
  HelloReq again;
  EXPECT_EQ(s.Call(Op::kHello, &again, sizeof(again)), EPROTO);  // and the session ends
  Session t(sock_);
  HelloReq old;
  old.abi_version = kAbiVersion + 7;
  EXPECT_EQ(t.Call(Op::kHello, &old, sizeof(old)), EPROTONOSUPPORT);

  Session u(sock_);
  ASSERT_EQ(u.Hello(), 0);
  int st;
  EXPECT_EQ(u.Call(static_cast<Op>(999), nullptr, 0), EOPNOTSUPP);
  uint8_t junk[40] = {1, 2, 3};
  EXPECT_EQ(u.Call(Op::kRegMr, junk, 7), EINVAL);  // wrong body size
  HandleMsg h{0x12345, 0};
  EXPECT_EQ(u.Call(Op::kDeallocPd, &h, sizeof(h)), EINVAL);
  EXPECT_EQ(u.Call(Op::kDestroyQp, &h, sizeof(h)), EINVAL);
  CreateCqReq big;
  big.depth = 1u << 30;
  EXPECT_EQ(u.Call(Op::kCreateCq, &big, sizeof(big)), EINVAL);
  const uint32_t pd = u.Handle(Op::kAllocPd, nullptr, 0, &st);
  ASSERT_EQ(st, 0);
  RegMrReq mr;
  mr.pd = pd;
  mr.addr = mr.iova = 0xffff'ffff'ffff'f000ull;
  mr.length = 1 << 20;  // wraps
  EXPECT_EQ(u.Call(Op::kRegMr, &mr, sizeof(mr)), EINVAL);
  mr.addr = mr.iova = 0x10000;
  mr.length = uint64_t{1} << 50;  // over max_mr_bytes
  EXPECT_EQ(u.Call(Op::kRegMr, &mr, sizeof(mr)), ENOMEM);
  // A "memfd" that is not one (a pipe) is never mapped: cross-memory attach is used.
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  std::vector<uint8_t> page(4096);
  mr.addr = mr.iova = mr.map_va = reinterpret_cast<uint64_t>(page.data()) & ~uint64_t{4095};
  mr.length = mr.map_len = 4096;
  mr.memory = static_cast<uint32_t>(MrMemory::kSharedFd);
  std::vector<uint8_t> rep;
  EXPECT_EQ(u.Call(Op::kRegMr, &mr, sizeof(mr), &rep, nullptr, &p[0], 1), 0);
  RegMrRep r;
  std::memcpy(&r, rep.data(), sizeof(r));
  EXPECT_EQ(r.memory, static_cast<uint32_t>(MrMemory::kCrossMemory));
  close(p[0]);
  close(p[1]);
  // A datagram larger than any request ends the session, not the daemon.
  std::vector<uint8_t> huge(4 * kMaxCtlBytes, 0xab);
  ASSERT_EQ(send(u.fd(), huge.data(), huge.size(), 0), static_cast<ssize_t>(huge.size()));
  uint8_t b[64];
  EXPECT_LE(recv(u.fd(), b, sizeof(b), 0), 0);
  EXPECT_TRUE(DaemonAlive());

  Session v(sock_);
  ASSERT_EQ(v.Hello(), 0);
  v.Handle(Op::kAllocPd, nullptr, 0, &st);
  EXPECT_EQ(st, 0);
}

TEST_F(HostileAppTest, AnotherApplicationsHandlesAndKeysReachNothing) {
  TwoApps apps(sock_);
  ASSERT_NO_FATAL_FAILURE(apps.Build());
  auto& [sa, sb, a, b] = apps;
  // B names objects only A has (A holds more PDs than B): they are not B's.
  int st;
  sa.Handle(Op::kAllocPd, nullptr, 0, &st);
  ASSERT_EQ(st, 0);
  const uint32_t a_only = sa.Handle(Op::kAllocPd, nullptr, 0, &st);
  ASSERT_EQ(st, 0);
  HandleMsg h{a_only, 0};
  EXPECT_EQ(sb.Call(Op::kDeallocPd, &h, sizeof(h)), EINVAL);
  EXPECT_EQ(sa.Call(Op::kDeallocPd, &h, sizeof(h)), 0);  // still A's
  ASSERT_NO_FATAL_FAILURE(a.Connect(a.qpn));             // A's QP to itself
  ASSERT_NO_FATAL_FAILURE(b.Connect(a.qpn));

  // B writes into A's region with A's rkey but gathers from A's memory with
  // A's lkey: the gather is refused (the lkey is not in B's PD).
  std::memset(a.buf.data(), 0x11, a.buf.size());
  SqEntry* e = b.Sq(0);
  e->wr_id = 1;
  e->opcode = kIbvWrRdmaWrite;
  e->send_flags = kIbvSendSignaled;
  e->num_sge = 1;
  e->sge[0] = Sge{reinterpret_cast<uint64_t>(a.buf.data()), 4096, a.mr.lkey};
  e->remote_addr = reinterpret_cast<uint64_t>(b.buf.data());
  e->rkey = b.mr.rkey;
  b.qps->sq_prod.v.store(1);
  b.Ring();
  EXPECT_NE(b.WaitCompletion(), kIbvWcSuccess);
  std::vector<uint8_t> zero(4096, 0);
  EXPECT_EQ(0, std::memcmp(b.buf.data(), zero.data(), 4096)) << "A's bytes reached B";

  // Corrupt rings: a bad opcode, an SGE count past the ring entry, a
  // producer index far ahead, a doorbell naming nothing. Only B's QP fails.
  Endpoint c(&sb);
  ASSERT_NO_FATAL_FAILURE(c.Build());
  ASSERT_NO_FATAL_FAILURE(c.Connect(a.qpn));
  SqEntry* f = c.Sq(0);
  f->opcode = 77;
  f->num_sge = 1000;
  c.qps->sq_prod.v.store(1);
  c.Ring();
  EXPECT_NE(c.WaitCompletion(), kIbvWcSuccess);
  c.qps->sq_prod.v.store(0x7fff'0000);
  c.Ring();
  sb.Ring(Doorbell{0xdead, 9}, c.lane);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(DaemonAlive());

  // A still works: a WRITE from its region into itself.
  std::memset(a.buf.data(), 0x5a, 1024);
  EXPECT_EQ(a.WriteToSelf(7, 1024, 4096), kIbvWcSuccess);
  EXPECT_EQ(0, std::memcmp(a.buf.data(), a.buf.data() + 4096, 1024));
}

// A CQ ring the application leaves full while the engine has nothing more for
// it must not keep the shard polling: on a host whose cores the application
// spins on, that CPU is what the application needs to read the ring (the
// shard once spun on it, and every ib_write_lat hop waited for a 4 ms tick).
// Receives posted in INIT wait in the ring until RTR places the QP on its
// host pair's shard; a QP moved to the error state before that completes them
// with flush errors, as verbs requires.
TEST_F(HostileAppTest, AQpFailedBeforeRtrFlushesTheReceivesPostedInInit) {
  Session s(sock_);
  ASSERT_EQ(s.Hello(), 0);
  Endpoint a(&s);
  ASSERT_NO_FATAL_FAILURE(a.Build());
  RqEntry* rq =
      reinterpret_cast<RqEntry*>(reinterpret_cast<uint8_t*>(a.qps) + RqOffset(a.sq_depth));
  for (uint32_t i = 0; i < 3; i++) {
    rq[i & (a.rq_depth - 1)].wr_id = 100 + i;
    rq[i & (a.rq_depth - 1)].num_sge = 1;
    rq[i & (a.rq_depth - 1)].sge[0] = Sge{reinterpret_cast<uint64_t>(a.buf.data()), 64, a.mr.lkey};
  }
  a.qps->rq_prod.v.store(3);  // no doorbell: the QP has no lane yet
  HandleMsg h{a.qp, 0};
  ASSERT_EQ(s.Call(Op::kSetQpError, &h, sizeof(h)), 0);
  for (uint64_t want = 100; want < 103; want++) {
    CqEntry e;
    ASSERT_TRUE(a.WaitEntry(&e)) << "no completion for receive " << want;
    EXPECT_EQ(e.wr_id, want);
    EXPECT_EQ(e.status, kIbvWcWrFlushErr);
    EXPECT_EQ(e.opcode, kIbvWcRecv);
    EXPECT_EQ(e.qp_num, a.qpn);
  }
  EXPECT_EQ(a.qps->status.v.load(), static_cast<uint32_t>(QpStatus::kError));
  EXPECT_EQ(a.qps->rq_retired.v.load(), 3u);
  // Once failed, it cannot be connected.
  const ConnectQpReq c = LoopbackRtr(a.qp, a.qpn);
  EXPECT_EQ(s.Call(Op::kConnectQp, &c, sizeof(c)), EINVAL);
}

// Every application holds descriptors in the daemon (its socket, pidfd,
// eventfds, one memfd per ring segment), more than a soft limit of 1024
// allows for a few hundred: the daemon takes its hard limit.
TEST_F(HostileAppTest, TheDaemonRaisesItsDescriptorLimitToTheHardOne) {
  std::ifstream f("/proc/" + std::to_string(pid_) + "/limits");
  std::string line;
  bool seen = false;
  while (std::getline(f, line)) {
    if (line.rfind("Max open files", 0) != 0) continue;
    seen = true;
    unsigned long long soft = 0, hard = 0;
    ASSERT_EQ(std::sscanf(line.c_str() + 14, "%llu %llu", &soft, &hard), 2) << line;
    EXPECT_EQ(soft, hard) << line;
    EXPECT_GT(soft, kDaemonNofileSoft) << line;
  }
  EXPECT_TRUE(seen);
}

TEST_F(HostileAppTest, AFullCompletionRingThatIsNotReadCostsTheDaemonNoCpu) {
  Session s(sock_);
  ASSERT_EQ(s.Hello(), 0);
  Endpoint a(&s);
  ASSERT_NO_FATAL_FAILURE(a.Build(1));
  ASSERT_EQ(a.cq_depth, 1u);
  ASSERT_NO_FATAL_FAILURE(a.Connect(a.qpn));
  a.PostWriteToSelf(1, 64, 4096);
  for (int i = 0; i < 400 && a.CqLaneOfQp()->prod.v.load() == 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(a.CqLaneOfQp()->prod.v.load(), 1u);  // the ring is full; nobody reads it
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const double before = DaemonCpuSeconds();
  ASSERT_GE(before, 0);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double used = DaemonCpuSeconds() - before;
  EXPECT_LT(used, 0.2) << "the daemon polled for " << used << " s of the last second";
  EXPECT_EQ(a.WaitCompletion(), kIbvWcSuccess);  // the completion was there all along
}

/** An SRQ set up through the protocol, its segment mapped. */
struct SharedRq {
  SharedRq(Session* s, uint32_t pd) : s(s) {
    CreateSrqReq r;
    r.pd = pd;
    r.max_wr = 8;
    r.max_sge = 1;
    CreateSrqRep cr;
    st = s->CreateMapped(Op::kCreateSrq, &r, sizeof(r), &cr, &seg);
    handle = cr.handle;
    depth = cr.depth;
    bytes = cr.segment_bytes;
    lane = cr.lane;
  }
  ~SharedRq() {
    if (seg != nullptr) munmap(seg, bytes);
  }
  /** Writes entry @p pos with one SGE and publishes prod = pos + 1, then rings. */
  void Post(uint32_t pos, const Sge& g) {
    RqEntry* e = reinterpret_cast<RqEntry*>(reinterpret_cast<uint8_t*>(seg) + kSrqEntriesOffset) +
                 (pos & (depth - 1));
    e->wr_id = pos;
    e->num_sge = 1;
    e->sge[0] = g;
    seg->prod.v.store(pos + 1);
    Ring();
  }
  void Ring() {
    if (seg->doorbell.v.exchange(1) != 0) return;
    s->Ring(Doorbell{handle, static_cast<uint32_t>(DoorbellKind::kSrq)}, lane);
  }
  /** Waits (2 s) for @p want in the cons index. */
  bool Taken(uint32_t want) {
    for (int i = 0; i < 400 && seg->cons.v.load() != want; i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return seg->cons.v.load() == want;
  }
  QuerySrqRep Query() {
    HandleMsg h{handle, 0};
    std::vector<uint8_t> rep;
    QuerySrqRep q;
    if (s->Call(Op::kQuerySrq, &h, sizeof(h), &rep) == 0) std::memcpy(&q, rep.data(), sizeof(q));
    return q;
  }
  Session* s;
  int st = -1;
  uint32_t handle = 0, depth = 0, lane = 0;
  size_t bytes = 0;
  SrqSegment* seg = nullptr;
};

// An SRQ ring with more entries than the engine's SRQ holds: the rest waits
// in the ring and moves as receives are consumed, without another doorbell.
TEST_F(HostileAppTest, AnSrqRingLongerThanTheEngineSrqMovesInAsReceivesAreConsumed) {
  Session s(sock_);
  ASSERT_EQ(s.Hello(), 0);
  Endpoint a(&s);
  ASSERT_NO_FATAL_FAILURE(a.Build());
  SharedRq srq(&s, a.pd);
  ASSERT_EQ(srq.st, 0);
  const Sge g{reinterpret_cast<uint64_t>(a.buf.data()) + 8192, 256, a.mr.lkey};
  for (uint32_t i = 0; i < srq.depth; i++) srq.Post(i, g);
  ASSERT_TRUE(srq.Taken(srq.depth));  // the engine's SRQ is full now
  for (uint32_t i = srq.depth; i < 2 * srq.depth; i++) srq.Post(i, g);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(srq.seg->cons.v.load(), srq.depth);  // the rest waits in the ring

  // A QP on the SRQ, and three SENDs to it from the endpoint's QP.
  CreateQpReq q;
  q.pd = a.pd;
  q.send_cq = q.recv_cq = a.cq;
  q.max_send_wr = 4;
  q.max_send_sge = 1;
  q.srq = srq.handle;
  CreateQpRep qr;
  QpSegment* seg = nullptr;
  ASSERT_EQ(s.CreateMapped(Op::kCreateQp, &q, sizeof(q), &qr, &seg), 0);
  const ConnectQpReq c = LoopbackRtr(qr.handle, a.qpn);
  ASSERT_EQ(s.Call(Op::kConnectQp, &c, sizeof(c)), 0);
  ASSERT_NO_FATAL_FAILURE(a.Connect(qr.qpn));
  for (uint32_t i = 0; i < 3; i++) {
    SqEntry* w = a.Sq(i);
    w->wr_id = 100 + i;
    w->opcode = kIbvWrSend;
    w->send_flags = kIbvSendSignaled;
    w->num_sge = 1;
    w->sge[0] = Sge{reinterpret_cast<uint64_t>(a.buf.data()), 64, a.mr.lkey};
  }
  a.qps->sq_prod.v.store(3);
  a.Ring();
  for (int i = 0; i < 6; i++) EXPECT_EQ(a.WaitCompletion(), kIbvWcSuccess) << i;  // sends, receives
  EXPECT_TRUE(srq.Taken(srq.depth + 3)) << "cons " << srq.seg->cons.v.load();
  munmap(seg, qr.segment_bytes);
  EXPECT_TRUE(DaemonAlive());
}

TEST_F(HostileAppTest, ABrokenSharedReceiveQueueFailsOnlyItself) {
  TwoApps apps(sock_);
  ASSERT_NO_FATAL_FAILURE(apps.Build());
  auto& [sa, sb, a, b] = apps;
  SharedRq good(&sa, a.pd), foreign(&sa, a.pd), runaway(&sa, a.pd);
  ASSERT_EQ(good.st, 0);
  ASSERT_EQ(foreign.st, 0);
  ASSERT_EQ(runaway.st, 0);
  // Another application's SRQ is not B's to attach a QP to.
  CreateQpReq q;
  q.pd = b.pd;
  q.send_cq = q.recv_cq = b.cq;
  q.max_send_wr = 4;
  q.srq = good.handle;
  EXPECT_EQ(sb.Call(Op::kCreateQp, &q, sizeof(q)), EINVAL);
  CreateSrqReq bad;
  bad.pd = a.pd;
  bad.max_wr = 1u << 30;
  bad.max_sge = 1;
  EXPECT_EQ(sa.Call(Op::kCreateSrq, &bad, sizeof(bad)), EINVAL);

  // A receive gathering into B's region with B's lkey, and a producer index
  // far ahead: each SRQ stops taking entries and reports SRQ_ERR.
  foreign.Post(0, Sge{reinterpret_cast<uint64_t>(b.buf.data()), 256, b.mr.lkey});
  runaway.seg->prod.v.store(0x4000'0000);
  runaway.Ring();
  ASSERT_EQ(foreign.lane, runaway.lane);
  AppLane* events = sa.lane(runaway.lane);
  for (int i = 0; i < 400 && events->async_prod.v.load() < 2; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(events->async_prod.v.load(), 2u);
  for (uint32_t i = 0; i < 2; i++) {
    const AsyncEntry e = events->async[i];
    EXPECT_EQ(e.event_type, kIbvEventSrqErr);
    EXPECT_TRUE(e.handle == foreign.handle || e.handle == runaway.handle) << e.handle;
  }
  EXPECT_EQ(foreign.seg->error.v.load(), 1u);
  EXPECT_EQ(runaway.seg->error.v.load(), 1u);
  EXPECT_EQ(foreign.Query().posted, 0u);
  EXPECT_EQ(runaway.Query().posted, 0u);

  // The application's other SRQ works, and so does everything of B's.
  good.Post(0, Sge{reinterpret_cast<uint64_t>(a.buf.data()), 256, a.mr.lkey});
  ASSERT_TRUE(good.Taken(1));
  EXPECT_EQ(good.Query().posted, 1u);
  EXPECT_EQ(good.seg->error.v.load(), 0u);
  q.pd = a.pd;
  q.send_cq = q.recv_cq = a.cq;
  std::vector<uint8_t> rep;
  std::vector<int> fds;
  ASSERT_EQ(sa.Call(Op::kCreateQp, &q, sizeof(q), &rep, &fds), 0);
  for (int f : fds) close(f);
  CreateQpRep qr;
  std::memcpy(&qr, rep.data(), sizeof(qr));
  EXPECT_EQ(qr.max_recv_wr, 0u);
  HandleMsg h{good.handle, 0};
  EXPECT_EQ(sa.Call(Op::kDestroySrq, &h, sizeof(h)), EBUSY);  // the QP uses it
  HandleMsg qh{qr.handle, 0};
  EXPECT_EQ(sa.Call(Op::kDestroyQp, &qh, sizeof(qh)), 0);
  EXPECT_EQ(sa.Call(Op::kDestroySrq, &h, sizeof(h)), 0);
  HandleMsg fh{foreign.handle, 0};
  EXPECT_EQ(sa.Call(Op::kDestroySrq, &fh, sizeof(fh)), 0);
  ASSERT_NO_FATAL_FAILURE(b.Connect(b.qpn));
  EXPECT_EQ(b.WriteToSelf(3, 512, 8192), kIbvWcSuccess);
  EXPECT_TRUE(DaemonAlive());
}

}  // namespace
}  // namespace metaroce::ipc
