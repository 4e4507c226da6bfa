/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// metaroce's engine on every host of a lab: one PD and one CQ per host, one
// QP per flow end; the QPs between two hosts share the engines' one
// connection. Every host registers the same two buffers, a source and a sink
// every WRITE lands in, so memory grows neither with the bytes moved nor
// with the hosts (1,024 hosts with a buffer pair each spent 80 % of their
// set-up zeroing 2 GiB).

#include <unordered_map>

#include "mr_sim_engine_node.h"
#include "mr_transport.h"
#include "stack.h"

namespace metaroce::mrsim {
namespace {

namespace tr = transport;

class MetaRoceStack : public Stack {
 public:
  MetaRoceStack(const sim::Topology& t, uint64_t seed, uint64_t max_msg_bytes,
                const tr::EngineConfig& base)
      : src_(max_msg_bytes), sink_(max_msg_bytes) {
    const uint32_t per_plane = static_cast<uint32_t>(t.hosts.size() / t.planes);
    hosts_.resize(per_plane);
    for (uint32_t h = 0; h < per_plane; h++) {
      HostCtx& c = hosts_[h];
      tr::EngineConfig cfg = base;
      cfg.seed = seed * 1000 + h + 1;
      std::vector<sim::Host*> planes;
      for (uint32_t p = 0; p < t.planes; p++) planes.push_back(t.hosts[p * per_plane + h]);
      c.node = std::make_unique<sim::EngineNode>(planes, cfg);
      tr::Engine& e = c.node->engine();
      c.pd = *e.AllocPd();
      c.cq = *e.CreateCq(kMaxHostOutstanding);
      c.src_mr =
          *e.RegMr(c.pd, reinterpret_cast<uint64_t>(src_.data()), src_.size(), tr::access::kAll);
      c.sink_mr =
          *e.RegMr(c.pd, reinterpret_cast<uint64_t>(sink_.data()), sink_.size(), tr::access::kAll);
    }
  }

  absl::Status Connect(uint32_t flow, uint32_t src, uint32_t dst, uint32_t) override {
    if (flow != ends_.size()) return absl::InternalError("flows are connected in order");
    auto qp = [](HostCtx& c, uint32_t depth) {
      tr::QpAttr at;
      at.pd = c.pd;
      at.send_cq = at.recv_cq = c.cq;
      at.max_send_wr = depth;
      at.max_recv_wr = 1;
      return c.node->engine().CreateQp(at);
    };
    auto qs = qp(hosts_[src], kMaxDepth);
    if (!qs.ok()) return qs.status();
    auto qd = qp(hosts_[dst], 1);
    if (!qd.ok()) return qd.status();
    HostCtx &s = hosts_[src], &d = hosts_[dst];
    if (auto st = s.node->engine().ConnectQp(*qs, d.node->Addr(), *qd); !st.ok()) return st;
    if (auto st = d.node->engine().ConnectQp(*qd, s.node->Addr(), *qs); !st.ok()) return st;
    ends_.push_back({src, dst, *qs});
    return absl::OkStatus();
  }

  absl::Status PostWrite(uint32_t flow, uint64_t bytes) override {
    const End& f = ends_[flow];
    HostCtx &s = hosts_[f.src], &d = hosts_[f.dst];
    tr::SendWr wr;
    wr.wr_id = (uint64_t{flow} << 32) | bytes;  // the completion says which flow, how much
    wr.opcode = tr::Opcode::kWrite;
    wr.flags = tr::send_flags::kSignaled;
    wr.sg.push_back(
        {reinterpret_cast<uint64_t>(src_.data()), static_cast<uint32_t>(bytes), s.src_mr.lkey});
    wr.remote_addr = reinterpret_cast<uint64_t>(sink_.data());
    wr.rkey = d.sink_mr.rkey;
    return s.node->engine().PostSend(s.node->NowNs(), f.qp, wr);
  }

  size_t Poll(uint32_t host, std::span<Done> out) override {
    HostCtx& c = hosts_[host];
    wc_.resize(out.size());
    const size_t n = c.node->engine().PollCq(c.cq, wc_);
    for (size_t i = 0; i < n; i++) {
      out[i] = {static_cast<uint32_t>(wc_[i].wr_id >> 32), wc_[i].wr_id & 0xffffffffu,
                wc_[i].status == tr::WcStatus::kSuccess};
    }
    return n;
  }

  void Kick(uint32_t host) override { hosts_[host].node->Kick(); }

  bool Connected() const override {
    for (const HostCtx& c : hosts_) {
      for (const tr::ConnInfo& i : c.node->engine().GetConnections()) {
        if (i.state != tr::ConnInfo::State::kUp) return false;
      }
    }
    return true;
  }

  void Count(Totals* t) const override {
    for (const HostCtx& c : hosts_) {
      const tr::EngineStats& s = c.node->engine().stats();
      t->data_pkts += s.tx_data_pkts;
      t->resent_pkts += s.tx_retransmits;
    }
  }

 private:
  static constexpr uint32_t kMaxDepth = 256;  // the lab's deepest flow

  struct HostCtx {
    std::unique_ptr<sim::EngineNode> node;
    uint32_t pd = 0, cq = 0;
    tr::MrInfo src_mr, sink_mr;
  };
  struct End {
    uint32_t src, dst, qp;
  };
  std::vector<uint8_t> src_, sink_;  // every host's
  std::vector<HostCtx> hosts_;
  std::vector<End> ends_;
  std::vector<tr::Completion> wc_;
};

}  // namespace

std::unique_ptr<Stack> MakeMetaRoceStack(const sim::Topology& t, uint64_t seed,
                                         uint64_t max_msg_bytes,
                                         const transport::EngineConfig& base) {
  return std::make_unique<MetaRoceStack>(t, seed, max_msg_bytes, base);
}

}  // namespace metaroce::mrsim
