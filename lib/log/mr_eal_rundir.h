/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * EAL leaves its runtime directory (`/var/run/dpdk/<file-prefix>`, or under
 * `$XDG_RUNTIME_DIR` when not root) behind at exit. A primary that shares
 * nothing (`--no-shconf`, `--in-memory`) keeps only its telemetry socket
 * there, which telemetry removes at exit: what is left is an empty
 * directory per prefix that ever ran. Both places that start EAL ask for it
 * to be removed at exit when it is empty; a directory that still holds
 * anything (shared config for secondaries, another process's socket) stays.
 */

#ifndef METAROCE_MR_EAL_RUNDIR_H
#define METAROCE_MR_EAL_RUNDIR_H

namespace metaroce::log {

/**
 * Call before rte_eal_init(): at normal exit, after EAL's own exit handlers
 * (which run first, being registered later), rmdir() the process's EAL
 * runtime directory if it is empty. Once per process; later calls do nothing.
 */
void RemoveEmptyEalRuntimeDirAtExit();

}  // namespace metaroce::log

#endif  // METAROCE_MR_EAL_RUNDIR_H
