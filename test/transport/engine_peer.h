/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Test-only access to engine internals. Engine and EngineImpl name this class
// as a friend; it reads and sets per-path sequencing state that the public API
// does not expose (PSNs near 2^32 for wrap-around tests, in-flight counts).
// One definition per test binary: include this header, do not redefine it.

#ifndef METAROCE_TEST_TRANSPORT_ENGINE_PEER_H
#define METAROCE_TEST_TRANSPORT_ENGINE_PEER_H

#include <cstdint>
#include <vector>

#include "engine_private.h"
#include "mr_engine.h"

namespace metaroce::transport {

class EnginePeer {
 public:
  static EngineImpl& Impl(Engine& e) { return *e.impl_; }
  static const EngineImpl& Impl(const Engine& e) { return *e.impl_; }

  /** The connection to the peer engine at @p ip (default UDP port), or nullptr. */
  static const Connection* ConnTo(const Engine& e, const wire::IpAddr& ip) {
    const EngineImpl& impl = *e.impl_;
    auto it = impl.conn_by_peer.find(EngineImpl::PeerKey{ip, wire::kDefaultUdpPort});
    if (it == impl.conn_by_peer.end()) return nullptr;
    auto c = impl.conns.find(it->second);
    return c == impl.conns.end() ? nullptr : c->second.get();
  }

  static bool Established(const Engine& e, const wire::IpAddr& ip) {
    const Connection* c = ConnTo(e, ip);
    return c != nullptr && c->state == ConnState::kEstablished;
  }

  static const Qp* FindQp(const Engine& e, uint32_t qpn) {
    auto it = e.impl_->qps.find(qpn);
    return it == e.impl_->qps.end() ? nullptr : it->second.get();
  }

  /** The connection with local id @p conn_id, or nullptr. */
  static Connection* Conn(Engine& e, uint32_t conn_id) {
    auto it = e.impl_->conns.find(conn_id);
    return it == e.impl_->conns.end() ? nullptr : it->second.get();
  }

  /** Sender state of local path @p path (nullptr if there is none). */
  static TxPath* Tx(Engine& e, uint32_t conn_id, uint16_t path) {
    Connection* c = Conn(e, conn_id);
    return c == nullptr || path >= c->paths.size() ? nullptr : &c->paths[path];
  }

  /** Receiver state of the peer's path @p path (nullptr if there is none). */
  static RxPath* Rx(Engine& e, uint32_t conn_id, uint16_t path) {
    Connection* c = Conn(e, conn_id);
    return c == nullptr || path >= c->rx_paths.size() ? nullptr : &c->rx_paths[path];
  }

  /**
   * Makes an idle path number its next packet @p psn (nothing may be in flight).
   * @return false if the path does not exist or has packets in flight
   */
  static bool SetTxPsn(Engine& e, uint32_t conn_id, uint16_t path, uint32_t psn) {
    TxPath* p = Tx(e, conn_id, path);
    if (p == nullptr || p->inflight != 0) return false;
    p->next_psn = psn;
    p->una = psn;
    return true;
  }

  /** Local ids of the connections on the active list (timers.cc), in order. */
  static std::vector<uint32_t> Active(Engine& e) {
    return {e.impl_->Line().begin(), e.impl_->Line().end()};
  }

  /** Sets the receiver's cumulative PSN of a peer path, forgetting its SACK bits. */
  static bool SetRxCum(Engine& e, uint32_t conn_id, uint16_t path, uint32_t cum) {
    RxPath* r = Rx(e, conn_id, path);
    if (r == nullptr) return false;
    r->cum = cum;
    for (uint64_t& w : r->bits) w = 0;
    return true;
  }
};

}  // namespace metaroce::transport

#endif  // METAROCE_TEST_TRANSPORT_ENGINE_PEER_H
