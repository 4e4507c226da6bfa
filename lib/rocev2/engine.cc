/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The RoCEv2 go-back-N baseline (mr_rocev2.h). Sequence numbers are kept as
// 64-bit counts and put on the wire as their low 24 bits.

#include <algorithm>
#include <cstring>
#include <deque>
#include <vector>

#include "absl/strings/str_cat.h"
#include "mr_crc32c.h"
#include "mr_rocev2.h"
#include "mr_wire_codec.h"

namespace metaroce::rocev2 {
namespace {

// RC opcodes (IBTA vol. 1, table 38) and AETH syndromes (table 43).
constexpr uint8_t kOpWriteFirst = 0x06;
constexpr uint8_t kOpWriteMiddle = 0x07;
constexpr uint8_t kOpWriteLast = 0x08;
constexpr uint8_t kOpWriteOnly = 0x0a;
constexpr uint8_t kOpAck = 0x11;
constexpr uint8_t kOpCnp = 0x81;              // RoCEv2 congestion notification (annex A17)
constexpr size_t kCnpBodyBytes = 16;          // reserved, after the BTH
constexpr uint8_t kSyndromeAck = 0x1f;        // ACK, no end-to-end credits
constexpr uint8_t kSyndromeNakPsnSeq = 0x60;  // NAK, PSN sequence error
constexpr uint8_t kAckRequest = 0x80;         // BTH byte 8: the A bit
constexpr uint64_t kHalfPsnSpace = 1u << 23;

void Put16(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void Put24(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 16);
  Put16(p + 1, v);
}
void Put32(uint8_t* p, uint32_t v) {
  Put16(p, v >> 16);
  Put16(p + 2, v);
}
uint32_t Get24(const uint8_t* p) { return uint32_t{p[0]} << 16 | uint32_t{p[1]} << 8 | p[2]; }
uint32_t Get32(const uint8_t* p) { return Get24(p) << 8 | p[3]; }

bool IsWrite(uint8_t op) {
  return op == kOpWriteFirst || op == kOpWriteMiddle || op == kOpWriteLast || op == kOpWriteOnly;
}

struct Msg {
  uint64_t wr_id = 0;
  uint64_t bytes = 0;
  uint64_t first_psn = 0;
  uint64_t npkts = 0;
};

struct Qp {
  uint32_t qpn = 0;
  bool connected = false;
  wire::IpAddr peer_ip;
  wire::MacAddr peer_mac;
  uint32_t remote_qpn = 0;
  uint16_t src_port = 0;
  // Requester: msgs holds the WRITEs not yet completed, in PSN order.
  std::deque<Msg> msgs;
  size_t tx_msg = 0;       // index in msgs of the message holding PSN nxt
  uint64_t una = 0;        // oldest PSN not acknowledged
  uint64_t nxt = 0;        // next PSN to send
  uint64_t end = 0;        // PSN after the last posted packet
  uint64_t sent_max = 0;   // PSN after the highest ever sent (below it: a resend)
  TimeNs progress_at = 0;  // the ACK timeout counts from here
  // Responder.
  uint64_t epsn = 0;  // expected PSN
  uint32_t msn = 0;   // WRITEs completed (24 bits on the wire)
  uint32_t unacked = 0;
  bool nak_outstanding = false;  // a NAK was sent; the expected PSN has not come since
  bool ack_pending = false;
  bool nak_pending = false;
  bool cnp_pending = false;
  bool in_ctl = false;   // on the control queue
  uint32_t retries = 0;  // go-backs in a row without progress
  bool failed = false;   // retries exhausted: in error
  bool cnp_sent = false;
  TimeNs cnp_at = 0;  // the last CNP sent
  // Requester's DCQCN: the rate and its timers, and the pacer.
  QpRate rate;
  TimeNs alpha_at = 0;       // alpha decays next
  TimeNs increase_at = 0;    // the rate-increase timer fires next
  uint64_t bytes_since = 0;  // sent since the last byte-counter event
  uint32_t timer_events = 0, byte_events = 0;
  TimeNs next_tx_at = 0;  // paced: the next data packet leaves no earlier
};

class EngineImpl final : public Engine {
 public:
  explicit EngineImpl(const Config& cfg)
      : cfg_(cfg), encap_(wire::EncapBytes(cfg.local_ip.v6, false)) {}

  uint32_t CreateQp() override {
    qps_.emplace_back();
    qps_.back().qpn = static_cast<uint32_t>(qps_.size());
    return qps_.back().qpn;
  }

  absl::Status ConnectQp(uint32_t qpn, const wire::IpAddr& peer_ip, const wire::MacAddr& peer_mac,
                         uint32_t remote_qpn, uint16_t src_port, uint32_t sq_psn,
                         uint32_t rq_psn) override {
    Qp* qp = Find(qpn);
    if (qp == nullptr) return absl::NotFoundError(absl::StrCat("rocev2: no QP ", qpn));
    if (remote_qpn == 0 || remote_qpn > kPsnMask) {
      return absl::InvalidArgumentError(
          absl::StrCat("rocev2: remote QP ", remote_qpn, " is not a 24-bit QP number"));
    }
    if (peer_ip.v6 != cfg_.local_ip.v6) {
      return absl::InvalidArgumentError("rocev2: peer and local addresses differ in IP version");
    }
    if (sq_psn > kPsnMask || rq_psn > kPsnMask) {
      return absl::InvalidArgumentError("rocev2: sq_psn and rq_psn are 24-bit PSNs");
    }
    if (qp->connected) return absl::FailedPreconditionError("rocev2: the QP is connected already");
    qp->connected = true;
    qp->peer_ip = peer_ip;
    qp->peer_mac = peer_mac;
    qp->remote_qpn = remote_qpn;
    qp->src_port = src_port;
    // The counts start at the first PSN; the wire carries their low 24 bits.
    qp->una = qp->nxt = qp->end = qp->sent_max = sq_psn;
    qp->epsn = rq_psn;
    qp->rate.rate_mbps = qp->rate.target_mbps = static_cast<double>(cfg_.line_rate_mbps);
    return absl::OkStatus();
  }

  absl::Status PostWrite(TimeNs now, uint32_t qpn, uint64_t wr_id, uint64_t bytes) override {
    Qp* qp = Find(qpn);
    if (qp == nullptr || !qp->connected) {
      return absl::FailedPreconditionError(absl::StrCat("rocev2: QP ", qpn, " is not connected"));
    }
    if (qp->failed) {
      return absl::FailedPreconditionError(absl::StrCat("rocev2: QP ", qpn, " is in error"));
    }
    if (bytes == 0 || bytes > (uint64_t{1} << 31)) {
      return absl::InvalidArgumentError(
          absl::StrCat("rocev2: a WRITE of ", bytes, " bytes (1 .. 2 GiB)"));
    }
    const uint64_t npkts = (bytes + cfg_.mtu_bytes - 1) / cfg_.mtu_bytes;
    if (qp->una == qp->end) qp->progress_at = now;  // nothing was outstanding
    qp->msgs.push_back(Msg{wr_id, bytes, qp->end, npkts});
    qp->end += npkts;
    return absl::OkStatus();
  }

  size_t PollTx(TimeNs now, std::span<TxSlot> slots) override {
    size_t n = 0;
    while (n < slots.size() && !ctl_.empty()) {
      Qp& qp = qps_[ctl_.front() - 1];
      if (qp.nak_pending || qp.ack_pending) {
        if (!EmitAck(qp, qp.nak_pending, &slots[n])) break;
        qp.nak_pending = qp.ack_pending = false;
        n++;
      } else if (qp.cnp_pending) {
        if (!EmitCnp(qp, &slots[n])) break;
        qp.cnp_pending = false;
        n++;
      } else {
        qp.in_ctl = false;
        ctl_.pop_front();
      }
    }
    for (Qp& qp : qps_) {
      if (!qp.failed && qp.una < qp.nxt && now >= qp.progress_at + cfg_.ack_timeout_ns) {
        stats_.go_backs_timeout++;
        GoBack(&qp, now);
      }
      AdvanceRate(&qp, now);
    }
    // Data, one packet per QP in turn.
    for (size_t idle = 0; n < slots.size() && !qps_.empty() && idle < qps_.size();) {
      rr_ = (rr_ + 1) % qps_.size();
      Qp& qp = qps_[rr_];
      if (!HasData(qp) || (qp.rate.limited && qp.next_tx_at > now)) {
        idle++;
        continue;
      }
      if (!EmitData(now, qp, &slots[n])) break;
      n++;
      idle = 0;
    }
    return n;
  }

  void OnFrame(TimeNs now, std::span<const uint8_t> frame) override {
    wire::ParseOptions opt;
    opt.udp_port = kUdpPort;
    wire::FrameInfo info;
    std::span<const uint8_t> d;
    if (wire::ParseUdpFrame(frame, opt, &info, &d) != wire::ParseError::kOk ||
        d.size() < kBthBytes + kIcrcBytes ||
        wire::Crc32c(d.data(), d.size() - kIcrcBytes) != Get32(d.data() + d.size() - kIcrcBytes)) {
      stats_.rx_dropped++;
      return;
    }
    Qp* qp = Find(Get24(d.data() + 5));
    if (qp == nullptr || !qp->connected || qp->failed || info.src != qp->peer_ip) {
      stats_.rx_dropped++;
      return;
    }
    const uint8_t op = d[0];
    const uint32_t psn = Get24(d.data() + 9);
    if (op == kOpAck && d.size() == kBthBytes + kAethBytes + kIcrcBytes) {
      OnAck(now, qp, psn, d[kBthBytes]);
    } else if (op == kOpCnp && d.size() == kBthBytes + kCnpBodyBytes + kIcrcBytes) {
      OnCnp(now, qp);
    } else if (IsWrite(op)) {
      OnData(now, qp, op, psn, (d[8] & kAckRequest) != 0, info.ecn == wire::Ecn::kCe);
    } else {
      stats_.rx_dropped++;
    }
  }

  TimeNs NextDeadline() const override {
    if (!ctl_.empty()) return 0;
    TimeNs t = kNever;
    for (const Qp& qp : qps_) {
      if (HasData(qp)) {
        if (!qp.rate.limited) return 0;
        t = std::min(t, qp.next_tx_at);  // paced
      }
      if (qp.una < qp.nxt) t = std::min(t, qp.progress_at + cfg_.ack_timeout_ns);
    }
    return t;
  }

  size_t PollCq(std::span<Completion> out) override {
    const size_t n = std::min(out.size(), cq_.size());
    std::copy_n(cq_.begin(), n, out.begin());
    cq_.erase(cq_.begin(), cq_.begin() + static_cast<ptrdiff_t>(n));
    return n;
  }

  const Stats& stats() const override { return stats_; }

  QpRate Rate(uint32_t qpn) const override {
    return qpn >= 1 && qpn <= qps_.size() ? qps_[qpn - 1].rate : QpRate{};
  }

 private:
  Qp* Find(uint32_t qpn) { return qpn >= 1 && qpn <= qps_.size() ? &qps_[qpn - 1] : nullptr; }

  // Data waiting and room in the window (the pacer aside).
  bool HasData(const Qp& qp) const {
    return qp.connected && !qp.failed && qp.nxt < qp.end && qp.nxt - qp.una < cfg_.window_pkts;
  }

  // ---- DCQCN, requester side ----

  // A CNP: the rate is cut by alpha / 2 and alpha grows; the increase stages start over.
  void OnCnp(TimeNs now, Qp* qp) {
    stats_.rx_cnps++;
    if (!cfg_.dcqcn) return;
    AdvanceRate(qp, now);
    QpRate& r = qp->rate;
    r.target_mbps = r.rate_mbps;
    r.rate_mbps =
        std::max(r.rate_mbps * (1 - r.alpha / 2), static_cast<double>(cfg_.min_rate_mbps));
    r.alpha = (1 - cfg_.dcqcn_g) * r.alpha + cfg_.dcqcn_g;
    if (!r.limited) qp->next_tx_at = now;
    r.limited = true;
    qp->timer_events = qp->byte_events = 0;
    qp->bytes_since = 0;
    qp->alpha_at = now + cfg_.alpha_timer_ns;
    qp->increase_at = now + cfg_.increase_timer_ns;
  }

  // The timers up to @p now: alpha decays, the rate-increase timer fires.
  void AdvanceRate(Qp* qp, TimeNs now) {
    while (qp->rate.limited && now >= qp->alpha_at) {
      qp->rate.alpha *= 1 - cfg_.dcqcn_g;
      qp->alpha_at += cfg_.alpha_timer_ns;
    }
    while (qp->rate.limited && now >= qp->increase_at) {
      qp->timer_events++;
      Increase(qp);
      qp->increase_at += cfg_.increase_timer_ns;
    }
  }

  // One increase event (timer or byte counter): fast recovery halves the way
  // to the target; then the target itself grows, additively, then hyper.
  void Increase(Qp* qp) {
    QpRate& r = qp->rate;
    const uint32_t lo = std::min(qp->timer_events, qp->byte_events);
    const uint32_t hi = std::max(qp->timer_events, qp->byte_events);
    const uint32_t f = cfg_.fast_recovery_steps;
    if (lo >= f) {
      r.target_mbps += static_cast<double>((lo - f + 1) * cfg_.hyper_mbps);
    } else if (hi >= f) {
      r.target_mbps += static_cast<double>(cfg_.additive_mbps);
    }
    const auto line = static_cast<double>(cfg_.line_rate_mbps);
    r.target_mbps = std::min(r.target_mbps, line);
    r.rate_mbps = (r.target_mbps + r.rate_mbps) / 2;
    if (r.rate_mbps >= line * 0.999) {  // back at line rate: no longer paced
      r.rate_mbps = r.target_mbps = line;
      r.limited = false;
    }
  }

  // A data packet of @p frame_bytes left: the pacer's next time and the byte counter.
  void Sent(TimeNs now, Qp* qp, uint32_t frame_bytes) {
    if (!qp->rate.limited) return;
    qp->next_tx_at = std::max(qp->next_tx_at, now) +
                     static_cast<TimeNs>(frame_bytes * 8'000.0 / qp->rate.rate_mbps);
    qp->bytes_since += frame_bytes;
    while (qp->rate.limited && qp->bytes_since >= cfg_.increase_bytes) {
      qp->bytes_since -= cfg_.increase_bytes;
      qp->byte_events++;
      Increase(qp);
    }
  }

  // Resends from the oldest unacknowledged packet, and the timeout starts
  // again; or, the retries used up without progress, fails the QP.
  void GoBack(Qp* qp, TimeNs now) {
    if (qp->retries++ >= cfg_.retry_count) {
      Fail(qp);
      return;
    }
    qp->nxt = qp->una;
    qp->tx_msg = 0;
    qp->progress_at = now;
  }

  // The oldest WRITE completes with kRetryExceeded, every other with kFlushed.
  void Fail(Qp* qp) {
    qp->failed = true;
    stats_.qp_errors++;
    for (const Msg& m : qp->msgs) {
      const bool first = &m == &qp->msgs.front();
      cq_.push_back(Completion{m.wr_id, qp->qpn, m.bytes,
                               first ? WcStatus::kRetryExceeded : WcStatus::kFlushed});
    }
    qp->msgs.clear();
    qp->tx_msg = 0;
    qp->una = qp->nxt = qp->end;
  }

  // Everything before @p psn is acknowledged: complete the WRITEs it covers.
  void Acked(TimeNs now, Qp* qp, uint64_t psn) {
    if (psn <= qp->una) return;
    qp->una = psn;
    qp->retries = 0;  // progress
    qp->nxt = std::max(qp->nxt, psn);
    qp->progress_at = now;
    while (!qp->msgs.empty() && qp->msgs.front().first_psn + qp->msgs.front().npkts <= qp->una) {
      const Msg& m = qp->msgs.front();
      cq_.push_back(Completion{m.wr_id, qp->qpn, m.bytes});
      stats_.completed_bytes += m.bytes;
      qp->msgs.pop_front();
      if (qp->tx_msg > 0) qp->tx_msg--;
    }
  }

  void OnAck(TimeNs now, Qp* qp, uint32_t psn24, uint8_t syndrome) {
    // How far past the oldest unacknowledged PSN the PSN points; not beyond
    // what was ever sent (after a go-back, the resends are behind what the
    // responder may already have: its ACKs for it count).
    const uint64_t d = (psn24 - qp->una) & kPsnMask;
    if (syndrome == kSyndromeNakPsnSeq) {
      if (d > qp->sent_max - qp->una) return;  // stale, or beyond what was sent
      Acked(now, qp, qp->una + d);             // the responder expects psn: all before it arrived
      stats_.go_backs_nak++;
      GoBack(qp, now);
    } else if (d < qp->sent_max - qp->una) {
      Acked(now, qp, qp->una + d + 1);  // an ACK names the last PSN accepted
    }
  }

  void OnData(TimeNs now, Qp* qp, uint8_t op, uint32_t psn24, bool ack_req, bool ce) {
    stats_.rx_data_pkts++;
    if (ce) {
      // DCQCN's notification point: one CNP per QP and interval, whatever becomes of the packet.
      stats_.rx_ce_pkts++;
      if (cfg_.dcqcn && (!qp->cnp_sent || now - qp->cnp_at >= cfg_.cnp_interval_ns)) {
        qp->cnp_sent = true;
        qp->cnp_at = now;
        qp->cnp_pending = true;
        Queue(qp);
      }
    }
    const uint64_t d = (psn24 - qp->epsn) & kPsnMask;
    if (d == 0) {
      stats_.rx_accepted_pkts++;
      qp->epsn++;
      qp->nak_outstanding = false;
      if (op == kOpWriteLast || op == kOpWriteOnly) qp->msn = (qp->msn + 1) & kPsnMask;
      if (ack_req || ++qp->unacked >= cfg_.ack_every_pkts) Control(qp, false);
    } else if (d < kHalfPsnSpace) {
      stats_.rx_out_of_order++;  // a gap before it: dropped, one NAK per gap
      if (!qp->nak_outstanding) {
        qp->nak_outstanding = true;
        Control(qp, true);
      }
    } else {
      stats_.rx_duplicates++;  // already accepted: say so again
      Control(qp, false);
    }
  }

  void Control(Qp* qp, bool nak) {
    (nak ? qp->nak_pending : qp->ack_pending) = true;
    Queue(qp);
  }

  void Queue(Qp* qp) {
    if (!qp->in_ctl) {
      qp->in_ctl = true;
      ctl_.push_back(qp->qpn);
    }
  }

  wire::FrameInfo FrameTo(const Qp& qp, wire::Ecn ecn = wire::Ecn::kEct0) const {
    wire::FrameInfo f;
    f.eth_dst = qp.peer_mac;
    f.eth_src = cfg_.local_mac;
    f.src = cfg_.local_ip;
    f.dst = qp.peer_ip;
    f.ecn = ecn;
    f.src_port = qp.src_port;
    f.dst_port = kUdpPort;
    return f;
  }

  // BTH at @p p; the ICRC after @p body_bytes more (a CRC-32C of the UDP
  // payload: the real ICRC is a CRC-32 over masked headers; this one only
  // needs to catch damage in the simulator).
  bool Seal(const Qp& qp, uint8_t op, uint64_t psn, bool ack_req, size_t body_bytes, TxSlot* slot,
            wire::Ecn ecn = wire::Ecn::kEct0) {
    const size_t encap = encap_;
    const size_t udp_payload = kBthBytes + body_bytes + kIcrcBytes;
    if (encap + udp_payload > slot->cap) return false;
    uint8_t* p = slot->buf + encap;
    p[0] = op;
    p[1] = 0;              // solicited event, migration, pad count, transport version
    Put16(p + 2, 0xffff);  // default partition key
    p[4] = 0;
    Put24(p + 5, qp.remote_qpn);
    p[8] = ack_req ? kAckRequest : 0;
    Put24(p + 9, static_cast<uint32_t>(psn & kPsnMask));
    Put32(p + udp_payload - kIcrcBytes, wire::Crc32c(p, udp_payload - kIcrcBytes));
    auto n = wire::EncodeUdpFrame(FrameTo(qp, ecn), udp_payload, {slot->buf, slot->cap});
    if (!n.ok()) return false;
    slot->len = static_cast<uint32_t>(*n);
    return true;
  }

  bool EmitAck(Qp& qp, bool nak, TxSlot* slot) {
    const size_t encap = encap_;
    if (encap + kBthBytes + kAethBytes + kIcrcBytes > slot->cap) return false;
    uint8_t* aeth = slot->buf + encap + kBthBytes;
    aeth[0] = nak ? kSyndromeNakPsnSeq : kSyndromeAck;
    Put24(aeth + 1, qp.msn);
    // An ACK names the last PSN accepted, a NAK the one expected.
    const uint64_t psn = nak ? qp.epsn : qp.epsn - 1;
    if (!Seal(qp, kOpAck, psn, false, kAethBytes, slot)) return false;
    if (!nak) qp.unacked = 0;
    (nak ? stats_.tx_naks : stats_.tx_acks)++;
    return true;
  }

  // A CNP goes to the QP's requester, not ECN-capable (a CNP is never marked).
  bool EmitCnp(Qp& qp, TxSlot* slot) {
    const size_t encap = encap_;
    if (encap + kBthBytes + kCnpBodyBytes + kIcrcBytes > slot->cap) return false;
    std::memset(slot->buf + encap + kBthBytes, 0, kCnpBodyBytes);
    if (!Seal(qp, kOpCnp, 0, false, kCnpBodyBytes, slot, wire::Ecn::kNotEct)) return false;
    stats_.tx_cnps++;
    return true;
  }

  bool EmitData(TimeNs now, Qp& qp, TxSlot* slot) {
    while (qp.msgs[qp.tx_msg].first_psn + qp.msgs[qp.tx_msg].npkts <= qp.nxt) qp.tx_msg++;
    const Msg& m = qp.msgs[qp.tx_msg];
    const uint64_t i = qp.nxt - m.first_psn;
    const bool first = i == 0, last = i + 1 == m.npkts;
    const uint8_t op = first && last ? kOpWriteOnly
                       : first       ? kOpWriteFirst
                       : last        ? kOpWriteLast
                                     : kOpWriteMiddle;
    const size_t reth = first ? kRethBytes : 0;
    const size_t len = last ? m.bytes - i * cfg_.mtu_bytes : cfg_.mtu_bytes;
    const size_t encap = encap_;
    if (encap + kBthBytes + reth + len + kIcrcBytes > slot->cap) return false;
    uint8_t* body = slot->buf + encap + kBthBytes;
    if (first) {
      std::memset(body, 0, 12);  // virtual address and R_Key: no memory behind the model
      Put32(body + 12, static_cast<uint32_t>(m.bytes));
    }
    std::memset(body + reth, 0, len);
    if (!Seal(qp, op, qp.nxt, last, reth + len, slot)) return false;
    if (qp.una == qp.nxt) qp.progress_at = now;  // the first packet outstanding starts the timeout
    stats_.tx_data_pkts++;
    if (qp.nxt < qp.sent_max) stats_.tx_resent_pkts++;
    qp.nxt++;
    qp.sent_max = std::max(qp.sent_max, qp.nxt);
    Sent(now, &qp, slot->len);
    return true;
  }

  Config cfg_;
  size_t encap_;  // Ethernet, IP and UDP header bytes of every frame (no VLAN tag)
  std::vector<Qp> qps_;
  std::deque<uint32_t> ctl_;  // QPs with an ACK or NAK to send
  std::deque<Completion> cq_;
  size_t rr_ = 0;
  Stats stats_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const Config& cfg) {
  if (cfg.mtu_bytes < 256 || cfg.mtu_bytes > 4096 || (cfg.mtu_bytes & (cfg.mtu_bytes - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("rocev2: mtu_bytes ", cfg.mtu_bytes, " is not a RoCE MTU (256 .. 4096)"));
  }
  if (cfg.window_pkts == 0 || cfg.window_pkts >= kHalfPsnSpace) {
    return absl::InvalidArgumentError(
        absl::StrCat("rocev2: window_pkts ", cfg.window_pkts, " must be 1 .. 2^23 - 1"));
  }
  if (cfg.retry_count > 7) {
    return absl::InvalidArgumentError(
        absl::StrCat("rocev2: retry_count ", cfg.retry_count, " is not 0 .. 7 (a 3-bit field)"));
  }
  if (cfg.ack_every_pkts == 0 || cfg.ack_timeout_ns == 0) {
    return absl::InvalidArgumentError("rocev2: ack_every_pkts and ack_timeout_ns must be > 0");
  }
  if (cfg.dcqcn &&
      (cfg.line_rate_mbps == 0 || cfg.min_rate_mbps == 0 ||
       cfg.min_rate_mbps > cfg.line_rate_mbps || !(cfg.dcqcn_g > 0 && cfg.dcqcn_g < 1) ||
       cfg.alpha_timer_ns == 0 || cfg.increase_timer_ns == 0 || cfg.increase_bytes == 0)) {
    return absl::InvalidArgumentError(
        "rocev2: DCQCN needs 0 < min_rate_mbps <= line_rate_mbps, 0 < dcqcn_g < 1 and non-zero "
        "timers and byte counter");
  }
  return std::unique_ptr<Engine>(new EngineImpl(cfg));
}

}  // namespace metaroce::rocev2
