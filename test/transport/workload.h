/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// A randomized verbs workload between engines on the simulated fabric, with
// a reference model that checks every byte and every ordering rule:
//  - a WRITE's bytes are at the target when its send completion arrives;
//  - when a receive completes, every earlier WRITE of that stream is placed
//    and the received bytes are the message's;
//  - receive completions of a stream come in message order;
//  - a READ returns what the target held; atomics execute exactly once, in
//    stream order (their results are predictable);
//  - send completions come in posting order.

#ifndef METAROCE_TEST_TRANSPORT_WORKLOAD_H
#define METAROCE_TEST_TRANSPORT_WORKLOAD_H

#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "mr_sim_engine_node.h"

namespace metaroce::testing {

struct WorkloadConfig {
  uint32_t qps_per_pair = 2;          ///< QPs (streams) between each ordered pair of nodes
  uint32_t ops_per_qp = 40;           ///< work requests each QP posts
  uint32_t max_outstanding = 16;      ///< per QP
  uint32_t max_msg_bytes = 64 << 10;  ///< uniform-log sizes from 0 up to this
  uint32_t big_msg_bytes = 0;         ///< if non-zero, one in 16 messages is this large
  bool writes = true, sends = true, reads = true, atomics = true;
  uint64_t seed = 1;
};

struct WorkloadResult {
  bool finished = false;
  std::string error;  ///< first violation, empty if none
  uint64_t ops_completed = 0;
  uint64_t bytes_moved = 0;
  sim::SimTime elapsed_ps = 0;
};

class Workload {
 public:
  Workload(sim::Fabric* fabric, std::vector<sim::EngineNode*> nodes, const WorkloadConfig& cfg);
  ~Workload();
  /** Posts work and runs the fabric until everything completed or @p limit_ps passed. */
  WorkloadResult Run(sim::SimTime limit_ps);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace metaroce::testing

#endif  // METAROCE_TEST_TRANSPORT_WORKLOAD_H
