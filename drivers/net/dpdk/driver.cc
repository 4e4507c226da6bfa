/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The dpdk driver's registry entry.

#include "mr_net_dpdk.h"

namespace metaroce::dpdk {
namespace {

absl::StatusOr<std::unique_ptr<port::Port>> Create(const port::PortArgs& args) {
  absl::StatusOr<DpdkArgs> a = ParseDpdkArgs(args);
  if (!a.ok()) return a.status();
  return OpenDpdkPort(*a);
}

}  // namespace

const port::PortDriver kDpdkDriver = {
    "dpdk",
    "eal=ARGS            EAL arguments, separated by spaces or ';', '|' for ','\n"
    "                    (first port of the process only; e.g. --no-huge;-m;512;--in-memory)\n"
    "port=ID|NAME        ethdev port id or device name, e.g. net_ring0 (default 0)\n"
    "ip=ADDR             this port's IPv4 or IPv6 address (required)\n"
    "mac=auto|MAC        the device's MAC (default auto), or AA:BB:CC:DD:EE:FF to set\n"
    "udp_port=N          MetaRoCE UDP port received on (default 4792)\n"
    "queues=Q            rx/tx queue pairs, 1..16 (default 1)\n"
    "mbufs=N             mbufs in the port's pool (default 8192)\n"
    "mtu=N               IP MTU 576..9600 (default 1500); sizes mbufs and frames; within\n"
    "                    the device's limit, except net_memif (chained buffers: up to 9600)\n"
    "neigh=IP@MAC;...    static neighbours (others are resolved by ARP / IPv6 ND)\n"
    "csum=auto|off       offload IPv4 and UDP checksums when the device can (default auto)",
    &Create,
};

MR_PORT_DRIVER_REGISTER(kDpdkDriver)

}  // namespace metaroce::dpdk
