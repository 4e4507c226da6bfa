/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Turns a decoded frame into text or a JSON object whose keys are the
// Wireshark dissector's field names (doc/spec.md section 7).

#ifndef METAROCE_APP_DECODE_DESCRIBE_H
#define METAROCE_APP_DECODE_DESCRIBE_H

#include <span>
#include <string>

#include "mr_wire.h"

namespace metaroce::decode {

/** One line: addresses, ECN, type and every field of the packet. */
std::string DescribeText(const wire::FrameInfo& f, const wire::Packet& p);

/** One JSON object (no newline) with frame number, IP/UDP fields and metaroce.* fields. */
std::string DescribeJson(size_t frame_no, const wire::FrameInfo& f, const wire::Packet& p,
                         uint32_t crc);

}  // namespace metaroce::decode

#endif  // METAROCE_APP_DECODE_DESCRIBE_H
