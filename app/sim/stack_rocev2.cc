/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The RoCEv2 baseline (lib/rocev2: go-back-N, DCQCN) on every host of a lab:
// one QP per flow end, each QP its own UDP source port and so its own ECMP
// path, as a RoCE NIC does. The baseline carries no payload bytes. With P
// planes a host has a RoCE NIC on each, and a flow's QPs are on the plane it
// names or on plane (src + dst) mod P (as multi-rail collectives spread QPs
// over NICs): a QP cannot change plane.

#include "mr_sim_roce_node.h"
#include "stack.h"

namespace metaroce::mrsim {
namespace {

// RoCE NICs take a QP's UDP source port from a hash of the QP; distinct
// ports per flow are the same thing for ECMP.
constexpr uint32_t kFirstSrcPort = 49152;
constexpr uint32_t kSrcPorts = 16384;

class RoceStack : public Stack {
 public:
  RoceStack(const sim::Topology& t, const rocev2::Config& cfg)
      : planes_(t.planes), per_plane_(static_cast<uint32_t>(t.hosts.size()) / t.planes) {
    for (sim::Host* h : t.hosts) {
      nodes_.push_back(std::make_unique<sim::RoceNode>(h, cfg));
    }
  }

  absl::Status Connect(uint32_t flow, uint32_t src, uint32_t dst, uint32_t plane) override {
    if (flow != ends_.size()) return absl::InternalError("flows are connected in order");
    if (plane == FlowSpec::kAnyPlane) plane = (src + dst) % planes_;
    if (plane >= planes_) return absl::InvalidArgumentError("no such plane");
    sim::RoceNode &s = Node(src, plane), &d = Node(dst, plane);
    const uint32_t qs = s.engine().CreateQp(), qd = d.engine().CreateQp();
    const auto port = static_cast<uint16_t>(kFirstSrcPort + (flow * 2) % kSrcPorts);
    if (auto st = s.engine().ConnectQp(qs, d.host()->ipv4(), d.host()->mac(), qd, port); !st.ok()) {
      return st;
    }
    if (auto st = d.engine().ConnectQp(qd, s.host()->ipv4(), s.host()->mac(), qs,
                                       static_cast<uint16_t>(port + 1));
        !st.ok()) {
      return st;
    }
    ends_.push_back({src, plane, qs});
    return absl::OkStatus();
  }

  absl::Status PostWrite(uint32_t flow, uint64_t bytes) override {
    sim::RoceNode& s = Node(ends_[flow].src, ends_[flow].plane);
    return s.engine().PostWrite(s.NowNs(), ends_[flow].qp, flow, bytes);
  }

  size_t Poll(uint32_t host, std::span<Done> out) override {
    wc_.resize(out.size());
    size_t n = 0;
    for (uint32_t p = 0; p < planes_ && n < out.size(); p++) {
      const size_t got = Node(host, p).engine().PollCq({wc_.data(), out.size() - n});
      for (size_t i = 0; i < got; i++, n++) {
        out[n] = {static_cast<uint32_t>(wc_[i].wr_id), wc_[i].bytes,
                  wc_[i].status == rocev2::WcStatus::kSuccess};
      }
    }
    return n;
  }

  void Kick(uint32_t host) override {
    for (uint32_t p = 0; p < planes_; p++) Node(host, p).Kick();
  }

  bool Connected() const override { return true; }  // connected out of band, as by rdma_cm

  void Count(Totals* t) const override {
    for (const auto& n : nodes_) {
      const rocev2::Stats& s = n->engine().stats();
      t->data_pkts += s.tx_data_pkts;
      t->resent_pkts += s.tx_resent_pkts;
    }
  }

 private:
  sim::RoceNode& Node(uint32_t host, uint32_t plane) { return *nodes_[plane * per_plane_ + host]; }

  struct End {
    uint32_t src, plane, qp;
  };
  const uint32_t planes_, per_plane_;
  std::vector<std::unique_ptr<sim::RoceNode>> nodes_;
  std::vector<End> ends_;
  std::vector<rocev2::Completion> wc_;
};

}  // namespace

std::unique_ptr<Stack> MakeRoceStack(const sim::Topology& t, const rocev2::Config& cfg) {
  return std::make_unique<RoceStack>(t, cfg);
}

}  // namespace metaroce::mrsim
