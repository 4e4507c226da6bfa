/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <algorithm>
#include <bit>

#include "mr_port_tx.h"

namespace metaroce::port {

size_t TxStep(Port& port, uint16_t queue, transport::Engine& engine, TxPacer& pacer,
              transport::TimeNs now, std::span<transport::TxSlot> slots, TxStepState* st,
              absl::FunctionRef<void(transport::TxSlot&)> keep) {
  if (!engine.HasPendingTx() && engine.NextDeadline() > now) return 0;
  if (!pacer.Ready(now)) return 0;  // the engine keeps its packets until the bucket refills
  const uint16_t most = static_cast<uint16_t>(std::min<size_t>(slots.size(), UINT16_MAX));
  size_t sent = 0;
  uint16_t want = std::min(st->want, most);
  for (int b = 0; b < kMaxTxBurstsPerStep; b++) {
    const uint16_t room = port.TxAlloc(queue, slots.data(), want);
    if (room == 0) break;
    const size_t filled = engine.PollTx(now, slots.first(room));
    for (size_t i = filled; i < room; i++) slots[i].len = 0;  // returned unused
    for (size_t i = 0; i < filled; i++) keep(slots[i]);
    if (pacer.enabled()) {
      uint64_t bytes = 0;
      for (size_t i = 0; i < filled; i++) bytes += slots[i].len;
      pacer.Spend(bytes);
    }
    port.TxBurst(queue, slots.data(), room);
    sent += filled;
    if (filled < room || !pacer.Ready(now)) {
      st->want = static_cast<uint16_t>(
          std::max<size_t>(kFirstTxBurst, std::bit_ceil(std::max<size_t>(filled, 1))));
      break;
    }
    want = static_cast<uint16_t>(std::min<uint32_t>(2u * want, most));
    st->want = want;
  }
  return sent;
}

}  // namespace metaroce::port
