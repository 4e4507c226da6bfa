/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// A protocol's engines on every host of a lab, behind one interface: flows
// of WRITEs in, completions out. stack_metaroce.cc and stack_rocev2.cc.

#ifndef METAROCE_APP_SIM_STACK_H
#define METAROCE_APP_SIM_STACK_H

#include <memory>
#include <span>

#include "absl/status/status.h"
#include "mr_engine.h"
#include "mr_rocev2.h"
#include "sim.h"

namespace metaroce::mrsim {

/**
 * WRITEs a host may have outstanding over all its flows (the sum of their
 * depths): its completion queue's size.
 */
inline constexpr uint32_t kMaxHostOutstanding = 4096;

/** A WRITE completed at its sender. */
struct Done {
  uint32_t flow = 0;
  uint64_t bytes = 0;
  bool ok = true;
};

class Stack {
 public:
  virtual ~Stack() = default;
  /** Opens flow @p flow's QPs between hosts @p src and @p dst (one QP each side; FlowSpec::plane).
   */
  virtual absl::Status Connect(uint32_t flow, uint32_t src, uint32_t dst, uint32_t plane) = 0;
  /** Posts a WRITE of @p bytes (<= the lab's largest message) on @p flow. */
  virtual absl::Status PostWrite(uint32_t flow, uint64_t bytes) = 0;
  /** Completions at host @p host (its flows' WRITEs). */
  virtual size_t Poll(uint32_t host, std::span<Done> out) = 0;
  /** Sends what was posted at @p host from outside an event. */
  virtual void Kick(uint32_t host) = 0;
  /** True when every flow's QPs can send: metaroce's connections are up (RoCE's QPs always). */
  virtual bool Connected() const = 0;
  /** Data packets sent and resent, over every host. */
  virtual void Count(Totals* t) const = 0;
};

/** metaroce's engine on every host; receivers hint max-min shares of @p rx_capacity_mbps. */
std::unique_ptr<Stack> MakeMetaRoceStack(const sim::Topology& t, uint64_t seed,
                                         uint64_t max_msg_bytes,
                                         const transport::EngineConfig& base);
/** The RoCEv2 baseline (go-back-N, DCQCN) on every host. */
std::unique_ptr<Stack> MakeRoceStack(const sim::Topology& t, const rocev2::Config& cfg);

}  // namespace metaroce::mrsim

#endif  // METAROCE_APP_SIM_STACK_H
