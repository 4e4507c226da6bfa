/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * Futex waits and wakes on a word of a shared segment, between processes
 * (AppSegment::poll_wait): shared futexes, not FUTEX_PRIVATE_FLAG.
 */

#ifndef METAROCE_MR_IPC_FUTEX_H
#define METAROCE_MR_IPC_FUTEX_H

#include <atomic>
#include <cstdint>

namespace metaroce::ipc {

/**
 * Sleeps while @p word holds @p expected, at most @p timeout_ns (or until a
 * wake or a signal). Returns at once if the word already differs.
 */
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, uint64_t timeout_ns);

/** Wakes every thread, of any process, that sleeps on @p word. */
void FutexWakeAll(std::atomic<uint32_t>* word);

}  // namespace metaroce::ipc

#endif  // METAROCE_MR_IPC_FUTEX_H
