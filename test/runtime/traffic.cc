/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include "traffic.h"

#include <thread>

#include "absl/strings/str_cat.h"

namespace metaroce::testing {

using namespace transport;

namespace {

constexpr uint64_t kWriteId = 1000;
constexpr uint64_t kRecvId = 2000;
constexpr uint64_t kSendId = 3000;
constexpr uint32_t kCqDepth = 4096;

}  // namespace

EngineConfig TestEngineConfig(uint64_t seed) {
  EngineConfig e;
  e.seed = seed;
  // A loaded 2-vCPU machine (or a sanitizer build) may not run a shard's thread for
  // milliseconds at a time: timers that fit a fabric would retransmit everything in
  // flight, fail every path and give up on messages before the peer got a turn.
  e.conn_fail_after_ns = 10'000'000'000;
  e.rto_min_ns = 1'000'000;
  e.rto_initial_ns = 10'000'000;
  e.path_probe_interval_ns = 2'000'000;
  e.msg_probe_min_ns = 20'000'000;
  e.msg_probe_max_ns = 1'000'000'000;
  return e;
}

absl::StatusOr<std::unique_ptr<Traffic>> Traffic::Setup(runtime::Runtime& a, runtime::Runtime& b,
                                                        const Options& opt) {
  std::unique_ptr<Traffic> t(new Traffic(a, b, opt));
  auto shards = [](runtime::Runtime& rt, std::vector<ShardCtx>* out) -> absl::Status {
    out->resize(rt.num_shards());
    for (uint16_t i = 0; i < rt.num_shards(); i++) {
      Engine& e = rt.shard(i).engine();
      absl::StatusOr<uint32_t> pd = e.AllocPd();
      if (!pd.ok()) return pd.status();
      absl::StatusOr<uint32_t> cq = e.CreateCq(kCqDepth);
      if (!cq.ok()) return cq.status();
      (*out)[i].pd = *pd;
      (*out)[i].cq = *cq;
    }
    return absl::OkStatus();
  };
  if (absl::Status s = shards(a, &t->sa_); !s.ok()) return s;
  if (absl::Status s = shards(b, &t->sb_); !s.ok()) return s;

  const size_t bytes = size_t{opt.write_bytes} + opt.send_bytes;
  t->qps_.reserve(size_t{a.num_shards()} * b.num_shards() * opt.qps_per_pair);
  auto end = [&](runtime::Runtime& rt, std::vector<ShardCtx>& ctx, uint16_t shard,
                 End* e) -> absl::Status {
    Engine& eng = rt.shard(shard).engine();
    QpAttr qa;
    qa.pd = ctx[shard].pd;
    qa.send_cq = qa.recv_cq = ctx[shard].cq;
    absl::StatusOr<uint32_t> qpn = eng.CreateQp(qa);
    if (!qpn.ok()) return qpn.status();
    e->shard = shard;
    e->qpn = *qpn;
    e->buf.assign(bytes, 0);
    absl::StatusOr<MrInfo> mr = eng.RegMr(ctx[shard].pd, e->Addr(0), bytes, access::kAll);
    if (!mr.ok()) return mr.status();
    e->mr = *mr;
    return absl::OkStatus();
  };
  for (uint16_t i = 0; i < a.num_shards(); i++) {
    for (uint32_t jq = 0; jq < uint32_t{b.num_shards()} * opt.qps_per_pair; jq++) {
      const uint16_t j = static_cast<uint16_t>(jq % b.num_shards());
      Qp q;
      if (absl::Status s = end(a, t->sa_, i, &q.a); !s.ok()) return s;
      if (absl::Status s = end(b, t->sb_, j, &q.b); !s.ok()) return s;
      t->qps_.push_back(std::move(q));
    }
  }
  for (size_t k = 0; k < t->qps_.size(); k++) {
    Qp& q = t->qps_[k];
    runtime::Shard& sa = a.shard(q.a.shard);
    runtime::Shard& sb = b.shard(q.b.shard);
    absl::Status s = sa.engine().ConnectQp(q.a.qpn, sb.address(), q.b.qpn);
    if (!s.ok()) return s;
    s = sb.engine().ConnectQp(q.b.qpn, sa.address(), q.a.qpn);
    if (!s.ok()) return s;
    // Distinct bytes per QP and direction.
    for (uint32_t x = 0; x < opt.write_bytes; x++) {
      q.a.buf[x] = static_cast<uint8_t>(x * 131 + (x >> 12) + k * 17 + 1);
    }
    for (uint32_t x = 0; x < opt.send_bytes; x++) {
      q.b.buf[opt.write_bytes + x] = static_cast<uint8_t>(255 - x % 251 + k * 29);
    }
    RecvWr r;
    r.wr_id = kRecvId + k;
    r.sg.push_back({q.a.Addr(opt.write_bytes), opt.send_bytes, q.a.mr.lkey});
    s = sa.engine().PostRecv(q.a.qpn, r);
    if (!s.ok()) return s;
    SendWr w;
    w.wr_id = kWriteId + k;
    w.opcode = Opcode::kWrite;
    w.sg.push_back({q.a.Addr(0), opt.write_bytes, q.a.mr.lkey});
    w.remote_addr = q.b.Addr(0);
    w.rkey = q.b.mr.rkey;
    t->sa_[q.a.shard].to_post.emplace_back(q.a.qpn, w);
    SendWr snd;
    snd.wr_id = kSendId + k;
    snd.opcode = Opcode::kSend;
    snd.sg.push_back({q.b.Addr(opt.write_bytes), opt.send_bytes, q.b.mr.lkey});
    t->sb_[q.b.shard].to_post.emplace_back(q.b.qpn, snd);
  }
  return t;
}

bool Traffic::App(std::vector<ShardCtx>& side, runtime::Shard& s) {
  ShardCtx& c = side[s.index()];
  if (!c.posted) {
    c.posted = true;
    for (const auto& [qpn, wr] : c.to_post) {
      absl::Status st = s.engine().PostSend(s.Now(), qpn, wr);
      if (!st.ok()) {
        c.errors.push_back(absl::StrCat("PostSend on shard ", s.index(), ": ", st.ToString()));
        remaining_.fetch_sub(1);  // it will not complete
      }
    }
  }
  Completion wc[32];
  const size_t n = s.engine().PollCq(c.cq, wc);
  if (n != 0) {
    c.done.insert(c.done.end(), wc, wc + n);
    remaining_.fetch_sub(static_cast<int64_t>(n));
  }
  return remaining_.load() > 0 && std::chrono::steady_clock::now() < deadline_;
}

absl::Status Traffic::Run() {
  remaining_.store(static_cast<int64_t>(qps_.size()) * 3);  // WRITE, SEND and RECV per QP
  for (ShardCtx& c : sa_) c.posted = false;
  for (ShardCtx& c : sb_) c.posted = false;
  const auto start = std::chrono::steady_clock::now();
  deadline_ = start + opt_.timeout;
  absl::Status status_a;
  std::thread ta([&] { status_a = a_.Run([this](runtime::Shard& s) { return App(sa_, s); }); });
  absl::Status status_b = b_.Run([this](runtime::Shard& s) { return App(sb_, s); });
  ta.join();
  seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return status_a.ok() ? status_b : status_a;
}

std::vector<std::string> Traffic::Problems() const {
  std::vector<std::string> p;
  for (const auto* side : {&sa_, &sb_}) {
    for (const ShardCtx& c : *side) p.insert(p.end(), c.errors.begin(), c.errors.end());
  }
  auto find = [](const ShardCtx& c, uint64_t id) -> const Completion* {
    for (const Completion& wc : c.done) {
      if (wc.wr_id == id) return &wc;
    }
    return nullptr;
  };
  for (size_t k = 0; k < qps_.size(); k++) {
    const Qp& q = qps_[k];
    const std::string name =
        absl::StrCat("QP ", k, " (A shard ", q.a.shard, ", B shard ", q.b.shard, ")");
    const Completion* w = find(sa_[q.a.shard], kWriteId + k);
    const Completion* r = find(sa_[q.a.shard], kRecvId + k);
    const Completion* s = find(sb_[q.b.shard], kSendId + k);
    if (w == nullptr || w->status != WcStatus::kSuccess) {
      p.push_back(absl::StrCat(name, ": WRITE ",
                               w == nullptr ? "did not complete" : WcStatusName(w->status)));
    } else if (!std::equal(q.a.buf.begin(), q.a.buf.begin() + opt_.write_bytes, q.b.buf.begin())) {
      p.push_back(absl::StrCat(name, ": WRITE completed with other bytes at B"));
    }
    if (s == nullptr || s->status != WcStatus::kSuccess) {
      p.push_back(absl::StrCat(name, ": SEND ",
                               s == nullptr ? "did not complete" : WcStatusName(s->status)));
    }
    if (r == nullptr || r->status != WcStatus::kSuccess) {
      p.push_back(absl::StrCat(name, ": RECV ",
                               r == nullptr ? "did not complete" : WcStatusName(r->status)));
    } else if (r->byte_len != opt_.send_bytes ||
               !std::equal(q.b.buf.begin() + opt_.write_bytes, q.b.buf.end(),
                           q.a.buf.begin() + opt_.write_bytes)) {
      p.push_back(absl::StrCat(name, ": RECV of ", r->byte_len, " bytes with other bytes"));
    }
  }
  return p;
}

std::string Traffic::Report() const {
  std::string out;
  for (const runtime::Runtime* rt : {&a_, &b_}) {
    for (uint16_t i = 0; i < rt->num_shards(); i++) {
      const runtime::ShardStats& ss = rt->shard(i).stats();
      const EngineStats& es = rt->shard(i).engine().stats();
      absl::StrAppend(
          &out, rt == &a_ ? "A" : "B", " shard ", i, ": iterations ", ss.iterations.Get(), " idle ",
          ss.idle_polls.Get(), " rx ", ss.rx_packets.Get(), " tx ", ss.tx_packets.Get(),
          " handed out ", ss.handoffs_out.Get(), " in ", ss.handoffs_in.Get(), " dropped ",
          ss.handoff_drops.Get(), "; engine tx data ", es.tx_data_pkts, " retx ", es.tx_retransmits,
          " acks ", es.tx_acks, " probes ", es.tx_probes, " lost by rto ", es.lost_detected_rto,
          " by sack ", es.lost_detected_sack, " path failures ", es.path_failures,
          " conn failures ", es.conn_failures, "\n");
    }
  }
  return out;
}

}  // namespace metaroce::testing
