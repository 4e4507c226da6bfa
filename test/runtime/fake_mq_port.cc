/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include "fake_mq_port.h"

#include <array>
#include <mutex>

#include "absl/strings/str_cat.h"

namespace metaroce::testing {
namespace {

constexpr uint16_t kBurst = 32;
constexpr uint32_t kFrameBytes = 9216;

std::shared_ptr<FakeMqState>& Last() {
  static std::shared_ptr<FakeMqState> last;
  return last;
}

class FakeMqPort final : public port::Port {
 public:
  FakeMqPort(uint16_t queues, uint16_t udp_port, bool detach, int flow)
      : st_(std::make_shared<FakeMqState>()), detach_(detach), flow_(flow), lent_(queues) {
    info_.driver = "rt_fake";
    info_.framing = transport::Framing::kEthernet;
    info_.ip = wire::IpAddr::V4(10, 0, 0, 1);
    info_.mac.bytes = {2, 0, 0, 0, 0, 1};
    info_.udp_port = udp_port;
    info_.num_queues = queues;
    info_.max_frame_bytes = kFrameBytes;
    st_->to_receive.resize(queues);
    st_->sent.resize(queues);
    st_->open = true;
    Last() = st_;
  }
  ~FakeMqPort() override {
    for (auto& q : lent_) {
      for (auto* b : q) delete b;
    }
    st_->open = false;
  }

  const port::PortInfo& info() const override { return info_; }

  uint16_t RxBurst(uint16_t queue, port::RxPacket* pkts, uint16_t n) override {
    if (queue >= lent_.size()) return 0;
    for (auto* b : lent_[queue]) delete b;  // nullptr where detached
    lent_[queue].clear();
    auto& in = st_->to_receive[queue];
    uint16_t out = 0;
    while (out < n && !in.empty()) {
      auto* b = new std::vector<uint8_t>(std::move(in.front()));
      in.pop_front();
      lent_[queue].push_back(b);
      pkts[out].data = *b;
      pkts[out].addr = wire::FrameInfo{};
      out++;
    }
    return out;
  }

  uint16_t TxAlloc(uint16_t queue, transport::TxSlot* slots, uint16_t n) override {
    if (queue >= lent_.size()) return 0;
    uint16_t out = 0;
    for (; out < n && out < kBurst; out++) {
      slots[out].buf = tx_[out].data();
      slots[out].cap = kFrameBytes;
      slots[out].len = 0;
      slots[out].cookie = nullptr;
    }
    return out;
  }

  uint16_t TxBurst(uint16_t queue, transport::TxSlot* slots, uint16_t n) override {
    uint16_t sent = 0;
    for (uint16_t i = 0; i < n && queue < lent_.size(); i++) {
      if (slots[i].len == 0) continue;
      st_->sent[queue].emplace_back(slots[i].buf, slots[i].buf + slots[i].len);
      sent++;
    }
    return sent;
  }

  port::PortStats stats() const override { return {}; }
  int RxEventFd(uint16_t /*queue*/) override { return st_->rx_event_fd; }

  absl::StatusOr<bool> SteerUdpDstPort(uint16_t udp_port, uint16_t queue) override {
    if (flow_ == 2) return absl::InternalError("rt_fake: the rule failed");
    if (flow_ == 0) return false;
    st_->rules.emplace_back(udp_port, queue);
    return true;
  }

  void* DetachRx(uint16_t queue, uint16_t index) override {
    if (!detach_ || queue >= lent_.size() || index >= lent_[queue].size()) return nullptr;
    std::vector<uint8_t>* b = lent_[queue][index];
    lent_[queue][index] = nullptr;
    st_->detached++;
    return b;
  }

  void ReleaseRx(void* handle) override {
    delete static_cast<std::vector<uint8_t>*>(handle);
    st_->released++;
  }

 private:
  port::PortInfo info_;
  std::shared_ptr<FakeMqState> st_;
  bool detach_;
  int flow_;
  std::vector<std::vector<std::vector<uint8_t>*>> lent_;  // per queue, the last burst's buffers
  std::array<std::array<uint8_t, kFrameBytes>, kBurst> tx_;
};

absl::StatusOr<std::unique_ptr<port::Port>> Create(const port::PortArgs& args) {
  uint64_t queues = 1, udp_port = 5000, detach = 1;
  int flow = 0;
  for (const auto& [k, v] : args.kv) {
    bool ok = true;
    if (k == "queues") {
      ok = port::ParseUintArg(v, 1, 16, &queues);
    } else if (k == "udp_port") {
      ok = port::ParseUintArg(v, 1, 65535, &udp_port);
    } else if (k == "detach") {
      ok = port::ParseUintArg(v, 0, 1, &detach);
    } else if (k == "flow") {
      flow = v == "1" ? 1 : v == "error" ? 2 : 0;
    } else {
      ok = false;
    }
    if (!ok) return absl::InvalidArgumentError(absl::StrCat("rt_fake: bad ", k, "=", v));
  }
  return std::unique_ptr<port::Port>(std::make_unique<FakeMqPort>(
      static_cast<uint16_t>(queues), static_cast<uint16_t>(udp_port), detach != 0, flow));
}

const port::PortDriver kFakeMqDriver = {"rt_fake", "test port", &Create};

}  // namespace

std::shared_ptr<FakeMqState> LastFakeMq() { return Last(); }

void RegisterFakeMqDriver() {
  static std::once_flag once;
  std::call_once(once, [] { port::RegisterDriver(&kFakeMqDriver); });
}

}  // namespace metaroce::testing
