/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Congestion control on the simulated fabric (doc/congestion.md): a hot
// spine. Host A sprays over 8 paths to host B on another leaf; host C sends
// one single-path flow to host D beside it, which fills one spine's link to
// D's leaf on its own. Each scenario runs twice in the same test, with the
// ECN AIMD windows and without (the packet windows alone), and the test
// compares the two.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "mr_sim_engine_node.h"

namespace metaroce::testing {
namespace {

namespace tr = transport;

constexpr uint32_t kMsgBytes = 64 << 10;
constexpr uint32_t kDepth = 16;  ///< WRITEs each flow keeps outstanding
constexpr size_t kMemBytes = size_t{kMsgBytes} * kDepth;
constexpr sim::SimTime kStepPs = 10 * sim::kPsPerUs;

/**
 * QPs of @p src writing into @p dst: one QP keeping kDepth WRITEs of
 * kMsgBytes outstanding, or @p qps QPs keeping one each (all of them over the
 * one connection between the two hosts, into one region of kMemBytes).
 */
class Flow {
 public:
  Flow(sim::EngineNode* src, sim::EngineNode* dst, uint32_t qps = 1)
      : src_(src),
        dst_(dst),
        depth_(qps == 1 ? kDepth : 1),
        mem_src_(kMemBytes),
        mem_dst_(kMemBytes),
        outstanding_(qps),
        qp_done_(qps) {
    tr::Engine& se = src_->engine();
    tr::Engine& de = dst_->engine();
    const uint32_t spd = *se.AllocPd(), dpd = *de.AllocPd();
    cq_ = *se.CreateCq(4 * kDepth * qps);
    const uint32_t dst_cq = *de.CreateCq(4 * kDepth * qps);
    mr_src_ =
        *se.RegMr(spd, reinterpret_cast<uint64_t>(mem_src_.data()), kMemBytes, tr::access::kAll);
    mr_dst_ =
        *de.RegMr(dpd, reinterpret_cast<uint64_t>(mem_dst_.data()), kMemBytes, tr::access::kAll);
    for (uint32_t i = 0; i < qps; i++) {
      tr::QpAttr qa;
      qa.pd = spd;
      qa.send_cq = qa.recv_cq = cq_;
      qp_src_.push_back(*se.CreateQp(qa));
      qa.pd = dpd;
      qa.send_cq = qa.recv_cq = dst_cq;
      const uint32_t qd = *de.CreateQp(qa);
      EXPECT_TRUE(se.ConnectQp(qp_src_.back(), dst_->Addr(), qd).ok());
      EXPECT_TRUE(de.ConnectQp(qd, src_->Addr(), qp_src_.back()).ok());
    }
  }

  /** Reaps completions and posts WRITEs up to the depth outstanding on every QP. */
  void Step() {
    tr::Completion wc[64];
    size_t n;
    while ((n = src_->engine().PollCq(cq_, wc)) > 0) {
      for (size_t i = 0; i < n; i++) {
        EXPECT_EQ(wc[i].status, tr::WcStatus::kSuccess);
        const uint32_t q = static_cast<uint32_t>(wc[i].wr_id >> 32);
        outstanding_[q]--;
        qp_done_[q] += kMsgBytes;
        done_bytes_ += kMsgBytes;
      }
    }
    for (uint32_t q = 0; q < qp_src_.size(); q++) {
      while (!paused && outstanding_[q] < depth_) {
        tr::SendWr wr;
        wr.wr_id = uint64_t{q} << 32 | (next_++ & 0xffffffffu);
        wr.opcode = tr::Opcode::kWrite;
        wr.flags = tr::send_flags::kSignaled;
        const uint64_t off = ((wr.wr_id + q) % kDepth) * kMsgBytes;
        wr.sg.push_back(
            {reinterpret_cast<uint64_t>(mem_src_.data()) + off, kMsgBytes, mr_src_.lkey});
        wr.remote_addr = reinterpret_cast<uint64_t>(mem_dst_.data()) + off;
        wr.rkey = mr_dst_.rkey;
        ASSERT_TRUE(src_->engine().PostSend(src_->NowNs(), qp_src_[q], wr).ok());
        outstanding_[q]++;
      }
    }
    src_->Kick();
  }

  bool paused = false;  ///< posts no more WRITEs (those outstanding complete)
  uint64_t done_bytes() const { return done_bytes_; }
  /** Bytes each QP completed. */
  const std::vector<uint64_t>& qp_done() const { return qp_done_; }

 private:
  sim::EngineNode* src_;
  sim::EngineNode* dst_;
  const uint32_t depth_;
  std::vector<uint8_t> mem_src_, mem_dst_;
  tr::MrInfo mr_src_, mr_dst_;
  uint32_t cq_ = 0;
  std::vector<uint32_t> qp_src_;
  std::vector<uint32_t> outstanding_;
  std::vector<uint64_t> qp_done_;
  uint64_t next_ = 0;
  uint64_t done_bytes_ = 0;
};

struct HotSpineResult {
  uint32_t hot_spine = 0;  ///< the spine C's flow uses
  double a_share_hot = 0;  ///< of A's data frames over the measured time, on the hot spine
  double a_gbps = 0, c_gbps = 0;
  uint64_t drops = 0;    ///< frames the switches dropped (buffer overflow)
  uint64_t repaths = 0;  ///< A's paths moved to a fresh port
  uint64_t a_cuts = 0;   ///< A's path window decreases
};

HotSpineResult RunHotSpine(bool congestion_control, uint64_t seed) {
  HotSpineResult r;
  sim::Fabric fabric(seed);
  sim::LeafSpineConfig ls;
  ls.leaves = 2;
  ls.spines = 2;
  ls.hosts_per_leaf = 2;
  ls.host_link.rate_bps = ls.fabric_link.rate_bps = 100 * sim::kBpsPerGbps;
  sim::Topology topo = *sim::BuildLeafSpine(fabric, ls);
  tr::EngineConfig wide;
  wide.congestion_control = congestion_control;
  tr::EngineConfig narrow = wide;
  narrow.num_paths = 1;
  wide.seed = seed * 10 + 1;
  sim::EngineNode a(topo.host(0, 0), wide);
  wide.seed = seed * 10 + 2;
  sim::EngineNode b(topo.host(1, 0), wide);
  narrow.seed = seed * 10 + 3;
  sim::EngineNode c(topo.host(0, 1), narrow);
  narrow.seed = seed * 10 + 4;
  sim::EngineNode d(topo.host(1, 1), narrow);
  Flow ab(&a, &b), cd(&c, &d);

  auto uplink = [&](uint32_t s) {  // data frames leaf 0 sent to spine s
    return fabric.port_stats(fabric.link(topo.fabric_link(0, s)).port_a).tx_frames;
  };
  // C alone first: its one path shows which spine it hashes to.
  const sim::SimTime c_alone = 200 * sim::kPsPerUs;
  while (fabric.Now() < c_alone) {
    cd.Step();
    fabric.RunUntil(fabric.Now() + kStepPs);
  }
  r.hot_spine = uplink(1) > uplink(0) ? 1 : 0;
  const uint64_t c_frames = uplink(r.hot_spine);
  EXPECT_LE(uplink(1 - r.hot_spine), 2u);  // the handshake at most
  EXPECT_GT(c_frames, 0u);

  const sim::SimTime m0 = c_alone + sim::kPsPerMs;  // 1 ms for A to settle
  const sim::SimTime m1 = m0 + 4 * sim::kPsPerMs;
  std::array<uint64_t, 2> up0{};
  uint64_t a0 = 0, c0 = 0, c_tx0 = 0;
  while (fabric.Now() < m1) {
    if (fabric.Now() >= m0 && a0 == 0) {
      up0 = {uplink(0), uplink(1)};
      a0 = ab.done_bytes();
      c0 = cd.done_bytes();
      c_tx0 = c.engine().stats().tx_packets;
    }
    ab.Step();
    cd.Step();
    fabric.RunUntil(fabric.Now() + kStepPs);
  }
  // Leaf 0's uplinks carry A's and C's data only (ACKs come down).
  const uint64_t c_sent = c.engine().stats().tx_packets - c_tx0;
  const uint64_t hot = uplink(r.hot_spine) - up0[r.hot_spine] - c_sent;
  const uint64_t cold = uplink(1 - r.hot_spine) - up0[1 - r.hot_spine];
  r.a_share_hot = static_cast<double>(hot) / static_cast<double>(hot + cold);
  const double secs = static_cast<double>(m1 - m0) / sim::kPsPerSec;
  r.a_gbps = static_cast<double>(ab.done_bytes() - a0) * 8 / secs / 1e9;
  r.c_gbps = static_cast<double>(cd.done_bytes() - c0) * 8 / secs / 1e9;
  r.drops = fabric.total_drops(sim::DropCause::kQueueFull);
  r.repaths = a.engine().stats().cc_repaths;
  for (const tr::PathInfo& p : a.engine().GetPaths(b.Addr().ip)) r.a_cuts += p.cc_cuts;
  return r;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return (v[(v.size() - 1) / 2] + v[v.size() / 2]) / 2;
}

TEST(HotSpine, MarkedPathsMoveToTheClearSpineAndTheVictimGetsItsLinkBack) {
  constexpr uint64_t kSeeds = 8;  // where A's 8 paths hash differs by seed
  std::vector<double> share_off, share_on, c_off, c_on;
  for (uint64_t seed = 1; seed <= kSeeds; seed++) {
    SCOPED_TRACE(seed);
    const HotSpineResult off = RunHotSpine(false, seed);
    const HotSpineResult on = RunHotSpine(true, seed);
    std::printf(
        "seed %lu: A's share on the hot spine %.2f -> %.2f, A %.1f -> %.1f Gbit/s, C %.1f -> %.1f "
        "Gbit/s, drops %lu -> %lu, A's window cuts %lu, repaths %lu\n",
        seed, off.a_share_hot, on.a_share_hot, off.a_gbps, on.a_gbps, off.c_gbps, on.c_gbps,
        off.drops, on.drops, on.a_cuts, on.repaths);
    EXPECT_EQ(off.repaths, 0u);
    EXPECT_EQ(off.a_cuts, 0u);
    // With congestion control A's marked paths shrink and move: less of A's
    // data crosses the hot spine, the victim gets more of its link, nothing
    // overflows, and A loses nothing by it.
    EXPECT_GT(on.a_cuts, 0u);
    EXPECT_GT(on.repaths, 0u);
    EXPECT_LT(on.a_share_hot, off.a_share_hot);
    EXPECT_GT(on.c_gbps, off.c_gbps);
    EXPECT_EQ(on.drops, 0u);
    EXPECT_GE(on.a_gbps, 0.98 * off.a_gbps);
    share_off.push_back(off.a_share_hot);
    share_on.push_back(on.a_share_hot);
    c_off.push_back(off.c_gbps);
    c_on.push_back(on.c_gbps);
  }
  std::printf("median: A's share on the hot spine %.2f -> %.2f, C %.1f -> %.1f Gbit/s\n",
              Median(share_off), Median(share_on), Median(c_off), Median(c_on));
  // Medians 0.44 -> 0.05 and 55 -> 91 Gbit/s with the paths sprayed by their
  // windows (0.19 and 76 Gbit/s in plain turns, where a mark moved nothing
  // until a path's window was cut below its share of the flight).
  EXPECT_LT(Median(share_on), 0.25 * Median(share_off));
  EXPECT_GT(Median(c_on), 1.5 * Median(c_off));
}

// ---- Incast: N senders into one receiver ----

struct IncastResult {
  double converged_us = 0;  ///< from the last sender's first byte until every window is fair
  // With hints, sampled every microsecond from the last sender's first byte:
  double rates_reached_us = -1;  ///< until every sender's pacer is within 10 % of C / N
  double queue_bdp_us = 0;       ///< until the receiver's downlink last held a BDP or more
  double base_rtt_us = 0;    ///< the smallest RTT a sender measured (its paths' srtt at the end)
  double jain = 0;           ///< Jain's fairness of the senders' bytes after convergence
  double gbps = 0;           ///< the receiver's goodput over the whole run
  uint64_t max_queue = 0;    ///< largest occupancy of the receiver's downlink after convergence
  uint64_t first_queue = 0;  ///< largest occupancy before
  /**
   * Largest occupancy over the second half of the measured windows: the
   * queue that stands once the first round trip's has drained (max_queue
   * may still hold that drain when the rates converge sooner).
   */
  uint64_t late_queue = 0;
  uint64_t drops = 0;
  uint64_t retransmits = 0;    ///< data packets the senders sent again (tail-loss probes included)
  size_t rx_conns = 0;         ///< connections at the receiver at the end
  double qps_all_done_us = 0;  ///< with many QPs: until every QP completed a WRITE (0: never)
  double qp_jain = 0;          ///< Jain's fairness of the QPs' completed bytes then
  size_t share_senders = 0;    ///< senders the receiver's allocator gives hints to at the end
  uint32_t share_level_mbps = 0;  ///< its max-min level then
};

/** Rate windows of about 15 packets per sender at an equal share: 5 us per sender. */
constexpr sim::SimTime kWindowPsPerSender = 5 * sim::kPsPerUs;
constexpr uint32_t kMeasureWindows = 30;
constexpr uint64_t kLinkMbps = 100'000;
/** One BDP of the incast receiver's link: 100 Gbit/s x the base RTT (about 6 us). */
constexpr uint64_t kBdpBytes = kLinkMbps * 1'000'000 / 8 * 6 / 1'000'000;
/**
 * Connection windows of 24 packets (about 100 KB, 1.4 BDP): 8 senders' first
 * round trip, before any ACK, must fit the switch's 1 MB buffer. The default
 * (512 packets, 2.2 MB) overflows it in either mode without slow start from
 * an initial window (ASafeInitialWindow... below); here the windows are
 * fixed, with no slow start, so that the hints alone are measured.
 */
constexpr uint32_t kIncastConnWindowPkts = 24;

/**
 * N senders on leaf 0 writing into one receiver on leaf 1 over two spines
 * (the fabric not the bottleneck), the receiver's capacity its link less 2 %
 * (the frames' preamble and gap, and room for ACKs) when @p hints.
 */
struct IncastLab {
  IncastLab(uint32_t senders, bool hints, uint64_t seed, uint32_t conn_window_pkts,
            uint32_t initial_window_bytes, uint32_t qps_per_sender)
      : fabric(seed) {
    sim::LeafSpineConfig ls;
    ls.leaves = 2;
    ls.spines = 2;
    ls.hosts_per_leaf = senders;
    ls.host_link.rate_bps = kLinkMbps * 1'000'000;
    ls.fabric_link.rate_bps = senders * kLinkMbps * 1'000'000 / 2;
    topo = *sim::BuildLeafSpine(fabric, ls);
    tr::EngineConfig cfg;
    cfg.conn_window_pkts = conn_window_pkts;
    cfg.initial_window_bytes = initial_window_bytes;
    cfg.seed = seed * 100;
    rcfg = cfg;
    if (hints) rcfg.rx_capacity_mbps = kLinkMbps * 98 / 100;
    rx = std::make_unique<sim::EngineNode>(topo.host(1, 0), rcfg);
    for (uint32_t i = 0; i < senders; i++) {
      cfg.seed = seed * 100 + 1 + i;
      tx.push_back(std::make_unique<sim::EngineNode>(topo.host(0, i), cfg));
      flows.push_back(std::make_unique<Flow>(tx.back().get(), rx.get(), qps_per_sender));
    }
  }
  /** Posts and runs until @p until, in steps of a microsecond. */
  void RunUntil(sim::SimTime until) {
    while (fabric.Now() < until) {
      for (auto& f : flows) f->Step();
      fabric.RunUntil(std::min(until, fabric.Now() + kStepPs / 10));
    }
  }
  /** The rate sender @p i's pacer is at (Mbit/s; 0: none). */
  uint32_t PaceMbps(uint32_t i) const { return tx[i]->engine().GetConnections().at(0).pace_mbps; }
  /** Bytes the receiver got from sender @p i so far. */
  uint64_t Received(uint32_t i) const {
    for (const tr::ConnInfo& c : rx->engine().GetConnections()) {
      if (c.peer.ip == tx[i]->Addr().ip) return c.rx_bytes;
    }
    return 0;
  }

  sim::Fabric fabric;
  sim::Topology topo;
  tr::EngineConfig rcfg;
  std::unique_ptr<sim::EngineNode> rx;
  std::vector<std::unique_ptr<sim::EngineNode>> tx;
  std::vector<std::unique_ptr<Flow>> flows;
};

IncastResult RunIncast(uint32_t senders, bool hints, uint64_t seed,
                       uint32_t conn_window_pkts = kIncastConnWindowPkts,
                       uint32_t initial_window_bytes = 0, uint32_t qps_per_sender = 1,
                       bool restart_after_idle = false) {
  IncastResult r;
  IncastLab lab(senders, hints, seed, conn_window_pkts, initial_window_bytes, qps_per_sender);
  sim::Fabric& fabric = lab.fabric;
  const tr::EngineConfig& rcfg = lab.rcfg;
  sim::EngineNode& rx = *lab.rx;
  std::vector<std::unique_ptr<sim::EngineNode>>& tx = lab.tx;
  std::vector<std::unique_ptr<Flow>>& flows = lab.flows;
  // The receiver's downlink (leaf 1's port toward it): occupancy by time.
  const sim::PortId down = fabric.link(lab.topo.host_links[senders]).port_b;
  std::vector<std::pair<sim::SimTime, uint64_t>> queue;
  fabric.SetTraceObserver([&](const sim::TraceRecord& t) {
    if (t.kind == sim::TraceKind::kEnqueue && t.component == down)
      queue.emplace_back(t.time, t.arg);
  });
  auto received = [&]() {  // bytes the receiver got from each sender so far
    std::vector<uint64_t> v(senders);
    for (uint32_t i = 0; i < senders; i++) v[i] = lab.Received(i);
    return v;
  };
  // With hints, every microsecond from t0: the senders' pacers against an
  // equal share of the receiver's capacity (C / N).
  sim::SimTime t0 = 0, reached_at = 0;
  auto step = [&](sim::SimTime until) {
    while (fabric.Now() < until) {
      for (auto& f : flows) f->Step();
      fabric.RunUntil(std::min(until, fabric.Now() + kStepPs / 10));
      if (t0 == 0 || !hints) continue;
      const double fair = static_cast<double>(rcfg.rx_capacity_mbps) / senders;
      double lo = 1e18, hi = 0;
      for (const auto& n : tx) {
        for (const tr::ConnInfo& c : n->engine().GetConnections()) {
          lo = std::min<double>(lo, c.pace_mbps);
          hi = std::max<double>(hi, c.pace_mbps);
        }
      }
      if (reached_at == 0 && lo >= 0.9 * fair && hi <= 1.1 * fair) reached_at = fabric.Now();
    }
  };
  if (restart_after_idle) {
    // Connected and sending for 300 us, then idle for 1 ms (every WRITE
    // completed), then everyone again at once: what is measured.
    step(fabric.Now() + 300 * sim::kPsPerUs);
    for (auto& f : flows) f->paused = true;
    step(fabric.Now() + sim::kPsPerMs);
    for (auto& f : flows) f->paused = false;
  }
  // Everyone starts at once; the clock starts once every sender's data arrives.
  const std::vector<uint64_t> base = received();
  const sim::SimTime start = fabric.Now();
  const uint64_t drops0 = fabric.total_drops(sim::DropCause::kQueueFull);
  while (true) {
    step(fabric.Now() + sim::kPsPerUs);
    std::vector<uint64_t> v = received();
    bool all = true;
    for (uint32_t i = 0; i < senders; i++) all = all && v[i] > base[i];
    if (all) break;
    if (fabric.Now() > start + sim::kPsPerMs) {
      ADD_FAILURE() << "not every sender got through in 1 ms";
      return r;
    }
  }
  t0 = fabric.Now();
  std::vector<std::vector<uint64_t>> at = {received()};  // at every window edge
  const sim::SimTime window = kWindowPsPerSender * senders;
  for (sim::SimTime t = t0 + window; t <= t0 + kMeasureWindows * window; t += window) {
    step(t);
    at.push_back(received());
  }
  // Converged after the last window in which a sender was more than 10 %
  // off an equal part of what the receiver got in that window.
  size_t first_fair = 0;
  for (size_t w = 1; w < at.size(); w++) {
    double total = 0;
    for (uint32_t i = 0; i < senders; i++) total += static_cast<double>(at[w][i] - at[w - 1][i]);
    const double fair = total / senders;
    for (uint32_t i = 0; i < senders; i++) {
      if (std::abs(static_cast<double>(at[w][i] - at[w - 1][i]) - fair) > 0.10 * fair)
        first_fair = w;
    }
  }
  r.converged_us = static_cast<double>(first_fair * window) / sim::kPsPerUs;
  if (reached_at != 0) r.rates_reached_us = static_cast<double>(reached_at - t0) / sim::kPsPerUs;
  for (const auto& [t, q] : queue) {
    if (t > t0 && q >= kBdpBytes) r.queue_bdp_us = static_cast<double>(t - t0) / sim::kPsPerUs;
  }
  r.base_rtt_us = 1e9;
  for (const auto& n : tx) {
    for (const tr::ConnInfo& c : n->engine().GetConnections()) {
      for (const tr::PathInfo& p : c.paths) {
        if (p.srtt_ns != 0) r.base_rtt_us = std::min(r.base_rtt_us, p.srtt_ns / 1e3);
      }
    }
  }
  const sim::SimTime converged = t0 + first_fair * window;
  double all = 0;
  std::vector<double> after(senders);
  for (uint32_t i = 0; i < senders; i++) {
    after[i] = static_cast<double>(at.back()[i] - at[first_fair][i]);
    all += static_cast<double>(at.back()[i]);
  }
  r.jain = sim::JainIndex(after);
  r.gbps = all * 8 / (static_cast<double>(fabric.Now()) / 1e3);
  const sim::SimTime late = t0 + kMeasureWindows / 2 * window;
  for (const auto& [t, q] : queue) {
    if (t < start) continue;  // the warm-up of a restart
    uint64_t& m = t < converged ? r.first_queue : r.max_queue;
    m = std::max(m, q);
    if (t >= late) r.late_queue = std::max(r.late_queue, q);
  }
  r.drops = fabric.total_drops(sim::DropCause::kQueueFull) - drops0;
  for (const auto& n : tx) r.retransmits += n->engine().stats().tx_retransmits;
  r.rx_conns = rx.engine().GetConnections().size();
  if (qps_per_sender > 1) {
    // Many QPs each keep one WRITE outstanding: run on until every one of
    // them has completed one (tens of milliseconds for thousands of 64 KiB).
    auto min_done = [&] {
      uint64_t m = UINT64_MAX;
      for (const auto& f : flows) {
        for (uint64_t b : f->qp_done()) m = std::min(m, b);
      }
      return m;
    };
    while (min_done() == 0 && fabric.Now() < 100 * sim::kPsPerMs) {
      step(fabric.Now() + 100 * sim::kPsPerUs);
    }
    if (min_done() != 0) {
      r.qps_all_done_us = static_cast<double>(fabric.Now() - t0) / sim::kPsPerUs;
      std::vector<double> qp_bytes;
      for (const auto& f : flows) {
        for (uint64_t b : f->qp_done()) qp_bytes.push_back(static_cast<double>(b));
      }
      r.qp_jain = sim::JainIndex(qp_bytes);
    }
  }
  const tr::ShareInfo share = rx.engine().GetShareInfo();
  r.share_senders = share.senders.size();
  r.share_level_mbps = share.level_mbps;
  return r;
}

void PrintRates(uint32_t n, const IncastResult& r) {
  std::printf(
      "  %u senders: every pacer within 10 %% of C/N after %.1f us (%.1f RTTs of %.1f us); the "
      "first "
      "round trip's queue below a BDP after %.1f us\n",
      n, r.rates_reached_us, r.rates_reached_us / r.base_rtt_us, r.base_rtt_us, r.queue_bdp_us);
}

TEST(Incast, HintsGiveEverySenderItsShareSoonerAndKeepTheQueueShort) {
  for (uint32_t n : {8u, 32u}) {
    SCOPED_TRACE(n);
    const IncastResult off = RunIncast(n, false, 1);
    const IncastResult on = RunIncast(n, true, 1);
    std::printf(
        "%u senders, without -> with hints: every sender within 10 %% of an equal part after %.0f "
        "-> %.0f us; then Jain %.3f -> %.3f, queue at most %lu -> %lu B (BDP %lu B), in the "
        "second half %lu -> %lu B; before %lu -> %lu B; %.1f -> %.1f Gbit/s; drops %lu -> %lu, "
        "retransmissions %lu -> %lu\n",
        n, off.converged_us, on.converged_us, off.jain, on.jain, off.max_queue, on.max_queue,
        kBdpBytes, off.late_queue, on.late_queue, off.first_queue, on.first_queue, off.gbps,
        on.gbps, off.drops, on.drops, off.retransmits, on.retransmits);
    PrintRates(n, on);
    EXPECT_LT(on.converged_us, off.converged_us);
    // Delivered shares within 10 % from the third 5 us-per-sender window on
    // (440 us with 8 senders before new senders counted as wanting more and
    // the windows kept room for the hinted rate).
    EXPECT_LE(on.converged_us, 3.0 * kWindowPsPerSender * n / sim::kPsPerUs);
    EXPECT_GE(on.jain, 0.99);
    // The allocator, as telemetry shows it: every sender, at an equal part of the capacity.
    EXPECT_EQ(on.share_senders, n);
    EXPECT_NEAR(on.share_level_mbps, kLinkMbps * 98 / 100 / n, 0.1 * kLinkMbps / n);
    EXPECT_EQ(off.share_senders, 0u);
    // The receiver drains a standing queue when more than 3/4 of its bytes
    // come marked; 32 senders' steady state sits at that edge, and where it
    // tips 1.6 % of the capacity goes to the drain: 0.968-0.983 of the
    // goodput without hints over seeds 1-6, two of them below 0.97 whether
    // the paths are sprayed by window or in plain turns.
    EXPECT_GE(on.gbps, 0.96 * off.gbps);
    // The openings carry the receiver's share, so every new sender is paced
    // from its first packet: 32 senders' first round trip (3.2 MB of
    // connection windows) no longer overflows the 1 MB buffer (506 drops
    // when the first hint came with the first ACK), and every pacer is
    // within 10 % of C/N within two base round trips (4.8 before).
    EXPECT_EQ(on.drops, 0u);
    EXPECT_GT(on.rates_reached_us, 0.0);
    EXPECT_LE(on.rates_reached_us, 2 * on.base_rtt_us);
    EXPECT_LT(on.late_queue, kBdpBytes);
    // 8 senders keep the queue below a BDP from their first round trip on
    // (743 KB when the first hint came with the first ACK; 227 KB before the
    // shares were pushed, the simultaneous open's ACCEPT read and the
    // pacers started at random phases). 32 are told C, C/2, ... C/32 as
    // their openings come, and leave 200 KB (doc/congestion.md).
    if (n > 8) continue;
    EXPECT_LT(on.first_queue, kBdpBytes);
    EXPECT_LT(on.max_queue, kBdpBytes);
  }
}

// The default windows (512 packets, 2.2 MB a sender): every new sender's
// first round trip is paced to the share the receiver's opening gave it and
// bounded by the initial window (slow start from kInitialWindowBytes), so
// the first round trips of 8, 16 and 32 new senders fit the 1 MB buffer and
// every pacer is at C/N within two base round trips. Without the initial
// window the openings' hints alone (C, C/2, ... C/k as the senders come)
// fit 8 and 16 senders.
TEST(Incast, NewSendersOfFullWindowsFitTheBufferAndReachTheirShareInTwoRoundTrips) {
  for (uint32_t n : {8u, 16u, 32u}) {
    SCOPED_TRACE(n);
    const IncastResult full = RunIncast(n, true, 1, config::kConnWindowPkts, 0);
    const IncastResult safe =
        RunIncast(n, true, 1, config::kConnWindowPkts, config::kInitialWindowBytes);
    std::printf(
        "%u senders of full windows with hints, no initial window -> %u B: drops %lu -> %lu, "
        "every sender within 10 %% after %.0f -> %.0f us, %.1f -> %.1f Gbit/s, Jain %.3f, "
        "retransmissions %lu -> %lu, first queue %lu -> %lu B\n",
        n, config::kInitialWindowBytes, full.drops, safe.drops, full.converged_us,
        safe.converged_us, full.gbps, safe.gbps, safe.jain, full.retransmits, safe.retransmits,
        full.first_queue, safe.first_queue);
    PrintRates(n, safe);
    // 44 drops with 32 senders, and 4.8 base RTTs until every pacer was at
    // C/N, when the first hint came with the first ACK.
    EXPECT_EQ(safe.drops, 0u);
    EXPECT_LE(safe.drops, full.drops);
    EXPECT_LE(safe.converged_us, full.converged_us);
    EXPECT_GE(safe.gbps, 0.98 * full.gbps);  // a few round trips of ramp over a 2 ms run
    EXPECT_GE(safe.jain, 0.99);
    // Every sender's rate within 10 % of C / N in two base round trips
    // (simulation.md), and its delivered share from the second 5 us-per-sender
    // window on (280 us with 8 senders before the allocator's rules).
    EXPECT_GT(safe.rates_reached_us, 0.0);
    EXPECT_LE(safe.rates_reached_us, 2 * safe.base_rtt_us);
    EXPECT_LE(safe.converged_us, 2.0 * kWindowPsPerSender * n / sim::kPsPerUs);
  }
}

// Established connections that were idle start together again: each keeps
// the share its receiver last gave it (a hint does not expire at the
// sender), and the receiver counts the senders of the interval over the
// silence as wanting, so their first round trip is paced to an equal share.
TEST(Incast, EstablishedSendersRestartingTogetherStartAtTheirShare) {
  for (uint32_t n : {8u, 32u}) {
    SCOPED_TRACE(n);
    const IncastResult r = RunIncast(n, true, 1, config::kConnWindowPkts,
                                     config::kInitialWindowBytes, 1, /*restart_after_idle=*/true);
    std::printf(
        "%u senders restarting after 1 ms idle: drops %lu, every sender within 10 %% after %.0f "
        "us, "
        "Jain %.3f, queue then at most %lu B\n",
        n, r.drops, r.converged_us, r.jain, r.max_queue);
    PrintRates(n, r);
    EXPECT_EQ(r.drops, 0u);
    EXPECT_GE(r.rates_reached_us, 0.0);
    EXPECT_LE(r.rates_reached_us, 2 * r.base_rtt_us);
    // Even from the first window: senders that said IDLE as they went quiet
    // come back at the share they left with (the level over those who had
    // stayed handed the last to leave up to the whole link: 40 us to even).
    EXPECT_EQ(r.converged_us, 0.0);
    // The receiver's first ACKs carry an equal share, and the queue never
    // reaches a BDP (before, the allocation over the silence read everyone
    // as limited elsewhere and handed out nearly the whole link: 151 KB
    // with 8 senders).
    EXPECT_LT(r.first_queue, kBdpBytes);
    EXPECT_LT(r.max_queue, kBdpBytes);
    EXPECT_GE(r.jain, 0.99);
  }
}

// Eight senders at their shares (C/8 each); six stop (no more WRITEs, those
// outstanding complete). The last packet each of the six sends says IDLE, so
// the receiver counts them out at once and the two left hear C/2 from their
// next ACKs. Before, their parts stayed idle until the allocation interval
// ended and the next measured the six as gone: up to two intervals.
TEST(Incast, SendersThatStopLeaveTheirSharesToTheOthersWithinARoundTrip) {
  constexpr uint32_t kSenders = 8, kStaying = 2;
  IncastLab lab(kSenders, true, 3, kIncastConnWindowPkts, 0, 1);
  lab.RunUntil(lab.fabric.Now() + 300 * sim::kPsPerUs);
  const double part = static_cast<double>(lab.rcfg.rx_capacity_mbps);
  for (uint32_t i = 0; i < kSenders; i++) {
    ASSERT_NEAR(lab.PaceMbps(i), part / kSenders, 0.1 * part / kSenders) << i;
  }
  for (uint32_t i = kStaying; i < kSenders; i++) lab.flows[i]->paused = true;
  // From the last byte of the six to arrive until both staying senders' pacers are at C/2.
  sim::SimTime last_arrival = 0, reached = 0;
  std::vector<uint64_t> got(kSenders);
  const sim::SimTime limit = lab.fabric.Now() + 2 * sim::kPsPerMs;  // 1 MiB outstanding at C/8
  while (lab.fabric.Now() < limit && reached == 0) {
    lab.RunUntil(lab.fabric.Now() + sim::kPsPerUs / 10);
    for (uint32_t i = kStaying; i < kSenders; i++) {
      if (lab.Received(i) != got[i]) last_arrival = lab.fabric.Now();
      got[i] = lab.Received(i);
    }
    bool all = true;
    for (uint32_t i = 0; i < kStaying; i++) all &= lab.PaceMbps(i) >= 0.9 * part / kStaying;
    if (all && last_arrival != 0) reached = lab.fabric.Now();
  }
  ASSERT_NE(reached, 0u) << "the two left never reached C/2";
  double rtt_us = 1e9;
  for (const tr::PathInfo& p : lab.tx[0]->engine().GetConnections().at(0).paths) {
    if (p.srtt_ns != 0) rtt_us = std::min(rtt_us, p.srtt_ns / 1e3);
  }
  const double after_us = static_cast<double>(reached - last_arrival) / sim::kPsPerUs;
  std::printf(
      "6 of 8 senders stop: the 2 left at C/2 %.1f us (%.1f RTTs of %.1f us) after the "
      "last packet of the 6; %lu reallocations\n",
      after_us, after_us / rtt_us, rtt_us,
      static_cast<unsigned long>(lab.rx->engine().stats().share_reallocations));
  EXPECT_LE(after_us, 2 * rtt_us);
}

// 4,000 QPs (8 senders of 500) into one receiver: the QPs of a host pair are
// streams of its one connection, so the receiver holds 8 connections, the
// hints share its link among 8 senders as with one QP each, and every QP
// gets its turn.
TEST(Incast, FourThousandQpsAreEightConnectionsAndShareTheLinkAsEight) {
  constexpr uint32_t kSenders = 8, kQps = 500;
  const IncastResult r =
      RunIncast(kSenders, true, 1, config::kConnWindowPkts, config::kInitialWindowBytes, kQps);
  std::printf(
      "%u QPs from %u senders: %zu connections at the receiver; every sender within 10 %% after "
      "%.0f us, Jain %.3f, queue then at most %lu B (%lu B in the second half), %.1f Gbit/s, "
      "drops %lu; every QP had a WRITE completed after %.0f us (Jain of the QPs' bytes then "
      "%.3f); every pacer within 10 %% of C/N after %.1f us\n",
      kSenders * kQps, kSenders, r.rx_conns, r.converged_us, r.jain, r.max_queue, r.late_queue,
      r.gbps, r.drops, r.qps_all_done_us, r.qp_jain, r.rates_reached_us);
  EXPECT_EQ(r.rx_conns, kSenders);
  EXPECT_GE(r.jain, 0.99);
  EXPECT_LT(r.late_queue, kBdpBytes);
  EXPECT_EQ(r.drops, 0u);
  EXPECT_GE(r.gbps, 90.0);
  EXPECT_GT(r.qps_all_done_us, 0.0) << "a QP never completed a WRITE";
  EXPECT_GE(r.qp_jain, 0.9);
}

// ---- Flows sharing a bottleneck, and a victim beside an incast ----

// 16 flows, each from its own host on leaf 0 to its own host on leaf 1,
// through one spine whose links run at 100 Gbit/s like the hosts': the
// leaf-0 uplink is the bottleneck the 16 share. No receiver sees more than
// one sender, so hints cannot help: the windows must share it fairly.
TEST(SharedBottleneck, SixteenFlowsShareOneLinkFairly) {
  constexpr uint32_t kFlows = 16;
  sim::Fabric fabric(11);
  sim::LeafSpineConfig ls;
  ls.leaves = 2;
  ls.spines = 1;
  ls.hosts_per_leaf = kFlows;
  ls.host_link.rate_bps = ls.fabric_link.rate_bps = 100 * sim::kBpsPerGbps;
  sim::Topology topo = *sim::BuildLeafSpine(fabric, ls);
  tr::EngineConfig cfg;
  std::vector<std::unique_ptr<sim::EngineNode>> nodes;
  std::vector<std::unique_ptr<Flow>> flows;
  for (uint32_t i = 0; i < kFlows; i++) {
    cfg.seed = 500 + 2 * i;
    nodes.push_back(std::make_unique<sim::EngineNode>(topo.host(0, i), cfg));
    cfg.seed = 501 + 2 * i;
    nodes.push_back(std::make_unique<sim::EngineNode>(topo.host(1, i), cfg));
    flows.push_back(std::make_unique<Flow>(nodes[2 * i].get(), nodes[2 * i + 1].get()));
  }
  auto run_until = [&](sim::SimTime t) {
    while (fabric.Now() < t) {
      for (auto& f : flows) f->Step();
      fabric.RunUntil(fabric.Now() + kStepPs);
    }
  };
  run_until(2 * sim::kPsPerMs);  // settle
  std::vector<uint64_t> start;
  for (auto& f : flows) start.push_back(f->done_bytes());
  const sim::SimTime m0 = fabric.Now();
  run_until(m0 + 8 * sim::kPsPerMs);
  std::vector<double> gbps;
  double total = 0;
  for (uint32_t i = 0; i < kFlows; i++) {
    gbps.push_back(static_cast<double>(flows[i]->done_bytes() - start[i]) * 8 /
                   (static_cast<double>(fabric.Now() - m0) / 1e3));
    total += gbps.back();
  }
  const auto [lo, hi] = std::minmax_element(gbps.begin(), gbps.end());
  std::printf(
      "16 flows on one 100 Gbit/s link: %.1f Gbit/s in all, each %.2f..%.2f, Jain %.3f, "
      "drops %lu\n",
      total, *lo, *hi, sim::JainIndex(gbps),
      static_cast<unsigned long>(fabric.total_drops(sim::DropCause::kQueueFull)));
  EXPECT_GE(sim::JainIndex(gbps), 0.9);
  EXPECT_GT(total, 90.0);
}

// 8 senders write into one receiver R; a victim V on the senders' leaf
// writes to another host of R's leaf. V shares leaf 0's two uplinks with
// the incast, but not R's downlink: max-min, it would keep its 100 Gbit/s
// (R's link holds the incast to 98). The target is 90 % of what it gets
// alone; over 24 seeds its median is 77 % (doc/congestion.md, "A victim
// beside an incast": the uplinks, loaded to 99 %, mark V's packets as much
// as the incast's).
/**
 * A victim V on the incast senders' leaf writing to a host on the
 * receiver's leaf, beside 8 senders writing into R, over @p spines spines
 * whose links run at the hosts' rate; V's goodput in Gbit/s over 2 ms, with
 * the incast or alone. @p seed seeds the fabric, and x 100 the engines.
 */
double VictimGbps(uint32_t spines, bool incast, uint64_t seed = 12) {
  constexpr uint32_t kSenders = 8;
  sim::Fabric fabric(seed);
  sim::LeafSpineConfig ls;
  ls.leaves = 2;
  ls.spines = spines;
  ls.hosts_per_leaf = kSenders + 1;
  ls.host_link.rate_bps = kLinkMbps * 1'000'000;
  ls.fabric_link.rate_bps = kLinkMbps * 1'000'000;
  sim::Topology topo = *sim::BuildLeafSpine(fabric, ls);
  tr::EngineConfig cfg;
  cfg.seed = seed * 100;
  tr::EngineConfig rcfg = cfg;
  rcfg.rx_capacity_mbps = kLinkMbps * 98 / 100;
  sim::EngineNode r(topo.host(1, 0), rcfg);
  cfg.seed = seed * 100 + 1;
  sim::EngineNode v_dst(topo.host(1, 1), cfg);
  cfg.seed = seed * 100 + 2;
  sim::EngineNode v(topo.host(0, kSenders), cfg);
  Flow victim(&v, &v_dst);
  std::vector<std::unique_ptr<sim::EngineNode>> tx;
  std::vector<std::unique_ptr<Flow>> flows;
  for (uint32_t i = 0; incast && i < kSenders; i++) {
    cfg.seed = seed * 100 + 10 + i;
    tx.push_back(std::make_unique<sim::EngineNode>(topo.host(0, i), cfg));
    flows.push_back(std::make_unique<Flow>(tx.back().get(), &r));
  }
  auto run_until = [&](sim::SimTime t) {
    while (fabric.Now() < t) {
      victim.Step();
      for (auto& f : flows) f->Step();
      fabric.RunUntil(fabric.Now() + kStepPs / 10);
    }
  };
  run_until(200 * sim::kPsPerUs);
  const uint64_t v0 = victim.done_bytes();
  const sim::SimTime m0 = fabric.Now();
  run_until(m0 + 2 * sim::kPsPerMs);
  return static_cast<double>(victim.done_bytes() - v0) * 8 /
         (static_cast<double>(fabric.Now() - m0) / 1e3);
}

/**
 * Seeds of the victim test: which ports PLB draws is a coin flip per seed
 * (65-98 % of the rate alone), so that the median of 8 moved by 2 points
 * with any change of timing; of 24, by under 1.
 */
constexpr uint64_t kVictimSeeds = 24;

// With two spines, leaf 0's uplinks carry the incast (98 Gbit/s, R's link)
// and V's 100 Gbit/s with almost nothing to spare: 99 % loaded, they mark
// (doc/congestion.md, "A victim beside an incast").
TEST(Incast, AVictimBesideTheIncastKeepsMostOfItsRate) {
  std::vector<double> kept;
  for (uint64_t seed = 12; seed < 12 + kVictimSeeds; seed++) {
    const double alone = VictimGbps(2, false, seed);
    const double beside = VictimGbps(2, true, seed);
    std::printf(
        "seed %lu: victim alone %.1f Gbit/s, beside an 8-sender incast %.1f Gbit/s (%.0f %%)\n",
        seed, alone, beside, 100 * beside / alone);
    EXPECT_GT(alone, 90.0);
    kept.push_back(beside / alone);
  }
  std::printf("median: the victim keeps %.0f %% of its rate\n", 100 * Median(kept));
  // The plan's target: 90 % (doc/congestion.md). 71 % before the receiver
  // counted marked senders as wanting more and drained its queue; 76 %
  // (56-81 %) before the paths were sprayed by their windows; 89 % (85-97 %)
  // before every packet of a thin window asked for its ACK, 92 % (89-94 %) since.
  EXPECT_GE(Median(kept), 0.90);
  EXPECT_GE(*std::min_element(kept.begin(), kept.end()), 0.85);
}

// The same over four spines: the fabric has room (the incast and V load
// leaf 0's uplinks to half), and V shares only the switches with the incast,
// whose queue sits at R's downlink. Without PFC nothing backs up into V's
// way: it keeps its rate ("victim flow unharmed", simulation.md).
TEST(Incast, AVictimThatSharesOnlyTheSwitchesKeepsItsRate) {
  const double alone = VictimGbps(4, false);
  const double beside = VictimGbps(4, true);
  std::printf(
      "over 4 spines: victim alone %.1f Gbit/s, beside an 8-sender incast %.1f Gbit/s (%.0f %%)\n",
      alone, beside, 100 * beside / alone);
  EXPECT_GT(alone, 90.0);
  EXPECT_GE(beside, 0.9 * alone);
}

}  // namespace
}  // namespace metaroce::testing
