/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// A multi-queue Ethernet port for the runtime's unit tests, registered as driver
// "rt_fake": the test puts frames on a queue's receive side, reads what each queue
// sent, and chooses whether the port detaches packets and takes flow rules.

#ifndef METAROCE_TEST_RUNTIME_FAKE_MQ_PORT_H
#define METAROCE_TEST_RUNTIME_FAKE_MQ_PORT_H

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "mr_port.h"

namespace metaroce::testing {

/**
 * What the test sees of the port it opened last (kept after the port is closed). A
 * queue's lists belong to its thread while a runtime runs; fill them before Run().
 */
struct FakeMqState {
  std::vector<std::deque<std::vector<uint8_t>>> to_receive;  ///< per queue, frames RxBurst returns
  std::vector<std::vector<std::vector<uint8_t>>> sent;       ///< per queue, frames TxBurst sent
  std::vector<std::pair<uint16_t, uint16_t>> rules;          ///< SteerUdpDstPort(port, queue) taken
  std::atomic<uint64_t> detached{0};                         ///< by the queue's thread
  std::atomic<uint64_t> released{0};                         ///< by whichever shard took the packet
  std::atomic<bool> open{false};
  int rx_event_fd = 7;  ///< what RxEventFd() returns for every queue
};

/** The state of the last port "rt_fake" opened. */
std::shared_ptr<FakeMqState> LastFakeMq();

/**
 * Registers "rt_fake:queues=Q,udp_port=N,detach=0|1,flow=0|1|error" (defaults: 1 queue,
 * port 5000, detach=1, flow=0); address 10.0.0.1, MAC 02:00:00:00:00:01, 9216-byte frames.
 */
void RegisterFakeMqDriver();

}  // namespace metaroce::testing

#endif  // METAROCE_TEST_RUNTIME_FAKE_MQ_PORT_H
