/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * Build-wide tunables, one line of reason each. Protocol constants fixed by
 * the wire format live in lib/wire/mr_wire_defs.h; what an operator may
 * change at run time lives in the daemon's configuration, with these as the
 * defaults.
 */

#ifndef METAROCE_MR_CONFIG_H
#define METAROCE_MR_CONFIG_H

#include <cstdint>

namespace metaroce::config {

/** Lowest UDP source port a path uses: the IANA dynamic range, away from services. */
inline constexpr uint16_t kPathSourcePortMin = 49152;

/** DSCP for MetaRoCE traffic: AF31, a common lossy RDMA class; ECN bits are separate. */
inline constexpr uint8_t kDscp = 26;

/** Largest frame the capture and decode tools handle: a 9000-byte MTU plus headers. */
inline constexpr uint32_t kMaxFrameBytes = 9216;

}  // namespace metaroce::config

#endif  // METAROCE_MR_CONFIG_H
