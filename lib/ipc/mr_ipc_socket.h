/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * One control datagram (mr_ipc.h) with its file descriptors over a
 * SOCK_SEQPACKET Unix socket, both directions.
 */

#ifndef METAROCE_MR_IPC_SOCKET_H
#define METAROCE_MR_IPC_SOCKET_H

#include <sys/types.h>

#include <cstddef>

#include "mr_ipc.h"

namespace metaroce::ipc {

/**
 * Sends @p h (its body_len set from @p body_len), then @p body, with @p nfds
 * descriptors (at most kMaxCtlFds). Returns 0 or a positive errno value.
 */
int SendCtl(int sock, CtlHeader h, const void* body, size_t body_len, const int* fds = nullptr,
            int nfds = 0);

/**
 * Receives one datagram into @p buf (@p cap bytes, at least kMaxCtlBytes) and
 * up to kMaxCtlFds descriptors into @p fds (close-on-exec; *nfds says how
 * many; descriptors beyond that are closed). Returns the datagram's bytes, 0
 * at end of file, or a negative errno value (-EMSGSIZE: truncated, -EPROTO:
 * shorter than a CtlHeader or body_len disagrees with the size).
 */
ssize_t RecvCtl(int sock, void* buf, size_t cap, int* fds, int* nfds);

/** Closes @p n descriptors of @p fds that are >= 0 and sets them to -1. */
void CloseFds(int* fds, int n);

}  // namespace metaroce::ipc

#endif  // METAROCE_MR_IPC_SOCKET_H
