/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * A stand-in for metaroced speaking lib/ipc, for the verbs shim's tests: it
 * answers every control op, and a loopback executor drains the doorbells and
 * send rings and "executes" work between QPs of the same daemon (WRITE, READ,
 * SEND into a posted receive of the QP or of its SRQ, atomics), through the
 * memfds the shim sends with RegMr (or process_vm_readv/writev for
 * kCrossMemory regions), then writes the completions and signals armed CQs'
 * channels. An SRQ entry is taken when a SEND needs it (not when its doorbell
 * rings), so a test sees the ring fill up; its limit event fires then.
 */

#ifndef METAROCE_TEST_VERBS_FAKE_DAEMON_H
#define METAROCE_TEST_VERBS_FAKE_DAEMON_H

namespace metaroce::test {

/** Listens on @p socket_path and serves until killed. Returns only on setup errors (1). */
int RunFakeDaemon(const char* socket_path);

}  // namespace metaroce::test

#endif  // METAROCE_TEST_VERBS_FAKE_DAEMON_H
