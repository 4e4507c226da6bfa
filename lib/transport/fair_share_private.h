/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * The receiver's fair share (doc/congestion.md): max-min water-filling of
 * this host's inbound capacity over the senders measured in the last
 * interval. Pure arithmetic; the engine measures and returns the result in
 * every ACK (rate_hint).
 */

#ifndef METAROCE_TRANSPORT_FAIR_SHARE_PRIVATE_H
#define METAROCE_TRANSPORT_FAIR_SHARE_PRIVATE_H

#include <cstdint>
#include <span>

namespace metaroce::transport {

/** What FairShareMbps found limited elsewhere: how many, and their rates together. */
struct FairShareLimited {
  uint32_t senders = 0;
  uint64_t mbps = 0;
};

/**
 * The share of @p capacity_mbps for a sender that could use more, given the
 * rates (Mbit/s) @p rates_mbps the senders reached in the last interval
 * (reordered) while held to @p prev_mbps (the last share; 0: none). A sender
 * below 90 % of the level, and of the share it was held to, is limited
 * elsewhere and keeps what it uses; the others split the rest equally. When
 * every sender is limited elsewhere, the fastest one's rate plus an equal
 * part of what is left, but at least an equal share, so that each may grow
 * and all of them together fit. No senders: the whole capacity. Never 0 (0
 * means "no limit" on the wire) and never above UINT32_MAX. @p limited, if
 * given, gets the senders found limited elsewhere.
 */
uint32_t FairShareMbps(uint64_t capacity_mbps, std::span<uint64_t> rates_mbps, uint64_t prev_mbps,
                       FairShareLimited* limited = nullptr);

/**
 * What to hold back from @p capacity_mbps in the next allocation to drain a
 * queue at the receiver's link, given the bytes that arrived in the last
 * interval (@p all_bytes) and those of them CE-marked (@p ce_bytes): none
 * while at most config::kFairShareDrainFromPct came marked (the queue only
 * crossed the marking threshold now and then: a busy link's jitter), then
 * rising to
 * capacity >> config::kFairShareDrainShift when all of them did (a queue
 * that stood all interval).
 */
uint64_t ShareDrainMbps(uint64_t capacity_mbps, uint64_t all_bytes, uint64_t ce_bytes);

}  // namespace metaroce::transport

#endif  // METAROCE_TRANSPORT_FAIR_SHARE_PRIVATE_H
