/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, initial value and final
 * XOR 0xFFFFFFFF), the integrity check of every MetaRoCE packet. Runs of
 * config::kCrc32cIsalMinBytes and more go to ISA-L's crc32_iscsi (PCLMUL
 * folding, the kernel chosen for the CPU at run time); shorter ones use the
 * SSE4.2 crc32 instruction when the CPU has it, a table otherwise.
 */

#ifndef METAROCE_MR_CRC32C_H
#define METAROCE_MR_CRC32C_H

#include <cstddef>
#include <cstdint>

namespace metaroce::wire {

/** CRC-32C of @p len bytes at @p data. Crc32c("123456789", 9) == 0xE3069283. */
uint32_t Crc32c(const void* data, size_t len);

/**
 * Continues a CRC over more bytes: Crc32cExtend(Crc32c(a), b) == Crc32c(a || b).
 * Start from Crc32c(nullptr, 0) == 0 for an empty prefix.
 */
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t len);

/** The table-driven implementation, exposed so tests can compare the two paths. */
uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t len);

/** True when Crc32c uses the hardware instruction on this CPU. */
bool Crc32cIsAccelerated();

}  // namespace metaroce::wire

#endif  // METAROCE_MR_CRC32C_H
