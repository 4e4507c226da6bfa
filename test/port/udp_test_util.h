/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Helpers of the udp driver tests: loopback ports only, received packets copied out.

#ifndef METAROCE_TEST_PORT_UDP_TEST_UTIL_H
#define METAROCE_TEST_PORT_UDP_TEST_UTIL_H

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "mr_port.h"

namespace metaroce::testing {

/**
 * Opens "udp:ip=@p ip,port=0,@p extra" (the kernel picks the receive port).
 * @p ip must be 127.0.0.1 or ::1: the tests never touch another address.
 */
absl::StatusOr<std::unique_ptr<port::Port>> OpenLoopback(const std::string& ip,
                                                         const std::string& extra = "");

/**
 * Opens a port on @p ip whose @p k source ports are consecutive from a high
 * port; tries other ranges while a bind fails with EADDRINUSE.
 */
absl::StatusOr<std::unique_ptr<port::Port>> OpenWithFixedSourcePorts(const std::string& ip,
                                                                     uint32_t k);

/** A received packet, copied. */
struct Received {
  std::vector<uint8_t> data;
  wire::FrameInfo addr;
};

/** Polls queue 0 of @p p until @p want packets came or @p timeout passed. */
std::vector<Received> Receive(port::Port& p, size_t want,
                              std::chrono::milliseconds timeout = std::chrono::seconds(2));

}  // namespace metaroce::testing

#endif  // METAROCE_TEST_PORT_UDP_TEST_UTIL_H
