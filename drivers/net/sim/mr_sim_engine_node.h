/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Runs one transport engine on one simulated host: frames in, PollTx into
// the host's NIC queue, the engine's deadline as the host timer. A host of
// several planes has one simulated NIC port (Host) per plane.

#ifndef METAROCE_MR_SIM_ENGINE_NODE_H
#define METAROCE_MR_SIM_ENGINE_NODE_H

#include <array>
#include <memory>
#include <vector>

#include "mr_sim.h"
#include "mr_transport.h"

namespace metaroce::sim {

class EngineNode : public Endpoint {
 public:
  /** Engine on @p host; @p cfg's addresses are taken from the host. */
  EngineNode(Host* host, transport::EngineConfig cfg);
  /** Engine on one port per plane: @p planes[0] is plane 0 (the engine's local_ip). */
  EngineNode(std::vector<Host*> planes, transport::EngineConfig cfg);

  transport::Engine& engine() { return *engine_; }
  Host* host() { return planes_[0]; }
  /** The engine's time now (ns). */
  transport::TimeNs NowNs() const {
    return static_cast<transport::TimeNs>(planes_[0]->Now() / 1000);
  }
  /** How to reach this node's engine. */
  transport::PeerAddr Addr() const;
  /** Sends what the engine has after work was posted from outside an event. */
  void Kick() { Pump(planes_[0]->Now()); }
  uint64_t zero_time_timers() const { return zero_time_timers_; }

  void OnFrame(SimTime now, std::span<const uint8_t> frame) override;
  void OnTimer(SimTime now) override;
  void OnTxReady(SimTime now) override;

 private:
  /** Plane 1..'s port: hands what arrives to the node (the timer is plane 0's). */
  class PlanePort : public Endpoint {
   public:
    explicit PlanePort(EngineNode* node) : node_(node) {}
    void OnFrame(SimTime now, std::span<const uint8_t> frame) override {
      node_->OnFrame(now, frame);
    }
    void OnTimer(SimTime) override {}
    void OnTxReady(SimTime now) override { node_->OnTxReady(now); }

   private:
    EngineNode* node_;
  };

  void Pump(SimTime now);

  std::vector<Host*> planes_;
  std::vector<std::unique_ptr<PlanePort>> ports_;
  transport::ProcessMemory mem_;
  std::unique_ptr<transport::Engine> engine_;
  static constexpr size_t kBurst = 16;
  std::vector<uint8_t> buf_;
  std::array<transport::TxSlot, kBurst> slots_;
  uint64_t zero_time_timers_ = 0;
};

}  // namespace metaroce::sim

#endif  // METAROCE_MR_SIM_ENGINE_NODE_H
