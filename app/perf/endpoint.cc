/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The MetaRoCE objects of one mr-perf process: a device for the whole run,
// and per test a CQ, one memory region and the QPs with their buffers.

#include <sys/mman.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "perf.h"

namespace metaroce::perf {

using namespace transport;

absl::StatusOr<std::unique_ptr<Endpoint>> Endpoint::Open(const Options& o) {
  auto dev = Device::Open(o.dev);
  if (!dev.ok()) return dev.status();
  std::unique_ptr<Endpoint> ep(new Endpoint());
  ep->dev_ = std::move(*dev);
  auto pd = ep->engine().AllocPd();
  if (!pd.ok()) return pd.status();
  ep->pd_ = *pd;
  return ep;
}

Endpoint::~Endpoint() { Close(); }

void Endpoint::Close() {
  if (dev_ == nullptr) return;
  Teardown();
  dev_.reset();
}

Hello Endpoint::MyHello() const {
  Hello h{};
  const PeerAddr me = dev_->address();
  std::memcpy(h.ip, me.ip.bytes.data(), 16);
  h.v6 = me.ip.v6;
  std::memcpy(h.mac, me.mac.bytes.data(), 6);
  h.udp_port = me.udp_port;
  h.version = kControlVersion;
  return h;
}

void Endpoint::SetPeer(const Hello& h) {
  peer_.ip.v6 = h.v6 != 0;
  std::memcpy(peer_.ip.bytes.data(), h.ip, 16);
  std::memcpy(peer_.mac.bytes.data(), h.mac, 6);
  peer_.udp_port = h.udp_port;
}

absl::Status Endpoint::Setup(const TestSpec& s) {
  Teardown();
  const bool verify = s.verify != 0;
  msg_ = std::max<uint32_t>(s.size, 8);
  send_slots_ = std::max<uint32_t>(s.depth, 1);
  recv_slots_ = std::max<uint32_t>(2 * s.depth, kMinRecvSlots);
  // Without --verify every message may use the same bytes, as in perftest;
  // with it each outstanding message needs its own.
  const uint32_t buf_slots = verify ? send_slots_ : 1;
  recv_bufs_ = verify ? recv_slots_ : 1;
  write_slots_ = verify ? std::max<uint32_t>(2 * s.depth, kMinWriteSlots) : 1;
  read_len_ = verify ? std::max<uint64_t>(kReadRegionBytes, 2ull * msg_) : msg_;
  read_len_ = (read_len_ + 7) & ~7ull;
  const uint64_t per_qp =
      uint64_t{msg_} * (2ull * buf_slots + recv_bufs_ + write_slots_) + 8ull * (4 + send_slots_);
  const uint64_t total = per_qp * s.qps + read_len_ + 4096;
  if (total > kMaxTestMemBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("this test needs ", total >> 20, " MiB of registered memory (at most ",
                     kMaxTestMemBytes >> 20, "): lower --size, --depth or --qps",
                     verify ? ", or drop --verify" : ""));
  }
  void* m = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    return absl::ResourceExhaustedError(absl::StrCat("mmap of ", total, " bytes failed"));
  mem_ = static_cast<uint8_t*>(m);
  mem_len_ = total;
  set_up_ = true;
  auto mr = engine().RegMr(pd_, reinterpret_cast<uint64_t>(mem_), total, access::kAll);
  if (!mr.ok()) return mr.status();
  mr_ = *mr;
  have_mr_ = true;
  auto cq = engine().CreateCq(static_cast<uint32_t>(s.qps) * (send_slots_ + recv_slots_ + 64));
  if (!cq.ok()) return cq.status();
  cq_ = *cq;

  uint8_t* p = mem_;
  auto take = [&p](uint64_t n) {
    uint8_t* r = p;
    p += (n + 7) & ~7ull;
    return r;
  };
  read_region_ = take(read_len_);
  FillReadRegion(read_region_, read_len_, 0);
  qps_.assign(s.qps, PerfQp{});
  for (uint32_t i = 0; i < s.qps; i++) {
    PerfQp& q = qps_[i];
    q.index = i;
    q.src = take(uint64_t{msg_} * buf_slots);
    q.read_dst = take(uint64_t{msg_} * buf_slots);
    q.recv = take(uint64_t{msg_} * recv_bufs_);
    q.write_slots = take(uint64_t{msg_} * write_slots_);
    q.atomic_words = reinterpret_cast<uint64_t*>(take(16));
    q.credit_word = reinterpret_cast<uint64_t*>(take(8));
    q.credit_src = reinterpret_cast<uint64_t*>(take(8));
    q.atomic_results = reinterpret_cast<uint64_t*>(take(8ull * send_slots_));
    q.meta.assign(send_slots_, SlotMeta{});
    if (!verify) FillPattern(q.src, msg_, kKindSend, i, 0);
    QpAttr a{.pd = pd_, .send_cq = cq_, .recv_cq = cq_};
    a.max_send_wr = send_slots_ + 8;
    a.max_recv_wr = recv_slots_;
    a.max_sge = 1;
    auto qpn = engine().CreateQp(a);
    if (!qpn.ok()) return qpn.status();
    q.qpn = *qpn;
  }
  return absl::OkStatus();
}

std::vector<QpWire> Endpoint::MyQps() const {
  std::vector<QpWire> v;
  for (const PerfQp& q : qps_) {
    QpWire w{};
    w.qpn = q.qpn;
    w.rkey = mr_.rkey;
    w.write_base = reinterpret_cast<uint64_t>(q.write_slots);
    w.read_base = reinterpret_cast<uint64_t>(read_region_);
    w.read_len = read_len_;
    w.atomic_va = reinterpret_cast<uint64_t>(q.atomic_words);
    w.credit_va = reinterpret_cast<uint64_t>(q.credit_word);
    v.push_back(w);
  }
  return v;
}

absl::Status Endpoint::Connect(const std::vector<QpWire>& peer_qps) {
  if (peer_qps.size() != qps_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("peer has ", peer_qps.size(), " QPs for this test, we have ", qps_.size()));
  }
  for (PerfQp& q : qps_) {
    q.remote = peer_qps[q.index];
    if (auto st = engine().ConnectQp(q.qpn, peer_, q.remote.qpn); !st.ok()) return st;
    for (uint32_t k = 0; k < recv_slots_; k++) {
      if (auto st = PostRecv(q); !st.ok()) return st;
    }
  }
  return absl::OkStatus();
}

uint8_t* Endpoint::RecvBuf(const PerfQp& q, uint64_t n) const {
  return q.recv + uint64_t{msg_} * (n % recv_bufs_);
}

absl::Status Endpoint::PostRecv(PerfQp& q) {
  RecvWr r;
  r.wr_id = MakeWrId(q.index, kKindRecv, q.recvs_posted);
  r.sg.push_back({reinterpret_cast<uint64_t>(RecvBuf(q, q.recvs_posted)), msg_, mr_.lkey});
  q.recvs_posted++;
  return engine().PostRecv(q.qpn, r);
}

void Endpoint::Teardown() {
  if (!set_up_) return;
  for (const PerfQp& q : qps_) {
    if (q.qpn != 0) (void)engine().DestroyQp(q.qpn);
  }
  qps_.clear();
  if (cq_ != 0) (void)engine().DestroyCq(cq_);
  cq_ = 0;
  if (have_mr_) (void)engine().DeregMr(mr_.lkey);
  have_mr_ = false;
  mr_ = {};
  munmap(mem_, mem_len_);
  mem_ = nullptr;
  set_up_ = false;
}

size_t Endpoint::Poll(std::span<Completion> out) {
  // Every mode's loop polls again at once: a latency mode's answer then
  // leaves in one burst with the ACK of the request it answers.
  dev_->Poll(Device::Replies::kNextPoll);
  return cq_ == 0 ? 0 : engine().PollCq(cq_, out);
}

void Endpoint::Linger(TimeNs ns) {
  const TimeNs end = Now() + ns;
  while (Now() < end) dev_->Poll();
}

}  // namespace metaroce::perf
