/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// libFuzzer target for a live engine pair. Engines A and B (Framing::kUdp,
// reproducible seeds) talk over a wire this harness holds; the input is a
// program of operations: advance time, deliver / drop / duplicate / reorder
// queued packets, post work requests and receives (valid, zero-length, bad
// keys, out of bounds, misaligned atomics), destroy QPs, deregister regions,
// and inject hostile packets built with the wire codec: forged ACK / SACK /
// NAK / probe / data / connection packets with guessed or real ids, from the
// peer's address or an off-path host, replays and re-sealed mutations of real
// packets. After the program a drain phase (perfect wire, plenty of simulated
// time) must complete every work request.
//
// Invariants, checked on every input (abort on violation):
//  - every engine memory access lies in a region registered at that moment;
//    every write lands only where an outstanding operation expects bytes, and
//    only the bytes expected there; an atomic executes once;
//  - a work request completed with success had its effect: WRITE bytes at the
//    destination, SEND bytes in the matching receive (which completed with
//    success), READ bytes equal to the source, atomic result equal to the value
//    the responder's word held; a receive completed with success holds the
//    sender's bytes, length and immediate; a work request the responder must
//    refuse (bad key, bounds, permission) or with an invalid local buffer
//    never succeeds;
//  - completions per QP in posting order, each at most once, only for posted
//    wr_ids;
//  - EngineStats agree with the packets handed in and collected, and the
//    engine's in-flight and receive-state accounting adds up;
//  - nothing hangs: the drain ends with every work request complete.
// A forgery the engine cannot tell from its peer (real connection and stream
// ids, valid fields) may legitimately complete work without its effect, or
// desynchronize a stream for good; once one is accepted the effect checks and
// the drain's verdict stop for that input, the others go on.
//
// MR_FUZZ_TRACE=1 prints the program as it runs (decoded operations, packets
// and completions): the way to read a crashing input.

#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine_peer.h"
#include "mr_engine.h"
#include "mr_wire.h"

namespace metaroce::transport {
namespace {

using wire::PacketClass;
using wire::PacketType;

constexpr TimeNs kUs = 1'000;
constexpr TimeNs kMs = 1'000'000;
constexpr TimeNs kStartNs = 1'500 * kMs;  // inside a cookie slot, away from time 0
constexpr TimeNs kHopNs = 1 * kUs;        // wire latency when the harness delivers everything
/** Drain budget: longer than the largest RNR delay (655 ms) plus connection failure and probes. */
constexpr TimeNs kDrainNs = 2'000 * kMs;
/** After an accepted forgery nothing is owed: a short drain, past connection failure. */
constexpr TimeNs kTaintedDrainNs = 30 * kMs;
constexpr int kMaxDrainSteps = 200'000;
constexpr int kMaxSettleSteps = 5'000;
constexpr size_t kMaxOps = 300;  // longer programs are cut: bounds the replay time
constexpr uint16_t kPort = wire::kDefaultUdpPort;
constexpr size_t kSlotBytes = 2048;
constexpr size_t kTxSlots = 16;
constexpr size_t kWireCap = 512;  // packets queued per destination; the oldest is lost beyond it
constexpr size_t kCaptureCap = 256;
constexpr size_t kMaxPairs = 4;
constexpr size_t kMaxHostilePayload = 1024;

// Each host's memory: an arena at a host-specific address with three regions
// and unregistered guard bytes between and around them.
constexpr uint64_t kArenaBytes = 8192;
constexpr uint64_t kVaBase[2] = {0xa000'0000, 0xb000'0000};
struct SlotLayout {
  uint64_t off;
  uint64_t len;
  uint32_t access;
};
constexpr SlotLayout kSlots[] = {
    {256, 4096, access::kAll},
    {4608, 1024, access::kLocalWrite | access::kRemoteWrite},  // no remote read or atomic
    {5888, 1024, access::kRemoteRead},                         // no local write
};
constexpr int kNumSlots = 3;
/** The last bytes of slot 0 are the atomic words: never another operation's buffer. */
constexpr uint64_t kAtomicBytes = 64;
constexpr uint64_t kAtomicOff = kSlots[0].off + kSlots[0].len - kAtomicBytes;

constexpr int16_t kAnyByte = -1;  // any value may be written here
constexpr int16_t kNoWrite = -2;  // nothing may be written here

/**
 * Known engine weakness, worked around until lib/transport changes: a READ or
 * atomic response has no recovery beyond its path: once its PSN is settled
 * (an ACK with the real connection id whose cum_psn or SACK covers it, even
 * with cum_psn past every PSN sent) the responder frees it, and the requester,
 * whose probes every stream ACK renews, waits for it forever. While this is
 * true the harness withholds hostile packets that settle a response chunk the
 * requester never got, and data packets that make the requester acknowledge
 * PSNs its peer has not sent yet (una_psn moves the cumulative PSN even when
 * the packet is then dropped as beyond the window).
 */
constexpr bool kAvoidSettlingResponses = true;

const wire::IpAddr kIp[2] = {wire::IpAddr::V4(10, 0, 0, 1), wire::IpAddr::V4(10, 0, 0, 2)};
const wire::IpAddr kOffPathIp = wire::IpAddr::V4(10, 0, 0, 66);

bool g_trace = false;

unsigned long long Ull(uint64_t v) { return v; }
char Name(int side) { return side == 0 ? 'A' : 'B'; }

__attribute__((format(printf, 1, 2))) void Trace(const char* fmt, ...) {
  if (!g_trace) return;
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
}

uint64_t Mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint8_t PatternByte(uint64_t tag, uint64_t i) {
  return static_cast<uint8_t>(Mix(tag * 0x100000001b3ull + i) >> 56);
}

/** The fuzz input as a stream of operands; reads past the end give zeros. */
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  bool empty() const { return pos_ >= in_.size(); }
  uint8_t U8() { return pos_ < in_.size() ? in_[pos_++] : 0; }
  uint16_t U16() {
    const uint16_t lo = U8();
    return static_cast<uint16_t>(lo | U8() << 8);
  }
  uint32_t U32() {
    const uint32_t lo = U16();
    return lo | uint32_t{U16()} << 16;
  }
  uint64_t U64() {
    const uint64_t lo = U32();
    return lo | uint64_t{U32()} << 32;
  }
  bool Bit() { return (U8() & 1) != 0; }
  /** A small signed delta, mostly 0. */
  uint32_t Delta() {
    const uint8_t b = U8();
    return b < 128 ? 0 : static_cast<uint32_t>(static_cast<int32_t>(static_cast<int8_t>(b << 1)));
  }

 private:
  std::span<const uint8_t> in_;
  size_t pos_ = 0;
};

enum class Op : uint8_t {
  kTick,        // advance time, collect both engines' packets
  kPollTx,      // one engine's PollTx with few or small slots
  kDeliver,     // deliver a queued packet (any position: reordering), maybe CE-marked
  kDrop,        // lose a queued packet
  kDuplicate,   // deliver a copy, keep the packet queued
  kDeliverAll,  // deliver every queued packet to one engine
  kSettle,      // perfect wire for a while
  kPostSend,
  kPostRecv,
  kDestroyQp,
  kToggleMr,  // deregister a region, or register it again (new keys)
  kNewPair,   // one more connected QP pair
  kForgeAck,
  kForgeNak,
  kForgeProbe,
  kForgeData,
  kForgeConn,
  kReplay,  // a captured packet again, to its destination or the other engine
  kMutate,  // a captured packet with bytes changed, CRC re-sealed (mostly)
  kCount,
};

const char* OpName(Op op) {
  static const char* const kNames[] = {
      "Tick",       "PollTx",    "Deliver",   "Drop",     "Duplicate", "DeliverAll", "Settle",
      "PostSend",   "PostRecv",  "DestroyQp", "ToggleMr", "NewPair",   "ForgeAck",   "ForgeNak",
      "ForgeProbe", "ForgeData", "ForgeConn", "Replay",   "Mutate"};
  static_assert(std::size(kNames) == static_cast<size_t>(Op::kCount));
  return kNames[static_cast<size_t>(op)];
}

const char* OpcodeName(Opcode op) {
  switch (op) {
    case Opcode::kWrite: return "WRITE";
    case Opcode::kWriteImm: return "WRITE_IMM";
    case Opcode::kSend: return "SEND";
    case Opcode::kSendImm: return "SEND_IMM";
    case Opcode::kRead: return "READ";
    case Opcode::kAtomicFetchAdd: return "ATOMIC_FA";
    case Opcode::kAtomicCompSwap: return "ATOMIC_CS";
  }
  return "?";
}

bool Consumes(Opcode op) {
  return op == Opcode::kSend || op == Opcode::kSendImm || op == Opcode::kWriteImm;
}
bool IsAtomic(Opcode op) { return op == Opcode::kAtomicFetchAdd || op == Opcode::kAtomicCompSwap; }

WcOpcode WcOpcodeOf(Opcode op) {
  switch (op) {
    case Opcode::kWrite:
    case Opcode::kWriteImm: return WcOpcode::kRdmaWrite;
    case Opcode::kSend:
    case Opcode::kSendImm: return WcOpcode::kSend;
    case Opcode::kRead: return WcOpcode::kRdmaRead;
    case Opcode::kAtomicFetchAdd: return WcOpcode::kFetchAdd;
    case Opcode::kAtomicCompSwap: return WcOpcode::kCompSwap;
  }
  return WcOpcode::kSend;
}

wire::ParseOptions ParseOpts() {
  wire::ParseOptions o;
  o.udp_port = kPort;
  return o;
}

/** One line about a packet, for the trace. */
std::string Describe(std::span<const uint8_t> bytes) {
  wire::Packet p;
  char s[256];
  const wire::ParseError e = wire::ParseDatagram(bytes, ParseOpts(), &p);
  if (e != wire::ParseError::kOk) {
    std::snprintf(s, sizeof(s), "unparsable %zu bytes (%s)", bytes.size(), wire::ParseErrorName(e));
    return s;
  }
  const char* type = wire::PacketTypeName(static_cast<uint8_t>(p.type));
  auto byte = [&p](size_t i) { return i < p.payload.size() ? p.payload[i] : 0u; };
  switch (wire::ClassOf(p.type)) {
    case PacketClass::kData: {
      const wire::DataBody& d = p.data;
      std::snprintf(s, sizeof(s),
                    "%s conn=%08x path=%u psn=%u una=%u stream=%u src=%u msn=%u len=%u off=%u "
                    "payload=%zu flags=%x rkey=%08x va=%llx recv=%u data=%02x%02x%02x%02x",
                    type, p.dst_conn_id, p.path_id, d.psn, d.una_psn, d.stream_id, d.src_stream,
                    d.msn, d.msg_len, d.msg_offset, p.payload.size(), p.flags, d.rkey, Ull(d.va),
                    d.recv_seq, byte(0), byte(1), byte(2), byte(3));
      break;
    }
    case PacketClass::kAck: {
      const wire::AckBody& a = p.ack;
      int n = std::snprintf(s, sizeof(s), "ACK conn=%08x path=%u cum=%u sack=%llx,%llx,%llx,%llx",
                            p.dst_conn_id, p.path_id, a.cum_psn, Ull(a.sack[0]), Ull(a.sack[1]),
                            Ull(a.sack[2]), Ull(a.sack[3]));
      for (uint32_t i = 0; i < a.num_stream_acks && n > 0 && n < static_cast<int>(sizeof(s)); i++) {
        n += std::snprintf(s + n, sizeof(s) - n, " stream %u<%u", a.stream_acks[i].stream_id,
                           a.stream_acks[i].msn_next);
      }
      break;
    }
    case PacketClass::kNak: {
      const wire::NakBody& k = p.nak;
      std::snprintf(
          s, sizeof(s),
          "NAK conn=%08x path=%u stream=%u msn=%u psn=%u %s detail=%u rnr=%u chunks=%u+%u",
          p.dst_conn_id, p.path_id, k.stream_id, k.msn, k.psn,
          wire::NakCodeName(static_cast<uint8_t>(k.code)), k.detail, k.rnr_delay_10us,
          k.first_chunk, k.num_chunks);
      break;
    }
    case PacketClass::kProbe:
      std::snprintf(s, sizeof(s), "%s conn=%08x path=%u seq=%u", type, p.dst_conn_id, p.path_id,
                    p.probe.probe_seq);
      break;
    case PacketClass::kConn: {
      const wire::ConnBody& b = p.conn;
      std::snprintf(s, sizeof(s),
                    "%s conn=%08x src=%08x nonce=%08x v%u-%u reason=%u paths=%u payload=%u port=%u "
                    "inc=%llx cookie=%llx window=%u",
                    type, p.dst_conn_id, b.src_conn_id, b.nonce, b.min_version, b.max_version,
                    static_cast<unsigned>(b.reason), b.num_paths, b.max_payload, b.udp_port,
                    Ull(b.incarnation), Ull(b.cookie), b.stream_window);
      break;
    }
    case PacketClass::kInvalid: std::snprintf(s, sizeof(s), "?"); break;
  }
  return s;
}

struct Datagram {
  wire::FrameInfo addr;
  std::vector<uint8_t> bytes;
};

enum class Ctx : uint8_t { kNone, kHonest, kHostile };

/** A byte range of one host's arena that an operation owns. */
struct Reservation {
  enum class Kind : uint8_t {
    kSource,      ///< the engine reads it (gather list, READ source); nobody writes it
    kDest,        ///< the engine writes the expected bytes here
    kQuarantine,  ///< of an operation that failed: its late packets may still land here
  };
  Kind kind = Kind::kDest;
  int side = 0;
  uint64_t off = 0;
  uint64_t len = 0;
  bool live = false;
};

struct Mr {
  bool registered = false;
  MrInfo keys;
  std::vector<MrInfo> old;  ///< keys of earlier registrations: stale keys
};

/** What crossed the engine's API, to hold EngineStats against. */
struct Traffic {
  uint64_t tx_pkts = 0, tx_bytes = 0, tx_data = 0, tx_retx = 0, tx_msg_probes = 0, tx_acks = 0,
           tx_naks = 0, tx_resend_naks = 0, tx_probes = 0, tx_retries = 0;
  uint64_t rx_handed = 0, rx_bytes = 0, rx_ok = 0, rx_data = 0, rx_ce_data = 0, rx_resend_naks = 0,
           rx_rnr_naks = 0, rx_conn_reqs = 0, rx_stream_acks = 0;
  uint64_t rx_drops[static_cast<size_t>(wire::ParseError::kCount)] = {};
};

struct WriteRecord {
  int side = 0;
  uint64_t off = 0;
  size_t len = 0;
  size_t op = 0;
  Ctx ctx = Ctx::kNone;
};

struct AtomicExec {
  uint64_t va = 0;
  bool cs = false;
  uint64_t op0 = 0, op1 = 0, old = 0;
};

enum class WrState : uint8_t { kOutstanding, kDone, kAbandoned };

struct SendModel {
  uint64_t wr_id = 0;
  int side = 0;
  size_t pair = 0;
  uint32_t qpn = 0;
  Opcode op = Opcode::kWrite;
  bool signaled = true;
  bool marker = false;
  uint32_t len = 0;
  uint32_t imm = 0;
  std::vector<uint64_t> local_offs;  ///< arena offset of each message byte, in gather order
  bool bad_local = false;            ///< PostSend must fail it (LocProtErr)
  bool bad_remote = false;           ///< the responder must refuse it
  uint32_t peer_epoch = 0;           ///< the peer's registrations when posted
  int local_res = -1;
  int remote_res = -1;
  std::vector<uint8_t> data;  ///< WRITE/SEND: the bytes sent; READ: the bytes expected
  uint64_t remote_va = 0;
  uint32_t rkey = 0;
  uint64_t op0 = 0, op1 = 0;
  int64_t recv_seq = -1;
  WrState st = WrState::kOutstanding;
  WcStatus status = WcStatus::kSuccess;
};

struct RecvModel {
  uint64_t wr_id = 0;
  int side = 0;
  size_t pair = 0;
  uint32_t qpn = 0;
  std::vector<uint64_t> offs;  ///< arena offset of each receive byte, in scatter order
  int res = -1;
  int64_t seq = -1;  ///< receive index on its QP; -1: posted in the error state (flushed at once)
  WrState st = WrState::kOutstanding;
  WcStatus status = WcStatus::kSuccess;
};

struct Pair {
  std::array<uint32_t, 2> qpn{};
  std::array<bool, 2> alive{};
  std::array<std::deque<size_t>, 2> sends;  ///< outstanding, in posting order
  std::array<std::deque<size_t>, 2> recvs;
  std::array<std::vector<size_t>, 2> consuming;  ///< send models by recv_seq
  std::array<std::vector<size_t>, 2> enqueued;   ///< receive models by receive index
};

constexpr uint64_t kSendIdBase = 0x5e00'0000'0000'0000ull;
constexpr uint64_t kRecvIdBase = 0x7e00'0000'0000'0000ull;

class Harness;

class GuardedMemory final : public MemoryAccess {
 public:
  GuardedMemory(Harness* h, int side) : h_(h), side_(side) {}
  bool Write(uint64_t owner, uint64_t va, const void* src, size_t len) override;
  bool Read(uint64_t owner, uint64_t va, void* dst, size_t len) override;
  bool FetchAdd(uint64_t owner, uint64_t va, uint64_t add, uint64_t* old) override;
  bool CompareSwap(uint64_t owner, uint64_t va, uint64_t compare, uint64_t swap,
                   uint64_t* old) override;

 private:
  Harness* h_;
  int side_;
};

struct Host {
  Host(Harness* h, int s) : side(s), mem(h, s) {
    owner.fill(-1);
    expect.fill(kNoWrite);
    for (uint64_t i = 0; i < kArenaBytes; i++) bytes[i] = static_cast<uint8_t>(i * 37 + s);
  }
  int side;
  GuardedMemory mem;
  std::unique_ptr<Engine> eng;
  uint32_t pd = 0, send_cq = 0, recv_cq = 0;
  std::array<Mr, kNumSlots> mrs;
  uint32_t reg_epoch = 0;
  std::array<uint8_t, kArenaBytes> bytes{};
  std::array<int32_t, kArenaBytes> owner;  ///< reservation, or -1
  std::array<int16_t, kArenaBytes> expect;
  Traffic traffic;
  std::vector<AtomicExec> atomics;
};

class Harness {
 public:
  explicit Harness(std::span<const uint8_t> in) : r_(in) {}
  void Run();

  // GuardedMemory.
  void MemWrite(int side, uint64_t va, const uint8_t* src, size_t len);
  void MemRead(int side, uint64_t va, uint8_t* dst, size_t len);
  uint64_t MemAtomic(int side, uint64_t va, bool cs, uint64_t op0, uint64_t op1);

 private:
  [[noreturn]] __attribute__((format(printf, 2, 3))) void Fail(const char* fmt, ...);
  Host& H(int side) { return *hosts_[side]; }
  const Host& H(int side) const { return *hosts_[side]; }
  static uint64_t Va(int side, uint64_t off) { return kVaBase[side] + off; }

  // Set-up.
  void Setup();
  void AddPair();
  bool Established() const;

  // Memory model.
  bool ArenaOff(int side, uint64_t va, uint64_t len, uint64_t* off) const;
  bool Registered(int side, uint64_t off, uint64_t len) const;
  bool KeyCovers(int side, uint32_t key, bool remote, uint64_t va, uint64_t len,
                 uint32_t need) const;
  uint32_t PickKey(int side, int slot, bool remote, uint8_t mode);
  bool Alloc(int side, int slot, uint16_t hint, uint64_t len, uint64_t* off) const;
  int Claim(int side, uint64_t off, uint64_t len, Reservation::Kind kind);
  void Release(int res, bool quarantine);
  std::vector<uint8_t> Gather(int side, const std::vector<uint64_t>& offs, size_t n) const;

  // Wire.
  size_t PollTx(int side, size_t nslots, uint32_t cap);
  void Route(int from, const TxSlot& slot);
  void Deliver(int to, Datagram d, Ctx ctx);
  void DeliverAll(int to);
  bool WireEmpty() const { return wire_[0].empty() && wire_[1].empty(); }
  void Settle(TimeNs until);
  bool Taints(int to, const Datagram& d);
  /** A packet that makes a responder settle a response chunk its requester never got. */
  bool SettlesResponse(int to, const Datagram& d);

  // Completions and checks.
  void PollCqs();
  void OnSendCompletion(int side, const Completion& e);
  void OnRecvCompletion(int side, const Completion& e);
  void Finish(size_t idx, WcStatus status, const Completion* e);
  void CheckSendEffect(const SendModel& w, const Completion* e);
  void Link(size_t send_idx, size_t recv_idx);
  void CheckStats(int side);
  void CheckInternals(int side);
  bool SendsPending() const;
  [[noreturn]] void FailHang(const char* why);
  void Drain();

  // Operations.
  void Step(Op op);
  void OpPostSend();
  void OpPostRecv();
  void OpDestroyQp();
  void OpToggleMr();
  bool PostMarker(size_t pair, int side);

  // Hostile packets.
  Connection* ConnTo(int side);
  Qp* QpOf(int side, uint32_t qpn);
  uint32_t ConnId(int to);
  uint32_t QpnOf(int side);
  wire::FrameInfo HostileFrom(int to);
  void Inject(int to, const wire::FrameInfo& from, const wire::Packet& p);
  void ForgeAck();
  void ForgeNak();
  void ForgeProbe();
  void ForgeData();
  void ForgeConn();
  void Replay();
  void Mutate();
  uint64_t CookieFor(const wire::ConnBody& req) const;

  Reader r_;
  TimeNs now_ = kStartNs;
  std::unique_ptr<Host> hosts_[2];
  QpAttr qp_attr_;
  std::vector<Pair> pairs_;
  std::vector<SendModel> sends_;
  std::vector<RecvModel> recvs_;
  std::vector<Reservation> res_;
  std::deque<Datagram> wire_[2];  ///< by destination engine
  std::vector<Datagram> captured_;
  size_t captured_total_ = 0;
  Ctx ctx_ = Ctx::kNone;
  bool tainted_ = false;  ///< a forgery indistinguishable from the peer was accepted
  bool draining_ = false;
  TimeNs drain_start_ = 0;
  size_t op_index_ = 0;
  Op op_ = Op::kTick;
  std::vector<uint8_t> slot_mem_ = std::vector<uint8_t>(kTxSlots * kSlotBytes);
  std::array<WriteRecord, 16> writes_{};  ///< the newest engine writes, for failure reports
  size_t num_writes_ = 0;
  std::array<uint8_t, kMaxHostilePayload> hostile_payload_{};
  bool have_attack_req_ = false;
  wire::ConnBody attack_req_;
  wire::FrameInfo attack_from_;
  int attack_to_ = 0;
};

// ---- GuardedMemory forwards every access to the harness's checks ----

bool GuardedMemory::Write(uint64_t, uint64_t va, const void* src, size_t len) {
  h_->MemWrite(side_, va, static_cast<const uint8_t*>(src), len);
  return true;
}
bool GuardedMemory::Read(uint64_t, uint64_t va, void* dst, size_t len) {
  h_->MemRead(side_, va, static_cast<uint8_t*>(dst), len);
  return true;
}
bool GuardedMemory::FetchAdd(uint64_t, uint64_t va, uint64_t add, uint64_t* old) {
  *old = h_->MemAtomic(side_, va, false, add, 0);
  return true;
}
bool GuardedMemory::CompareSwap(uint64_t, uint64_t va, uint64_t compare, uint64_t swap,
                                uint64_t* old) {
  *old = h_->MemAtomic(side_, va, true, compare, swap);
  return true;
}

void Harness::Fail(const char* fmt, ...) {
  std::fprintf(stderr, "engine_pair: invariant violated at op #%zu (%s), t=%llu ns%s: ", op_index_,
               draining_ ? "drain" : OpName(op_), Ull(now_ - kStartNs),
               tainted_ ? " (after an accepted forgery)" : "");
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "\n");
  const size_t n = std::min(num_writes_, writes_.size());
  if (n != 0) std::fprintf(stderr, "last %zu of %zu engine writes:\n", n, num_writes_);
  for (size_t i = num_writes_ - n; i < num_writes_; i++) {
    const WriteRecord& w = writes_[i % writes_.size()];
    std::fprintf(stderr, "  %c +0x%llx %zu bytes, op #%zu%s\n", Name(w.side), Ull(w.off), w.len,
                 w.op, w.ctx == Ctx::kHostile ? ", hostile packet" : "");
  }
  std::abort();
}

// ---- Memory model ----

bool Harness::ArenaOff(int side, uint64_t va, uint64_t len, uint64_t* off) const {
  if (va < kVaBase[side] || va - kVaBase[side] > kArenaBytes ||
      len > kArenaBytes - (va - kVaBase[side])) {
    return false;
  }
  *off = va - kVaBase[side];
  return true;
}

bool Harness::Registered(int side, uint64_t off, uint64_t len) const {
  for (int i = 0; i < kNumSlots; i++) {
    if (H(side).mrs[i].registered && off >= kSlots[i].off &&
        off + len <= kSlots[i].off + kSlots[i].len) {
      return true;
    }
  }
  return false;
}

bool Harness::KeyCovers(int side, uint32_t key, bool remote, uint64_t va, uint64_t len,
                        uint32_t need) const {
  for (int i = 0; i < kNumSlots; i++) {
    const Mr& m = H(side).mrs[i];
    if (!m.registered || (remote ? m.keys.rkey : m.keys.lkey) != key) continue;
    if ((kSlots[i].access & need) != need) return false;
    const uint64_t base = Va(side, kSlots[i].off);
    return va >= base && len <= kSlots[i].len && va - base <= kSlots[i].len - len;
  }
  return false;
}

uint32_t Harness::PickKey(int side, int slot, bool remote, uint8_t mode) {
  const Mr& m = H(side).mrs[slot];
  auto key = [remote](const MrInfo& k) { return remote ? k.rkey : k.lkey; };
  switch (mode % 5) {
    case 0: return key(m.keys);                                   // current (if registered)
    case 1: return m.old.empty() ? r_.U32() : key(m.old.back());  // stale
    case 2: return r_.U32();                                      // guessed
    case 3: return remote ? m.keys.lkey : m.keys.rkey;            // the other kind
    default: return key(H(1 - side).mrs[slot].keys);              // the other host's
  }
}

bool Harness::Alloc(int side, int slot, uint16_t hint, uint64_t len, uint64_t* off) const {
  const uint64_t base = kSlots[slot].off;
  const uint64_t usable = kSlots[slot].len - (slot == 0 ? kAtomicBytes : 0);
  if (len > usable) return false;
  const uint64_t start = hint % usable;
  if (len == 0) {
    *off = base + start;
    return true;
  }
  uint64_t run = 0;
  for (uint64_t i = 0; i < 2 * usable; i++) {
    const uint64_t pos = (start + i) % usable;
    if (pos == 0) run = 0;
    run = H(side).owner[base + pos] < 0 ? run + 1 : 0;
    if (run == len) {
      *off = base + pos + 1 - len;
      return true;
    }
  }
  return false;
}

int Harness::Claim(int side, uint64_t off, uint64_t len, Reservation::Kind kind) {
  Host& h = H(side);
  if (len == 0 || off + len > kArenaBytes) return -1;
  for (uint64_t i = off; i < off + len; i++) {
    if (h.owner[i] >= 0) return -1;
  }
  const int id = static_cast<int>(res_.size());
  res_.push_back(Reservation{kind, side, off, len, true});
  for (uint64_t i = off; i < off + len; i++) {
    h.owner[i] = id;
    h.expect[i] = kind == Reservation::Kind::kDest ? kAnyByte : kNoWrite;
  }
  return id;
}

void Harness::Release(int id, bool quarantine) {
  if (id < 0) return;
  Reservation& r = res_[id];
  if (!r.live) return;
  if (quarantine && r.kind == Reservation::Kind::kDest) {
    r.kind = Reservation::Kind::kQuarantine;  // its bytes stay expected, never reused
    return;
  }
  Host& h = H(r.side);
  for (uint64_t i = r.off; i < r.off + r.len; i++) {
    h.owner[i] = -1;
    h.expect[i] = kNoWrite;
  }
  r.live = false;
}

std::vector<uint8_t> Harness::Gather(int side, const std::vector<uint64_t>& offs, size_t n) const {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i++) v[i] = H(side).bytes[offs[i]];
  return v;
}

void Harness::MemWrite(int side, uint64_t va, const uint8_t* src, size_t len) {
  uint64_t off = 0;
  if (!ArenaOff(side, va, len, &off) || !Registered(side, off, len)) {
    Fail("engine %c wrote %zu bytes at 0x%llx, outside its registered regions", Name(side), len,
         Ull(va));
  }
  Host& h = H(side);
  if (!tainted_) {
    for (size_t i = 0; i < len; i++) {
      const int16_t e = h.expect[off + i];
      if (h.owner[off + i] < 0 || e == kNoWrite || (e >= 0 && e != src[i])) {
        Fail(
            "engine %c wrote %zu bytes at 0x%llx where no operation expects them (byte %zu: "
            "0x%02x, expected %d, reservation %d)%s",
            Name(side), len, Ull(va), i, src[i], e, h.owner[off + i],
            ctx_ == Ctx::kHostile ? " during a hostile packet" : "");
      }
    }
  }
  std::memcpy(h.bytes.data() + off, src, len);
  writes_[num_writes_++ % writes_.size()] = WriteRecord{side, off, len, op_index_, ctx_};
  Trace("    %c mem write %zu bytes at +0x%llx\n", Name(side), len, Ull(off));
}

void Harness::MemRead(int side, uint64_t va, uint8_t* dst, size_t len) {
  uint64_t off = 0;
  if (!ArenaOff(side, va, len, &off) || !Registered(side, off, len)) {
    Fail("engine %c read %zu bytes at 0x%llx, outside its registered regions", Name(side), len,
         Ull(va));
  }
  std::memcpy(dst, H(side).bytes.data() + off, len);
}

uint64_t Harness::MemAtomic(int side, uint64_t va, bool cs, uint64_t op0, uint64_t op1) {
  uint64_t off = 0;
  if (!ArenaOff(side, va, 8, &off) || !Registered(side, off, 8)) {
    Fail("engine %c ran an atomic at 0x%llx, outside its registered regions", Name(side), Ull(va));
  }
  if (va % 8 != 0) Fail("engine %c ran an atomic at misaligned 0x%llx", Name(side), Ull(va));
  Host& h = H(side);
  if (!tainted_) {
    if (off < kAtomicOff || off >= kAtomicOff + kAtomicBytes) {
      Fail("engine %c ran an atomic at +0x%llx, which no atomic targets", Name(side), Ull(off));
    }
    for (const AtomicExec& x : h.atomics) {
      if (x.va == va && x.cs == cs && x.op0 == op0 && x.op1 == op1) {
        Fail("engine %c executed the atomic at 0x%llx (operands %llx, %llx) twice", Name(side),
             Ull(va), Ull(op0), Ull(op1));
      }
    }
  }
  uint64_t old;
  std::memcpy(&old, h.bytes.data() + off, 8);
  const uint64_t now = cs ? (old == op0 ? op1 : old) : old + op0;
  std::memcpy(h.bytes.data() + off, &now, 8);
  h.atomics.push_back(AtomicExec{va, cs, op0, op1, old});
  Trace("    %c mem atomic %s at +0x%llx: %llx -> %llx\n", Name(side), cs ? "CS" : "FA", Ull(off),
        Ull(old), Ull(now));
  return old;
}

// ---- Set-up ----

void Harness::Setup() {
  for (int s : {0, 1}) hosts_[s] = std::make_unique<Host>(this, s);
  const uint8_t c0 = r_.U8(), c1 = r_.U8(), c2 = r_.U8(), c3 = r_.U8(), c4 = r_.U8();
  for (int s : {0, 1}) {
    Host& h = H(s);
    const uint8_t bits = s == 0 ? c0 : c0 >> 3;
    EngineConfig cfg;
    cfg.local_ip = kIp[s];
    cfg.framing = Framing::kUdp;
    cfg.num_paths = static_cast<uint16_t>(1 + (bits & 3));
    cfg.max_payload = (bits & 4) != 0 ? 512 : 256;
    cfg.path_window_pkts = 2 + (c1 & 7);
    cfg.conn_window_pkts = 4 + ((c1 >> 3) & 31) * 2;
    cfg.rto_min_ns = 20 * kUs;
    cfg.rto_initial_ns = 100 * kUs;
    cfg.rto_max_ns = 2 * kMs;
    cfg.tail_loss_probe = (c2 & 1) != 0;
    cfg.tlp_min_ns = 10 * kUs;
    cfg.ack_every_pkts = 1 + ((c2 >> 1) & 3);
    cfg.ack_delay_ns = 2 * kUs;
    cfg.path_fail_timeouts = 1 + ((c2 >> 3) & 3);
    cfg.path_health_window_pkts = 8 + (c4 >> 5) * 4;
    cfg.path_probe_interval_ns = 50 * kUs;
    cfg.conn_fail_after_ns = 20 * kMs;
    cfg.keepalive_ns = 5 * kMs;
    cfg.msg_probe_min_ns = 100 * kUs;
    cfg.msg_probe_max_ns = 1 * kMs;
    cfg.conn_retry_ns = 50 * kUs;
    constexpr uint32_t kStreamWindows[] = {1, 2, 4, 16};
    cfg.stream_window_msgs = kStreamWindows[(c2 >> 6) & 3];
    cfg.max_connections = (c4 & 0x10) != 0 ? 2 : 8;
    cfg.max_connections_per_host = (c4 & 0x10) != 0 ? 1 : 4;
    cfg.conn_idle_ns = 10 * kMs;
    cfg.reorder_window_ns = 4 * kUs;
    if ((c2 & 0x20) != 0) cfg.rx_msg_state_bytes = 64;
    cfg.seed = 0x5eed0001 + s;
    cfg.incarnation = 0x1ca7e0001 + s;
    auto e = Engine::Create(cfg, &h.mem);
    if (!e.ok()) Fail("Engine::Create: %s", std::string(e.status().message()).c_str());
    h.eng = std::move(*e);
    h.pd = *h.eng->AllocPd();
    const uint32_t depth = (c4 & 2) != 0 ? 4 : 4096;
    h.send_cq = *h.eng->CreateCq(depth);
    h.recv_cq = *h.eng->CreateCq(depth);
    for (int i = 0; i < kNumSlots; i++) {
      auto mr = h.eng->RegMr(h.pd, Va(s, kSlots[i].off), kSlots[i].len, kSlots[i].access);
      if (!mr.ok()) Fail("RegMr: %s", std::string(mr.status().message()).c_str());
      h.mrs[i].registered = true;
      h.mrs[i].keys = *mr;
    }
  }
  qp_attr_.rnr_retry = c3 % 7;  // 7 (forever) could legitimately never complete
  qp_attr_.retry_cnt = 1 + ((c3 >> 3) & 7);
  qp_attr_.max_send_wr = (c4 & 1) != 0 ? 4 : 32;
  qp_attr_.max_recv_wr = 32;
  qp_attr_.max_sge = 4;
  qp_attr_.min_rnr_delay_ns = (c4 & 4) != 0 ? 0 : 10 * kUs;
  AddPair();
  if ((c4 & 8) != 0) AddPair();
  Trace("config %02x %02x %02x %02x %02x: paths %u/%u payload %u/%u stream window %u\n", c0, c1, c2,
        c3, c4, 1 + (c0 & 3), 1 + ((c0 >> 3) & 3), (c0 & 4) ? 512 : 256, (c0 & 0x20) ? 512 : 256,
        EnginePeer::Impl(*H(0).eng).cfg.stream_window_msgs);
  if ((c0 & 0x40) != 0) return;  // the program drives the handshake itself
  // Open the connection on a perfect wire, then, optionally, move every
  // path's PSNs close to 2^32 so the program runs across the wrap.
  for (int i = 0; i < 200 && !Established(); i++) Settle(now_ + 20 * kUs);
  if (!Established()) Fail("the handshake did not complete on a perfect wire");
  if ((c0 & 0x80) != 0) {
    for (int s : {0, 1}) {
      Connection* c = ConnTo(s);
      Connection* peer = ConnTo(1 - s);
      for (uint16_t p = 0; p < c->paths.size(); p++) {
        const uint32_t psn = 0xfffffff0u + p;
        if (!EnginePeer::SetTxPsn(*H(s).eng, c->local_id, p, psn) ||
            !EnginePeer::SetRxCum(*H(1 - s).eng, peer->local_id, p, psn)) {
          Fail("could not move the PSNs of path %u", p);
        }
      }
    }
  }
}

bool Harness::Established() const {
  for (int s : {0, 1}) {
    const std::vector<ConnInfo> conns = H(s).eng->GetConnections();
    bool up = false;
    for (const ConnInfo& c : conns)
      up |= c.peer.ip == kIp[1 - s] && c.state == ConnInfo::State::kUp;
    if (!up) return false;
  }
  return true;
}

void Harness::AddPair() {
  if (pairs_.size() >= kMaxPairs) return;
  Pair p;
  for (int s : {0, 1}) {
    QpAttr a = qp_attr_;
    a.pd = H(s).pd;
    a.send_cq = H(s).send_cq;
    a.recv_cq = H(s).recv_cq;
    auto q = H(s).eng->CreateQp(a);
    if (!q.ok()) Fail("CreateQp: %s", std::string(q.status().message()).c_str());
    p.qpn[s] = *q;
    p.alive[s] = true;
  }
  for (int s : {0, 1}) {
    // May be refused (connection limits): the QP then stays unconnected.
    const absl::Status st =
        H(s).eng->ConnectQp(p.qpn[s], PeerAddr{kIp[1 - s], {}, kPort}, p.qpn[1 - s]);
    Trace("  %c.ConnectQp(%u -> %u): %s\n", Name(s), p.qpn[s], p.qpn[1 - s],
          st.ok() ? "ok" : std::string(st.message()).c_str());
  }
  pairs_.push_back(std::move(p));
}

// ---- Wire ----

size_t Harness::PollTx(int side, size_t nslots, uint32_t cap) {
  std::array<TxSlot, kTxSlots> slots;
  for (size_t i = 0; i < nslots; i++) slots[i] = TxSlot{slot_mem_.data() + i * kSlotBytes, cap};
  const size_t n = H(side).eng->PollTx(now_, {slots.data(), nslots});
  if (n > nslots) Fail("PollTx filled %zu of %zu slots", n, nslots);
  for (size_t i = 0; i < n; i++) Route(side, slots[i]);
  return n;
}

void Harness::Route(int from, const TxSlot& s) {
  Host& h = H(from);
  if (s.len > s.cap) Fail("engine %c wrote %u bytes into a %u-byte slot", Name(from), s.len, s.cap);
  Datagram d{s.addr, std::vector<uint8_t>(s.buf, s.buf + s.len)};
  wire::Packet p;
  const wire::ParseError e = wire::ParseDatagram(d.bytes, ParseOpts(), &p);
  if (e != wire::ParseError::kOk) {
    Fail("engine %c sent a packet that does not parse (%s)", Name(from), wire::ParseErrorName(e));
  }
  if (d.addr.src != kIp[from]) Fail("engine %c sent from another address", Name(from));
  Traffic& t = h.traffic;
  t.tx_pkts++;
  t.tx_bytes += s.len;
  switch (wire::ClassOf(p.type)) {
    case PacketClass::kData:
      t.tx_data++;
      t.tx_retx += (p.flags & wire::flags::kRetransmit) != 0;
      t.tx_msg_probes += (p.flags & wire::flags::kMsgProbe) != 0;
      break;
    case PacketClass::kAck: t.tx_acks++; break;
    case PacketClass::kNak:
      t.tx_naks++;
      t.tx_resend_naks += p.nak.code == wire::NakCode::kResend;
      break;
    case PacketClass::kProbe: t.tx_probes += p.type == PacketType::kProbe; break;
    case PacketClass::kConn: t.tx_retries += p.type == PacketType::kConnRetry; break;
    case PacketClass::kInvalid: break;
  }
  if (g_trace) Trace("  %c sends  %s\n", Name(from), Describe(d.bytes).c_str());
  if (captured_.size() < kCaptureCap) {
    captured_.push_back(d);
  } else {
    captured_[captured_total_ % kCaptureCap] = d;
  }
  captured_total_++;
  int to = -1;
  for (int i : {0, 1}) {
    if (d.addr.dst == kIp[i] && d.addr.dst_port == kPort) to = i;
  }
  if (to < 0) return;  // the off-path host's, or nobody's: only the capture keeps it
  if (wire_[to].size() >= kWireCap) wire_[to].pop_front();
  wire_[to].push_back(std::move(d));
}

void Harness::Deliver(int to, Datagram d, Ctx ctx) {
  if (ctx == Ctx::kHostile && kAvoidSettlingResponses && SettlesResponse(to, d)) {
    if (g_trace) Trace("  (withheld: %s)\n", Describe(d.bytes).c_str());
    return;
  }
  Traffic& t = H(to).traffic;
  wire::Packet p;
  const wire::ParseError e = wire::ParseDatagram(d.bytes, ParseOpts(), &p);
  t.rx_handed++;
  t.rx_bytes += d.bytes.size();
  if (e != wire::ParseError::kOk) {
    t.rx_drops[static_cast<size_t>(e)]++;
  } else {
    t.rx_ok++;
    const PacketClass cls = wire::ClassOf(p.type);
    if (cls == PacketClass::kData) {
      t.rx_data++;
      t.rx_ce_data += d.addr.ecn == wire::Ecn::kCe;
    }
    if (cls == PacketClass::kNak) {
      t.rx_resend_naks += p.nak.code == wire::NakCode::kResend;
      t.rx_rnr_naks += p.nak.code == wire::NakCode::kReceiverNotReady;
    }
    t.rx_conn_reqs += p.type == PacketType::kConnReq;
    if (cls == PacketClass::kAck) t.rx_stream_acks += p.ack.num_stream_acks;
  }
  if (ctx == Ctx::kHostile && !tainted_ && Taints(to, d)) {
    tainted_ = true;
    Trace("  (a forgery the engine cannot tell from its peer: effect checks end here)\n");
  }
  if (g_trace) {
    Trace("  %c %s %s%s\n", Name(to), ctx == Ctx::kHostile ? "hostile" : "gets  ",
          Describe(d.bytes).c_str(), d.addr.src == kOffPathIp ? " (from off-path)" : "");
  }
  ctx_ = ctx;
  H(to).eng->OnDatagram(now_, d.addr, d.bytes);
  ctx_ = Ctx::kNone;
}

void Harness::DeliverAll(int to) {
  std::deque<Datagram> q;
  q.swap(wire_[to]);
  for (Datagram& d : q) Deliver(to, std::move(d), Ctx::kHonest);
}

void Harness::Settle(TimeNs until) {
  for (int step = 0; step < kMaxSettleSteps && now_ < until; step++) {
    PollTx(0, kTxSlots, kSlotBytes);
    PollTx(1, kTxSlots, kSlotBytes);
    if (!WireEmpty()) {
      now_ += kHopNs;
      DeliverAll(0);
      DeliverAll(1);
      PollCqs();
      continue;
    }
    PollCqs();
    const TimeNs t = std::min(H(0).eng->NextDeadline(), H(1).eng->NextDeadline());
    now_ = t >= until ? until : std::max(t, now_ + 1);
  }
}

bool Harness::SettlesResponse(int to, const Datagram& d) {
  wire::Packet p;
  if (wire::ParseDatagram(d.bytes, ParseOpts(), &p) != wire::ParseError::kOk) return false;
  const PacketClass cls = wire::ClassOf(p.type);
  const Connection* c = EnginePeer::Conn(*H(to).eng, p.dst_conn_id);
  if ((cls != PacketClass::kAck && cls != PacketClass::kData) || c == nullptr ||
      c->state != ConnState::kEstablished || d.addr.src != c->peer.ip) {
    return false;
  }
  // The sender of the PSNs in question: the receiver itself for an ACK, its peer for data.
  const Connection* s = cls == PacketClass::kAck ? c : ConnTo(1 - to);
  if (s == nullptr || (cls == PacketClass::kData && s->remote_id != c->local_id) ||
      p.path_id >= s->paths.size() ||
      (cls == PacketClass::kData && p.path_id >= c->rx_paths.size())) {
    return false;
  }
  const TxPath& path = s->paths[p.path_id];
  if (cls == PacketClass::kData) {
    const uint32_t cum = c->rx_paths[p.path_id].cum;
    const uint32_t new_cum = wire::SeqLt(cum, p.data.una_psn) ? p.data.una_psn : cum;
    const bool recorded =
        !wire::SeqLt(p.data.psn, new_cum) && p.data.psn - new_cum <= wire::kSackBits;
    if (wire::SeqLt(path.next_psn, new_cum) ||
        (recorded && !wire::SeqLt(p.data.psn, path.next_psn))) {
      return true;  // any PSN not sent yet may carry a response
    }
  }
  auto covered = [&](uint32_t psn) {
    if (cls == PacketClass::kAck) {
      const uint32_t bit = psn - p.ack.cum_psn - 1;
      return wire::SeqLt(psn, p.ack.cum_psn) ||
             (bit < wire::kSackBits && (p.ack.sack[bit / 64] >> (bit % 64) & 1) != 0);
    }
    const uint32_t cum = c->rx_paths[p.path_id].cum;
    return psn == p.data.psn || (!wire::SeqLt(psn, cum) && wire::SeqLt(psn, p.data.una_psn));
  };
  for (uint32_t psn = path.una; psn != path.next_psn; psn++) {
    const Inflight& e = path.At(psn);
    if (!e.live || !covered(psn) || e.msg.idx >= s->msgs.size()) continue;
    const TxMsg& m = s->msgs[e.msg.idx];
    if (m.in_use && m.gen == e.msg.gen && m.is_response) return true;
  }
  return false;
}

// A forgery taints when the engine cannot tell it from its peer's packet and
// it may legitimately complete work without the work's effect: a stream ACK
// of messages posted and not yet acknowledged, or a data packet that passes
// every connection, path and stream check. The engine must see through the
// rest (as through an ACK of PSNs never sent), so they keep every check on.
bool Harness::Taints(int to, const Datagram& d) {
  wire::Packet p;
  if (wire::ParseDatagram(d.bytes, ParseOpts(), &p) != wire::ParseError::kOk) return false;
  const PacketClass cls = wire::ClassOf(p.type);
  if (cls != PacketClass::kAck && cls != PacketClass::kData) return false;
  Connection* c = EnginePeer::Conn(*H(to).eng, p.dst_conn_id);
  if (c == nullptr || c->state != ConnState::kEstablished || d.addr.src != c->peer.ip) {
    return false;
  }
  if (cls == PacketClass::kAck) {
    for (uint32_t i = 0; i < p.ack.num_stream_acks; i++) {
      const Qp* qp = QpOf(to, p.ack.stream_acks[i].stream_id);
      const uint32_t next = p.ack.stream_acks[i].msn_next;
      if (qp != nullptr && qp->conn == c->local_id && wire::SeqLt(qp->peer_msn_next, next) &&
          wire::SeqLe(next, qp->next_msn)) {
        return true;
      }
    }
    return false;
  }
  if (p.path_id >= c->rx_paths.size()) return false;
  const Qp* qp = QpOf(to, p.data.stream_id);
  if (qp == nullptr || qp->conn != c->local_id || p.data.src_stream != qp->remote_qpn) return false;
  const RxPath& rx = c->rx_paths[p.path_id];
  const bool beyond = !wire::SeqLt(rx.cum, p.data.una_psn) && !wire::SeqLt(p.data.psn, rx.cum) &&
                      p.data.psn - rx.cum > wire::kSackBits;
  // A request outside [msn_next, msn_next + window) is only acknowledged or dropped.
  const bool outside =
      wire::IsRequest(p.type) &&
      p.data.msn - qp->msn_next >= EnginePeer::Impl(*H(to).eng).cfg.stream_window_msgs;
  return !beyond && !outside;
}

// ---- Completions ----

void Harness::PollCqs() {
  std::array<Completion, 32> cqe;
  // Receives first: a responder completes the receive before its stream ACK
  // leaves, so a SEND's completion finds its receive's.
  for (int s : {0, 1}) {
    for (size_t n; (n = H(s).eng->PollCq(H(s).recv_cq, cqe)) != 0;) {
      for (size_t i = 0; i < n; i++) OnRecvCompletion(s, cqe[i]);
    }
  }
  for (int s : {0, 1}) {
    for (size_t n; (n = H(s).eng->PollCq(H(s).send_cq, cqe)) != 0;) {
      for (size_t i = 0; i < n; i++) OnSendCompletion(s, cqe[i]);
    }
  }
  std::array<AsyncEvent, 8> ev;
  for (int s : {0, 1}) {
    for (size_t n; (n = H(s).eng->PollAsyncEvents(ev)) != 0;) {
      for (size_t i = 0; i < n; i++) {
        Trace("  %c async event %s %u\n", Name(s),
              ev[i].type == AsyncEvent::Type::kCqError ? "CQ error" : "QP fatal", ev[i].id);
        if (ev[i].type == AsyncEvent::Type::kCqError && !H(s).eng->CqInError(ev[i].id)) {
          Fail("engine %c reported CQ %u in error, but it is not", Name(s), ev[i].id);
        }
      }
    }
  }
}

void Harness::OnSendCompletion(int side, const Completion& e) {
  const uint64_t idx = e.wr_id - kSendIdBase;
  if (e.wr_id < kSendIdBase || idx >= sends_.size() || sends_[idx].side != side) {
    Fail("engine %c completed wr_id %llx, which was never posted there", Name(side), Ull(e.wr_id));
  }
  SendModel& w = sends_[idx];
  Trace("  %c completes %s wr %llu (qp %u): %s\n", Name(side), OpcodeName(w.op), Ull(idx), e.qp_num,
        WcStatusName(e.status));
  if (w.st != WrState::kOutstanding) {
    Fail("engine %c completed %s wr %llu again (%s)", Name(side), OpcodeName(w.op), Ull(idx),
         WcStatusName(e.status));
  }
  if (e.qp_num != w.qpn)
    Fail("wr %llu completed on QP %u, posted on %u", Ull(idx), e.qp_num, w.qpn);
  std::deque<size_t>& q = pairs_[w.pair].sends[side];
  const auto pos = std::find(q.begin(), q.end(), idx);
  if (pos == q.end()) Fail("wr %llu is not outstanding on its QP", Ull(idx));
  // Earlier unsignaled work requests completed with success, silently.
  while (q.front() != idx) {
    const size_t j = q.front();
    if (sends_[j].signaled) {
      Fail("engine %c completed wr %llu before wr %llu, posted earlier on the same QP", Name(side),
           Ull(idx), Ull(j));
    }
    Finish(j, WcStatus::kSuccess, nullptr);
  }
  Finish(idx, e.status, &e);
}

void Harness::Finish(size_t idx, WcStatus status, const Completion* e) {
  SendModel& w = sends_[idx];
  std::deque<size_t>& q = pairs_[w.pair].sends[w.side];
  q.erase(std::find(q.begin(), q.end(), idx));
  w.st = WrState::kDone;
  w.status = status;
  if (w.bad_local && status != WcStatus::kLocProtErr) {
    Fail("%s wr %llu with an invalid local buffer completed with %s, not a protection error",
         OpcodeName(w.op), Ull(idx), WcStatusName(status));
  }
  if (status == WcStatus::kSuccess && !tainted_) CheckSendEffect(w, e);
  Release(w.local_res, false);
  // A failed WRITE's packets may still land at the responder.
  Release(w.remote_res, status != WcStatus::kSuccess);
}

void Harness::CheckSendEffect(const SendModel& w, const Completion* e) {
  const int peer = 1 - w.side;
  const uint64_t idx = w.wr_id - kSendIdBase;
  if (w.bad_remote) {
    // Unless a registration since made its key good again.
    if (H(peer).reg_epoch != w.peer_epoch) return;
    Fail(
        "%s wr %llu completed with success, but the responder had to refuse it (key, bounds or "
        "permission)",
        OpcodeName(w.op), Ull(idx));
  }
  if (e != nullptr) {
    if (e->opcode != WcOpcodeOf(w.op)) Fail("wr %llu completed with the wrong opcode", Ull(idx));
    const uint32_t len = w.op == Opcode::kRead ? w.len : IsAtomic(w.op) ? 8 : 0;
    if (e->byte_len != len) Fail("wr %llu completed with byte_len %u", Ull(idx), e->byte_len);
  }
  auto check_receive = [&] {
    if (H(peer).eng->CqInError(H(peer).recv_cq)) return;  // its completion may be lost
    const Pair& p = pairs_[w.pair];
    if (w.recv_seq < 0 || static_cast<size_t>(w.recv_seq) >= p.enqueued[peer].size()) {
      Fail("%s wr %llu completed with success, but no receive was posted for it", OpcodeName(w.op),
           Ull(idx));
    }
    const RecvModel& r = recvs_[p.enqueued[peer][w.recv_seq]];
    if (r.st != WrState::kDone || r.status != WcStatus::kSuccess) {
      Fail("%s wr %llu completed with success, but its receive (wr %llu) did not", OpcodeName(w.op),
           Ull(idx), Ull(r.wr_id - kRecvIdBase));
    }
  };
  switch (w.op) {
    case Opcode::kWriteImm: check_receive(); [[fallthrough]];
    case Opcode::kWrite:
      if (w.len != 0 &&
          std::memcmp(H(peer).bytes.data() + (w.remote_va - kVaBase[peer]), w.data.data(), w.len)) {
        Fail("%s wr %llu completed with success, but its %u bytes are not at 0x%llx",
             OpcodeName(w.op), Ull(idx), w.len, Ull(w.remote_va));
      }
      break;
    case Opcode::kSend:
    case Opcode::kSendImm: check_receive(); break;
    case Opcode::kRead:
      if (Gather(w.side, w.local_offs, w.len) != w.data) {
        Fail("READ wr %llu completed with success, but its buffer does not hold the source bytes",
             Ull(idx));
      }
      break;
    case Opcode::kAtomicFetchAdd:
    case Opcode::kAtomicCompSwap: {
      const AtomicExec* hit = nullptr;
      for (const AtomicExec& x : H(peer).atomics) {
        if (x.va == w.remote_va && x.cs == (w.op == Opcode::kAtomicCompSwap) && x.op0 == w.op0 &&
            x.op1 == w.op1) {
          hit = &x;
        }
      }
      if (hit == nullptr) {
        Fail("%s wr %llu completed with success, but the responder never executed it",
             OpcodeName(w.op), Ull(idx));
      }
      uint64_t got;
      const std::vector<uint8_t> v = Gather(w.side, w.local_offs, 8);
      std::memcpy(&got, v.data(), 8);
      if (got != hit->old) {
        Fail("%s wr %llu returned %llx, but the word held %llx", OpcodeName(w.op), Ull(idx),
             Ull(got), Ull(hit->old));
      }
      break;
    }
  }
}

void Harness::OnRecvCompletion(int side, const Completion& e) {
  const uint64_t idx = e.wr_id - kRecvIdBase;
  if (e.wr_id < kRecvIdBase || idx >= recvs_.size() || recvs_[idx].side != side) {
    Fail("engine %c completed receive wr_id %llx, which was never posted there", Name(side),
         Ull(e.wr_id));
  }
  RecvModel& r = recvs_[idx];
  Trace("  %c completes receive %llu (qp %u): %s, %u bytes\n", Name(side), Ull(idx), e.qp_num,
        WcStatusName(e.status), e.byte_len);
  if (r.st != WrState::kOutstanding) Fail("receive %llu completed again", Ull(idx));
  if (e.qp_num != r.qpn)
    Fail("receive %llu completed on QP %u, posted on %u", Ull(idx), e.qp_num, r.qpn);
  std::deque<size_t>& q = pairs_[r.pair].recvs[side];
  if (q.empty() || q.front() != idx) {
    Fail("engine %c completed receive %llu out of posting order", Name(side), Ull(idx));
  }
  q.pop_front();
  r.st = WrState::kDone;
  r.status = e.status;
  if (e.status == WcStatus::kSuccess && !tainted_) {
    const Pair& p = pairs_[r.pair];
    const int peer = 1 - side;
    if (r.seq < 0 || static_cast<size_t>(r.seq) >= p.consuming[peer].size()) {
      Fail("receive %llu completed with success, but the peer never posted a message for it",
           Ull(idx));
    }
    const SendModel& w = sends_[p.consuming[peer][r.seq]];
    const WcOpcode want = w.op == Opcode::kWriteImm ? WcOpcode::kRecvRdmaWithImm : WcOpcode::kRecv;
    if (e.opcode != want || e.has_imm != (w.op != Opcode::kSend) || (e.has_imm && e.imm != w.imm) ||
        e.byte_len != w.len) {
      Fail(
          "receive %llu completed as opcode %d imm %d/%x len %u; the %s it matches has imm %x, "
          "%u bytes",
          Ull(idx), static_cast<int>(e.opcode), e.has_imm, e.imm, e.byte_len, OpcodeName(w.op),
          w.imm, w.len);
    }
    if (w.op != Opcode::kWriteImm &&
        (w.len > r.offs.size() || Gather(side, r.offs, w.len) != w.data)) {
      Fail("receive %llu completed with success, but does not hold the bytes of %s wr %llu",
           Ull(idx), OpcodeName(w.op), Ull(w.wr_id - kSendIdBase));
    }
  }
  Release(r.res, false);
}

void Harness::Link(size_t send_idx, size_t recv_idx) {
  const SendModel& w = sends_[send_idx];
  const RecvModel& r = recvs_[recv_idx];
  // A receive of a destroyed QP is gone and its bytes may belong to another operation.
  if (r.st != WrState::kOutstanding || r.res < 0 ||
      (w.op != Opcode::kSend && w.op != Opcode::kSendImm) || w.len > r.offs.size()) {
    return;  // nothing of the message is placed in this receive
  }
  for (uint32_t i = 0; i < w.len; i++) H(r.side).expect[r.offs[i]] = w.data[i];
}

void Harness::CheckStats(int side) {
  const EngineStats& s = H(side).eng->stats();
  const Traffic& t = H(side).traffic;
  auto eq = [&](const char* what, uint64_t engine, uint64_t seen) {
    if (engine != seen) {
      Fail("engine %c: stats %s is %llu, the harness saw %llu", Name(side), what, Ull(engine),
           Ull(seen));
    }
  };
  auto le = [&](const char* what, uint64_t a, uint64_t b) {
    if (a > b) Fail("engine %c: %s: %llu > %llu", Name(side), what, Ull(a), Ull(b));
  };
  eq("tx_packets", s.tx_packets, t.tx_pkts);
  eq("tx_bytes", s.tx_bytes, t.tx_bytes);
  eq("tx_data_pkts", s.tx_data_pkts, t.tx_data);
  eq("tx_retransmits", s.tx_retransmits, t.tx_retx);
  eq("tx_acks", s.tx_acks, t.tx_acks);
  eq("tx_naks", s.tx_naks, t.tx_naks);
  eq("tx_probes + keepalives", s.tx_probes + s.keepalives, t.tx_probes);
  le("CONN_RETRYs sent vs tx_conn_retries", t.tx_retries, s.tx_conn_retries);
  le("NAK RESENDs sent vs tx_resend_naks", t.tx_resend_naks, s.tx_resend_naks);
  le("MSG_PROBE packets sent vs msg_probes", t.tx_msg_probes, s.msg_probes);
  eq("rx_packets", s.rx_packets, t.rx_ok);
  eq("rx_bytes", s.rx_bytes, t.rx_bytes);
  eq(
      "rx_packets + parse drops",
      s.rx_packets +
          [&] {
            uint64_t n = 0;
            for (uint64_t d : s.rx_parse_drops) n += d;
            return n;
          }(),
      t.rx_handed);
  for (size_t i = 0; i < static_cast<size_t>(wire::ParseError::kCount); i++) {
    if (s.rx_parse_drops[i] != t.rx_drops[i]) {
      Fail("engine %c: rx_parse_drops[%s] is %llu, the harness's parse says %llu", Name(side),
           wire::ParseErrorName(static_cast<wire::ParseError>(i)), Ull(s.rx_parse_drops[i]),
           Ull(t.rx_drops[i]));
    }
  }
  // Each received packet is dropped for one reason at most.
  le("sum of drop reasons vs rx_packets",
     s.rx_unknown_conn + s.rx_wrong_source + s.rx_bad_path + s.rx_unknown_stream +
         s.rx_beyond_window + s.rx_bad_chunk + s.rx_wrong_stream + s.rx_state_exhausted +
         s.rx_stale_naks + s.rx_bad_cookie + s.rx_conn_refused,
     s.rx_packets);
  le("rx_duplicate_pkts vs data packets received", s.rx_duplicate_pkts, t.rx_data);
  le("rx_ce_pkts vs CE-marked data packets received", s.rx_ce_pkts, t.rx_ce_data);
  le("resend_requests vs NAK RESENDs received", s.resend_requests, t.rx_resend_naks);
  le("rx_stale_naks vs RNR NAKs received", s.rx_stale_naks, t.rx_rnr_naks);
  le("rx_bad_stream_acks vs stream ACKs received", s.rx_bad_stream_acks, t.rx_stream_acks);
  le("rx_bad_cookie + rx_conn_refused vs CONN_REQs received", s.rx_bad_cookie + s.rx_conn_refused,
     t.rx_conn_reqs);
  le("tx_conn_retries vs CONN_REQs received", s.tx_conn_retries, t.rx_conn_reqs);
}

void Harness::CheckInternals(int side) {
  EngineImpl& impl = EnginePeer::Impl(*H(side).eng);
  for (const auto& [id, cp] : impl.conns) {
    const Connection& c = *cp;
    uint32_t inflight = 0;
    for (const TxPath& p : c.paths) {
      uint32_t live = 0;
      for (const Inflight& e : p.ring) live += e.live;
      if (live != p.inflight || p.next_psn - p.una > p.ring.size()) {
        Fail("engine %c conn %08x path %u: %u live packets, inflight %u, psn %u una %u", Name(side),
             id, p.id, live, p.inflight, p.next_psn, p.una);
      }
      inflight += p.inflight;
    }
    if (inflight != c.inflight) {
      Fail("engine %c conn %08x: paths have %u in flight, the connection counts %u", Name(side), id,
           inflight, c.inflight);
    }
    uint64_t state = 0;
    for (uint32_t qpn : c.qps) {
      const Qp* qp = QpOf(side, qpn);
      if (qp == nullptr)
        Fail("engine %c conn %08x lists QP %u, which is gone", Name(side), id, qpn);
      for (const RxMsg& m : qp->window) state += m.state_bytes;
    }
    if (state != c.rx_state_bytes) {
      Fail("engine %c conn %08x: its messages hold %llu state bytes, the connection counts %llu",
           Name(side), id, Ull(state), Ull(c.rx_state_bytes));
    }
  }
}

bool Harness::SendsPending() const {
  for (const Pair& p : pairs_) {
    for (int s : {0, 1}) {
      // An overflowed CQ loses completions; its QPs are flushed into it.
      if (!p.sends[s].empty() && !H(s).eng->CqInError(H(s).send_cq)) return true;
    }
  }
  return false;
}

void Harness::FailHang(const char* why) {
  for (const Pair& p : pairs_) {
    for (int s : {0, 1}) {
      if (p.sends[s].empty()) continue;
      Qp* qp = QpOf(s, p.qpn[s]);
      std::fprintf(stderr, "%c QP %u (state %d): %zu work requests outstanding\n", Name(s),
                   p.qpn[s], qp ? static_cast<int>(qp->state) : -1, p.sends[s].size());
      for (size_t i : p.sends[s]) {
        const SendModel& w = sends_[i];
        std::fprintf(stderr, "  wr %zu %s len %u%s", i, OpcodeName(w.op), w.len,
                     w.signaled ? "" : " unsignaled");
        if (qp != nullptr && qp->connection != nullptr) {
          for (const MsgRef& ref : qp->sq) {
            const TxMsg& m = qp->connection->msgs[ref.idx];
            if (m.wr_id != w.wr_id) continue;
            std::fprintf(
                stderr,
                ": msn %u done %d chunks %u/%u sent, %u delivered, probe_at %lld, "
                "rnr_resume_at %lld, retries left %u",
                m.msn, m.done, m.next_chunk, m.num_chunks, m.delivered.count(),
                m.probe_at == kNever ? -1LL : static_cast<long long>(m.probe_at - now_),
                m.rnr_resume_at == kNever ? -1LL : static_cast<long long>(m.rnr_resume_at - now_),
                m.retries_left);
          }
        }
        std::fprintf(stderr, "\n");
      }
    }
  }
  for (int s : {0, 1}) {
    for (const ConnInfo& c : H(s).eng->GetConnections()) {
      std::fprintf(stderr, "%c conn %08x -> %08x %s, %u QPs, %u in flight\n", Name(s), c.conn_id,
                   c.remote_conn_id, ConnStateName(c.state), c.num_qps, c.inflight);
    }
  }
  Fail("work requests still outstanding after %llu us of drain on a perfect wire: %s",
       Ull((now_ - drain_start_) / kUs), why);
}

bool Harness::PostMarker(size_t pair, int side) {
  SendWr wr;
  wr.wr_id = kSendIdBase + sends_.size();
  wr.opcode = Opcode::kWrite;
  wr.flags = send_flags::kSignaled;
  if (!H(side).eng->PostSend(now_, pairs_[pair].qpn[side], wr).ok()) return false;
  SendModel w;
  w.wr_id = wr.wr_id;
  w.side = side;
  w.pair = pair;
  w.qpn = pairs_[pair].qpn[side];
  w.marker = true;
  w.peer_epoch = H(1 - side).reg_epoch;
  pairs_[pair].sends[side].push_back(sends_.size());
  sends_.push_back(std::move(w));
  return true;
}

void Harness::Drain() {
  draining_ = true;
  Trace("drain\n");
  drain_start_ = now_;
  const TimeNs deadline = now_ + (tainted_ ? kTaintedDrainNs : kDrainNs);
  for (int step = 0;; step++) {
    PollCqs();
    // A QP whose last work request is unsignaled completes it silently: a
    // signaled zero-length WRITE behind it says when.
    for (size_t i = 0; i < pairs_.size(); i++) {
      for (int s : {0, 1}) {
        const std::deque<size_t>& q = pairs_[i].sends[s];
        if (pairs_[i].alive[s] && !q.empty() && !sends_[q.back()].signaled) PostMarker(i, s);
      }
    }
    if (!SendsPending()) break;
    if (now_ > deadline || step > kMaxDrainSteps) {
      // A forgery with the real connection and stream ids can desynchronize a
      // stream for good (the peer took a forged message for a real one).
      if (tainted_) break;
      FailHang("the drain budget is spent");
    }
    PollTx(0, kTxSlots, kSlotBytes);
    PollTx(1, kTxSlots, kSlotBytes);
    if (!WireEmpty()) {
      now_ += kHopNs;
      DeliverAll(0);
      DeliverAll(1);
      continue;
    }
    PollCqs();  // timers in PollTx may have completed work
    if (!SendsPending()) continue;
    const TimeNs t = std::min(H(0).eng->NextDeadline(), H(1).eng->NextDeadline());
    if (t == kNever) {
      if (tainted_) break;
      FailHang("nothing is scheduled");
    }
    now_ = std::max(t, now_ + kHopNs);
  }
  for (int s : {0, 1}) {
    CheckStats(s);
    CheckInternals(s);
  }
}

// ---- Operations ----

void Harness::OpPostSend() {
  const int side = r_.U8() & 1;
  const int peer = 1 - side;
  const size_t pair = r_.U8() % pairs_.size();
  constexpr Opcode kOps[] = {Opcode::kWrite,         Opcode::kWriteImm, Opcode::kSend,
                             Opcode::kSendImm,       Opcode::kRead,     Opcode::kAtomicFetchAdd,
                             Opcode::kAtomicCompSwap};
  const Opcode op = kOps[r_.U8() % std::size(kOps)];
  const uint8_t len_sel = r_.U8();
  const uint32_t len = IsAtomic(op) ? 8 : (len_sel & 0x80) != 0 ? (len_sel & 0x7f) * 16u : len_sel;
  const uint8_t sg_sel = r_.U8();
  const uint8_t flag_sel = r_.U8();
  const uint8_t lmode = r_.U8();
  const uint16_t lhint = r_.U16();
  const uint8_t rmode = r_.U8();
  const uint16_t rhint = r_.U16();
  const uint8_t extra = r_.U8();
  const uint64_t seq = sends_.size();

  SendModel w;
  w.wr_id = kSendIdBase + seq;
  w.side = side;
  w.pair = pair;
  w.qpn = pairs_[pair].qpn[side];
  w.op = op;
  w.signaled = (flag_sel & 3) != 0;
  w.len = len;
  w.imm = static_cast<uint32_t>(Mix(seq));
  w.peer_epoch = H(peer).reg_epoch;
  w.data.resize(len);
  for (uint32_t i = 0; i < len; i++) w.data[i] = PatternByte(seq, i);

  // Local buffer: slot 0 mostly; slot 1; slot 2 (no local write); a bad key; out of bounds.
  const bool result_buffer = op == Opcode::kRead || IsAtomic(op);
  const int lslot = lmode % 8 == 4 ? 1 : lmode % 8 == 5 ? 2 : 0;
  uint64_t loff = 0;
  if (!Alloc(side, lslot, lhint, len, &loff)) return;  // no room: nothing posted
  if (lmode % 8 == 7) loff = kSlots[lslot].off + kSlots[lslot].len - len / 2;
  const uint32_t lkey = PickKey(side, lslot, false, lmode % 8 == 6 ? 1 + (lmode >> 3) % 4 : 0);
  const uint32_t need = result_buffer ? access::kLocalWrite : 0;
  const bool local_ok = len == 0 || KeyCovers(side, lkey, false, Va(side, loff), len, need);

  // Remote target by mode: valid in slot 0 mostly; slot 1 (no read/atomic);
  // slot 2 (no write/atomic); bad keys; out of bounds; misaligned atomics.
  const int rm = rmode % 16;
  const int rslot = rm == 8 || (IsAtomic(op) && rm == 11) ? 1 : rm == 9 || rm == 12 ? 2 : 0;
  uint64_t roff = 0;
  bool have_remote = true;
  if (IsAtomic(op)) {
    roff = kAtomicOff + 8 * (rhint % (kAtomicBytes / 8));
    if (rm == 10) roff += 1 + rhint % 7;
    if (rm == 11 || rm == 12) roff = kSlots[rslot].off + 8 * (rhint % 16);
    if (rm == 14) roff = kSlots[0].off + kSlots[0].len - 4;
    if (rm == 15) roff = kSlots[0].off + kSlots[0].len + 8 * (rhint % 8);
  } else if (op == Opcode::kSend || op == Opcode::kSendImm) {
    have_remote = false;
  } else {
    if (!Alloc(peer, rslot, rhint, len, &roff)) return;
    if (rm == 12) roff = kSlots[rslot].off + kSlots[rslot].len - len / 2;
    if (rm == 13) roff = kSlots[rslot].off + kSlots[rslot].len + rhint % 64;
    if (rm == 14) roff = kSlots[rslot].off - std::min<uint64_t>(kSlots[rslot].off, 1 + rhint % 64);
  }
  const bool bad_key = IsAtomic(op) ? rm == 13 : rm == 10 || rm == 11;
  const uint32_t rkey = PickKey(peer, rslot, true, bad_key ? 1 + (rmode >> 4) % 4 : 0);
  const uint32_t rneed = op == Opcode::kRead ? access::kRemoteRead
                         : IsAtomic(op)      ? access::kRemoteAtomic
                                             : access::kRemoteWrite;
  const uint64_t rlen = IsAtomic(op) ? 8 : len;
  const bool remote_ok =
      have_remote && (rlen == 0 || (KeyCovers(peer, rkey, true, Va(peer, roff), rlen, rneed) &&
                                    (!IsAtomic(op) || roff % 8 == 0)));
  w.bad_local = !local_ok;
  w.bad_remote = have_remote && !remote_ok;
  w.remote_va = Va(peer, roff);
  w.rkey = rkey;

  // Claim what the engine will touch: the gather list or result buffer, the
  // WRITE destination or READ source. A computed address that collides with
  // another operation's bytes makes the operation a no-op.
  if (local_ok && len != 0) {
    w.local_res = Claim(side, loff, len,
                        result_buffer ? Reservation::Kind::kDest : Reservation::Kind::kSource);
    if (w.local_res < 0) return;
  }
  if (remote_ok && rlen != 0 && !IsAtomic(op)) {
    w.remote_res =
        Claim(peer, roff, len,
              op == Opcode::kRead ? Reservation::Kind::kSource : Reservation::Kind::kDest);
    if (w.remote_res < 0) {
      Release(w.local_res, false);
      return;
    }
    if (op == Opcode::kRead) {
      std::memcpy(w.data.data(), H(peer).bytes.data() + roff, len);
    } else {
      for (uint32_t i = 0; i < len; i++) H(peer).expect[roff + i] = w.data[i];
    }
  }

  // Gather list: 1-3 pieces of the local buffer, maybe in reverse order, maybe
  // behind a zero-length SGE with a garbage key (which the engine skips).
  SendWr wr;
  wr.wr_id = w.wr_id;
  wr.opcode = op;
  wr.flags = (w.signaled ? send_flags::kSignaled : 0) | ((flag_sel & 4) ? send_flags::kFence : 0) |
             ((flag_sel & 8) ? send_flags::kSolicited : 0);
  wr.imm = w.imm;
  wr.remote_addr = w.remote_va;
  wr.rkey = rkey;
  // An atomic needs exactly one 8-byte SGE: other lists are for PostSend to refuse.
  const bool odd_atomic = (sg_sel & 0x40) != 0;
  const size_t nsge = len == 0 ? sg_sel % 2 : IsAtomic(op) && !odd_atomic ? 1 : 1 + sg_sel % 3;
  std::vector<std::pair<uint64_t, uint32_t>> pieces;
  uint32_t at = 0;
  for (size_t i = 0; i < nsge; i++) {
    const uint32_t left = len - at;
    const uint32_t n = i + 1 == nsge ? left : std::min<uint32_t>(left, (sg_sel >> 2) * 7 + 1);
    pieces.emplace_back(loff + at, n);
    at += n;
  }
  if ((sg_sel & 0x80) != 0) std::reverse(pieces.begin(), pieces.end());
  if ((extra & 1) != 0 && (!IsAtomic(op) || odd_atomic))
    wr.sg.push_back(Sge{r_.U64(), 0, r_.U32()});
  for (const auto& [off, n] : pieces) {
    wr.sg.push_back(Sge{Va(side, off), n, lkey});
    for (uint32_t i = 0; i < n; i++) w.local_offs.push_back(off + i);
  }
  if (IsAtomic(op)) {
    // Unique operands: every execution names the work request it belongs to.
    uint64_t word = 0;
    if (roff + 8 <= kArenaBytes) std::memcpy(&word, H(peer).bytes.data() + roff, 8);
    w.op0 = op == Opcode::kAtomicCompSwap && (extra & 2) != 0 ? word : seq << 24 | (extra >> 2);
    w.op1 = op == Opcode::kAtomicCompSwap ? (seq << 24 | 0xc5) : 0;
    wr.compare_add = w.op0;
    wr.swap = w.op1;
  }
  // A READ's buffer expects the source bytes (nothing if the READ must be
  // refused); an atomic's, any value (checked against the responder's word).
  if (w.local_res >= 0 && op == Opcode::kRead) {
    for (uint32_t i = 0; i < len; i++) {
      H(side).expect[w.local_offs[i]] = remote_ok ? w.data[i] : kNoWrite;
    }
  }
  // The application fills its gather list before posting.
  if (w.local_res >= 0 && !result_buffer) {
    for (uint32_t i = 0; i < len; i++) H(side).bytes[w.local_offs[i]] = w.data[i];
  }
  const absl::Status st = H(side).eng->PostSend(now_, w.qpn, wr);
  Trace(
      "  %c.PostSend pair %zu qp %u %s wr %llu len %u sge %zu%s local +0x%llx%s remote "
      "0x%llx%s%s: %s\n",
      Name(side), pair, w.qpn, OpcodeName(op), Ull(seq), len, wr.sg.size(),
      w.signaled ? "" : " unsignaled", Ull(loff), local_ok ? "" : " (invalid)", Ull(w.remote_va),
      have_remote && !remote_ok ? " (must be refused)" : "", (flag_sel & 4) ? " fenced" : "",
      st.ok() ? "ok" : std::string(st.message()).c_str());
  if (!st.ok()) {
    Release(w.local_res, false);
    Release(w.remote_res, false);
    return;
  }
  Pair& p = pairs_[pair];
  if (Consumes(op)) {
    w.recv_seq = static_cast<int64_t>(p.consuming[side].size());
    p.consuming[side].push_back(seq);
  }
  p.sends[side].push_back(seq);
  sends_.push_back(std::move(w));
  if (Consumes(op) && static_cast<size_t>(sends_[seq].recv_seq) < p.enqueued[peer].size()) {
    Link(seq, p.enqueued[peer][sends_[seq].recv_seq]);
  }
}

void Harness::OpPostRecv() {
  const int side = r_.U8() & 1;
  const size_t pair = r_.U8() % pairs_.size();
  const uint8_t len_sel = r_.U8();
  const uint32_t len = (len_sel & 0x80) != 0 ? (len_sel & 0x7f) * 16u : len_sel;
  const uint8_t mode = r_.U8();
  const uint16_t hint = r_.U16();
  const uint8_t sg_sel = r_.U8();
  const int slot = mode % 8 == 4 ? 1 : mode % 8 == 5 ? 2 : 0;
  uint64_t off = 0;
  if (!Alloc(side, slot, hint, len, &off)) return;
  const uint32_t lkey = PickKey(side, slot, false, mode % 8 == 6 ? 1 + (mode >> 3) % 4 : 0);
  const bool ok = len == 0 || KeyCovers(side, lkey, false, Va(side, off), len, access::kLocalWrite);
  RecvModel rv;
  rv.wr_id = kRecvIdBase + recvs_.size();
  rv.side = side;
  rv.pair = pair;
  rv.qpn = pairs_[pair].qpn[side];
  if (ok && len != 0) {
    rv.res = Claim(side, off, len, Reservation::Kind::kDest);
    if (rv.res < 0) return;
    for (uint64_t i = off; i < off + len; i++) H(side).expect[i] = kNoWrite;  // until linked
  }
  RecvWr wr;
  wr.wr_id = rv.wr_id;
  const size_t nsge = len == 0 ? sg_sel % 2 : 1 + sg_sel % 3;
  uint32_t at = 0;
  for (size_t i = 0; i < nsge; i++) {
    const uint32_t n =
        i + 1 == nsge ? len - at : std::min<uint32_t>(len - at, (sg_sel >> 2) * 5 + 1);
    wr.sg.push_back(Sge{Va(side, off + at), n, lkey});
    for (uint32_t k = 0; k < n; k++) rv.offs.push_back(off + at + k);
    at += n;
  }
  const bool in_error = H(side).eng->GetQpState(rv.qpn) == QpState::kError;
  const absl::Status st = H(side).eng->PostRecv(rv.qpn, wr);
  Trace("  %c.PostRecv pair %zu qp %u recv %llu len %u sge %zu at +0x%llx%s: %s\n", Name(side),
        pair, rv.qpn, Ull(rv.wr_id - kRecvIdBase), len, nsge, Ull(off), ok ? "" : " (invalid)",
        st.ok() ? "ok" : std::string(st.message()).c_str());
  if (!st.ok()) {
    Release(rv.res, false);
    return;
  }
  if (!ok) Fail("PostRecv accepted a receive buffer outside its regions or without local write");
  Pair& p = pairs_[pair];
  const size_t idx = recvs_.size();
  if (!in_error) {
    rv.seq = static_cast<int64_t>(p.enqueued[side].size());
    p.enqueued[side].push_back(idx);
  }
  p.recvs[side].push_back(idx);
  recvs_.push_back(std::move(rv));
  const int peer = 1 - side;
  if (!in_error && static_cast<size_t>(recvs_[idx].seq) < p.consuming[peer].size()) {
    Link(p.consuming[peer][recvs_[idx].seq], idx);
  }
}

void Harness::OpDestroyQp() {
  const int side = r_.U8() & 1;
  const size_t pair = r_.U8() % pairs_.size();
  Pair& p = pairs_[pair];
  if (!p.alive[side]) return;
  PollCqs();  // what completed before stays completed
  const absl::Status st = H(side).eng->DestroyQp(p.qpn[side]);
  Trace("  %c.DestroyQp %u: %s\n", Name(side), p.qpn[side],
        st.ok() ? "ok" : std::string(st.message()).c_str());
  if (!st.ok()) Fail("DestroyQp of a live QP failed: %s", std::string(st.message()).c_str());
  p.alive[side] = false;
  // Its work requests and receives are gone without completions.
  for (size_t i : p.sends[side]) {
    SendModel& w = sends_[i];
    w.st = WrState::kAbandoned;
    Release(w.local_res, false);
    Release(w.remote_res, true);
  }
  p.sends[side].clear();
  for (size_t i : p.recvs[side]) {
    recvs_[i].st = WrState::kAbandoned;
    Release(recvs_[i].res, false);
  }
  p.recvs[side].clear();
}

void Harness::OpToggleMr() {
  const int side = r_.U8() & 1;
  const int slot = r_.U8() % kNumSlots;
  Host& h = H(side);
  Mr& m = h.mrs[slot];
  if (m.registered) {
    const absl::Status st = h.eng->DeregMr(m.keys.lkey);
    if (!st.ok()) Fail("DeregMr: %s", std::string(st.message()).c_str());
    m.registered = false;
    m.old.push_back(m.keys);
  } else {
    auto mr = h.eng->RegMr(h.pd, Va(side, kSlots[slot].off), kSlots[slot].len, kSlots[slot].access);
    if (!mr.ok()) Fail("RegMr: %s", std::string(mr.status().message()).c_str());
    m.registered = true;
    m.keys = *mr;
    h.reg_epoch++;
  }
  Trace("  %c %s region %d\n", Name(side), m.registered ? "registers" : "deregisters", slot);
}

// ---- Hostile packets ----

Connection* Harness::ConnTo(int side) {
  EngineImpl& impl = EnginePeer::Impl(*H(side).eng);
  auto it = impl.conn_by_peer.find(EngineImpl::PeerKey{kIp[1 - side], kPort});
  return it == impl.conn_by_peer.end() ? nullptr : EnginePeer::Conn(*H(side).eng, it->second);
}

Qp* Harness::QpOf(int side, uint32_t qpn) {
  EngineImpl& impl = EnginePeer::Impl(*H(side).eng);
  auto it = impl.qps.find(qpn);
  return it == impl.qps.end() ? nullptr : it->second.get();
}

/** The receiver's real id for its connection to the peer, one a bit off, or a guess. */
uint32_t Harness::ConnId(int to) {
  const Connection* c = ConnTo(to);
  const uint8_t mode = r_.U8() % 4;
  if (c == nullptr || mode == 3) return r_.U32() | 1;
  if (mode == 2) return c->local_id ^ (1u << (r_.U8() % 32));
  return c->local_id;
}

/** One of the side's QP numbers (maybe of a destroyed QP), or a guess. */
uint32_t Harness::QpnOf(int side) {
  const uint8_t b = r_.U8();
  return b < 224 ? pairs_[b % pairs_.size()].qpn[side] : (r_.U32() | 1);
}

/** The peer's address (spoofed), the off-path host's, or the receiver's own. */
wire::FrameInfo Harness::HostileFrom(int to) {
  wire::FrameInfo f;
  const uint8_t mode = r_.U8();
  f.src = mode % 4 < 2 ? kIp[1 - to] : mode % 4 == 2 ? kOffPathIp : kIp[to];
  f.dst = kIp[to];
  f.src_port = static_cast<uint16_t>(config::kPathSourcePortMin + r_.U8());
  f.dst_port = kPort;
  f.ecn = (mode & 0x10) != 0 ? wire::Ecn::kCe : wire::Ecn::kEct0;
  return f;
}

void Harness::Inject(int to, const wire::FrameInfo& from, const wire::Packet& p) {
  std::vector<uint8_t> buf(wire::EncodedBytes(p));
  auto n = wire::EncodeDatagram(p, buf);
  if (!n.ok()) {
    Trace("  (not encodable: %s)\n", std::string(n.status().message()).c_str());
    return;
  }
  buf.resize(*n);
  Deliver(to, Datagram{from, std::move(buf)}, Ctx::kHostile);
}

void Harness::ForgeAck() {
  const int to = r_.U8() & 1;
  const wire::FrameInfo from = HostileFrom(to);
  Connection* c = ConnTo(to);
  wire::Packet p;
  p.type = PacketType::kAck;
  p.dst_conn_id = ConnId(to);
  const size_t npaths = c != nullptr ? c->paths.size() : 1;
  p.path_id = static_cast<uint16_t>(r_.U8() % (npaths + 1));
  const TxPath* path = c != nullptr && p.path_id < c->paths.size() ? &c->paths[p.path_id] : nullptr;
  wire::AckBody& a = p.ack;
  // Around the oldest PSN in flight or the next one: stale, in flight, never sent.
  const uint8_t base = r_.U8();
  a.cum_psn = path == nullptr ? r_.U32() : (base & 1) != 0 ? path->una : path->next_psn;
  a.cum_psn += static_cast<uint32_t>(static_cast<int8_t>(r_.U8()));
  switch (base >> 1 & 3) {
    case 1: {
      const size_t word = r_.U8() % 4;
      a.sack[word] = r_.U64();
      break;
    }
    case 2: {
      const uint32_t bits = r_.U8();
      for (uint32_t i = 0; i < bits; i++) a.sack[i / 64] |= uint64_t{1} << (i % 64);
      break;
    }
    case 3:
      for (uint64_t& w : a.sack) w = r_.U64();
      break;
    default: break;
  }
  a.has_sack = (a.sack[0] | a.sack[1] | a.sack[2] | a.sack[3]) != 0;
  a.echo_ts_ns = (base & 8) != 0 ? static_cast<uint32_t>(now_ - r_.U16()) : r_.U32();
  a.ack_delay_ns = r_.U16();
  a.rx_pkts = r_.U32();
  a.ce_pkts = r_.U16();
  a.ece = (base & 0x10) != 0;
  a.num_stream_acks = static_cast<uint8_t>((base >> 5) % 3);
  for (uint32_t i = 0; i < a.num_stream_acks; i++) {
    const uint32_t qpn = QpnOf(to);
    const Qp* qp = QpOf(to, qpn);
    const uint8_t m = r_.U8();
    a.stream_acks[i].stream_id = qpn;
    a.stream_acks[i].msn_next = qp == nullptr  ? r_.U32()
                                : (m & 1) != 0 ? qp->next_msn
                                               : qp->peer_msn_next;
    a.stream_acks[i].msn_next += r_.Delta();
  }
  Inject(to, from, p);
}

void Harness::ForgeNak() {
  const int to = r_.U8() & 1;
  const wire::FrameInfo from = HostileFrom(to);
  Connection* c = ConnTo(to);
  wire::Packet p;
  p.type = PacketType::kNak;
  p.dst_conn_id = ConnId(to);
  const size_t npaths = c != nullptr ? c->paths.size() : 1;
  p.path_id = static_cast<uint16_t>(r_.U8() % (npaths + 1));
  const TxPath* path = c != nullptr && p.path_id < c->paths.size() ? &c->paths[p.path_id] : nullptr;
  wire::NakBody& n = p.nak;
  n.stream_id = QpnOf(to);
  const Qp* qp = QpOf(to, n.stream_id);
  const uint8_t m = r_.U8();
  uint32_t msn = r_.U32();
  if (qp != nullptr && qp->connection != nullptr) {
    msn = (m & 1) != 0 || qp->sq.empty() ? qp->next_msn
                                         : qp->connection->msgs[qp->sq.front().idx].msn;
  }
  n.msn = msn + r_.Delta();
  n.psn = path != nullptr ? path->next_psn - 1 - r_.U8() % 4 : r_.U32();
  n.code = static_cast<wire::NakCode>(1 + (m >> 1) % wire::kNakCodeMax);
  n.detail = r_.U8() % 12;
  if (n.code == wire::NakCode::kReceiverNotReady) {
    n.rnr_delay_10us = (m & 0x10) != 0 ? r_.U16() : r_.U8() % 4;
  }
  if (n.code == wire::NakCode::kResend) {
    n.first_chunk = (m & 0x20) != 0 ? r_.U32() : r_.U8() % 10;
    n.num_chunks = (m & 0x40) != 0 ? r_.U32() : 1 + r_.U8() % 10;
    if (n.num_chunks == 0) n.num_chunks = 1;
    if (n.first_chunk == UINT32_MAX) n.first_chunk--;
    if (n.first_chunk > UINT32_MAX - n.num_chunks) n.num_chunks = UINT32_MAX - n.first_chunk;
  }
  Inject(to, from, p);
}

void Harness::ForgeProbe() {
  const int to = r_.U8() & 1;
  const wire::FrameInfo from = HostileFrom(to);
  Connection* c = ConnTo(to);
  wire::Packet p;
  const uint8_t m = r_.U8();
  p.type = (m & 1) != 0 ? PacketType::kProbe : PacketType::kProbeReply;
  p.dst_conn_id = ConnId(to);
  const size_t npaths = c != nullptr ? c->paths.size() : 1;
  p.path_id = static_cast<uint16_t>(r_.U8() % (npaths + 1));
  const TxPath* path = c != nullptr && p.path_id < c->paths.size() ? &c->paths[p.path_id] : nullptr;
  p.probe.probe_seq = path != nullptr && (m & 2) != 0 ? path->probe_seq - r_.U8() % 6 : r_.U32();
  p.probe.ts_ns = r_.U32();
  if (p.type == PacketType::kProbe) p.payload = {hostile_payload_.data(), (m >> 2) % 48u};
  Inject(to, from, p);
}

void Harness::ForgeData() {
  const int to = r_.U8() & 1;
  const wire::FrameInfo from = HostileFrom(to);
  Connection* c = ConnTo(to);
  const uint8_t m0 = r_.U8(), m1 = r_.U8(), m2 = r_.U8();
  wire::Packet p;
  p.type = static_cast<PacketType>(1 + m0 % 9);
  p.flags = r_.U8() & wire::AllowedFlags(p.type);
  p.dst_conn_id = ConnId(to);
  const size_t npaths = c != nullptr ? c->rx_paths.size() : 1;
  p.path_id = static_cast<uint16_t>(r_.U8() % (npaths + 1));
  const RxPath* rx =
      c != nullptr && p.path_id < c->rx_paths.size() ? &c->rx_paths[p.path_id] : nullptr;
  wire::DataBody& d = p.data;
  // PSN: next expected, a duplicate, beyond the 256-PSN window, or anything.
  const uint32_t cum = rx != nullptr ? rx->cum : r_.U32();
  switch (m0 >> 4 & 3) {
    case 0: d.psn = cum + r_.U8() % 8; break;
    case 1: d.psn = cum - 1 - r_.U8() % 8; break;
    case 2: d.psn = cum + wire::kSackBits + 1 + r_.U8(); break;
    default: d.psn = r_.U32(); break;
  }
  // una_psn: the PSN itself (moves the receiver's cumulative PSN), or at or
  // below the cumulative PSN (moves nothing).
  d.una_psn = d.psn;
  if ((m0 & 0x40) == 0) {
    const uint32_t una = cum - r_.U8();
    if (!wire::SeqLt(d.psn, una)) d.una_psn = una;
  }
  d.tx_ts_ns = r_.U32();
  d.stream_id = QpnOf(to);
  const Qp* qp = QpOf(to, d.stream_id);
  switch (m1 & 3) {
    case 0:
    case 1: d.src_stream = qp != nullptr ? qp->remote_qpn : r_.U32() | 1; break;
    case 2: d.src_stream = QpnOf(1 - to); break;
    default: d.src_stream = r_.U32() | 1; break;
  }
  if (d.src_stream == 0) d.src_stream = 1;
  // MSN: the receiver's next, the requester's oldest, or past the stream window.
  if (qp != nullptr && wire::IsRequest(p.type)) {
    d.msn = ((m1 & 4) != 0 ? qp->msn_next + EnginePeer::Impl(*H(to).eng).cfg.stream_window_msgs
                           : qp->msn_next) +
            r_.Delta();
  } else if (qp != nullptr && qp->connection != nullptr && !qp->sq.empty()) {
    d.msn = qp->connection->msgs[qp->sq.front().idx].msn + r_.Delta();
  } else {
    d.msn = r_.U32();
  }
  const uint32_t chunk = c != nullptr && c->chunk_bytes != 0 ? c->chunk_bytes : 256;
  size_t payload = 0;
  if (wire::CarriesPayload(p.type)) {
    switch (m1 >> 3 & 3) {
      case 0: d.msg_len = r_.U16() % 2048; break;
      case 1: d.msg_len = 0; break;
      case 2: d.msg_len = chunk * (1 + r_.U8() % 8); break;
      default: d.msg_len = r_.U32() % (wire::kMaxMessageBytes + 1); break;
    }
    d.msg_offset = (m1 & 0x20) != 0 ? r_.U16() : chunk * (r_.U8() % 8);
    if (d.msg_offset > d.msg_len) d.msg_offset = 0;
    payload = std::min<uint64_t>(d.msg_len - d.msg_offset,
                                 (m1 & 0x40) != 0 ? r_.U16() % kMaxHostilePayload : chunk);
    payload = std::min(payload, kMaxHostilePayload);
    if (payload == 0 && d.msg_len != 0) payload = 1;
  } else {
    d.msg_len =
        wire::IsAtomicRequest(p.type) || p.type == PacketType::kAtomicResp ? 8 : r_.U16() % 4096;
  }
  if (wire::HasRdmaTarget(p.type)) {
    const int slot = m2 % kNumSlots;
    d.rkey = (m2 & 4) != 0 ? r_.U32() : H(to).mrs[slot].keys.rkey;
    d.va = (m2 & 8) != 0 ? r_.U64() : Va(to, kSlots[slot].off + r_.U16() % kSlots[slot].len);
  }
  if (wire::ConsumesReceive(p.type)) {
    d.recv_seq = qp != nullptr && (m2 & 0x10) == 0 ? qp->rq_base + r_.U8() % 4 : r_.U32();
  }
  if (wire::HasImmediate(p.type)) d.imm = r_.U32();
  if (wire::IsAtomicRequest(p.type)) {
    d.operand0 = r_.U64();
    d.operand1 = p.type == PacketType::kAtomicCompSwap ? r_.U64() : 0;
  }
  if (p.type == PacketType::kAtomicResp) d.orig = r_.U64();
  for (size_t i = 0; i < payload; i++) hostile_payload_[i] = static_cast<uint8_t>(0xee ^ i);
  p.payload = {hostile_payload_.data(), payload};
  Inject(to, from, p);
}

/** The cookie the engines handed out for @p req (a CONN_RETRY in the capture), or 0. */
uint64_t Harness::CookieFor(const wire::ConnBody& req) const {
  for (size_t k = 0; k < captured_.size(); k++) {
    const Datagram& d = captured_[(captured_total_ - 1 - k) % captured_.size()];
    wire::Packet p;
    if (wire::ParseDatagram(d.bytes, ParseOpts(), &p) == wire::ParseError::kOk &&
        p.type == PacketType::kConnRetry && p.dst_conn_id == req.src_conn_id &&
        p.conn.nonce == req.nonce) {
      return p.conn.cookie;
    }
  }
  return 0;
}

void Harness::ForgeConn() {
  int to = r_.U8() & 1;
  constexpr PacketType kTypes[] = {PacketType::kConnReq, PacketType::kConnRetry,
                                   PacketType::kConnAccept, PacketType::kConnReject,
                                   PacketType::kConnClose};
  const uint8_t m = r_.U8();
  const PacketType type = kTypes[m % std::size(kTypes)];
  wire::FrameInfo from = HostileFrom(to);
  Connection* c = ConnTo(to);
  wire::Packet p;
  p.type = type;
  wire::ConnBody& b = p.conn;
  if (type == PacketType::kConnReq && (m & 0x80) != 0 && have_attack_req_) {
    // Come back with the cookie: an off-path host that receives at its
    // address opens a connection; one that spoofed must have sniffed it.
    b = attack_req_;
    from = attack_from_;
    to = attack_to_;
    b.cookie = CookieFor(b);
  } else {
    p.dst_conn_id = type == PacketType::kConnReq ? 0 : ConnId(to);
    const uint8_t f = r_.U8();
    b.src_conn_id = c != nullptr && c->remote_id != 0 && (f & 1) != 0 ? c->remote_id : r_.U32() | 1;
    b.nonce = c != nullptr && (f & 2) != 0 ? c->nonce : r_.U32();
    b.min_version = b.max_version = wire::kVersion;
    if ((f & 0x0c) == 0x0c) {
      b.min_version = r_.U8() % 4;
      b.max_version = static_cast<uint8_t>(b.min_version + r_.U8() % 3);
    }
    if (type == PacketType::kConnReject || type == PacketType::kConnClose) {
      b.reason = static_cast<wire::ConnReason>(r_.U8() % (wire::kConnReasonMax + 1));
    }
    b.num_paths = (f & 0x10) != 0 ? r_.U16() | 1 : 1 + r_.U8() % 4;
    b.max_payload = static_cast<uint16_t>(256 + r_.U16() % 8800);
    b.udp_port = (f & 0x20) != 0 ? r_.U16() | 1 : kPort;
    const uint64_t real_inc = EnginePeer::Impl(*H(1 - to).eng).incarnation;
    b.incarnation = (f & 0x40) != 0 ? real_inc : r_.U64() | 1;
    b.stream_window = 1 + r_.U8() % 16;
    b.capabilities = (f & 0x80) != 0 ? r_.U32() : 0;
    if (type == PacketType::kConnReq) b.cookie = (f & 0x08) != 0 && (f & 4) == 0 ? r_.U64() : 0;
    if (type == PacketType::kConnRetry) b.cookie = r_.U64() | 1;
  }
  if (type == PacketType::kConnReq) {
    have_attack_req_ = true;
    attack_req_ = b;
    attack_from_ = from;
    attack_to_ = to;
  }
  Inject(to, from, p);
}

void Harness::Replay() {
  if (captured_.empty()) return;
  const Datagram& orig = captured_[r_.U16() % captured_.size()];
  Datagram d = orig;
  const uint8_t m = r_.U8();
  int to = -1;
  for (int i : {0, 1}) {
    if (orig.addr.dst == kIp[i] && orig.addr.dst_port == kPort) to = i;
  }
  // To its destination from its source it is a duplicate, which the network
  // may make at any time; else it is hostile.
  bool exact = to >= 0;
  if (to < 0 || (m & 3) == 3) {
    to = to < 0 ? (m >> 2 & 1) : 1 - to;
    exact = false;
  }
  if ((m & 0x10) != 0) {
    d.addr.src = kOffPathIp;
    exact = false;
  }
  d.addr.dst = kIp[to];
  d.addr.dst_port = kPort;
  if ((m & 0x20) != 0) d.addr.ecn = wire::Ecn::kCe;
  Deliver(to, std::move(d), exact ? Ctx::kHonest : Ctx::kHostile);
}

void Harness::Mutate() {
  if (captured_.empty()) return;
  Datagram d = captured_[r_.U16() % captured_.size()];
  const uint8_t m = r_.U8();
  int to = m & 1;
  for (int i : {0, 1}) {
    if (d.addr.dst == kIp[i]) to = i;
  }
  std::vector<uint8_t>& b = d.bytes;
  const size_t edits = 1 + (m >> 1) % 4;
  for (size_t i = 0; i < edits && b.size() > wire::kCrcBytes; i++) {
    const size_t pos = r_.U16() % (b.size() - wire::kCrcBytes);
    const uint8_t v = r_.U8();
    if ((v & 1) != 0) {
      b[pos] ^= static_cast<uint8_t>(1u << (v >> 1 & 7));
    } else {
      b[pos] = r_.U8();
    }
  }
  switch (m >> 3 & 7) {
    case 0: b.resize(b.size() - std::min<size_t>(b.size(), 1 + r_.U8() % 16)); break;
    case 1: b.resize(b.size() + 1 + r_.U8() % 16, 0); break;
    default: break;
  }
  if ((m & 0xc0) != 0xc0 && b.size() >= wire::kCrcBytes) {  // re-seal: past the CRC to the fields
    const uint32_t crc = wire::Crc32c(b.data(), b.size() - wire::kCrcBytes);
    for (size_t i = 0; i < 4; i++) b[b.size() - 4 + i] = static_cast<uint8_t>(crc >> (24 - 8 * i));
  }
  d.addr.dst = kIp[to];
  Deliver(to, std::move(d), Ctx::kHostile);
}

void Harness::Step(Op op) {
  switch (op) {
    case Op::kTick: {
      const TimeNs base = r_.U8() + 1u;
      const TimeNs dt = base << (r_.U8() % 16);
      now_ += dt;
      Trace("  +%llu ns\n", Ull(dt));
      PollTx(0, kTxSlots, kSlotBytes);
      PollTx(1, kTxSlots, kSlotBytes);
      break;
    }
    case Op::kPollTx: {
      const int side = r_.U8() & 1;
      const uint8_t m = r_.U8();
      const size_t n = 1 + m % kTxSlots;
      // Small slots too: the engine must keep what does not fit for later.
      const uint32_t cap = (m & 0x80) != 0 ? 64 + r_.U8() * 4u : kSlotBytes;
      PollTx(side, n, cap);
      break;
    }
    case Op::kDeliver:
    case Op::kDrop:
    case Op::kDuplicate: {
      const int to = r_.U8() & 1;
      const uint16_t i = r_.U16();
      const bool ce = r_.Bit();
      std::deque<Datagram>& q = wire_[to];
      if (q.empty()) break;
      const size_t at = i % q.size();
      Datagram d = q[at];
      if (op != Op::kDuplicate) q.erase(q.begin() + static_cast<ptrdiff_t>(at));
      if (op == Op::kDrop) {
        if (g_trace) Trace("  lost   %s\n", Describe(d.bytes).c_str());
        break;
      }
      if (ce) d.addr.ecn = wire::Ecn::kCe;
      Deliver(to, std::move(d), Ctx::kHonest);
      break;
    }
    case Op::kDeliverAll: {
      const uint8_t m = r_.U8();
      if (m % 3 != 1) DeliverAll(0);
      if (m % 3 != 0) DeliverAll(1);
      break;
    }
    case Op::kSettle: {
      const TimeNs base = r_.U8() + 1u;
      Settle(now_ + (base << (6 + r_.U8() % 10)));
      break;
    }
    case Op::kPostSend: OpPostSend(); break;
    case Op::kPostRecv: OpPostRecv(); break;
    case Op::kDestroyQp: OpDestroyQp(); break;
    case Op::kToggleMr: OpToggleMr(); break;
    case Op::kNewPair: AddPair(); break;
    case Op::kForgeAck: ForgeAck(); break;
    case Op::kForgeNak: ForgeNak(); break;
    case Op::kForgeProbe: ForgeProbe(); break;
    case Op::kForgeData: ForgeData(); break;
    case Op::kForgeConn: ForgeConn(); break;
    case Op::kReplay: Replay(); break;
    case Op::kMutate: Mutate(); break;
    case Op::kCount: break;
  }
}

void Harness::Run() {
  Setup();
  for (op_index_ = 0; op_index_ < kMaxOps && !r_.empty(); op_index_++) {
    op_ = static_cast<Op>(r_.U8() % static_cast<uint8_t>(Op::kCount));
    Trace("#%zu t=%llu %s\n", op_index_, Ull(now_ - kStartNs), OpName(op_));
    Step(op_);
    PollCqs();
    for (int s : {0, 1}) {
      CheckStats(s);
      CheckInternals(s);
    }
  }
  Drain();
}

}  // namespace
}  // namespace metaroce::transport

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool trace = std::getenv("MR_FUZZ_TRACE") != nullptr;
  metaroce::transport::g_trace = trace;
  metaroce::transport::Harness h({data, size});
  h.Run();
  return 0;
}
