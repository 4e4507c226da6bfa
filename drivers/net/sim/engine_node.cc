/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include "mr_sim_engine_node.h"

#include <cstdio>
#include <cstdlib>

namespace metaroce::sim {

namespace {
constexpr size_t kSlotBytes = 9216;
}

EngineNode::EngineNode(Host* host, transport::EngineConfig cfg)
    : EngineNode(std::vector<Host*>{host}, std::move(cfg)) {}

EngineNode::EngineNode(std::vector<Host*> planes, transport::EngineConfig cfg)
    : planes_(std::move(planes)) {
  Host* host = planes_[0];
  cfg.local_ip = host->ipv4();
  cfg.local_mac = host->mac();
  cfg.extra_planes.clear();
  for (size_t i = 1; i < planes_.size(); i++) {
    cfg.extra_planes.push_back({planes_[i]->ipv4(), planes_[i]->mac()});
  }
  cfg.framing = transport::Framing::kEthernet;
  if (cfg.seed == 0) cfg.seed = 1;  // simulations are reproducible
  if (cfg.incarnation == 0) {
    // Reproducible too, and new for each engine attached to this host (a
    // restarted one): the seed, the host and how many came before it.
    cfg.incarnation = (cfg.seed * 0x9e3779b97f4a7c15ull) ^ (uint64_t{host->ipv4().bytes[3]} << 48) ^
                      (host->attachments() + 1);
    if (cfg.incarnation == 0) cfg.incarnation = 1;
  }
  auto e = transport::Engine::Create(cfg, &mem_);
  if (!e.ok()) {
    std::fprintf(stderr, "EngineNode: %s\n", std::string(e.status().message()).c_str());
    std::abort();
  }
  engine_ = std::move(*e);
  buf_.resize(kSlotBytes * kBurst);
  host->Attach(this);
  for (size_t i = 1; i < planes_.size(); i++) {
    ports_.push_back(std::make_unique<PlanePort>(this));
    planes_[i]->Attach(ports_.back().get());
  }
}

transport::PeerAddr EngineNode::Addr() const {
  return transport::PeerAddr{planes_[0]->ipv4(), planes_[0]->mac(), wire::kDefaultUdpPort};
}

void EngineNode::OnFrame(SimTime now, std::span<const uint8_t> frame) {
  engine_->OnFrame(static_cast<transport::TimeNs>(now / 1000), frame);
  Pump(now);
}

void EngineNode::OnTimer(SimTime now) { Pump(now); }

void EngineNode::OnTxReady(SimTime now) { Pump(now); }

void EngineNode::Pump(SimTime now) {
  const transport::TimeNs now_ns = static_cast<transport::TimeNs>(now / 1000);
  Host* timer_host = planes_[0];  // plane 0 keeps the engine's deadline
  // The engine does not know which plane its next packets take: ask for no
  // more than the fullest port has room for.
  auto tx_free = [this] {
    size_t free = kBurst;
    for (Host* h : planes_) free = std::min(free, h->TxQueueFree());
    return free;
  };
  for (;;) {
    const size_t room = tx_free();
    if (room == 0) break;
    for (size_t i = 0; i < room; i++) {
      slots_[i].buf = buf_.data() + i * kSlotBytes;
      slots_[i].cap = kSlotBytes;
      slots_[i].len = 0;
    }
    const size_t n = engine_->PollTx(now_ns, {slots_.data(), room});
    for (size_t i = 0; i < n; i++) planes_[slots_[i].plane]->Send({slots_[i].buf, slots_[i].len});
    if (n < room) break;
  }
  const transport::TimeNs d = engine_->NextDeadline();
  if (d == transport::kNever) {
    timer_host->CancelTimer();
  } else if (d <= now_ns) {
    // Due now but nothing could be sent: with a full NIC queue OnTxReady
    // comes; otherwise try again a nanosecond later rather than spin.
    if (tx_free() == 0) {
      timer_host->CancelTimer();
    } else {
      zero_time_timers_++;
      timer_host->SetTimer(now + 1000);
    }
  } else {
    timer_host->SetTimer(static_cast<SimTime>(d) * 1000);
  }
}

}  // namespace metaroce::sim
