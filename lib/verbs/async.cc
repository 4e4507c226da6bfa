/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Asynchronous events: the daemon's async ring in the application segment,
// signalled through context->async_fd (an eventfd), and IBV_EVENT_DEVICE_FATAL
// synthesised once when the daemon is gone.

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "verbs_private.h"

namespace metaroce::verbs {
namespace {

enum class Element { kQp, kCq, kSrq, kPort, kDevice };

Element ElementOf(uint32_t type) {
  switch (type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED: return Element::kQp;
    case IBV_EVENT_CQ_ERR: return Element::kCq;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: return Element::kSrq;
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
    case IBV_EVENT_GID_CHANGE: return Element::kPort;
    default: return Element::kDevice;
  }
}

// The object of @p handle in @p objs, nullptr once destroyed.
template <typename T>
T* Lookup(Context* c, const std::unordered_map<uint32_t, T*>& objs, uint32_t handle) {
  std::lock_guard<std::mutex> lock(c->obj_mu);
  const auto it = objs.find(handle);
  return it != objs.end() ? it->second : nullptr;
}

// The next event of any lane into @p e (async_mu held).
bool NextEntry(Context* c, ipc::AsyncEntry* e) {
  for (uint32_t l = 0; l < c->lanes; l++) {
    ipc::AppLane* lane = c->lane(l);
    const uint32_t prod = lane->async_prod.v.load(std::memory_order_acquire);
    uint32_t cons = lane->async_cons.v.load(std::memory_order_relaxed);
    if (prod == cons) continue;
    if (prod - cons > ipc::kAsyncSlots) cons = prod - ipc::kAsyncSlots;  // overwritten: skip
    *e = lane->async[cons & (ipc::kAsyncSlots - 1)];
    lane->async_cons.v.store(cons + 1, std::memory_order_release);
    return true;
  }
  return false;
}

// One event into @p ev if there is one (async_mu held).
bool TakeEvent(Context* c, ibv_async_event* ev) {
  ipc::AsyncEntry e;
  while (NextEntry(c, &e)) {
    ev->event_type = static_cast<ibv_event_type>(e.event_type);
    switch (ElementOf(e.event_type)) {
      case Element::kQp: {
        Qp* qp = Lookup(c, c->qps, e.handle);
        if (qp == nullptr) continue;  // destroyed since
        ev->element.qp = &qp->qpx.qp_base;
        return true;
      }
      case Element::kCq: {
        Cq* cq = Lookup(c, c->cqs, e.handle);
        if (cq == nullptr) continue;
        ev->element.cq = reinterpret_cast<ibv_cq*>(&cq->cqx);
        return true;
      }
      case Element::kSrq: {
        Srq* srq = Lookup(c, c->srqs, e.handle);
        if (srq == nullptr) continue;
        ev->element.srq = &srq->srq;
        return true;
      }
      case Element::kPort: ev->element.port_num = 1; return true;
      case Element::kDevice:
        if (e.event_type != IBV_EVENT_DEVICE_FATAL) continue;  // not one verbs knows
        ev->element.port_num = 0;
        if (c->fatal_delivered) continue;
        c->fatal_delivered = true;
        return true;
    }
  }
  if (c->gone.load(std::memory_order_acquire) && !c->fatal_delivered) {
    c->fatal_delivered = true;
    ev->event_type = IBV_EVENT_DEVICE_FATAL;
    ev->element.port_num = 0;
    return true;
  }
  return false;
}

// One more event acknowledged on an object (its mutex, cond and counter).
void Acked(pthread_mutex_t* mu, pthread_cond_t* cond, uint32_t* completed) {
  pthread_mutex_lock(mu);
  ++*completed;
  pthread_cond_signal(cond);
  pthread_mutex_unlock(mu);
}

}  // namespace
}  // namespace metaroce::verbs

using namespace metaroce;
using namespace metaroce::verbs;

int ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
  Context* c = ToCtx(context);
  const int fd = context->async_fd;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(c->async_mu);
      if (TakeEvent(c, event)) return 0;
    }
    if (c->gone.load(std::memory_order_acquire)) {
      errno = EIO;  // fatal already delivered: nothing will ever come
      return -1;
    }
    uint64_t v;
    const int fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && (fl & O_NONBLOCK) != 0) {
      const bool signalled = read(fd, &v, sizeof(v)) == sizeof(v);
      CheckDaemon(c);
      std::lock_guard<std::mutex> lock(c->async_mu);
      if (TakeEvent(c, event)) return 0;
      if (signalled) continue;
      errno = EAGAIN;
      return -1;
    }
    pollfd p[2] = {{fd, POLLIN, 0}, {c->sock, POLLIN, 0}};
    const int r = poll(p, 2, -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (p[1].revents != 0) {
      if (!CheckDaemon(c) && (p[0].revents & POLLIN) == 0) {
        poll(p, 1, 1);  // a control reply in flight: do not spin on it
      }
    }
    if ((p[0].revents & POLLIN) != 0 && read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN) return -1;
  }
}

void ibv_ack_async_event(ibv_async_event* event) {
  switch (ElementOf(event->event_type)) {
    case Element::kQp: {
      ibv_qp* qp = event->element.qp;
      Acked(&qp->mutex, &qp->cond, &qp->events_completed);
      break;
    }
    case Element::kCq: {
      ibv_cq* cq = event->element.cq;
      Acked(&cq->mutex, &cq->cond, &cq->async_events_completed);
      break;
    }
    case Element::kSrq: {
      ibv_srq* srq = event->element.srq;
      Acked(&srq->mutex, &srq->cond, &srq->events_completed);
      break;
    }
    default: break;
  }
}
