/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// mr-perf: shared types. parameters.cc turns argv into Options, control.cc
// carries the test spec and results between the two processes over TCP,
// endpoint.cc builds the MetaRoCE objects, one mode_*.cc file per test mode
// (client side), responder.cc is the server side of every mode, report.cc
// prints tables and JSON.

#ifndef METAROCE_APP_PERF_PERF_H
#define METAROCE_APP_PERF_PERF_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mr_device.h"

namespace metaroce::perf {

using transport::TimeNs;

/** Largest message mr-perf sends (and the largest step of a sweep). */
inline constexpr uint32_t kMaxMsgBytes = 8u << 20;
/** Sizes of a sweep (-a): powers of two from 2 bytes up to --size. */
inline constexpr uint32_t kSweepMinBytes = 2;
/** A run that sees no progress this long fails (the peer died, or a bug). */
inline constexpr TimeNs kStallTimeoutNs = 10'000'000'000;
/** Write slots per QP the server checks and credits back (--verify); at least 2 x depth. */
inline constexpr uint32_t kMinWriteSlots = 16;
/** Receives each side keeps posted per QP, at least 2 x depth. */
inline constexpr uint32_t kMinRecvSlots = 32;
/** Bytes of remote memory per QP a READ picks offsets from. */
inline constexpr uint64_t kReadRegionBytes = 16u << 20;
/** Polls between looks at the control socket while a test runs. */
inline constexpr uint32_t kControlPollEvery = 1024;

/** What a test does; the order is the wire value of TestSpec::mode. */
enum class ModeId : uint8_t {
  kWriteBw,
  kReadBw,
  kSendBw,
  kWriteLat,
  kReadLat,
  kSendLat,
  kAtomicLat,
  kMixed,
  kCount
};

/** One test run, chosen by the client and sent to the server. */
struct TestSpec {
  uint8_t mode = 0;  // ModeId
  uint8_t verify = 0;
  uint16_t qps = 1;
  uint32_t size = 65536;
  uint32_t depth = 64;  ///< outstanding work requests per QP
  uint32_t pad = 0;
  uint64_t iters = 0;        ///< per QP; 0: run for duration_ns (or until bytes)
  uint64_t duration_ns = 0;  ///< 0: run iters
  uint64_t bytes = 0;        ///< mixed: stop after this many payload bytes in all
  uint64_t seed = 1;         ///< message sizes and operation mix of `mixed`
};
static_assert(sizeof(TestSpec) == 48, "TestSpec travels on the control socket");

/** Command-line options. */
struct Options {
  DeviceConfig dev;
  uint16_t listen_port = 0;  ///< server
  std::string connect;       ///< client: HOST:PORT of the server's control socket
  ModeId mode = ModeId::kWriteBw;
  bool sweep = false;  ///< -a: every power of two up to spec.size
  bool json = false;
  TestSpec spec;
};

/** Parses argv; on error prints a message saying what to fix and returns the exit code. */
int ParseOptions(int argc, char** argv, Options* o);

/** A mode's name ("write_bw") and whether it measures latency. */
struct ModeInfo {
  const char* name;
  bool latency;
  const char* help;
};
const ModeInfo& Mode(ModeId m);
/** ModeId by name; kCount if unknown. */
ModeId ModeByName(const std::string& name);

// ---- Control channel (control.cc) ----

/** A TCP connection to the peer process; every message is a fixed-size struct. */
class Control {
 public:
  ~Control();
  static std::unique_ptr<Control> Listen(uint16_t port);
  static std::unique_ptr<Control> Connect(const std::string& host_port);
  bool Send(const void* p, size_t n);
  bool Recv(void* p, size_t n);
  /** Non-blocking: true and fills @p p when a whole message of @p n bytes is there. */
  bool TryRecv(void* p, size_t n, bool* closed);

 private:
  explicit Control(int fd) : fd_(fd) {}
  int fd_;
};

// ---- Endpoint: the MetaRoCE side of one process (endpoint.cc) ----

/** What one side tells the other about one QP. */
struct QpWire {
  uint32_t qpn;
  uint32_t rkey;
  uint64_t write_base;  ///< write slots the peer may WRITE into
  uint64_t read_base;   ///< patterned region the peer may READ
  uint64_t read_len;
  uint64_t atomic_va;  ///< two 8-byte words: a fetch-add counter, a compare-swap word
  uint64_t credit_va;  ///< where the peer WRITEs its count of verified writes
};
static_assert(sizeof(QpWire) == 48, "QpWire travels on the control socket");

/** Where a process's MetaRoCE device is, sent once when the processes meet. */
struct Hello {
  uint8_t ip[16];
  uint8_t v6;
  uint8_t mac[6];
  uint8_t pad;
  uint16_t udp_port;
  uint16_t pad2;
  uint32_t version;
};
static_assert(sizeof(Hello) == 32, "Hello travels on the control socket");
inline constexpr uint32_t kControlVersion = 1;

/** The client's last word in a test: what it completed, so the server knows what to wait for. */
struct ClientDone {
  uint64_t data_writes = 0;  ///< WRITE_WITH_IMM data messages completed
  uint64_t data_sends = 0;   ///< SEND data messages completed
  uint64_t failed = 0;       ///< non-zero: the client gave up; the server stops at once
  uint64_t pad = 0;
};
static_assert(sizeof(ClientDone) == 32, "ClientDone travels on the control socket");

/** What one posted work request was, for checking it when it completes. */
struct SlotMeta {
  uint8_t kind = 0;  // Kind
  uint32_t len = 0;
  uint64_t seq = 0;
  uint64_t offset = 0;  ///< READ: offset in the peer's region
  TimeNs posted_ns = 0;
};

/** One QP with its buffers and its progress in the current test. */
struct PerfQp {
  uint32_t index = 0;
  uint32_t qpn = 0;
  QpWire remote{};
  // Local buffers (inside the endpoint's registered memory), `slots` entries of `msg` bytes.
  uint8_t* src = nullptr;              ///< what this side sends from
  uint8_t* recv = nullptr;             ///< receive buffers
  uint8_t* write_slots = nullptr;      ///< where the peer WRITEs
  uint8_t* read_dst = nullptr;         ///< where READ responses land
  uint64_t* atomic_words = nullptr;    ///< [0] fetch-add counter, [1] compare-swap word
  uint64_t* credit_word = nullptr;     ///< the peer's count of verified writes lands here
  uint64_t* credit_src = nullptr;      ///< this side's count, source of the credit WRITE
  uint64_t* atomic_results = nullptr;  ///< one word per send slot
  std::vector<SlotMeta> meta;          ///< one per send slot
  // Progress.
  uint64_t posted = 0, completed = 0;
  uint64_t writes_posted = 0, sends_posted = 0, reads_posted = 0;
  uint64_t writes_done = 0, sends_done = 0;
  uint64_t writes_seen = 0, sends_seen = 0;  ///< data messages received from the peer
  uint64_t recvs_posted = 0;
  uint64_t credit_sent = 0;
  uint64_t cas_value = 0;
  bool cas_outstanding = false;
  std::vector<uint64_t> fetched;  ///< fetch-add results, checked as a set at the end
};

/** Figures one test produced on one side. */
struct Result {
  uint64_t msgs = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  uint64_t verified_msgs = 0;
  uint64_t verify_errors = 0;
  uint64_t op_counts[5] = {};  ///< mixed: write, send, read, fetch-add, compare-swap
  uint64_t data_writes = 0, data_sends = 0;
  std::vector<double> lat_us;  ///< latency modes: one sample per iteration
  std::string error;           ///< non-empty: the test failed
};

/** Results the server sends back at the end of a test. */
struct ServerReport {
  uint64_t msgs_received = 0;
  uint64_t verified_msgs = 0;
  uint64_t verify_errors = 0;
  uint64_t ok = 0;
  char error[96] = {};
};
static_assert(sizeof(ServerReport) == 128, "ServerReport travels on the control socket");

/**
 * The MetaRoCE side of one process: the device lives as long as the process,
 * the QPs, memory and CQ of a test only as long as the test (a sweep makes
 * new ones per size, over the same connection).
 */
class Endpoint {
 public:
  static absl::StatusOr<std::unique_ptr<Endpoint>> Open(const Options& o);
  ~Endpoint();
  Device& dev() { return *dev_; }
  transport::Engine& engine() { return dev_->engine(); }
  TimeNs Now() const { return dev_->Now(); }
  Hello MyHello() const;
  void SetPeer(const Hello& peer);
  const transport::PeerAddr& peer() const { return peer_; }

  /** Creates the QPs, memory and receives for @p spec. */
  absl::Status Setup(const TestSpec& spec);
  std::vector<QpWire> MyQps() const;
  /** Connects QP i to the peer's QP i. */
  absl::Status Connect(const std::vector<QpWire>& peer_qps);
  /** Destroys what Setup() made. */
  void Teardown();
  /** Tears down and closes the device (and its port); only the destructor may follow. */
  void Close();

  uint32_t cq() const { return cq_; }
  uint32_t lkey() const { return mr_.lkey; }
  std::vector<PerfQp>& qps() { return qps_; }
  uint32_t send_slots() const { return send_slots_; }
  uint32_t recv_slots() const { return recv_slots_; }
  uint32_t write_slots() const { return write_slots_; }
  uint32_t msg_bytes() const { return msg_; }
  uint64_t read_len() const { return read_len_; }

  /** Posts the receive that takes the place of one just completed on @p q. */
  absl::Status PostRecv(PerfQp& q);
  /** Receive buffer of receive number @p n of @p q. */
  uint8_t* RecvBuf(const PerfQp& q, uint64_t n) const;
  /** One run-to-completion iteration, then up to out.size() completions. */
  size_t Poll(std::span<transport::Completion> out);
  /** Runs the device for @p ns so the last ACKs go out. */
  void Linger(TimeNs ns);

 private:
  Endpoint() = default;
  std::unique_ptr<Device> dev_;
  transport::PeerAddr peer_;
  uint32_t pd_ = 0;
  // Per test.
  uint8_t* mem_ = nullptr;
  size_t mem_len_ = 0;
  transport::MrInfo mr_{};
  bool have_mr_ = false;
  uint32_t cq_ = 0;  // engine CQ numbers start at 1
  bool set_up_ = false;
  uint32_t send_slots_ = 0, recv_slots_ = 0, recv_bufs_ = 0, write_slots_ = 0, msg_ = 0;
  uint64_t read_len_ = 0;
  uint8_t* read_region_ = nullptr;
  std::vector<PerfQp> qps_;
};

/** Largest memory one test may register (a bigger -s x -d x -q is refused with the figure). */
inline constexpr uint64_t kMaxTestMemBytes = 3ull << 30;

// ---- Data patterns (pattern.cc) ----

/** Fills @p len bytes with the pattern of (qp, seq) for kind @p kind. */
void FillPattern(uint8_t* p, uint32_t len, uint32_t kind, uint32_t qp, uint64_t seq);
/** True when @p p holds exactly that pattern. */
bool CheckPattern(const uint8_t* p, uint32_t len, uint32_t kind, uint32_t qp, uint64_t seq);
/** Fills the READ region of a QP (the pattern depends only on the offset). */
void FillReadRegion(uint8_t* p, uint64_t len, uint32_t qp);
bool CheckReadRegion(const uint8_t* p, uint32_t len, uint64_t offset, uint32_t qp);
/** Size of message @p seq of kind @p kind in a mixed test (1..max). */
uint32_t MixedSize(uint64_t seed, uint32_t kind, uint32_t qp, uint64_t seq, uint32_t max);

/** Kinds of pattern, also the mixed operations. */
enum Kind : uint32_t {
  kKindWrite = 0,
  kKindSend = 1,
  kKindRead = 2,
  kKindFetchAdd = 3,
  kKindCas = 4
};

// ---- Running a test (run.cc, mode_*.cc, responder.cc) ----

/** Server side of one test: answers until the client's done message; returns the report. */
ServerReport RunResponder(Endpoint& ep, const TestSpec& spec, Control& ctl);
/** Client side: runs the mode of @p spec; fills @p r. */
void RunMode(Endpoint& ep, const TestSpec& spec, Result* r);

/** wr_id of a work request: QP index, kind, slot. */
inline uint64_t MakeWrId(uint32_t qp, uint32_t kind, uint64_t slot) {
  return (static_cast<uint64_t>(qp) << 48) | (static_cast<uint64_t>(kind) << 40) | slot;
}
inline uint32_t WrQp(uint64_t id) { return static_cast<uint32_t>(id >> 48); }
inline uint32_t WrKind(uint64_t id) { return static_cast<uint32_t>(id >> 40) & 0xff; }
inline uint64_t WrSlot(uint64_t id) { return id & ((1ull << 40) - 1); }
/** Kind of receive work requests in wr_id. */
inline constexpr uint32_t kKindRecv = 7;
/** Kind of the responder's credit and echo WRITEs. */
inline constexpr uint32_t kKindCredit = 8;

/** Client loops of the modes (one file each). */
void RunWriteBw(Endpoint& ep, const TestSpec& s, Result* r);
void RunReadBw(Endpoint& ep, const TestSpec& s, Result* r);
void RunSendBw(Endpoint& ep, const TestSpec& s, Result* r);
void RunWriteLat(Endpoint& ep, const TestSpec& s, Result* r);
void RunReadLat(Endpoint& ep, const TestSpec& s, Result* r);
void RunSendLat(Endpoint& ep, const TestSpec& s, Result* r);
void RunAtomicLat(Endpoint& ep, const TestSpec& s, Result* r);
void RunMixed(Endpoint& ep, const TestSpec& s, Result* r);

// ---- Output (report.cc) ----

void PrintHeader(const Options& o, Endpoint& ep);
void PrintResult(const Options& o, const TestSpec& s, const Result& r, const ServerReport& sr,
                 uint64_t retransmits);
void PrintFooter(const Options& o, Endpoint& ep);

}  // namespace metaroce::perf

#endif  // METAROCE_APP_PERF_PERF_H
