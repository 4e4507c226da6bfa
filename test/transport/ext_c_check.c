/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/* Compiled as C: mr_ext.h is a C header, and a C program reads a connection's planes with it. */

#include "mr_ext.h"

/* Planes of connection conn_id that carry data, or the query's negative errno. */
int mr_ext_c_planes_up(const struct mr_engine* engine, uint32_t conn_id) {
  struct mr_ext_plane planes[MR_EXT_MAX_PLANES];
  size_t total = 0;
  int rc =
      mr_ext_query_planes(engine, conn_id, planes, MR_EXT_MAX_PLANES, sizeof(planes[0]), &total);
  if (rc != 0) return rc;
  int up = 0;
  for (size_t i = 0; i < total && i < MR_EXT_MAX_PLANES; i++) up += planes[i].up;
  return up;
}
