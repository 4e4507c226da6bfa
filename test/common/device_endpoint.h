/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// One end of the Device tests: a Device with a PD, a CQ, one QP and a
// registered buffer, polled from the test's thread.

#ifndef METAROCE_TEST_COMMON_DEVICE_ENDPOINT_H
#define METAROCE_TEST_COMMON_DEVICE_ENDPOINT_H

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "mr_device.h"

namespace metaroce::testing {

struct DeviceEndpoint {
  std::unique_ptr<Device> dev;
  uint32_t pd = 0, cq = 0, qpn = 0;
  std::vector<uint8_t> buf;
  transport::MrInfo mr;
  std::vector<transport::Completion> done;

  uint64_t Addr(size_t off) const { return reinterpret_cast<uint64_t>(buf.data()) + off; }

  /** Takes @p d and gives it a PD, a 4096-deep CQ, a QP on it and @p bytes of registered memory. */
  absl::Status Init(std::unique_ptr<Device> d, size_t bytes) {
    dev = std::move(d);
    transport::Engine& e = dev->engine();
    auto p = e.AllocPd();
    if (!p.ok()) return p.status();
    pd = *p;
    auto c = e.CreateCq(4096);
    if (!c.ok()) return c.status();
    cq = *c;
    transport::QpAttr qa;
    qa.pd = pd;
    qa.send_cq = qa.recv_cq = cq;
    auto q = e.CreateQp(qa);
    if (!q.ok()) return q.status();
    qpn = *q;
    buf.assign(bytes, 0);
    auto m = e.RegMr(pd, Addr(0), buf.size(), transport::access::kAll);
    if (!m.ok()) return m.status();
    mr = *m;
    return absl::OkStatus();
  }

  /**
   * Posts a WRITE of @p len bytes at @p off of its buffer to @p remote_off of
   * the buffer (rkey @p rkey) at @p remote_va.
   */
  absl::Status PostWrite(uint64_t wr_id, size_t off, uint32_t len, uint64_t remote_va,
                         uint32_t rkey) {
    transport::SendWr w;
    w.wr_id = wr_id;
    w.opcode = transport::Opcode::kWrite;
    w.sg.push_back({Addr(off), len, mr.lkey});
    w.remote_addr = remote_va;
    w.rkey = rkey;
    return dev->engine().PostSend(dev->Now(), qpn, w);
  }
  /** The same, into @p peer's buffer at @p remote_off. */
  absl::Status PostWrite(uint64_t wr_id, size_t off, uint32_t len, const DeviceEndpoint& peer,
                         size_t remote_off) {
    return PostWrite(wr_id, off, len, peer.Addr(remote_off), peer.mr.rkey);
  }

  /** Connects its QP to @p peer's. */
  absl::Status Connect(const DeviceEndpoint& peer) {
    return dev->engine().ConnectQp(qpn, peer.dev->address(), peer.qpn);
  }

  /** One iteration of the device, and the completions it brought, into done. */
  void Poll() {
    dev->Poll();
    transport::Completion c[16];
    size_t k;
    while ((k = dev->engine().PollCq(cq, c)) > 0) done.insert(done.end(), c, c + k);
  }
};

}  // namespace metaroce::testing

#endif  // METAROCE_TEST_COMMON_DEVICE_ENDPOINT_H
