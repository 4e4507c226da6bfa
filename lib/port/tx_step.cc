/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "mr_port_tx.h"

namespace metaroce::port {
namespace {

// Moves the packets of @p filled that the engine put on plane k > 0 to
// ports[k]: copied into its buffers and sent; the originals are returned
// unused to plane 0's port.
void SendOnPlanes(std::span<Port* const> ports, uint16_t queue,
                  std::span<transport::TxSlot> filled) {
  constexpr size_t kBatch = 32;
  std::array<transport::TxSlot*, kBatch> from;
  std::array<transport::TxSlot, kBatch> to;
  for (size_t k = 1; k < ports.size(); k++) {
    size_t i = 0;
    while (i < filled.size()) {
      size_t n = 0;
      for (; i < filled.size() && n < kBatch; i++) {
        if (filled[i].plane == k && filled[i].len != 0) from[n++] = &filled[i];
      }
      if (n == 0) continue;
      const uint16_t got = ports[k]->TxAlloc(queue, to.data(), static_cast<uint16_t>(n));
      for (size_t j = 0; j < got; j++) {
        transport::TxSlot& src = *from[j];
        // AddPlanes() kept the payload within every plane's frames; anything else is not sent.
        const uint32_t len = src.len <= to[j].cap ? src.len : 0;
        std::memcpy(to[j].buf, src.buf, len);
        to[j].len = len;
        to[j].addr = src.addr;
        to[j].plane = src.plane;
      }
      for (size_t j = 0; j < n; j++) from[j]->len = 0;
      ports[k]->TxBurst(queue, to.data(), got);
    }
  }
}

}  // namespace

size_t TxStep(Port& port, uint16_t queue, transport::Engine& engine, TxPacer& pacer,
              transport::TimeNs now, std::span<transport::TxSlot> slots, TxStepState* st,
              absl::FunctionRef<void(transport::TxSlot&)> keep) {
  Port* const one[] = {&port};
  return TxStep(one, queue, engine, pacer, now, slots, st, keep);
}

size_t TxStep(std::span<Port* const> ports, uint16_t queue, transport::Engine& engine,
              TxPacer& pacer, transport::TimeNs now, std::span<transport::TxSlot> slots,
              TxStepState* st, absl::FunctionRef<void(transport::TxSlot&)> keep) {
  Port& port = *ports[0];
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
    if (ports.size() > 1) SendOnPlanes(ports, queue, slots.first(filled));
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
