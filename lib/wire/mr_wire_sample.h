/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * A fixed sample conversation with every packet type, over IPv4 and IPv6 (one
 * IPv6 frame VLAN-tagged), using documentation addresses (192.0.2.0/24,
 * 2001:db8::/32). Used by mr-decode --sample, the golden-vector tests, the
 * fuzz seed corpus and the Wireshark dissector test.
 */

#ifndef METAROCE_MR_WIRE_SAMPLE_H
#define METAROCE_MR_WIRE_SAMPLE_H

#include <cstdint>
#include <string>
#include <vector>

#include "mr_wire_frame.h"
#include "mr_wire_packet.h"

namespace metaroce::wire {

/** One sample packet with its encapsulation. */
struct SamplePacket {
  std::string name;  ///< stable identifier, e.g. "v4_write_first"
  FrameInfo frame;
  Packet packet;                 ///< packet.payload is empty; see Get()
  std::vector<uint8_t> payload;  ///< owned payload bytes

  /** The packet with its payload span pointing at this object's storage. */
  Packet Get() const {
    Packet p = packet;
    p.payload = payload;
    return p;
  }
};

/** The sample conversation, in capture order. Same content on every call. */
std::vector<SamplePacket> SampleConversation();

}  // namespace metaroce::wire

#endif  // METAROCE_MR_WIRE_SAMPLE_H
