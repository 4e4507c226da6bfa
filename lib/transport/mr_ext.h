/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * metaroce extensions in C: what plain verbs cannot say about a connection,
 * namely its planes and paths and their figures (doc/transport.md, "Planes").
 * A thin, allocation-per-call view of Engine::GetConnections() for the
 * control path, in a form the daemon and the verbs shim can hand to
 * applications. Not thread-safe: call it from the thread that drives the
 * engine, like every engine call.
 *
 * Compatibility: structs only grow at the end. Every query takes the size of
 * the caller's struct (sizeof(*out)) and fills that much of each element;
 * a caller built against an older header gets the fields it knows.
 */

#ifndef METAROCE_MR_EXT_H
#define METAROCE_MR_EXT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Planes a host may have (wire::kMaxPlanes). */
#define MR_EXT_MAX_PLANES 8

/** An IPv4 (family 4, bytes[0..3]) or IPv6 (family 6) address. */
struct mr_ext_addr {
  uint8_t family;
  uint8_t bytes[16];
};

enum mr_ext_conn_state {
  MR_EXT_CONN_CONNECTING = 0,
  MR_EXT_CONN_UP = 1,
  MR_EXT_CONN_FAILED = 2,
};

/** One connection (one per peer engine; every QP to that peer shares it). */
struct mr_ext_conn {
  uint32_t conn_id; /**< local id, the key of the other queries */
  uint32_t remote_conn_id;
  struct mr_ext_addr peer;
  uint16_t peer_udp_port;
  uint8_t state;  /**< enum mr_ext_conn_state */
  uint8_t planes; /**< planes in use: the fewer of both ends' (1 until up) */
  uint32_t planes_up;
  uint32_t paths;
  uint32_t paths_active;
  uint32_t qps;
  uint32_t rate_hint_mbps; /**< the share this receiver gives the peer; 0: none */
  uint32_t peer_hint_mbps; /**< the share the peer gives us; 0: none */
  uint64_t tx_pkts;
  uint64_t rx_pkts;
  uint64_t retx_pkts;
  uint64_t lost_pkts;
  uint32_t pace_mbps; /**< the pacer's rate: min(window / RTT x gain, peer hint); 0: none */
};

/** One plane of a connection. */
struct mr_ext_plane {
  uint32_t plane;
  struct mr_ext_addr local;
  struct mr_ext_addr peer;
  uint8_t up; /**< a path of it carries data */
  uint32_t paths;
  uint32_t paths_active;
  uint64_t failures; /**< times it failed whole */
  uint64_t tx_pkts;  /**< data packets sent on its paths */
  uint64_t retx_pkts;
};

/** One path (a UDP source port) of a connection. */
struct mr_ext_path {
  uint32_t path_id;
  uint32_t plane;
  uint16_t src_port;
  uint8_t active;
  uint64_t srtt_ns;
  uint64_t rto_ns;
  uint32_t cwnd_bytes;
  uint32_t inflight_bytes;
  uint64_t tx_pkts;
  uint64_t retx_pkts;
  uint64_t lost_pkts;
  uint64_t ce_pkts;
  uint64_t failures;
  uint64_t repaths; /**< moved to a fresh source port for congestion */
};

/** A metaroce::transport::Engine (C++: mr_ext_engine(engine)). */
struct mr_engine;

/**
 * Copies up to @p max connections, in creation order, into @p out (each
 * element @p elem_size bytes, normally sizeof(*out)). Returns how many
 * connections there are, which may be more than @p max.
 */
size_t mr_ext_query_conns(const struct mr_engine* engine, struct mr_ext_conn* out, size_t max,
                          size_t elem_size);

/**
 * The planes of connection @p conn_id, as mr_ext_query_conns(); sets *total
 * to how many it has. Returns 0, -ENOENT when the engine has no such
 * connection, or -EINVAL for a null engine or total, or out == NULL with
 * max != 0, or elem_size 0.
 */
int mr_ext_query_planes(const struct mr_engine* engine, uint32_t conn_id, struct mr_ext_plane* out,
                        size_t max, size_t elem_size, size_t* total);

/** The paths of connection @p conn_id, by path id; as mr_ext_query_planes(). */
int mr_ext_query_paths(const struct mr_engine* engine, uint32_t conn_id, struct mr_ext_path* out,
                       size_t max, size_t elem_size, size_t* total);

#ifdef __cplusplus
}  // extern "C"

namespace metaroce::transport {
class Engine;
}

/** The C handle of @p engine. */
inline const struct mr_engine* mr_ext_engine(const metaroce::transport::Engine& engine) {
  return reinterpret_cast<const struct mr_engine*>(&engine);
}
#endif

#endif  // METAROCE_MR_EXT_H
