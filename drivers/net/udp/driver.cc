/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The udp driver's registry entry.

#include "mr_net_udp.h"

namespace metaroce::udp {
namespace {

absl::StatusOr<std::unique_ptr<port::Port>> Create(const port::PortArgs& args) {
  absl::StatusOr<UdpArgs> a = ParseUdpArgs(args);
  if (!a.ok()) return a.status();
  return OpenUdpPort(*a);
}

}  // namespace

const port::PortDriver kUdpDriver = {
    "udp",
    "ip=ADDR             IPv4 or IPv6 address to bind (required)\n"
    "port=N              receive port (default 4792; 0: the kernel picks)\n"
    "source_ports=K      transmit sockets = path source ports, 1..1024 (default 64)\n"
    "first_source_port=P bind ports P..P+K-1 (default: K ephemeral ports)\n"
    "busy_poll=US        SO_BUSY_POLL on the receive socket\n"
    "rcvbuf=BYTES        SO_RCVBUF of the receive socket\n"
    "sndbuf=BYTES        SO_SNDBUF of each transmit socket\n"
    "queues=1            queues (only 1)",
    &Create,
};

MR_PORT_DRIVER_REGISTER(kUdpDriver)

}  // namespace metaroce::udp
