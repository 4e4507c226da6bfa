/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include "mr_sim_roce_node.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace metaroce::sim {

namespace {
constexpr size_t kSlotBytes = 9216;  // the largest frame a simulated NIC carries
}

RoceNode::RoceNode(Host* host, rocev2::Config cfg) : host_(host) {
  cfg.local_ip = host->ipv4();
  cfg.local_mac = host->mac();
  cfg.line_rate_mbps = host->line_rate_bps() / 1'000'000;
  auto e = rocev2::Engine::Create(cfg);
  if (!e.ok()) {
    std::fprintf(stderr, "RoceNode: %s\n", std::string(e.status().message()).c_str());
    std::abort();
  }
  engine_ = std::move(*e);
  buf_.resize(kSlotBytes * kBurst);
  host->Attach(this);
}

void RoceNode::OnFrame(SimTime now, std::span<const uint8_t> frame) {
  engine_->OnFrame(static_cast<rocev2::TimeNs>(now / 1000), frame);
  Pump(now);
}

void RoceNode::Pump(SimTime now) {
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
    host_->SetTimer(d <= now_ns ? now + 1000 : static_cast<SimTime>(d) * 1000);
  }
}

}  // namespace metaroce::sim
