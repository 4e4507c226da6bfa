/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Internals of the fault stage: its random numbers and the packet edits it makes.

#ifndef METAROCE_PORT_FAULT_PRIVATE_H
#define METAROCE_PORT_FAULT_PRIVATE_H

#include <cstdint>
#include <span>

#include "mr_engine.h"
#include "mr_rng.h"
#include "mr_wire_frame.h"

namespace metaroce::port::fault {

/** The fault stage draws from the engine's deterministic generator. */
using Rng = transport::Rng;

/** UDP source port of a packet; false if a frame's headers cannot be read. */
bool SourcePort(transport::Framing framing, std::span<const uint8_t> data,
                const wire::FrameInfo& addr, uint16_t* port);

/**
 * Sets CE on an ECT(0)/ECT(1) packet: the IPv4 TOS (header checksum updated) or
 * the IPv6 traffic class of a frame, or addr->ecn for kUdp. True if it changed.
 */
bool MarkCe(transport::Framing framing, std::span<uint8_t> data, wire::FrameInfo* addr);

/**
 * Flips one random bit of the MetaRoCE bytes (a frame's UDP checksum, when
 * present, is updated so that the MetaRoCE CRC is what catches it). False if
 * there are no such bytes.
 */
bool FlipBit(transport::Framing framing, std::span<uint8_t> data, Rng& rng);

}  // namespace metaroce::port::fault

#endif  // METAROCE_PORT_FAULT_PRIVATE_H
