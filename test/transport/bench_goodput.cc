/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Figure 1 of bench_transport: goodput vs random loss on the simulated
// leaf-spine, and one leaf-spine link blackholed at half time.

#include <string>
#include <vector>

#include "bench_common.h"
#include "engine_peer.h"
#include "mr_sim.h"
#include "mr_sim_engine_node.h"

namespace metaroce::bench {
namespace {

// =====================================================================
// Figure 1: goodput vs loss on the simulated leaf-spine
// =====================================================================

constexpr uint32_t kSpines = 8;
constexpr uint64_t kLinkGbps = 100;
constexpr uint32_t kLinksPerDirection = 4;  // host-leaf, leaf-spine, spine-leaf, leaf-host

struct GoodputSetup {
  sim::SimTime warmup_ps = 0;
  sim::SimTime measure_ps = 0;
  sim::SimTime step_ps = 10 * sim::kPsPerUs;  ///< CQ polling interval
  sim::SimTime bin_ps = 250 * sim::kPsPerUs;  ///< time-series bins (JSON)
  uint32_t qps = 4;
  uint32_t depth = 2;  ///< WRITEs outstanding per QP
};

struct GoodputRun {
  double loss = 0;
  uint64_t seed = 0;
  bool blackhole = false;
  double gbps = 0;              ///< whole measured window
  double gbps_first = 0;        ///< first half
  double gbps_second = 0;       ///< second half (after the failure in a blackhole run)
  double gbps_second_1ms = 0;   ///< first 1 ms of the second half
  double gbps_second_rest = 0;  ///< the rest of the second half
  // The same windows from first transmissions (data packets sent minus
  // retransmissions) x 4 KiB: new payload put on the wire, which lags what
  // completes by at most the connection window instead of the outstanding WRITEs.
  double new_gbps = 0, new_gbps_first = 0, new_gbps_second = 0, new_gbps_second_1ms = 0;
  std::vector<double> bins_gbps;
  uint64_t msgs = 0, data_pkts = 0, retx = 0, lost_sack = 0, lost_rto = 0;
  uint64_t path_failures = 0, probes = 0, conn_failures = 0, wc_errors = 0;
  std::string first_error;
  int spine = -1;            ///< blackholed spine
  double data_share = 0;     ///< its share of leaf0's uplink frames before the failure
  double reverse_share = 0;  ///< its share of the frames from the spines to leaf0 (ACKs)
  std::vector<tr::PathInfo> paths;
  double wall_s = 0;
};

GoodputRun RunGoodput(double loss, uint64_t seed, bool blackhole, const GoodputSetup& g) {
  const Clock::time_point wall0 = Clock::now();
  GoodputRun r;
  r.loss = loss;
  r.seed = seed;
  r.blackhole = blackhole;

  sim::Fabric fabric(seed);
  sim::LeafSpineConfig lc;
  lc.leaves = 2;
  lc.spines = kSpines;
  lc.hosts_per_leaf = 1;
  lc.host_link.rate_bps = kLinkGbps * sim::kBpsPerGbps;
  lc.fabric_link.rate_bps = kLinkGbps * sim::kBpsPerGbps;
  sim::Topology topo = Must(sim::BuildLeafSpine(fabric, lc), "BuildLeafSpine");

  tr::EngineConfig cfg;
  cfg.num_paths = kNumPaths;
  cfg.seed = 2 * seed + 1;
  sim::EngineNode a(topo.host(0, 0), cfg);
  cfg.seed = 2 * seed + 2;
  sim::EngineNode b(topo.host(1, 0), cfg);
  tr::Engine& ea = a.engine();
  tr::Engine& eb = b.engine();

  const uint32_t pd_a = Must(ea.AllocPd(), "AllocPd");
  const uint32_t pd_b = Must(eb.AllocPd(), "AllocPd");
  const uint32_t cq_a = Must(ea.CreateCq(4096), "CreateCq");
  const uint32_t cq_b = Must(eb.CreateCq(4096), "CreateCq");
  std::vector<uint8_t> src(kMsgBytes, 0x5a);
  std::vector<uint8_t> dst(size_t{g.qps} * g.depth * kMsgBytes);
  const tr::MrInfo mr_a = Must(ea.RegMr(pd_a, Addr(src), src.size(), tr::access::kAll), "RegMr");
  const tr::MrInfo mr_b = Must(eb.RegMr(pd_b, Addr(dst), dst.size(), tr::access::kAll), "RegMr");
  std::vector<uint32_t> qa(g.qps), qb(g.qps);
  for (uint32_t q = 0; q < g.qps; q++) {
    tr::QpAttr at;
    at.pd = pd_a;
    at.send_cq = at.recv_cq = cq_a;
    qa[q] = Must(ea.CreateQp(at), "CreateQp");
    at.pd = pd_b;
    at.send_cq = at.recv_cq = cq_b;
    qb[q] = Must(eb.CreateQp(at), "CreateQp");
  }
  for (uint32_t q = 0; q < g.qps; q++) {
    MustOk(ea.ConnectQp(qa[q], b.Addr(), qb[q]), "ConnectQp");
    MustOk(eb.ConnectQp(qb[q], a.Addr(), qa[q]), "ConnectQp");
  }
  // Set the connection up on a clean fabric: the figure is about the data path.
  a.Kick();
  fabric.RunUntil(fabric.Now() + 200 * sim::kPsPerUs);
  if (!tr::EnginePeer::Established(ea, b.host()->ipv4())) Die("connection not established");
  if (loss > 0) {
    sim::FaultConfig f;
    f.loss_probability = loss;
    MustOk(fabric.SetAllLinkFaults(f, sim::LinkScope::kAll), "SetAllLinkFaults");
  }

  std::vector<uint64_t> posted(g.qps), completed(g.qps);
  // WRITEs are added one per message time (1 MiB at line rate) until every QP
  // has g.depth outstanding: the scheduler serves ready messages round robin,
  // so messages posted together would finish together, in bursts as large as
  // the window of outstanding work, and a measured window would cut bursts.
  const sim::SimTime msg_ps = static_cast<sim::SimTime>(kMsgBytes) * 8 * 1000 / kLinkGbps;
  const sim::SimTime ramp0 = fabric.Now();
  auto post_all = [&]() {
    const uint64_t cap = uint64_t{g.qps} * g.depth;
    const uint64_t allowed =
        std::min<uint64_t>(cap, 1 + static_cast<uint64_t>((fabric.Now() - ramp0) / msg_ps));
    uint64_t outstanding = 0;
    for (uint32_t q = 0; q < g.qps; q++) outstanding += posted[q] - completed[q];
    while (r.wc_errors == 0 && outstanding < allowed) {
      uint32_t q = 0;  // the QP with the least outstanding
      for (uint32_t k = 1; k < g.qps; k++) {
        if (posted[k] - completed[k] < posted[q] - completed[q]) q = k;
      }
      tr::SendWr wr;
      wr.wr_id = posted[q];
      wr.opcode = tr::Opcode::kWrite;
      wr.flags = tr::send_flags::kSignaled;
      wr.sg.push_back({Addr(src), kMsgBytes, mr_a.lkey});
      wr.remote_addr = Addr(dst) + (uint64_t{q} * g.depth + posted[q] % g.depth) * kMsgBytes;
      wr.rkey = mr_b.rkey;
      MustOk(ea.PostSend(a.NowNs(), qa[q], wr), "PostSend");
      posted[q]++;
      outstanding++;
    }
  };

  const sim::SimTime t0 = fabric.Now();
  const sim::SimTime m0 = t0 + g.warmup_ps;
  const sim::SimTime m1 = m0 + g.measure_ps;
  const sim::SimTime mid = m0 + g.measure_ps / 2;
  // Cumulative payload of completed WRITEs after each poll that saw completions.
  // Goodput over [x, y] is (C(y) - C(x)) / (y - x) with C interpolated linearly
  // between polls: a window edge then cuts no 1 MiB step in two.
  std::vector<std::pair<sim::SimTime, uint64_t>> curve = {{t0, 0}};
  uint64_t done_bytes = 0;
  tr::EngineStats s0, s1, s_mid, s_mid1;  // at m0, m1, mid and 1 ms after mid
  bool snapped_mid = false, snapped_mid1 = false;
  std::array<uint64_t, kSpines> up0{}, down0{};
  auto uplink_frames = [&](uint32_t s) {
    return fabric.port_stats(fabric.link(topo.fabric_link(0, s)).port_a).tx_frames;
  };
  auto downlink_frames = [&](uint32_t s) {
    return fabric.port_stats(fabric.link(topo.fabric_link(0, s)).port_b).tx_frames;
  };

  post_all();
  a.Kick();
  bool snapped = false, failed = false, ended = false;
  tr::Completion wc[64];
  // Past m1 only until the next completion (for the interpolation), at most 10 ms.
  while (!ended || (curve.back().first <= m1 && fabric.Now() < m1 + 10 * sim::kPsPerMs)) {
    if (!snapped && fabric.Now() >= m0) {
      s0 = ea.stats();
      for (uint32_t s = 0; s < kSpines; s++) {
        up0[s] = uplink_frames(s);
        down0[s] = downlink_frames(s);
      }
      snapped = true;
    }
    if (!ended && fabric.Now() >= m1) {
      s1 = ea.stats();
      ended = true;
    }
    if (!snapped_mid && fabric.Now() >= mid) {
      s_mid = ea.stats();
      snapped_mid = true;
    }
    if (!snapped_mid1 && fabric.Now() >= mid + std::min<sim::SimTime>(sim::kPsPerMs, m1 - mid)) {
      s_mid1 = ea.stats();
      snapped_mid1 = true;
    }
    if (blackhole && !failed && fabric.Now() >= mid) {
      // The leaf0 uplink that carried the most data frames so far: some path uses it.
      uint64_t best = 0, total = 0, rev_total = 0;
      for (uint32_t s = 0; s < kSpines; s++) {
        const uint64_t n = uplink_frames(s) - up0[s];
        total += n;
        rev_total += downlink_frames(s) - down0[s];
        if (n > best) {
          best = n;
          r.spine = static_cast<int>(s);
        }
      }
      if (r.spine < 0) Die("no data crossed the fabric before the failure");
      r.data_share = total == 0 ? 0 : static_cast<double>(best) / static_cast<double>(total);
      r.reverse_share = rev_total == 0
                            ? 0
                            : static_cast<double>(downlink_frames(r.spine) - down0[r.spine]) /
                                  static_cast<double>(rev_total);
      sim::FaultConfig f;
      f.blackhole_at_ps = fabric.Now();  // no reconverge_after_ps: routes never change
      MustOk(fabric.SetLinkFaults(topo.fabric_link(0, r.spine), f, sim::LinkDirection::kBoth),
             "SetLinkFaults");
      failed = true;
    }
    fabric.RunUntil(fabric.Now() + g.step_ps);
    const sim::SimTime t = fabric.Now();
    const uint64_t before = done_bytes;
    size_t n;
    while ((n = ea.PollCq(cq_a, wc)) > 0) {
      for (size_t k = 0; k < n; k++) {
        if (wc[k].status != tr::WcStatus::kSuccess) {
          if (r.wc_errors++ == 0) r.first_error = tr::WcStatusName(wc[k].status);
          continue;
        }
        const auto it = std::find(qa.begin(), qa.end(), wc[k].qp_num);
        if (it == qa.end()) Die("completion for an unknown QP");
        completed[static_cast<size_t>(it - qa.begin())]++;
        done_bytes += kMsgBytes;
        if (t > m0 && t <= m1) r.msgs++;
      }
    }
    if (done_bytes != before) curve.emplace_back(t, done_bytes);
    post_all();
    a.Kick();
  }
  if (curve.back().first <= m1) curve.emplace_back(fabric.Now(), done_bytes);

  auto at = [&](sim::SimTime t) {
    const auto it = std::lower_bound(curve.begin(), curve.end(), t,
                                     [](const auto& pt, sim::SimTime x) { return pt.first < x; });
    if (it == curve.end()) return static_cast<double>(curve.back().second);
    if (it->first == t || it == curve.begin()) return static_cast<double>(it->second);
    const auto& p = *(it - 1);
    return static_cast<double>(p.second) + static_cast<double>(it->second - p.second) *
                                               static_cast<double>(t - p.first) /
                                               static_cast<double>(it->first - p.first);
  };
  auto gbps = [&](sim::SimTime x, sim::SimTime y) {
    return y <= x ? 0 : (at(y) - at(x)) * 8.0 / (static_cast<double>(y - x) * 1e-3);
  };
  // At mid (the failure instant of a blackhole run) C is taken as the step
  // function, not interpolated: up to mid a blackhole run is the lossless run
  // of its seed event for event, so both split their windows at the same bytes.
  const double c_mid = static_cast<double>(
      (std::upper_bound(curve.begin(), curve.end(), mid,
                        [](sim::SimTime x, const auto& pt) { return x < pt.first; }) -
       1)
          ->second);
  auto gbps_from_mid = [&](sim::SimTime y) {
    return (at(y) - c_mid) * 8.0 / (static_cast<double>(y - mid) * 1e-3);
  };
  const sim::SimTime one_ms = std::min<sim::SimTime>(sim::kPsPerMs, m1 - mid);
  r.gbps = gbps(m0, m1);
  r.gbps_first = (c_mid - at(m0)) * 8.0 / (static_cast<double>(mid - m0) * 1e-3);
  r.gbps_second = gbps_from_mid(m1);
  r.gbps_second_1ms = gbps_from_mid(mid + one_ms);
  r.gbps_second_rest = gbps(mid + one_ms, m1);
  for (sim::SimTime x = m0; x < m1; x += g.bin_ps) {
    r.bins_gbps.push_back(gbps(x, std::min(x + g.bin_ps, m1)));
  }
  auto sent_new = [](const tr::EngineStats& x, const tr::EngineStats& y, sim::SimTime ps) {
    const uint64_t pkts = (y.tx_data_pkts - y.tx_retransmits) - (x.tx_data_pkts - x.tx_retransmits);
    return static_cast<double>(pkts) * 4096 * 8 / (static_cast<double>(ps) * 1e-3);
  };
  r.new_gbps = sent_new(s0, s1, m1 - m0);
  r.new_gbps_first = sent_new(s0, s_mid, mid - m0);
  r.new_gbps_second = sent_new(s_mid, s1, m1 - mid);
  r.new_gbps_second_1ms = sent_new(s_mid, s_mid1, one_ms);
  r.data_pkts = s1.tx_data_pkts - s0.tx_data_pkts;
  r.retx = s1.tx_retransmits - s0.tx_retransmits;
  r.lost_sack = s1.lost_detected_sack - s0.lost_detected_sack;
  r.lost_rto = s1.lost_detected_rto - s0.lost_detected_rto;
  r.path_failures = s1.path_failures - s0.path_failures;
  r.probes = s1.tx_probes - s0.tx_probes;
  r.conn_failures = s1.conn_failures - s0.conn_failures;
  r.paths = ea.GetPaths(b.host()->ipv4());
  r.wall_s = SecondsSince(wall0);
  return r;
}

struct GoodputFigure {
  GoodputSetup setup;
  std::vector<double> losses;
  std::vector<uint64_t> seeds;
  std::vector<std::vector<GoodputRun>> runs;  ///< [loss][seed]
  std::vector<GoodputRun> blackhole;          ///< [seed]
  double wall_s = 0;
};

struct GoodputGoal {
  double loss;
  double min_ratio;
};
constexpr GoodputGoal kGoodputGoals[] = {{0.01, 0.90}, {0.10, 0.50}};

const GoodputGoal* GoalFor(double loss) {
  for (const GoodputGoal& g : kGoodputGoals) {
    if (std::fabs(g.loss - loss) < 1e-12) return &g;
  }
  return nullptr;
}

// Payload share of the wire for full 4 KiB WRITE packets over IPv4 (Ethernet,
// IP, UDP, MetaRoCE headers, CRC, and the simulator's 20 bytes of preamble and
// gap per frame): the most goodput a 100 Gbit/s link can carry.
double LineRateCeilingGbps() {
  const size_t frame = wire::EncapBytes(wire::FrameInfo{.src = wire::IpAddr::V4(10, 0, 0, 1)}) +
                       wire::PayloadOffset(wire::PacketType::kWrite) + 4096 + wire::kCrcBytes;
  return static_cast<double>(kLinkGbps) * 4096.0 /
         static_cast<double>(frame + sim::kDefaultWireOverheadBytes);
}

double EndToEndLoss(double per_link) {
  return 1 - std::pow(1 - per_link, static_cast<double>(kLinksPerDirection));
}

GoodputFigure RunGoodputFigure(const Options& o) {
  const Clock::time_point wall0 = Clock::now();
  GoodputFigure f;
  f.setup.warmup_ps = 2 * sim::kPsPerMs;
  f.setup.measure_ps = (o.quick ? 10 : 40) * sim::kPsPerMs;
  f.losses = {0, 0.001, 0.01, 0.05, 0.10};
  const int seeds = o.seeds != 0 ? o.seeds : (o.quick ? 3 : 5);
  for (int s = 1; s <= seeds; s++) f.seeds.push_back(static_cast<uint64_t>(s));
  for (double loss : f.losses) {
    f.runs.emplace_back();
    for (uint64_t seed : f.seeds) {
      if (Progress(o)) std::fprintf(stderr, "  goodput: loss %.1f %% seed %lu\r", loss * 100, seed);
      f.runs.back().push_back(RunGoodput(loss, seed, false, f.setup));
    }
  }
  for (uint64_t seed : f.seeds) {
    if (Progress(o)) std::fprintf(stderr, "  goodput: blackhole seed %lu        \r", seed);
    f.blackhole.push_back(RunGoodput(0, seed, true, f.setup));
  }
  if (Progress(o)) std::fprintf(stderr, "%60s\r", "");
  f.wall_s = SecondsSince(wall0);
  return f;
}

// Per-seed ratio to the lossless run of the same seed.
std::vector<double> Ratios(const GoodputFigure& f, size_t li, double GoodputRun::*field) {
  std::vector<double> v;
  for (size_t s = 0; s < f.seeds.size(); s++) {
    const double base = f.runs[0][s].*field;
    v.push_back(base > 0 ? f.runs[li][s].*field / base : 0);
  }
  return v;
}

std::vector<double> Field(const std::vector<GoodputRun>& runs, double GoodputRun::*field) {
  std::vector<double> v;
  for (const GoodputRun& r : runs) v.push_back(r.*field);
  return v;
}

// @p sep goes between the fabric and the workload: "\n# " in text, "; " in JSON.
std::string SetupLine(const GoodputFigure& f, const char* sep) {
  char b[512];
  std::snprintf(b, sizeof(b),
                "2 hosts on different leaves of a 2-leaf x %u-spine fabric, every link %lu Gbit/s "
                "500 ns%s1 connection, %u paths; %u QPs x %u outstanding 1 MiB WRITEs; "
                "warm-up %.0f ms, %.0f ms measured (simulated); %zu seeds",
                kSpines, kLinkGbps, sep, kNumPaths, f.setup.qps, f.setup.depth,
                static_cast<double>(f.setup.warmup_ps) / sim::kPsPerMs,
                static_cast<double>(f.setup.measure_ps) / sim::kPsPerMs, f.seeds.size());
  return b;
}

// Ratios of a blackhole run's field to the same seed's lossless run.
std::vector<double> BlackholeRatios(const GoodputFigure& f, double GoodputRun::*field) {
  std::vector<double> v;
  for (size_t s = 0; s < f.blackhole.size(); s++) {
    const double base = f.runs[0][s].*field;
    v.push_back(base > 0 ? f.blackhole[s].*field / base : 0);
  }
  return v;
}

void PrintGoodputText(const GoodputFigure& f) {
  const double lag_gbps = static_cast<double>(f.setup.qps * f.setup.depth) * kMsgBytes * 8 /
                          (static_cast<double>(f.setup.measure_ps) * 1e-3);
  std::printf("== Figure 1: goodput vs random loss ==\n");
  std::printf("# %s\n", SetupLine(f, "\n# ").c_str());
  std::printf(
      "# Loss applied independently on every link (host and fabric, both directions): a data\n"
      "# packet or an ACK crosses %u lossy links, 'e2e' = 1-(1-p)^%u. Goodput = payload of "
      "completed\n# WRITEs / measured time; line-rate ceiling for 4 KiB packets %.2f Gbit/s. "
      "Completions come in\n# bursts: a window is uncertain by at most +-%.1f Gbit/s (the "
      "outstanding WRITEs over the window).\n# 'new' = first transmissions x 4 KiB / time, "
      "the rate seen at the sender (lags by <= 2 MiB).\n# ratio = goodput / the same seed's "
      "lossless goodput; goals are judged on the mean ratio.\n",
      kLinksPerDirection, kLinksPerDirection, LineRateCeilingGbps(), lag_gbps);
  std::printf("%9s %6s | %7s %7s %15s | %7s | %6s %13s | %6s %9s %8s %5s | %s\n", "loss/link",
              "e2e", "Gbit/s", "median", "[min .. max]", "new", "ratio", "[min .. max]", "retx%",
              "sack-lost", "rto-lost", "pfail", "goal");
  for (size_t li = 0; li < f.losses.size(); li++) {
    const Spread g = SpreadOf(Field(f.runs[li], &GoodputRun::gbps));
    const Spread ng = SpreadOf(Field(f.runs[li], &GoodputRun::new_gbps));
    const Spread ra = SpreadOf(Ratios(f, li, &GoodputRun::gbps));
    uint64_t pkts = 0, retx = 0, ls = 0, lr = 0, pf = 0, errs = 0;
    for (const GoodputRun& r : f.runs[li]) {
      pkts += r.data_pkts;
      retx += r.retx;
      ls += r.lost_sack;
      lr += r.lost_rto;
      pf += r.path_failures;
      errs += r.wc_errors + r.conn_failures;
    }
    const double n = static_cast<double>(f.runs[li].size());
    std::string goal = "-";
    if (const GoodputGoal* gg = GoalFor(f.losses[li])) {
      char b[64];
      std::snprintf(b, sizeof(b), ">= %.2f %s", gg->min_ratio,
                    ra.mean >= gg->min_ratio ? "PASS" : "MISS");
      goal = b;
    }
    if (errs != 0) goal += " (ERRORS: failed completions or connections)";
    std::printf(
        "%7.1f %% %4.1f %% | %7.2f %7.2f [%5.2f..%5.2f] | %7.2f | %6.3f [%5.3f..%5.3f] | "
        "%6.2f %9.0f %8.0f %5.1f | %s\n",
        f.losses[li] * 100, EndToEndLoss(f.losses[li]) * 100, g.mean, g.median, g.min, g.max,
        ng.mean, ra.mean, ra.min, ra.max,
        pkts == 0 ? 0 : 100.0 * static_cast<double>(retx) / static_cast<double>(pkts),
        static_cast<double>(ls) / n, static_cast<double>(lr) / n, static_cast<double>(pf) / n,
        goal.c_str());
  }
  std::printf(
      "# retx%%: retransmitted / data packets sent; sack-lost, rto-lost, pfail: losses "
      "found by SACK, by timeout,\n# and path failures, per run (means)\n\n");

  std::printf("== Figure 1b: one leaf-spine link blackholed at half time ==\n");
  std::printf("# %s\n", SetupLine(f, "\n# ").c_str());
  std::printf(
      "# No random loss. At the middle of the measured window the leaf0-spine link that carried "
      "the\n# most data frames is blackholed in both directions, without routing reconvergence. "
      "data%%/ack%%:\n# its share of leaf0's uplink frames (A's data) and downlink frames (B's "
      "ACKs) before. 'after' =\n# second half, +-%.1f Gbit/s; ratio = after / the same seed's "
      "lossless run over the same window\n# (identical to it until the failure). 'new' columns: "
      "first transmissions, as in figure 1.\n",
      2 * static_cast<double>(f.setup.qps * f.setup.depth) * kMsgBytes * 8 /
          (static_cast<double>(f.setup.measure_ps) * 1e-3));
  std::printf("%4s %5s %5s %5s | %7s %7s %6s | %7s %7s %6s | %9s %6s %8s %6s\n", "seed", "spine",
              "data%", "ack%", "before", "after", "ratio", "new 1ms", "new aft", "ratio",
              "path-fail", "probes", "rto-lost", "active");
  const std::vector<double> ratios = BlackholeRatios(f, &GoodputRun::gbps_second);
  const std::vector<double> new_ratios = BlackholeRatios(f, &GoodputRun::new_gbps_second);
  for (size_t s = 0; s < f.blackhole.size(); s++) {
    const GoodputRun& r = f.blackhole[s];
    uint32_t active = 0;
    for (const tr::PathInfo& p : r.paths) active += p.active;
    std::printf(
        "%4lu %5d %4.1f%% %4.1f%% | %7.2f %7.2f %6.3f | %7.2f %7.2f %6.3f | %9lu %6lu "
        "%8lu %4u/%u%s\n",
        r.seed, r.spine, r.data_share * 100, r.reverse_share * 100, r.gbps_first, r.gbps_second,
        ratios[s], r.new_gbps_second_1ms, r.new_gbps_second, new_ratios[s], r.path_failures,
        r.probes, r.lost_rto, active, static_cast<unsigned>(r.paths.size()),
        r.wc_errors + r.conn_failures != 0 ? " ERRORS" : "");
  }
  const Spread rs = SpreadOf(ratios), nrs = SpreadOf(new_ratios);
  std::printf(
      "# after the failure: goodput %.2f Gbit/s, ratio to lossless %.3f [%.3f .. %.3f]\n"
      "# new data: %.2f Gbit/s in the first ms, %.2f over the second half, ratio %.3f "
      "[%.3f .. %.3f]\n",
      SpreadOf(Field(f.blackhole, &GoodputRun::gbps_second)).mean, rs.mean, rs.min, rs.max,
      SpreadOf(Field(f.blackhole, &GoodputRun::new_gbps_second_1ms)).mean,
      SpreadOf(Field(f.blackhole, &GoodputRun::new_gbps_second)).mean, nrs.mean, nrs.min, nrs.max);
  for (const GoodputRun& r : f.blackhole) {
    bool dead = false;
    for (const tr::PathInfo& p : r.paths) dead |= !p.active;
    if (&r != &f.blackhole[0] && !dead) continue;
    std::printf("# host A's paths at the end of the seed-%lu run (Engine::GetPaths):\n", r.seed);
    std::printf("%6s %8s %7s %9s %9s %8s %8s %8s\n", "path", "src_port", "active", "failures",
                "tx_pkts", "retx", "lost", "srtt_us");
    for (const tr::PathInfo& p : r.paths) {
      std::printf("%6u %8u %7s %9lu %9lu %8lu %8lu %8.1f\n", p.path_id, p.src_port,
                  p.active ? "yes" : "no", p.failures, p.tx_pkts, p.retx_pkts, p.lost_pkts,
                  static_cast<double>(p.srtt_ns) / 1000);
    }
    if (&r != &f.blackhole[0]) break;  // the first seed, and the first with a dead path
  }
  std::printf("# (%.1f s wall for figure 1)\n\n", f.wall_s);
}

void RunJson(Json& j, const GoodputRun& r) {
  j.Open(nullptr, '{');
  j.Int("seed", r.seed);
  j.Num("loss_per_link", r.loss);
  j.Num("gbps", r.gbps);
  j.Num("gbps_first_half", r.gbps_first);
  j.Num("gbps_second_half", r.gbps_second);
  j.Num("gbps_second_half_first_ms", r.gbps_second_1ms);
  j.Num("gbps_second_half_rest", r.gbps_second_rest);
  j.Num("new_gbps", r.new_gbps);
  j.Num("new_gbps_first_half", r.new_gbps_first);
  j.Num("new_gbps_second_half", r.new_gbps_second);
  j.Num("new_gbps_second_half_first_ms", r.new_gbps_second_1ms);
  j.Int("msgs", r.msgs);
  j.Int("data_pkts", r.data_pkts);
  j.Int("retransmits", r.retx);
  j.Int("lost_sack", r.lost_sack);
  j.Int("lost_rto", r.lost_rto);
  j.Int("path_failures", r.path_failures);
  j.Int("probes", r.probes);
  j.Int("conn_failures", r.conn_failures);
  j.Int("wc_errors", r.wc_errors);
  if (!r.first_error.empty()) j.Str("first_error", r.first_error);
  if (r.blackhole) {
    j.Int("spine", static_cast<uint64_t>(r.spine));
    j.Num("data_share", r.data_share);
    j.Num("reverse_share", r.reverse_share);
    j.Open("paths", '[');
    for (const tr::PathInfo& p : r.paths) {
      j.Open(nullptr, '{');
      j.Int("path", p.path_id);
      j.Int("src_port", p.src_port);
      j.Bool("active", p.active);
      j.Int("failures", p.failures);
      j.Int("tx_pkts", p.tx_pkts);
      j.Int("retx_pkts", p.retx_pkts);
      j.Int("lost_pkts", p.lost_pkts);
      j.Close('}');
    }
    j.Close(']');
  }
  j.Open("bins_gbps", '[');
  for (double v : r.bins_gbps) j.Num(nullptr, v);
  j.Close(']');
  j.Num("wall_s", r.wall_s);
  j.Close('}');
}

void GoodputJson(Json& j, const GoodputFigure& f) {
  j.Open("goodput", '{');
  j.Str("setup", SetupLine(f, "; "));
  j.Num("warmup_ms", static_cast<double>(f.setup.warmup_ps) / sim::kPsPerMs);
  j.Num("measure_ms", static_cast<double>(f.setup.measure_ps) / sim::kPsPerMs);
  j.Num("bin_us", static_cast<double>(f.setup.bin_ps) / sim::kPsPerUs);
  j.Open("points", '[');
  for (size_t li = 0; li < f.losses.size(); li++) {
    j.Open(nullptr, '{');
    j.Num("loss_per_link", f.losses[li]);
    j.Num("loss_end_to_end", EndToEndLoss(f.losses[li]));
    j.SpreadObj("gbps", SpreadOf(Field(f.runs[li], &GoodputRun::gbps)));
    j.SpreadObj("new_gbps", SpreadOf(Field(f.runs[li], &GoodputRun::new_gbps)));
    const Spread ra = SpreadOf(Ratios(f, li, &GoodputRun::gbps));
    j.SpreadObj("ratio_to_lossless", ra);
    if (const GoodputGoal* gg = GoalFor(f.losses[li])) {
      j.Num("goal_min_ratio", gg->min_ratio);
      j.Bool("goal_met", ra.mean >= gg->min_ratio);
    }
    j.Open("runs", '[');
    for (const GoodputRun& r : f.runs[li]) RunJson(j, r);
    j.Close(']');
    j.Close('}');
  }
  j.Close(']');
  j.Open("blackhole", '{');
  j.SpreadObj("after_ratio_to_lossless", SpreadOf(BlackholeRatios(f, &GoodputRun::gbps_second)));
  j.SpreadObj("after_new_ratio_to_lossless",
              SpreadOf(BlackholeRatios(f, &GoodputRun::new_gbps_second)));
  j.SpreadObj("after_gbps", SpreadOf(Field(f.blackhole, &GoodputRun::gbps_second)));
  j.Open("runs", '[');
  for (const GoodputRun& r : f.blackhole) RunJson(j, r);
  j.Close(']');
  j.Close('}');
  j.Num("wall_s", f.wall_s);
  j.Close('}');
}

}  // namespace

void GoodputFigureMain(const Options& o, Json& j) {
  const GoodputFigure f = RunGoodputFigure(o);
  if (o.json) {
    GoodputJson(j, f);
  } else {
    PrintGoodputText(f);
    std::fflush(stdout);
  }
}

}  // namespace metaroce::bench
