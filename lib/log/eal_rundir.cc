/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <rte_eal.h>
#include <stdlib.h>
#include <unistd.h>

#include <mutex>

#include "mr_eal_rundir.h"

namespace metaroce::log {
namespace {

void RemoveIfEmpty() {
  const char* dir = rte_eal_get_runtime_dir();
  // rmdir() fails on a directory that still holds anything: nothing but an
  // empty directory is ever removed.
  if (dir != nullptr && dir[0] != '\0') rmdir(dir);
}

}  // namespace

void RemoveEmptyEalRuntimeDirAtExit() {
  static std::once_flag once;
  std::call_once(once, [] { atexit(RemoveIfEmpty); });
}

}  // namespace metaroce::log
