/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Address handles: local objects keeping their attributes. RC connections
// take their address from ibv_modify_qp (INIT->RTR), so the daemon never
// needs an AH; perftest creates them anyway.

#include <endian.h>
#include <errno.h>
#include <string.h>

#include "verbs_private.h"

using namespace metaroce::verbs;

ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  if (attr == nullptr || (attr->port_num != 0 && attr->port_num != 1)) {
    errno = EINVAL;
    return nullptr;
  }
  auto* ah = new Ah();
  ah->ah.context = pd->context;
  ah->ah.pd = pd;
  ah->ah.handle = 0;
  ah->attr = *attr;
  return &ah->ah;
}

int ibv_destroy_ah(ibv_ah* ah) {
  delete reinterpret_cast<Ah*>(ah);
  return 0;
}

int ibv_init_ah_from_wc(ibv_context*, uint8_t port_num, ibv_wc* wc, ibv_grh* grh,
                        ibv_ah_attr* ah_attr) {
  memset(ah_attr, 0, sizeof(*ah_attr));
  ah_attr->dlid = wc->slid;
  ah_attr->sl = wc->sl;
  ah_attr->src_path_bits = wc->dlid_path_bits;
  ah_attr->port_num = port_num;
  if ((wc->wc_flags & IBV_WC_GRH) != 0) {
    if (grh == nullptr) {
      errno = EINVAL;
      return -1;
    }
    const uint32_t flow = be32toh(grh->version_tclass_flow);
    ah_attr->is_global = 1;
    ah_attr->grh.dgid = grh->sgid;
    ah_attr->grh.flow_label = flow & 0xfffff;
    ah_attr->grh.traffic_class = static_cast<uint8_t>((flow >> 20) & 0xff);
    ah_attr->grh.hop_limit = 0xff;
    ah_attr->grh.sgid_index = 0;
  }
  return 0;
}

ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port_num) {
  ibv_ah_attr attr;
  if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr) != 0) return nullptr;
  return ibv_create_ah(pd, &attr);
}
