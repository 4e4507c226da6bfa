/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Figure 2 of bench_transport: engine cost on one core, next to the codec,
// copies and CRC alone; and the idle-scaling rows.

#include <algorithm>
#include <string>
#include <vector>

#include "bench_pair.h"
#include "mr_crc32c.h"

namespace metaroce::bench {
namespace {

// =====================================================================
// Figure 2: engine cost
// =====================================================================

// Issue #10's targets, two engines on one core: 100 ns per small packet;
// 4 KiB packets at >= 100 Gbit/s per core per side (their CRC and copies
// cannot take 100 ns).
constexpr double kCostGoalSmallPps = 10e6;
constexpr double kCostGoal4kPps = 1.6e6;

double GoalPps(const CostRow& r) { return r.payload <= 64 ? kCostGoalSmallPps : kCostGoal4kPps; }

// The measured rounds of a --rounds row, in a function of their own so that
// devtools/callgrind-cost.sh counts its instructions alone
// (--toggle-collect) and dumps them per row (--dump-after, which matches a
// name prefix: no leading wildcard).
template <typename Step>
__attribute__((noinline)) void MeasuredRounds(Step& step, long rounds) {
  for (long i = 0; i < rounds; i++) step();
}

}  // namespace

CostRow RunCost(const char* name, uint32_t msg_bytes, uint32_t qps, uint32_t depth,
                uint32_t signal_every, double seconds, BusyState* busy, uint32_t conns,
                uint16_t paths) {
  CostRow r;
  r.conns = conns;
  r.paths = paths;
  r.name = name;
  r.msg_bytes = msg_bytes;
  r.payload = std::min<uint32_t>(msg_bytes, 4096);
  r.qps = qps;
  r.depth = depth;
  r.signal_every = signal_every;
  Pair p(paths);
  for (uint32_t q = 0; q < qps; q++) p.AddQpPair(std::max<uint32_t>(256, depth));
  std::vector<uint8_t> src(msg_bytes, 0x6b);
  std::vector<uint8_t> dst(size_t{qps} * depth * msg_bytes);
  const tr::MrInfo mr_a = p.RegA(src);
  const tr::MrInfo mr_b = p.RegB(dst);
  p.Connect();
  p.AddIdleConnections(conns - 1);

  std::vector<uint64_t> posted(qps), completed(qps);
  uint64_t msgs = 0;
  auto post = [&](uint32_t q) {
    while (posted[q] - completed[q] < depth) {
      tr::SendWr wr;
      wr.wr_id = posted[q];
      wr.opcode = tr::Opcode::kWrite;
      wr.flags = (posted[q] + 1) % signal_every == 0 ? tr::send_flags::kSignaled : 0;
      wr.sg.push_back({Addr(src), msg_bytes, mr_a.lkey});
      wr.remote_addr = Addr(dst) + (uint64_t{q} * depth + posted[q] % depth) * msg_bytes;
      wr.rkey = mr_b.rkey;
      MustOk(p.a().PostSend(p.now(), p.qa()[q], wr), "PostSend");
      posted[q]++;
    }
  };
  tr::Completion wc[64];
  auto step = [&]() {
    p.Round();
    size_t n;
    while ((n = p.a().PollCq(p.cq_a(), wc)) > 0) {
      for (size_t k = 0; k < n; k++) {
        if (wc[k].status != tr::WcStatus::kSuccess) {
          Die(std::string("engine cost: WRITE failed: ") + tr::WcStatusName(wc[k].status));
        }
        const auto it = std::find(p.qa().begin(), p.qa().end(), wc[k].qp_num);
        const size_t q = static_cast<size_t>(it - p.qa().begin());
        msgs += wc[k].wr_id + 1 - completed[q];
        completed[q] = wc[k].wr_id + 1;
      }
    }
    for (uint32_t q = 0; q < qps; q++) post(q);
  };
  for (uint32_t q = 0; q < qps; q++) post(q);
  // Warm up: caches, message pools and deques reach their steady size.
  const Clock::time_point w0 = Clock::now();
  if (g_cost_rounds > 0) {
    for (int i = 0; i < 256; i++) step();
  } else {
    while (SecondsSince(w0) < std::min(0.05, seconds / 4)) {
      for (int i = 0; i < 64; i++) step();
    }
  }
  const tr::EngineStats sa0 = p.a().stats();
  const tr::EngineStats sb0 = p.b().stats();
  const uint64_t msgs0 = msgs;
  const Clock::time_point t0 = Clock::now();
  const double c0 = ThreadCpuSeconds();
  double el = 0;
  if (g_cost_rounds > 0) {
    MeasuredRounds(step, g_cost_rounds);
    el = SecondsSince(t0);
  } else {
    do {
      for (int i = 0; i < 64; i++) step();
      el = SecondsSince(t0);
    } while (el < seconds);
  }
  const double cpu = ThreadCpuSeconds() - c0;
  const tr::EngineStats& sa1 = p.a().stats();
  const tr::EngineStats& sb1 = p.b().stats();
  r.seconds = el;
  r.cpu_seconds = cpu;
  r.data_pkts = sa1.tx_data_pkts - sa0.tx_data_pkts;
  r.retx = sa1.tx_retransmits - sa0.tx_retransmits;
  r.acks = sb1.tx_acks - sb0.tx_acks;
  r.frames = (sa1.tx_packets - sa0.tx_packets) + (sb1.tx_packets - sb0.tx_packets);
  r.msgs = msgs - msgs0;
  r.pps = static_cast<double>(r.data_pkts) / cpu;
  r.ns_per_pkt = r.data_pkts == 0 ? 0 : cpu * 1e9 / static_cast<double>(r.data_pkts);
  r.acks_per_pkt =
      r.data_pkts == 0 ? 0 : static_cast<double>(r.acks) / static_cast<double>(r.data_pkts);
  r.payload_gbps = static_cast<double>(r.msgs) * msg_bytes * 8 / cpu / 1e9;
  if (busy != nullptr) FillBusy(p, busy);
  return r;
}

namespace {

struct PeerRow {
  std::string name;
  double ops = 0, ns_per_op = 0;
};

// Runs @p op (one operation per call, given its sequence number) in batches
// of 256 until @p seconds of wall time passed; rates per CPU second.
template <typename Op>
PeerRow TimePeer(const char* name, double seconds, Op&& op) {
  PeerRow r;
  r.name = name;
  uint64_t ops = 0;
  const Clock::time_point t0 = Clock::now();
  const double c0 = ThreadCpuSeconds();
  do {
    for (int i = 0; i < 256; i++) op(ops++);
  } while (SecondsSince(t0) < seconds);
  const double cpu = ThreadCpuSeconds() - c0;
  r.ops = static_cast<double>(ops) / cpu;
  r.ns_per_op = cpu * 1e9 / static_cast<double>(ops);
  return r;
}

// wire::EncodeFrame + wire::ParseFrame of one packet, payload already in place
// as the engine builds it (SendChunk gathers into the slot, then encodes).
PeerRow RunCodec(const char* name, bool ack, uint32_t payload, double seconds) {
  wire::FrameInfo f;
  f.eth_src = wire::MacAddr{{2, 0, 0, 0, 0, 1}};
  f.eth_dst = wire::MacAddr{{2, 0, 0, 0, 0, 2}};
  f.src = wire::IpAddr::V4(10, 0, 0, 1);
  f.dst = wire::IpAddr::V4(10, 0, 0, 2);
  f.dscp = config::kDscp;
  f.src_port = 50000;
  std::vector<uint8_t> buf(Pair::kSlotBytes);
  wire::Packet p;
  p.dst_conn_id = 0x1234567;
  p.path_id = 3;
  if (ack) {
    p.type = wire::PacketType::kAck;
    p.ack.rx_pkts = 1;
    p.ack.num_stream_acks = 1;
    p.ack.stream_acks[0] = {5, 1};
    f.ecn = wire::Ecn::kNotEct;
  } else {
    p.type = wire::PacketType::kWrite;
    p.data.stream_id = 5;
    p.data.src_stream = 6;
    p.data.msg_len = payload;
    p.data.rkey = 0x99;
    p.data.va = 0x10000;
    const size_t pos = wire::EncapBytes(f) + wire::PayloadOffset(p.type);
    for (uint32_t i = 0; i < payload; i++) buf[pos + i] = static_cast<uint8_t>(i * 7);
    p.payload = {buf.data() + pos, payload};
  }
  wire::ParseOptions opt;
  uint64_t sink = 0;
  auto one = [&](uint64_t seq) {
    const uint32_t i = static_cast<uint32_t>(seq);
    if (ack) {
      p.ack.cum_psn = i;
      p.ack.echo_ts_ns = i;
    } else {
      p.data.psn = p.data.una_psn = p.data.tx_ts_ns = i;
    }
    const absl::StatusOr<size_t> n = wire::EncodeFrame(f, p, buf);
    if (!n.ok()) Die(std::string("EncodeFrame: ") + std::string(n.status().message()));
    wire::FrameInfo info;
    wire::Packet out;
    const wire::ParseError e = wire::ParseFrame({buf.data(), *n}, opt, &info, &out);
    if (e != wire::ParseError::kOk) Die(std::string("ParseFrame: ") + wire::ParseErrorName(e));
    sink += ack ? out.ack.cum_psn : out.data.psn;
  };
  for (uint32_t i = 0; i < 4096; i++) one(i);  // warm-up
  const PeerRow r = TimePeer(name, seconds, one);
  if (sink == 1) std::fputc(' ', stderr);  // keep the work observable
  return r;
}

// The two payload copies the engine makes per data packet: gather from the
// source into the slot (SendChunk) and place at the target (HandleRequest).
PeerRow RunCopies(const char* name, uint32_t payload, size_t target_bytes, double seconds) {
  std::vector<uint8_t> src(target_bytes, 1), slot(payload), dst(target_bytes);
  size_t off = 0;
  return TimePeer(name, seconds, [&](uint64_t) {
    std::memcpy(slot.data(), src.data() + off, payload);
    asm volatile("" : : "r"(slot.data()) : "memory");
    std::memcpy(dst.data() + off, slot.data(), payload);
    asm volatile("" : : "r"(dst.data()) : "memory");
    off += payload;
    if (off + payload > target_bytes) off = 0;
  });
}

// The CRC32C the codec computes twice per data packet (EncodeDatagram,
// ParseDatagram), over the MetaRoCE header and a 4 KiB payload.
PeerRow RunCrc(const char* name, double seconds) {
  std::vector<uint8_t> buf(wire::PayloadOffset(wire::PacketType::kWrite) + 4096, 0x3c);
  uint32_t sink = 0;
  const PeerRow r = TimePeer(name, seconds, [&](uint64_t seq) {
    buf[0] = static_cast<uint8_t>(seq);
    sink ^= wire::Crc32c(buf.data(), buf.size());
    sink ^= wire::Crc32c(buf.data(), buf.size());
  });
  if (sink == 1) std::fputc(' ', stderr);  // keep the work observable
  return r;
}

constexpr double kIdleGrowthGoal = 1.10;  // 1 busy among 4096 connections vs among 1

struct CostFigure {
  double seconds = 0;
  std::vector<CostRow> rows;
  std::vector<CostRow> idle;   ///< one busy connection among 1, 64, 4096
  std::vector<CostRow> paths;  ///< one busy connection of kPathScaling paths
  PeerRow codec_64, codec_4k, codec_ack, copy_64, copy_4k, crc_4k;
  double wall_s = 0;
};

CostFigure RunCostFigure(const Options& o) {
  const Clock::time_point wall0 = Clock::now();
  CostFigure f;
  f.seconds = o.seconds != 0 ? o.seconds : (o.quick ? 0.2 : 1.0);
  if (Progress(o)) std::fprintf(stderr, "  engine cost...\r");
  f.rows.push_back(RunCost("64 B WRITEs (1 pkt each)", 64, 4, 128, 16, f.seconds));
  f.rows.push_back(RunCost("4 KiB WRITEs (1 pkt each)", 4096, 4, 128, 16, f.seconds));
  f.rows.push_back(RunCost("1 MiB WRITEs (4 KiB pkts)", kMsgBytes, 4, 2, 1, f.seconds));
  for (const uint32_t conns : {1u, 64u, 4096u}) {
    if (Progress(o)) std::fprintf(stderr, "  engine cost, %u connections...\r", conns);
    const std::string name = "64 B WRITEs, 1 of " + std::to_string(conns) + " conns";
    f.idle.push_back(RunCost(name.c_str(), 64, 4, 128, 16, f.seconds, nullptr, conns));
  }
  for (const uint16_t paths : kPathScaling) {
    if (Progress(o)) std::fprintf(stderr, "  engine cost, %u paths...\r", paths);
    const std::string name = "64 B WRITEs, " + std::to_string(paths) + " paths";
    f.paths.push_back(RunCost(name.c_str(), 64, 4, 128, 16, f.seconds, nullptr, 1, paths));
  }
  const double ps = f.seconds / 2;
  f.codec_64 = RunCodec("EncodeFrame+ParseFrame, WRITE 64 B", false, 64, ps);
  f.codec_4k = RunCodec("EncodeFrame+ParseFrame, WRITE 4 KiB", false, 4096, ps);
  f.codec_ack = RunCodec("EncodeFrame+ParseFrame, ACK", true, 0, ps);
  f.copy_64 = RunCopies("2 x memcpy 64 B (gather + place)", 64, 64 * 512, ps);
  f.copy_4k = RunCopies("2 x memcpy 4 KiB (gather + place)", 4096, 8u << 20, ps);
  f.crc_4k = RunCrc("2 x Crc32c over a 4 KiB WRITE (encode + verify)", ps);
  if (Progress(o)) std::fprintf(stderr, "%60s\r", "");
  f.wall_s = SecondsSince(wall0);
  return f;
}

struct Breakdown {
  double engine_ns = 0, codec_ns = 0, copy_ns = 0, rest_ns = 0;
};

// What the peers would explain if costs simply added up. They do not quite:
// other work overlaps the CRC and the copies (rest < 0).
Breakdown BreakdownOf(const CostFigure& f, const CostRow& r) {
  Breakdown b;
  const bool small = r.payload <= 64;
  b.engine_ns = r.ns_per_pkt;
  b.codec_ns = (small ? f.codec_64 : f.codec_4k).ns_per_op + r.acks_per_pkt * f.codec_ack.ns_per_op;
  b.copy_ns = (small ? f.copy_64 : f.copy_4k).ns_per_op;
  b.rest_ns = b.engine_ns - b.codec_ns - b.copy_ns;
  return b;
}

// A row of a scaling series, with its cost against the series' first row.
void PrintScalingRow(const CostRow& r, double ratio, const char* verdict) {
  std::printf("%-28s %4u %5u | %8.2f M %8.1f %8.3f %7.2f %5.2f | %.2f x%s\n", r.name.c_str(), r.qps,
              r.depth, r.pps / 1e6, r.ns_per_pkt, r.acks_per_pkt, r.payload_gbps,
              r.cpu_seconds / r.seconds, ratio, verdict);
}

// A scaling series: each row's connections and paths and its cost against @p base's
// (idle scaling also says whether the goal holds).
void ScalingJson(Json& j, const char* key, const std::vector<CostRow>& rows, const CostRow& base,
                 bool idle_goal) {
  j.Open(key, '[');
  for (const CostRow& r : rows) {
    const double ratio = r.ns_per_pkt / base.ns_per_pkt;
    j.Open(nullptr, '{');
    j.Int("connections", r.conns);
    j.Int("paths", r.paths);
    j.Int("data_pkts", r.data_pkts);
    j.Num("cpu_seconds", r.cpu_seconds);
    j.Num("ns_per_pkt", r.ns_per_pkt);
    j.Num("acks_per_pkt", r.acks_per_pkt);
    j.Num("vs_first", ratio);
    if (idle_goal) j.Bool("goal_met", ratio <= kIdleGrowthGoal);
    j.Close('}');
  }
  j.Close(']');
}

void PrintCostText(const CostFigure& f) {
  std::printf("== Figure 2: engine cost on one core ==\n");
  std::printf(
      "# two Engines in one thread, no simulator: A's PollTx frames -> B's OnFrame, B's ACKs -> "
      "A's\n# OnFrame, A's CQ polled and WRITEs re-posted (one signaled in 16 for 1-packet "
      "WRITEs); synthetic\n# clock +%lu ns per round, %u paths, 32 frames per PollTx, IPv4 "
      "Ethernet framing; %.2f s wall per row.\n# A data packet costs both engines' work (send, "
      "receive, its share of ACKs, verbs); goal >= %.0f M/s\n# at 64 B, >= %.1f M/s with 4 KiB "
      "packets. Rates are per CPU second of this thread\n# (CLOCK_THREAD_CPUTIME_ID): time the "
      "machine gives to other processes does not count; 'cpu' =\n# CPU time / wall time of the "
      "row (1.00: the core was ours).\n",
      kStepNs, kNumPaths, f.seconds, kCostGoalSmallPps / 1e6, kCostGoal4kPps / 1e6);
  std::printf("%-28s %4s %5s | %10s %8s %8s %7s %5s | %s\n", "workload", "QPs", "depth",
              "data pkt/s", "ns/pkt", "ACKs/pkt", "Gbit/s", "cpu", "goal");
  for (const CostRow& r : f.rows) {
    std::printf("%-28s %4u %5u | %8.2f M %8.1f %8.3f %7.2f %5.2f | %s%s\n", r.name.c_str(), r.qps,
                r.depth, r.pps / 1e6, r.ns_per_pkt, r.acks_per_pkt, r.payload_gbps,
                r.cpu_seconds / r.seconds, r.pps >= GoalPps(r) ? "PASS" : "MISS",
                r.retx != 0 ? " (retransmissions seen: harness problem)" : "");
  }
  std::printf(
      "# idle scaling: the same 64 B workload on one connection while each engine holds\n# "
      "conns - 1 more, idle (%u paths and one QP each, peers silent); goal: <= %.2f x the cost "
      "of 1\n",
      kNumPaths, kIdleGrowthGoal);
  for (const CostRow& r : f.idle) {
    const double ratio = r.ns_per_pkt / f.idle[0].ns_per_pkt;
    PrintScalingRow(r, ratio, ratio <= kIdleGrowthGoal ? " PASS" : " MISS");
  }
  std::printf(
      "# path scaling: the same 64 B workload on one connection of more paths (the row of 1 of 1 "
      "conns\n# has %u); what grows is per-path work: ACKs (each path is acknowledged on its "
      "own) and scans\n",
      kNumPaths);
  for (const CostRow& r : f.paths) PrintScalingRow(r, r.ns_per_pkt / f.idle[0].ns_per_pkt, "");
  std::printf("# peers measured in the same run, same core:\n");
  std::printf("%-48s | %10s %8s\n", "peer", "ops/s", "ns/op");
  for (const PeerRow* pr :
       {&f.codec_64, &f.codec_4k, &f.codec_ack, &f.copy_64, &f.copy_4k, &f.crc_4k}) {
    std::printf("%-48s | %8.2f M %8.1f\n", pr->name.c_str(), pr->ops / 1e6, pr->ns_per_op);
  }
  std::printf(
      "# per data packet, engine vs the peers alone (codec = data packet + ACKs/pkt x ACK; "
      "rest = what they\n# leave; negative when other work overlaps the CRC and the "
      "copies):\n");
  bool small_missed = false, big_missed = false;
  for (const CostRow& r : f.rows) {
    const Breakdown b = BreakdownOf(f, r);
    std::printf("#   %-26s %7.1f ns: codec %6.1f (%3.0f%%), copies %6.1f (%3.0f%%), rest %6.1f\n",
                r.name.c_str(), b.engine_ns, b.codec_ns, 100 * b.codec_ns / b.engine_ns, b.copy_ns,
                100 * b.copy_ns / b.engine_ns, b.rest_ns);
    (r.payload <= 64 ? small_missed : big_missed) |= r.pps < GoalPps(r);
  }
  if (small_missed) {
    const Breakdown small = BreakdownOf(f, f.rows[0]);
    std::printf(
        "note: MISS at 64 B: %.0f M/s leaves %.0f ns per packet for both engines; the codec alone "
        "takes %.0f ns and engine logic ~%.0f ns more: see the profile in "
        "doc/transport-figures.md\n",
        kCostGoalSmallPps / 1e6, 1e9 / kCostGoalSmallPps, small.codec_ns, small.rest_ns);
  }
  if (big_missed) {
    std::printf(
        "note: MISS with 4 KiB packets: %.1f M/s leaves %.0f ns per packet; CRC32C alone takes "
        "%.0f ns (ISA-L crc32_iscsi, twice per packet) and the copies %.0f ns\n",
        kCostGoal4kPps / 1e6, 1e9 / kCostGoal4kPps, f.crc_4k.ns_per_op, f.copy_4k.ns_per_op);
  }
  std::printf("# (%.1f s wall for figure 2)\n\n", f.wall_s);
}

void CostJson(Json& j, const CostFigure& f) {
  j.Open("cost", '{');
  j.Num("seconds_per_row", f.seconds);
  j.Int("clock_step_ns", kStepNs);
  j.Open("rows", '[');
  for (const CostRow& r : f.rows) {
    const Breakdown b = BreakdownOf(f, r);
    j.Open(nullptr, '{');
    j.Str("workload", r.name);
    j.Int("msg_bytes", r.msg_bytes);
    j.Int("payload_bytes", r.payload);
    j.Int("qps", r.qps);
    j.Int("depth", r.depth);
    j.Int("signal_every", r.signal_every);
    j.Num("seconds", r.seconds);
    j.Num("cpu_seconds", r.cpu_seconds);
    j.Int("data_pkts", r.data_pkts);
    j.Int("acks", r.acks);
    j.Int("frames", r.frames);
    j.Int("retransmits", r.retx);
    j.Num("data_pps", r.pps);
    j.Num("ns_per_pkt", r.ns_per_pkt);
    j.Num("acks_per_pkt", r.acks_per_pkt);
    j.Num("payload_gbps", r.payload_gbps);
    j.Num("codec_ns", b.codec_ns);
    j.Num("copy_ns", b.copy_ns);
    j.Num("rest_ns", b.rest_ns);
    j.Num("goal_pps", GoalPps(r));
    j.Bool("goal_met", r.pps >= GoalPps(r));
    j.Close('}');
  }
  j.Close(']');
  ScalingJson(j, "idle_scaling", f.idle, f.idle[0], true);
  ScalingJson(j, "path_scaling", f.paths, f.idle[0], false);
  j.Open("peers", '[');
  for (const PeerRow* pr :
       {&f.codec_64, &f.codec_4k, &f.codec_ack, &f.copy_64, &f.copy_4k, &f.crc_4k}) {
    j.Open(nullptr, '{');
    j.Str("peer", pr->name);
    j.Num("ops_per_s", pr->ops);
    j.Num("ns_per_op", pr->ns_per_op);
    j.Close('}');
  }
  j.Close(']');
  j.Num("wall_s", f.wall_s);
  j.Close('}');
}

}  // namespace

void CostFigureMain(const Options& o, Json& j) {
  const CostFigure f = RunCostFigure(o);
  if (o.json) {
    CostJson(j, f);
  } else {
    PrintCostText(f);
    std::fflush(stdout);
  }
}

}  // namespace metaroce::bench
