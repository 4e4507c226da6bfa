/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Runs the RoCEv2 baseline engine (lib/rocev2) on one simulated host, as
// EngineNode runs metaroce's: frames in, PollTx into the host's NIC queue,
// the engine's deadline as the host timer.

#ifndef METAROCE_MR_SIM_ROCE_NODE_H
#define METAROCE_MR_SIM_ROCE_NODE_H

#include <array>
#include <memory>
#include <vector>

#include "mr_rocev2.h"
#include "mr_sim.h"

namespace metaroce::sim {

class RoceNode : public Endpoint {
 public:
  /** Engine on @p host; @p cfg's addresses and line rate are taken from the host. */
  RoceNode(Host* host, rocev2::Config cfg);

  rocev2::Engine& engine() { return *engine_; }
  Host* host() { return host_; }
  /** The engine's time now (ns). */
  rocev2::TimeNs NowNs() const { return static_cast<rocev2::TimeNs>(host_->Now() / 1000); }
  /** Sends what the engine has after work was posted from outside an event. */
  void Kick() { Pump(host_->Now()); }

  void OnFrame(SimTime now, std::span<const uint8_t> frame) override;
  void OnTimer(SimTime now) override { Pump(now); }
  void OnTxReady(SimTime now) override { Pump(now); }

 private:
  static constexpr size_t kBurst = 16;

  void Pump(SimTime now);

  Host* host_;
  std::unique_ptr<rocev2::Engine> engine_;
  std::vector<uint8_t> buf_;
  std::array<rocev2::TxSlot, kBurst> slots_;
};

}  // namespace metaroce::sim

#endif  // METAROCE_MR_SIM_ROCE_NODE_H
