/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/*
 * What a switch reads from and writes to a frame: the 5-tuple for routing and
 * ECMP, and the ECN field. Parsing is lenient (no checksum checks: a switch
 * forwards what it can route); every access is bounds-checked.
 */

#ifndef METAROCE_SIM_FLOW_PRIVATE_H
#define METAROCE_SIM_FLOW_PRIVATE_H

#include <array>
#include <cstdint>
#include <span>

#include "frame_pool_private.h"
#include "mr_wire_frame.h"

namespace metaroce::sim {

/** Addresses and ports of a frame. ports are 0 unless the IP payload is UDP or TCP. */
struct FlowKey {
  L3Kind l3 = L3Kind::kNone;
  uint16_t l3_offset = 0;
  uint8_t protocol = 0;
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  wire::IpAddr src;
  wire::IpAddr dst;
};

/** Parses Ethernet (one optional VLAN tag), IPv4 or IPv6, and the L4 ports. */
FlowKey ParseFlowKey(std::span<const uint8_t> frame);

/** Unseeded hash of the 5-tuple; a switch mixes its own seed into it. */
uint64_t FlowHash(const FlowKey& k);

/** Result of trying to set CE. */
enum class EcnResult : uint8_t { kNotEct, kAlreadyCe, kMarked };

/**
 * Sets CE in the IP header at @p l3_offset if the frame is ECT(0) or ECT(1).
 * IPv4: rewrites TOS and updates the header checksum incrementally (RFC 1624),
 * so a header that was valid stays valid and a damaged one stays damaged.
 * IPv6: rewrites the traffic class (no header checksum; UDP does not cover it).
 */
EcnResult MarkCe(std::span<uint8_t> frame, L3Kind l3, uint16_t l3_offset);

}  // namespace metaroce::sim

#endif  // METAROCE_SIM_FLOW_PRIVATE_H
