/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Every other libibverbs export. Programs and providers (libmlx5, libefa,
// librdmacm) are linked BIND_NOW, so each default-versioned symbol of
// rdma-core must exist: harmless ones are no-ops, the rest fail with
// EOPNOTSUPP and say so once on stderr.

#include <errno.h>
#include <stdbool.h>

#include "verbs_private.h"

using namespace metaroce::verbs;

namespace {
constexpr char kNoKernel[] = "no kernel verbs device: metaroce runs in metaroced";
}  // namespace

// ---- fork ----
int ibv_fork_init(void) { return 0; }  // nothing is pinned: fork needs no preparation
ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }
MR_EXPORT int ibv_dontfork_range(void*, size_t) { return 0; }
MR_EXPORT int ibv_dofork_range(void*, size_t) { return 0; }

// ---- sysfs: the device has none ----
MR_EXPORT const char* ibv_get_sysfs_path(void) { return "/sys"; }
MR_EXPORT int ibv_read_sysfs_file(const char*, const char*, char*, size_t) {
  errno = ENOENT;
  return -1;
}
MR_EXPORT int ibv_read_ibdev_sysfs_file(char*, size_t, void*, const char*, ...) {
  errno = ENOENT;
  return -1;
}

// ---- multicast (UD only) ----
int ibv_attach_mcast(ibv_qp*, const ibv_gid*, uint16_t) {
  MR_UNSUPPORTED("ibv_attach_mcast", "multicast needs UD QPs; metaroce has RC");
  return EOPNOTSUPP;
}
int ibv_detach_mcast(ibv_qp*, const ibv_gid*, uint16_t) {
  MR_UNSUPPORTED("ibv_detach_mcast", "multicast needs UD QPs; metaroce has RC");
  return EOPNOTSUPP;
}

// ---- Ethernet L2 resolution (providers' create_ah) ----
int ibv_resolve_eth_l2_from_gid(ibv_context*, ibv_ah_attr*, uint8_t*, uint16_t*) {
  MR_UNSUPPORTED("ibv_resolve_eth_l2_from_gid", "the daemon resolves its peers");
  return EOPNOTSUPP;
}

// ---- ECE ----
int ibv_set_ece(ibv_qp*, ibv_ece*) {
  MR_UNSUPPORTED("ibv_set_ece", "no enhanced connection establishment");
  return EOPNOTSUPP;
}
int ibv_query_ece(ibv_qp*, ibv_ece*) {
  MR_UNSUPPORTED("ibv_query_ece", "no enhanced connection establishment");
  return EOPNOTSUPP;
}

// ---- sharing objects between processes ----
ibv_context* ibv_import_device(int) {
  MR_UNSUPPORTED("ibv_import_device", "objects cannot be shared between processes");
  return nullptr;
}
ibv_pd* ibv_import_pd(ibv_context*, uint32_t) {
  MR_UNSUPPORTED("ibv_import_pd", "objects cannot be shared between processes");
  return nullptr;
}
void ibv_unimport_pd(ibv_pd*) {}
ibv_mr* ibv_import_mr(ibv_pd*, uint32_t) {
  MR_UNSUPPORTED("ibv_import_mr", "objects cannot be shared between processes");
  return nullptr;
}
void ibv_unimport_mr(ibv_mr*) {}
ibv_dm* ibv_import_dm(ibv_context*, uint32_t) {
  MR_UNSUPPORTED("ibv_import_dm", "no device memory");
  return nullptr;
}
void ibv_unimport_dm(ibv_dm*) {}

ibv_mr* ibv_reg_dmabuf_mr(ibv_pd*, uint64_t, size_t, uint64_t, int, int) {
  MR_UNSUPPORTED("ibv_reg_dmabuf_mr", "no dma-buf memory: register host memory");
  return nullptr;
}

// ---- IBVERBS_PRIVATE_34: the provider interface ----
// Provider libraries' constructors register themselves; there is nothing to
// register with, and no provider is ever asked to open a device.
MR_EXPORT void verbs_register_driver_34(const void*) {}
extern "C" {
__attribute__((visibility("default"))) bool verbs_allow_disassociate_destroy = false;
}
MR_EXPORT void __verbs_log(void*, uint32_t, const char*, ...) {}
MR_EXPORT void verbs_set_ops(void*, const void*) {}
MR_EXPORT void verbs_uninit_context(void*) {}
MR_EXPORT void verbs_init_cq(void*, void*, void*, void*) {}
MR_EXPORT void* _verbs_init_and_alloc_context(void*, int, size_t, void*, uint32_t) {
  MR_UNSUPPORTED("_verbs_init_and_alloc_context", kNoKernel);
  return nullptr;
}
MR_EXPORT ibv_context* verbs_open_device(ibv_device*, void*) {
  MR_UNSUPPORTED("verbs_open_device", kNoKernel);
  return nullptr;
}
MR_EXPORT unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void*) { return num_attrs; }
MR_EXPORT int execute_ioctl(void*, void*) {
  MR_UNSUPPORTED("execute_ioctl", kNoKernel);
  return EOPNOTSUPP;
}

// ibv_cmd_*: the kernel command wrappers providers call. All return int.
#define MR_NO_KERNEL_CMD(name)        \
  MR_EXPORT int name(...) {           \
    MR_UNSUPPORTED(#name, kNoKernel); \
    return EOPNOTSUPP;                \
  }

MR_NO_KERNEL_CMD(ibv_cmd_advise_mr)
MR_NO_KERNEL_CMD(ibv_cmd_alloc_dm)
MR_NO_KERNEL_CMD(ibv_cmd_alloc_mw)
MR_NO_KERNEL_CMD(ibv_cmd_alloc_pd)
MR_NO_KERNEL_CMD(ibv_cmd_attach_mcast)
MR_NO_KERNEL_CMD(ibv_cmd_close_xrcd)
MR_NO_KERNEL_CMD(ibv_cmd_create_ah)
MR_NO_KERNEL_CMD(ibv_cmd_create_counters)
MR_NO_KERNEL_CMD(ibv_cmd_create_cq)
MR_NO_KERNEL_CMD(ibv_cmd_create_cq_ex)
MR_NO_KERNEL_CMD(ibv_cmd_create_flow)
MR_NO_KERNEL_CMD(ibv_cmd_create_flow_action_esp)
MR_NO_KERNEL_CMD(ibv_cmd_create_qp)
MR_NO_KERNEL_CMD(ibv_cmd_create_qp_ex)
MR_NO_KERNEL_CMD(ibv_cmd_create_qp_ex2)
MR_NO_KERNEL_CMD(ibv_cmd_create_rwq_ind_table)
MR_NO_KERNEL_CMD(ibv_cmd_create_srq)
MR_NO_KERNEL_CMD(ibv_cmd_create_srq_ex)
MR_NO_KERNEL_CMD(ibv_cmd_create_wq)
MR_NO_KERNEL_CMD(ibv_cmd_dealloc_mw)
MR_NO_KERNEL_CMD(ibv_cmd_dealloc_pd)
MR_NO_KERNEL_CMD(ibv_cmd_dereg_mr)
MR_NO_KERNEL_CMD(ibv_cmd_destroy_ah)
MR_NO_KERNEL_CMD(ibv_cmd_destroy_counters)
MR_NO_KERNEL_CMD(ibv_cmd_destroy_cq)
MR_NO_KERNEL_CMD(ibv_cmd_destroy_flow)
MR_NO_KERNEL_CMD(ibv_cmd_destroy_flow_action)
MR_NO_KERNEL_CMD(ibv_cmd_destroy_qp)
MR_NO_KERNEL_CMD(ibv_cmd_destroy_rwq_ind_table)
MR_NO_KERNEL_CMD(ibv_cmd_destroy_srq)
MR_NO_KERNEL_CMD(ibv_cmd_destroy_wq)
MR_NO_KERNEL_CMD(ibv_cmd_detach_mcast)
MR_NO_KERNEL_CMD(ibv_cmd_free_dm)
MR_NO_KERNEL_CMD(ibv_cmd_get_context)
MR_NO_KERNEL_CMD(ibv_cmd_modify_cq)
MR_NO_KERNEL_CMD(ibv_cmd_modify_flow_action_esp)
MR_NO_KERNEL_CMD(ibv_cmd_modify_qp)
MR_NO_KERNEL_CMD(ibv_cmd_modify_qp_ex)
MR_NO_KERNEL_CMD(ibv_cmd_modify_srq)
MR_NO_KERNEL_CMD(ibv_cmd_modify_wq)
MR_NO_KERNEL_CMD(ibv_cmd_open_qp)
MR_NO_KERNEL_CMD(ibv_cmd_open_xrcd)
MR_NO_KERNEL_CMD(ibv_cmd_poll_cq)
MR_NO_KERNEL_CMD(ibv_cmd_post_recv)
MR_NO_KERNEL_CMD(ibv_cmd_post_send)
MR_NO_KERNEL_CMD(ibv_cmd_post_srq_recv)
MR_NO_KERNEL_CMD(ibv_cmd_query_context)
MR_NO_KERNEL_CMD(ibv_cmd_query_device_any)
MR_NO_KERNEL_CMD(ibv_cmd_query_mr)
MR_NO_KERNEL_CMD(ibv_cmd_query_port)
MR_NO_KERNEL_CMD(ibv_cmd_query_qp)
MR_NO_KERNEL_CMD(ibv_cmd_query_srq)
MR_NO_KERNEL_CMD(ibv_cmd_read_counters)
MR_NO_KERNEL_CMD(ibv_cmd_reg_dm_mr)
MR_NO_KERNEL_CMD(ibv_cmd_reg_dmabuf_mr)
MR_NO_KERNEL_CMD(ibv_cmd_reg_mr)
MR_NO_KERNEL_CMD(ibv_cmd_req_notify_cq)
MR_NO_KERNEL_CMD(ibv_cmd_rereg_mr)
MR_NO_KERNEL_CMD(ibv_cmd_resize_cq)
