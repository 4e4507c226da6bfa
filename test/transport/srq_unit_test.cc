/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Shared receive queues, one engine driven by hand (the test plays the
// peer): receives are bound to a QP in order as its messages arrive, even
// out of order; an empty SRQ is receiver-not-ready; a peer cannot bind more
// receives than its stream window lets it; the limit event; object rules.

#include <cstring>

#include "engine_unit_fixture.h"

namespace metaroce::transport::unit {
namespace {

constexpr size_t kRecvBytes = 4 * kPayload;  ///< each receive's buffer

class SrqTest : public EngineUnitTest {
 protected:
  void StartOnSrq(uint32_t max_wr = 8) {
    srq_max_wr_ = max_wr;
    ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  }
  /** Posts receive @p i of the SRQ (wr_id 100 + i) into its own buffer. */
  void PostSrq(uint32_t i) {
    RecvWr r;
    r.wr_id = 100 + i;
    r.sg.push_back({Addr(i * kRecvBytes), static_cast<uint32_t>(kRecvBytes), mr_.lkey});
    absl::Status st = eng_->PostSrqRecv(srq_, r);
    ASSERT_TRUE(st.ok()) << st;
  }
  /** True if receive buffer @p i holds the peer's @p len-byte SEND @p msn. */
  bool Holds(uint32_t i, uint32_t msn, size_t len) {
    for (size_t k = 0; k < len; k++) {
      if (region_[i * kRecvBytes + k] != PatternByte(msn, k)) return false;
    }
    return true;
  }
  uint32_t Posted() { return eng_->QuerySrq(srq_)->posted; }
  std::vector<Packet> RnrNaks() {
    std::vector<Packet> v;
    for (const Packet& p : OfType(Drain(now_), PacketType::kNak)) {
      if (p.nak.code == wire::NakCode::kReceiverNotReady) v.push_back(p);
    }
    return v;
  }
};

TEST_F(SrqTest, ReceivesAreBoundInOrderWhileMessagesArriveOutOfOrder) {
  ASSERT_NO_FATAL_FAILURE(StartOnSrq());
  for (uint32_t i = 0; i < 4; i++) ASSERT_NO_FATAL_FAILURE(PostSrq(i));
  // The third SEND arrives first: it lands in the third receive at once,
  // the two before it are bound for the messages still missing.
  Feed(SendChunk(0, 2, 300, 0, 2));
  EXPECT_TRUE(Holds(2, 2, 300));
  EXPECT_EQ(Posted(), 1u);
  EXPECT_TRUE(PollAll(rcq_).empty());         // completions stay in stream order
  Feed(SendChunk(1, 0, 2 * kPayload, 1, 0));  // the second chunk of the first SEND
  Feed(SendChunk(2, 1, 100, 0, 1));
  Feed(SendChunk(3, 0, 2 * kPayload, 0, 0));
  std::vector<Completion> done = PollAll(rcq_);
  ASSERT_EQ(done.size(), 3u);
  const uint32_t lens[] = {2 * kPayload, 100, 300};
  for (uint32_t i = 0; i < 3; i++) {
    EXPECT_EQ(done[i].wr_id, 100 + i);
    EXPECT_EQ(done[i].status, WcStatus::kSuccess) << WcStatusName(done[i].status);
    EXPECT_EQ(done[i].byte_len, lens[i]);
    EXPECT_EQ(done[i].qp_num, qpn_);
    EXPECT_TRUE(Holds(i, i, lens[i])) << i;
  }
  EXPECT_EQ(Posted(), 1u);  // the fourth receive is still the SRQ's
  EXPECT_TRUE(RnrNaks().empty());
}

TEST_F(SrqTest, AnEmptySrqIsReceiverNotReadyUntilAReceiveIsPosted) {
  ASSERT_NO_FATAL_FAILURE(StartOnSrq());
  Feed(SendChunk(0, 0, 200, 0, 0));
  EXPECT_EQ(RnrNaks().size(), 1u);
  EXPECT_TRUE(PollAll(rcq_).empty());
  ASSERT_NO_FATAL_FAILURE(PostSrq(0));
  Feed(SendChunk(1, 0, 200, 0, 0));  // the peer sends it again after the RNR delay
  std::vector<Completion> done = PollAll(rcq_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].wr_id, 100u);
  EXPECT_EQ(done[0].status, WcStatus::kSuccess);
  EXPECT_TRUE(Holds(0, 0, 200));
}

// A peer numbering its first message's receive far ahead would drain the
// SRQ into one QP (other QPs starve): nothing is bound for it.
TEST_F(SrqTest, APeerCannotBindReceivesBeyondItsMessages) {
  ASSERT_NO_FATAL_FAILURE(StartOnSrq());
  for (uint32_t i = 0; i < 4; i++) ASSERT_NO_FATAL_FAILURE(PostSrq(i));
  Feed(SendChunk(0, 0, 200, 0, 3));
  EXPECT_EQ(Posted(), 4u);
  EXPECT_EQ(RnrNaks().size(), 1u);
  EXPECT_TRUE(PollAll(rcq_).empty());
  // The same message numbered honestly takes one receive.
  Feed(SendChunk(1, 0, 200, 0, 0));
  EXPECT_EQ(PollAll(rcq_).size(), 1u);
  EXPECT_EQ(Posted(), 3u);
}

TEST_F(SrqTest, TheLimitEventFiresOnceWhenFewerReceivesRemain) {
  ASSERT_NO_FATAL_FAILURE(StartOnSrq());
  for (uint32_t i = 0; i < 3; i++) ASSERT_NO_FATAL_FAILURE(PostSrq(i));
  ASSERT_TRUE(eng_->ArmSrqLimit(srq_, 2).ok());
  std::array<AsyncEvent, 4> ev;
  Feed(SendChunk(0, 0, 10, 0, 0));
  EXPECT_EQ(eng_->PollAsyncEvents(ev), 0u);  // two left: not below the limit
  Feed(SendChunk(1, 1, 10, 0, 1));
  ASSERT_EQ(eng_->PollAsyncEvents(ev), 1u);
  EXPECT_EQ(ev[0].type, AsyncEvent::Type::kSrqLimit);
  EXPECT_EQ(ev[0].id, srq_);
  EXPECT_EQ(eng_->QuerySrq(srq_)->limit, 0u);  // disarmed until armed again
  Feed(SendChunk(2, 2, 10, 0, 2));
  EXPECT_EQ(eng_->PollAsyncEvents(ev), 0u);
  EXPECT_EQ(PollAll(rcq_).size(), 3u);
  EXPECT_FALSE(eng_->ArmSrqLimit(srq_, 9).ok());  // above max_wr
}

TEST_F(SrqTest, ObjectRules) {
  ASSERT_NO_FATAL_FAILURE(StartOnSrq(2));
  // A QP on an SRQ has no receive queue of its own.
  RecvWr r;
  r.sg.push_back({Addr(0), 64, mr_.lkey});
  EXPECT_EQ(eng_->PostRecv(qpn_, r).code(), absl::StatusCode::kFailedPrecondition);
  // Receives are checked against the SRQ's PD and bounds when posted.
  RecvWr many = r;
  for (int i = 0; i < 4; i++) many.sg.push_back(r.sg[0]);
  EXPECT_EQ(eng_->PostSrqRecv(srq_, many).code(), absl::StatusCode::kInvalidArgument);
  const uint32_t other_pd = *eng_->AllocPd();
  std::vector<uint8_t> other(4096);
  const MrInfo other_mr =
      *eng_->RegMr(other_pd, reinterpret_cast<uint64_t>(other.data()), other.size(), access::kAll);
  RecvWr foreign;
  foreign.sg.push_back({reinterpret_cast<uint64_t>(other.data()), 64, other_mr.lkey});
  EXPECT_EQ(eng_->PostSrqRecv(srq_, foreign).code(), absl::StatusCode::kPermissionDenied);
  ASSERT_TRUE(eng_->PostSrqRecv(srq_, r).ok());
  ASSERT_TRUE(eng_->PostSrqRecv(srq_, r).ok());
  EXPECT_EQ(eng_->PostSrqRecv(srq_, r).code(), absl::StatusCode::kResourceExhausted);
  // An SRQ of another owner is not this QP's to use.
  const uint32_t stranger_pd = *eng_->AllocPd(0x5742);
  const uint32_t stranger_srq = *eng_->CreateSrq(stranger_pd, 4, 1);
  QpAttr qa;
  qa.pd = pd_;
  qa.send_cq = scq_;
  qa.recv_cq = rcq_;
  qa.srq = stranger_srq;
  EXPECT_EQ(eng_->CreateQp(qa).status().code(), absl::StatusCode::kNotFound);
  qa.srq = 999;
  EXPECT_EQ(eng_->CreateQp(qa).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(eng_->CreateSrq(pd_, 0, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(eng_->CreateSrq(12345, 4, 1).status().code(), absl::StatusCode::kNotFound);
  // In use, it stays; its PD stays while it does.
  EXPECT_EQ(eng_->DestroySrq(srq_).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(eng_->DestroyQp(qpn_).ok());
  ASSERT_TRUE(eng_->DeregMr(mr_.lkey).ok());
  EXPECT_EQ(eng_->DeallocPd(pd_).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(eng_->DestroySrq(srq_).ok());
  EXPECT_TRUE(eng_->DeallocPd(pd_).ok());
  EXPECT_EQ(eng_->QuerySrq(srq_).status().code(), absl::StatusCode::kNotFound);
}

// Receives bound to a QP that fails are flushed with it; the rest stay in
// the SRQ for the other QPs.
TEST_F(SrqTest, AFailedQpFlushesOnlyTheReceivesBoundToIt) {
  ASSERT_NO_FATAL_FAILURE(StartOnSrq());
  for (uint32_t i = 0; i < 4; i++) ASSERT_NO_FATAL_FAILURE(PostSrq(i));
  Feed(SendChunk(0, 1, 10, 0, 1));  // binds receives 0 and 1
  ASSERT_TRUE(eng_->SetQpError(qpn_).ok());
  std::vector<Completion> done = PollAll(rcq_);
  ASSERT_EQ(done.size(), 2u);
  for (uint32_t i = 0; i < 2; i++) {
    EXPECT_EQ(done[i].wr_id, 100 + i);
    EXPECT_EQ(done[i].status, WcStatus::kWrFlushErr);
  }
  EXPECT_EQ(Posted(), 2u);
}

}  // namespace
}  // namespace metaroce::transport::unit
