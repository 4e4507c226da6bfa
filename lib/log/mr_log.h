/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * Logging for metaroce's libraries and drivers: a thin layer over DPDK's
 * rte_log with the log type "metaroce", so lines follow the program's EAL
 * settings (`--log-level=metaroce:debug`, rte_openlog_stream()). It works
 * without EAL too: rte_log then writes to stderr. This header includes no
 * DPDK header.
 *
 * @code
 * MR_LOG(INFO, "device %s: port %s opened", name.c_str(), port.c_str());
 * @endcode
 */

#ifndef METAROCE_MR_LOG_H
#define METAROCE_MR_LOG_H

#include <cstdint>

namespace metaroce::log {

/** Severity; the values are rte_log's RTE_LOG_ERR .. RTE_LOG_DEBUG. */
enum class Level : uint32_t {
  kErr = 4,
  kWarning = 5,
  kNotice = 6,
  kInfo = 7,  ///< the level the "metaroce" type starts at: INFO and more severe are shown
  kDebug = 8,
};

/** The rte_log type "metaroce", registered on first use. */
int LogType();

/** True if a line at @p level would be written (cheap; to skip building costly arguments). */
bool Enabled(Level level);

/**
 * Writes one line "METAROCE: <text>\n" at @p level through rte_log.
 * Use MR_LOG rather than calling it directly.
 */
void Write(Level level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

/** "ERR", "WARNING", "NOTICE", "INFO" or "DEBUG". */
const char* LevelName(Level level);

}  // namespace metaroce::log

/** @cond INTERNAL */
#define MR_LOG_LEVEL_ERR ::metaroce::log::Level::kErr
#define MR_LOG_LEVEL_WARNING ::metaroce::log::Level::kWarning
#define MR_LOG_LEVEL_NOTICE ::metaroce::log::Level::kNotice
#define MR_LOG_LEVEL_INFO ::metaroce::log::Level::kInfo
#define MR_LOG_LEVEL_DEBUG ::metaroce::log::Level::kDebug
/** @endcond */

/**
 * Logs one printf-style line (no trailing newline needed) at @p level, one of
 * ERR, WARNING, NOTICE, INFO, DEBUG, as RTE_LOG() does.
 */
#define MR_LOG(level, ...) ::metaroce::log::Write(MR_LOG_LEVEL_##level, __VA_ARGS__)

#endif  // METAROCE_MR_LOG_H
