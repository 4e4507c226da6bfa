/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <rte_log.h>
#include <stdarg.h>
#include <stdio.h>

#include "mr_log.h"

namespace metaroce::log {
namespace {

/** Longest line; longer ones are cut (rte_log writes one line per call). */
constexpr size_t kMaxLineBytes = 1024;

static_assert(static_cast<uint32_t>(Level::kErr) == RTE_LOG_ERR);
static_assert(static_cast<uint32_t>(Level::kWarning) == RTE_LOG_WARNING);
static_assert(static_cast<uint32_t>(Level::kNotice) == RTE_LOG_NOTICE);
static_assert(static_cast<uint32_t>(Level::kInfo) == RTE_LOG_INFO);
static_assert(static_cast<uint32_t>(Level::kDebug) == RTE_LOG_DEBUG);

}  // namespace

int LogType() {
  // Thread-safe once; -1 (rte_log's "no type") would fall back to the user1 type.
  static const int type = [] {
    const int t = rte_log_register_type_and_pick_level("metaroce", RTE_LOG_INFO);
    return t >= 0 ? t : static_cast<int>(RTE_LOGTYPE_USER1);
  }();
  return type;
}

bool Enabled(Level level) {
  return rte_log_can_log(static_cast<uint32_t>(LogType()), static_cast<uint32_t>(level));
}

void Write(Level level, const char* fmt, ...) {
  if (!Enabled(level)) return;
  char line[kMaxLineBytes];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  rte_log(static_cast<uint32_t>(level), static_cast<uint32_t>(LogType()), "METAROCE: %s\n", line);
}

const char* LevelName(Level level) {
  switch (level) {
    case Level::kErr: return "ERR";
    case Level::kWarning: return "WARNING";
    case Level::kNotice: return "NOTICE";
    case Level::kInfo: return "INFO";
    case Level::kDebug: return "DEBUG";
  }
  return "UNKNOWN";
}

}  // namespace metaroce::log
