/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Runs the RoCEv2 baseline engine on one simulated host, as SimNode runs
// metaroce's: frames in, PollTx into the host's NIC queue, the engine's
// deadline as the host timer.

#ifndef METAROCE_TEST_ROCEV2_ROCE_SIM_NODE_H
#define METAROCE_TEST_ROCEV2_ROCE_SIM_NODE_H

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "mr_rocev2.h"
#include "mr_sim.h"

namespace metaroce::testing {

class RoceSimNode : public sim::Endpoint {
 public:
  RoceSimNode(sim::Host* host, rocev2::Config cfg) : host_(host) {
    cfg.local_ip = host->ipv4();
    cfg.local_mac = host->mac();
    cfg.line_rate_mbps = host->line_rate_bps() / 1'000'000;
    auto e = rocev2::Engine::Create(cfg);
    if (!e.ok()) {
      std::fprintf(stderr, "RoceSimNode: %s\n", std::string(e.status().message()).c_str());
      std::abort();
    }
    engine_ = std::move(*e);
    buf_.resize(kSlotBytes * kBurst);
    host->Attach(this);
  }

  rocev2::Engine& engine() { return *engine_; }
  sim::Host* host() { return host_; }
  rocev2::TimeNs NowNs() const { return static_cast<rocev2::TimeNs>(host_->Now() / 1000); }
  /** Sends what the engine has after work was posted from outside an event. */
  void Kick() { Pump(host_->Now()); }

  void OnFrame(sim::SimTime now, std::span<const uint8_t> frame) override {
    engine_->OnFrame(static_cast<rocev2::TimeNs>(now / 1000), frame);
    Pump(now);
  }
  void OnTimer(sim::SimTime now) override { Pump(now); }
  void OnTxReady(sim::SimTime now) override { Pump(now); }

 private:
  static constexpr size_t kSlotBytes = 9216;
  static constexpr size_t kBurst = 16;

  void Pump(sim::SimTime now) {
    const rocev2::TimeNs now_ns = static_cast<rocev2::TimeNs>(now / 1000);
    for (;;) {
      const size_t room = std::min(kBurst, host_->TxQueueFree());
      if (room == 0) break;
      for (size_t i = 0; i < room; i++) slots_[i] = {buf_.data() + i * kSlotBytes, kSlotBytes, 0};
      const size_t n = engine_->PollTx(now_ns, {slots_.data(), room});
      for (size_t i = 0; i < n; i++) host_->Send({slots_[i].buf, slots_[i].len});
      if (n < room) break;
    }
    const rocev2::TimeNs d = engine_->NextDeadline();
    if (d == rocev2::kNever || (d <= now_ns && host_->TxQueueFree() == 0)) {
      host_->CancelTimer();  // nothing to do, or OnTxReady comes when the queue drains
    } else {
      host_->SetTimer(d <= now_ns ? now + 1000 : static_cast<sim::SimTime>(d) * 1000);
    }
  }

  sim::Host* host_;
  std::unique_ptr<rocev2::Engine> engine_;
  std::vector<uint8_t> buf_;
  std::array<rocev2::TxSlot, kBurst> slots_;
};

}  // namespace metaroce::testing

#endif  // METAROCE_TEST_ROCEV2_ROCE_SIM_NODE_H
