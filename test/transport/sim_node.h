/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Runs one transport engine on one simulated host: frames in, PollTx into
// the host's NIC queue, the engine's deadline as the host timer. A host of
// several planes has one simulated NIC port (sim::Host) per plane.

#ifndef METAROCE_TEST_TRANSPORT_SIM_NODE_H
#define METAROCE_TEST_TRANSPORT_SIM_NODE_H

#include <array>
#include <memory>
#include <vector>

#include "mr_sim.h"
#include "mr_transport.h"

namespace metaroce::testing {

class SimNode : public sim::Endpoint {
 public:
  /** Engine on @p host; @p cfg's addresses are taken from the host. */
  SimNode(sim::Host* host, transport::EngineConfig cfg);
  /** Engine on one port per plane: @p planes[0] is plane 0 (the engine's local_ip). */
  SimNode(std::vector<sim::Host*> planes, transport::EngineConfig cfg);

  transport::Engine& engine() { return *engine_; }
  sim::Host* host() { return planes_[0]; }
  /** The engine's time now (ns). */
  transport::TimeNs NowNs() const {
    return static_cast<transport::TimeNs>(planes_[0]->Now() / 1000);
  }
  /** How to reach this node's engine. */
  transport::PeerAddr Addr() const;
  /** Sends what the engine has after work was posted from outside an event. */
  void Kick() { Pump(planes_[0]->Now()); }
  uint64_t zero_time_timers() const { return zero_time_timers_; }

  void OnFrame(sim::SimTime now, std::span<const uint8_t> frame) override;
  void OnTimer(sim::SimTime now) override;
  void OnTxReady(sim::SimTime now) override;

 private:
  /** Plane 1..'s port: hands what arrives to the node (the timer is plane 0's). */
  class PlanePort : public sim::Endpoint {
   public:
    explicit PlanePort(SimNode* node) : node_(node) {}
    void OnFrame(sim::SimTime now, std::span<const uint8_t> frame) override {
      node_->OnFrame(now, frame);
    }
    void OnTimer(sim::SimTime) override {}
    void OnTxReady(sim::SimTime now) override { node_->OnTxReady(now); }

   private:
    SimNode* node_;
  };

  void Pump(sim::SimTime now);

  std::vector<sim::Host*> planes_;
  std::vector<std::unique_ptr<PlanePort>> ports_;
  transport::ProcessMemory mem_;
  std::unique_ptr<transport::Engine> engine_;
  static constexpr size_t kBurst = 16;
  std::vector<uint8_t> buf_;
  std::array<transport::TxSlot, kBurst> slots_;
  uint64_t zero_time_timers_ = 0;
};

}  // namespace metaroce::testing

#endif  // METAROCE_TEST_TRANSPORT_SIM_NODE_H
