/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Device list, open/close, and the queries: device, port, GID, P_Key.

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

#include "mr_ipc_socket.h"
#include "verbs_private.h"

namespace metaroce::verbs {
namespace {

std::mutex g_dev_mu;
Device* g_dev = nullptr;  // never freed: applications may hold it past free_device_list

uint32_t Min(uint32_t a, uint32_t b) { return a < b ? a : b; }

// Largest IBV_MTU_x not above @p bytes, at least 1024.
ibv_mtu MtuOf(uint32_t bytes) {
  if (bytes >= 4096) return IBV_MTU_4096;
  if (bytes >= 2048) return IBV_MTU_2048;
  return IBV_MTU_1024;
}

// IB width/speed codes whose product is the largest rate not above @p mbps
// (25 Gb/s, 1x EDR, when the daemon does not know).
void SpeedOf(uint32_t mbps, uint8_t* width, uint8_t* speed) {
  struct Combo {
    uint32_t mbps;
    uint8_t width;
    uint8_t speed;
  };
  static constexpr Combo kCombos[] = {
      {400000, 2, 128},  // 4x NDR
      {200000, 2, 64},   // 4x HDR
      {100000, 2, 32},   // 4x EDR
      {56000, 2, 16},    // 4x FDR
      {50000, 1, 64},    // 1x HDR
      {40000, 2, 4},     // 4x QDR
      {25000, 1, 32},    // 1x EDR
      {14000, 1, 16},    // 1x FDR
      {10000, 1, 4},     // 1x QDR
      {5000, 1, 2},      // 1x DDR
      {0, 1, 1},         // 1x SDR
  };
  if (mbps == 0) mbps = 25000;
  for (const Combo& c : kCombos) {
    if (mbps >= c.mbps) {
      *width = c.width;
      *speed = c.speed;
      return;
    }
  }
}

void FillDeviceAttr(const ipc::HelloRep& h, ibv_device_attr* a) {
  memset(a, 0, sizeof(*a));
  snprintf(a->fw_ver, sizeof(a->fw_ver), "metaroce");
  a->node_guid = htobe64(h.node_guid);
  a->sys_image_guid = htobe64(h.node_guid);
  a->max_mr_size = h.max_mr_bytes;
  a->page_size_cap = 4096;
  a->vendor_id = 0;  // never a real vendor: perftest would take mlx5dv/efadv paths
  a->vendor_part_id = 0;
  a->hw_ver = 0;
  a->max_qp = static_cast<int>(Min(h.max_qp, ipc::kMaxQpsPerApp));
  a->max_qp_wr = static_cast<int>(MaxWr(h));
  a->device_cap_flags = 0;
  a->max_sge = static_cast<int>(MaxSge(h));
  a->max_sge_rd = a->max_sge;
  a->max_cq = static_cast<int>(h.max_cq);
  a->max_cqe = static_cast<int>(Min(h.max_cqe, ipc::kMaxRingDepth));
  a->max_mr = static_cast<int>(h.max_mr);
  a->max_pd = static_cast<int>(h.max_pd);
  a->max_qp_rd_atom = static_cast<int>(h.max_qp_rd_atom);
  a->max_qp_init_rd_atom = static_cast<int>(h.max_qp_rd_atom);
  const uint64_t res = uint64_t{h.max_qp_rd_atom} * static_cast<uint64_t>(a->max_qp);
  a->max_res_rd_atom = static_cast<int>(std::min<uint64_t>(res, 0x7fffffff));
  a->atomic_cap = IBV_ATOMIC_HCA;
  a->max_ah = 0x7fffffff;  // address handles are local objects
  a->max_srq = static_cast<int>(Min(h.max_srq, ipc::kMaxSrqsPerApp));
  a->max_srq_wr = a->max_qp_wr;
  a->max_srq_sge = a->max_sge;
  a->max_pkeys = 1;
  a->local_ca_ack_delay = 0;
  a->phys_port_cnt = 1;
}

void FillPortAttr(const ipc::HelloRep& h, ibv_port_attr* p) {
  memset(p, 0, sizeof(*p));
  p->state = IBV_PORT_ACTIVE;
  p->max_mtu = MtuOf(h.mtu_bytes);
  p->active_mtu = p->max_mtu;
  p->gid_tbl_len = 1;
  p->port_cap_flags = 0;
  p->max_msg_sz = static_cast<uint32_t>(std::min<uint64_t>(h.max_msg_bytes, UINT32_MAX));
  p->pkey_tbl_len = 1;
  p->lid = h.lid;
  p->max_vl_num = 1;  // VL0 only
  SpeedOf(h.link_speed_mbps, &p->active_width, &p->active_speed);
  p->phys_state = 5;  // LinkUp
  p->link_layer = IBV_LINK_LAYER_ETHERNET;
}

int CheckPort(uint32_t port) {
  if (port != 1) {
    Debug("port %u does not exist (the device has port 1)", port);
    return EINVAL;
  }
  return 0;
}

}  // namespace

int QueryPortImpl(ibv_context* ctx, uint8_t port, ibv_port_attr* attr, size_t len) {
  if (CheckPort(port) != 0) return EINVAL;
  ibv_port_attr full;
  FillPortAttr(ToCtx(ctx)->hello, &full);
  memcpy(attr, &full, std::min(len, sizeof(full)));
  return 0;
}

int QueryDeviceExImpl(ibv_context* ctx, const ibv_query_device_ex_input* input,
                      ibv_device_attr_ex* attr, size_t attr_size) {
  if (input != nullptr && input->comp_mask != 0) return EINVAL;
  if (attr_size < sizeof(attr->orig_attr) + sizeof(attr->comp_mask)) return EINVAL;
  ibv_device_attr_ex full;
  memset(&full, 0, sizeof(full));
  FillDeviceAttr(ToCtx(ctx)->hello, &full.orig_attr);
  full.comp_mask = 0;
  full.phys_port_cnt_ex = 1;
  memset(attr, 0, attr_size);
  memcpy(attr, &full, std::min(attr_size, sizeof(full)));
  return 0;
}

namespace {

int GidEntry(ibv_context* ctx, uint32_t port, uint32_t index, ibv_gid_entry* e) {
  if (CheckPort(port) != 0) return EINVAL;
  if (index != 0) {
    Debug("GID index %u does not exist (the table has index 0)", index);
    return EINVAL;
  }
  memset(e, 0, sizeof(*e));
  memcpy(e->gid.raw, ToCtx(ctx)->hello.gid, sizeof(e->gid.raw));
  e->gid_index = 0;
  e->port_num = 1;
  e->gid_type = IBV_GID_TYPE_ROCE_V2;
  e->ndev_ifindex = 0;
  return 0;
}

int CloseContext(Context* c) {
  if (c->app != nullptr) munmap(c->app, ipc::AppSegmentBytes(c->lanes));
  if (c->vctx.context.async_fd >= 0) close(c->vctx.context.async_fd);
  for (const int fd : c->kick_fd) {
    if (fd >= 0) close(fd);
  }
  if (c->sock >= 0) close(c->sock);
  pthread_mutex_destroy(&c->vctx.context.mutex);
  delete c;
  return 0;
}

}  // namespace
}  // namespace metaroce::verbs

using namespace metaroce;
using namespace metaroce::verbs;

ibv_device** ibv_get_device_list(int* num_devices) {
  if (num_devices != nullptr) *num_devices = 0;
  int sock = -1;
  ipc::HelloRep rep;
  int fds[ipc::kMaxCtlFds];
  int nfds = 0;
  const int err = OpenSession(&sock, &rep, fds, &nfds);
  auto** list = static_cast<ibv_device**>(calloc(2, sizeof(ibv_device*)));
  if (list == nullptr) {
    if (err == 0) {
      ipc::CloseFds(fds, nfds);
      close(sock);
    }
    errno = ENOMEM;
    return nullptr;
  }
  if (err != 0) {
    fprintf(stderr, "metaroce: no daemon at %s (start metaroced, or set %s): %s\n", SocketPath(),
            ipc::kSocketEnv, strerror(err));
    return list;
  }
  // This session only asked who the daemon is: ibv_open_device opens its own.
  ipc::CloseFds(fds, nfds);
  close(sock);
  {
    std::lock_guard<std::mutex> lock(g_dev_mu);
    if (g_dev == nullptr) g_dev = new Device();
    Device* d = g_dev;
    d->hello = rep;
    ibv_device& dev = d->dev;
    dev.node_type = IBV_NODE_CA;
    dev.transport_type = IBV_TRANSPORT_IB;
    snprintf(dev.name, sizeof(dev.name), "%s",
             rep.device_name[0] != '\0' ? rep.device_name : "metaroce0");
    snprintf(dev.dev_name, sizeof(dev.dev_name), "uverbs-%.15s", dev.name);
    snprintf(dev.dev_path, sizeof(dev.dev_path), "/dev/infiniband/uverbs-%.15s", dev.name);
    // No such directory exists: sysfs reads through it fail with ENOENT.
    snprintf(dev.ibdev_path, sizeof(dev.ibdev_path), "/sys/class/infiniband/%s", dev.name);
    list[0] = &d->dev;
  }
  if (num_devices != nullptr) *num_devices = 1;
  return list;
}

void ibv_free_device_list(ibv_device** list) { free(list); }

const char* ibv_get_device_name(ibv_device* device) { return device->name; }

__be64 ibv_get_device_guid(ibv_device* device) {
  const Device* d = reinterpret_cast<Device*>(device);
  return htobe64(d->hello.node_guid);
}

int ibv_get_device_index(ibv_device*) { return 0; }

ibv_context* ibv_open_device(ibv_device* device) {
  Device* d = reinterpret_cast<Device*>(device);
  auto* c = new Context();
  c->dev = d;
  ibv_context& ctx = c->vctx.context;
  ctx.async_fd = -1;
  std::fill(std::begin(c->kick_fd), std::end(c->kick_fd), -1);
  int fds[ipc::kMaxCtlFds];
  std::fill(std::begin(fds), std::end(fds), -1);
  int nfds = 0;
  int err = OpenSession(&c->sock, &c->hello, fds, &nfds);
  if (err == 0 && (nfds < 1 || c->hello.lanes < 1 || c->hello.lanes > ipc::kMaxLanes)) {
    err = EPROTO;
  }
  if (err != 0) {
    fprintf(stderr, "metaroce: cannot open %s: daemon at %s: %s\n", device->name, SocketPath(),
            strerror(err));
    ipc::CloseFds(fds, nfds);
    if (c->sock >= 0) close(c->sock);
    delete c;
    errno = err;
    return nullptr;
  }
  c->lanes = c->hello.lanes;
  c->poll_spin_ns = PollSpinNs();
  c->app = static_cast<ipc::AppSegment*>(MapSegment(fds[0], ipc::AppSegmentBytes(c->lanes)));
  // Kick eventfds the daemon did not send leave their lanes' shards awake.
  for (int i = 2; i < nfds; i++) {
    if (static_cast<uint32_t>(i - 2) < c->lanes) {
      c->kick_fd[i - 2] = fds[i];
    } else {
      close(fds[i]);
    }
  }
  if (nfds >= 2) {
    ctx.async_fd = fds[1];
  } else {
    // No async eventfd from the daemon: one of ours, so that async_fd is a
    // real descriptor; daemon death still wakes ibv_get_async_event.
    ctx.async_fd = eventfd(0, EFD_CLOEXEC);
    c->own_async_fd = true;
  }
  if (c->app == nullptr || ctx.async_fd < 0) {
    err = c->app == nullptr ? EPROTO : errno;
    fprintf(stderr, "metaroce: cannot open %s: bad application segment from the daemon\n",
            device->name);
    c->app = nullptr;
    CloseContext(c);
    errno = err;
    return nullptr;
  }
  for (uint32_t l = 0; l < c->lanes; l++) {
    c->db_prod[l] = c->lane(l)->db_prod.v.load(std::memory_order_relaxed);
  }
  ctx.device = device;
  ctx.cmd_fd = c->sock;
  ctx.num_comp_vectors = 1;
  pthread_mutex_init(&ctx.mutex, nullptr);
  ctx.abi_compat = __VERBS_ABI_IS_EXTENDED;
  ctx.ops.poll_cq = PollCq;
  ctx.ops.req_notify_cq = ReqNotifyCq;
  ctx.ops.post_send = PostSend;
  ctx.ops.post_recv = PostRecv;
  ctx.ops.post_srq_recv = PostSrqRecv;
  c->vctx.sz = sizeof(verbs_context);
  c->vctx.query_port = QueryPortImpl;
  c->vctx.query_device_ex = QueryDeviceExImpl;
  c->vctx.create_qp_ex = CreateQpEx;
  c->vctx.create_cq_ex = CreateCqEx;
  return &ctx;
}

int ibv_close_device(ibv_context* context) { return CloseContext(ToCtx(context)); }

int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
  FillDeviceAttr(ToCtx(context)->hello, attr);
  return 0;
}

// The exported symbol serves programs built before port_cap_flags2 existed
// (newer ones go through verbs_context::query_port): fill only that much.
int ibv_query_port(ibv_context* context, uint8_t port_num, _compat_ibv_port_attr* port_attr) {
  return QueryPortImpl(context, port_num, reinterpret_cast<ibv_port_attr*>(port_attr),
                       offsetof(ibv_port_attr, port_cap_flags2));
}

int ibv_query_gid(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid) {
  ibv_gid_entry e;
  const int err = GidEntry(context, port_num, static_cast<uint32_t>(index), &e);
  if (err != 0) {
    errno = err;
    return -1;
  }
  *gid = e.gid;
  return 0;
}

int _ibv_query_gid_ex(ibv_context* context, uint32_t port_num, uint32_t gid_index,
                      ibv_gid_entry* entry, uint32_t flags, size_t entry_size) {
  if (flags != 0 || entry_size < sizeof(ibv_gid_entry)) return EINVAL;
  return GidEntry(context, port_num, gid_index, entry);
}

ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries,
                             uint32_t flags, size_t entry_size) {
  if (flags != 0 || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
  if (max_entries < 1) return -EINVAL;
  const int err = GidEntry(context, 1, 0, entries);
  return err != 0 ? -err : 1;
}

int ibv_query_pkey(ibv_context* context, uint8_t port_num, int index, __be16* pkey) {
  (void)context;
  if (CheckPort(port_num) != 0 || index != 0) {
    errno = EINVAL;
    return -1;
  }
  *pkey = htobe16(0xffff);
  return 0;
}

int ibv_get_pkey_index(ibv_context* context, uint8_t port_num, __be16 pkey) {
  __be16 p;
  if (ibv_query_pkey(context, port_num, 0, &p) != 0) return -1;
  if (p != pkey) {
    errno = ENOENT;
    return -1;
  }
  return 0;
}

enum ibv_gid_type_sysfs { IBV_GID_TYPE_SYSFS_IB_ROCE_V1, IBV_GID_TYPE_SYSFS_ROCE_V2 };

// rdma-core's driver.h: int ibv_query_gid_type(struct ibv_context *, uint8_t
// port_num, unsigned int index, enum ibv_gid_type_sysfs *type).
MR_EXPORT int ibv_query_gid_type(ibv_context* context, uint8_t port_num, unsigned int index,
                                 ibv_gid_type_sysfs* type) {
  ibv_gid_entry e;
  if (GidEntry(context, port_num, index, &e) != 0) return -1;
  *type = IBV_GID_TYPE_SYSFS_ROCE_V2;
  return 0;
}
