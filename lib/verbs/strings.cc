/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The strings verbs programs print (exactly rdma-core's, so output and
// scripts parsing it look the same) and the static-rate conversions.

#include "verbs_private.h"

namespace {

template <size_t N>
const char* Lookup(const char* const (&table)[N], int v) {
  if (v < 0 || static_cast<size_t>(v) >= N || table[v] == nullptr) return "unknown";
  return table[v];
}

struct Rate {
  ibv_rate rate;
  int mult;  // of 2.5 Gb/s; -1: not one of the original IB rates
  int mbps;
};
constexpr Rate kRates[] = {
    {IBV_RATE_2_5_GBPS, 1, 2500},      {IBV_RATE_5_GBPS, 2, 5000},
    {IBV_RATE_10_GBPS, 4, 10000},      {IBV_RATE_20_GBPS, 8, 20000},
    {IBV_RATE_30_GBPS, 12, 30000},     {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},     {IBV_RATE_80_GBPS, 32, 80000},
    {IBV_RATE_120_GBPS, 48, 120000},   {IBV_RATE_14_GBPS, -1, 14062},
    {IBV_RATE_56_GBPS, -1, 56250},     {IBV_RATE_112_GBPS, -1, 112500},
    {IBV_RATE_168_GBPS, -1, 168750},   {IBV_RATE_25_GBPS, -1, 25781},
    {IBV_RATE_100_GBPS, -1, 103125},   {IBV_RATE_200_GBPS, -1, 206250},
    {IBV_RATE_300_GBPS, -1, 309375},   {IBV_RATE_28_GBPS, -1, 28125},
    {IBV_RATE_50_GBPS, -1, 53125},     {IBV_RATE_400_GBPS, -1, 425000},
    {IBV_RATE_600_GBPS, -1, 637500},   {IBV_RATE_800_GBPS, -1, 850000},
    {IBV_RATE_1200_GBPS, -1, 1275000},
};

}  // namespace

const char* ibv_node_type_str(ibv_node_type node_type) {
  static const char* const kStr[] = {
      nullptr,
      "InfiniBand channel adapter",  // IBV_NODE_CA
      "InfiniBand switch",
      "InfiniBand router",
      "iWARP NIC",
      "usNIC",
      "usNIC UDP",
      "unspecified",
  };
  return Lookup(kStr, node_type);
}

const char* ibv_port_state_str(ibv_port_state port_state) {
  static const char* const kStr[] = {
      "no state change (NOP)", "down", "init", "armed", "active", "active defer",
  };
  return Lookup(kStr, port_state);
}

const char* ibv_event_type_str(ibv_event_type event) {
  static const char* const kStr[] = {
      "CQ error",                                 // IBV_EVENT_CQ_ERR
      "local work queue catastrophic error",      // IBV_EVENT_QP_FATAL
      "invalid request local work queue error",   // IBV_EVENT_QP_REQ_ERR
      "local access violation work queue error",  // IBV_EVENT_QP_ACCESS_ERR
      "communication established",                // IBV_EVENT_COMM_EST
      "send queue drained",                       // IBV_EVENT_SQ_DRAINED
      "path migrated",                            // IBV_EVENT_PATH_MIG
      "path migration request error",             // IBV_EVENT_PATH_MIG_ERR
      "local catastrophic error",                 // IBV_EVENT_DEVICE_FATAL
      "port active",                              // IBV_EVENT_PORT_ACTIVE
      "port error",                               // IBV_EVENT_PORT_ERR
      "LID change",                               // IBV_EVENT_LID_CHANGE
      "P_Key change",                             // IBV_EVENT_PKEY_CHANGE
      "SM change",                                // IBV_EVENT_SM_CHANGE
      "SRQ catastrophic error",                   // IBV_EVENT_SRQ_ERR
      "SRQ limit reached",                        // IBV_EVENT_SRQ_LIMIT_REACHED
      "last WQE reached",                         // IBV_EVENT_QP_LAST_WQE_REACHED
      "client reregistration",                    // IBV_EVENT_CLIENT_REREGISTER
      "GID table change",                         // IBV_EVENT_GID_CHANGE
      "WQ fatal",                                 // IBV_EVENT_WQ_FATAL
  };
  static_assert(IBV_EVENT_WQ_FATAL == 19);
  return Lookup(kStr, event);
}

const char* ibv_wc_status_str(ibv_wc_status status) {
  static const char* const kStr[] = {
      "success",                            // IBV_WC_SUCCESS
      "local length error",                 // IBV_WC_LOC_LEN_ERR
      "local QP operation error",           // IBV_WC_LOC_QP_OP_ERR
      "local EE context operation error",   // IBV_WC_LOC_EEC_OP_ERR
      "local protection error",             // IBV_WC_LOC_PROT_ERR
      "Work Request Flushed Error",         // IBV_WC_WR_FLUSH_ERR
      "memory management operation error",  // IBV_WC_MW_BIND_ERR
      "bad response error",                 // IBV_WC_BAD_RESP_ERR
      "local access error",                 // IBV_WC_LOC_ACCESS_ERR
      "remote invalid request error",       // IBV_WC_REM_INV_REQ_ERR
      "remote access error",                // IBV_WC_REM_ACCESS_ERR
      "remote operation error",             // IBV_WC_REM_OP_ERR
      "transport retry counter exceeded",   // IBV_WC_RETRY_EXC_ERR
      "RNR retry counter exceeded",         // IBV_WC_RNR_RETRY_EXC_ERR
      "local RDD violation error",          // IBV_WC_LOC_RDD_VIOL_ERR
      "remote invalid RD request",          // IBV_WC_REM_INV_RD_REQ_ERR
      "aborted error",                      // IBV_WC_REM_ABORT_ERR
      "invalid EE context number",          // IBV_WC_INV_EECN_ERR
      "invalid EE context state",           // IBV_WC_INV_EEC_STATE_ERR
      "fatal error",                        // IBV_WC_FATAL_ERR
      "response timeout error",             // IBV_WC_RESP_TIMEOUT_ERR
      "general error",                      // IBV_WC_GENERAL_ERR
      "TM error",                           // IBV_WC_TM_ERR
      "TM software rendezvous",             // IBV_WC_TM_RNDV_INCOMPLETE
  };
  static_assert(IBV_WC_TM_RNDV_INCOMPLETE == 23);
  return Lookup(kStr, status);
}

int ibv_rate_to_mult(ibv_rate rate) {
  for (const Rate& r : kRates) {
    if (r.rate == rate) return r.mult;
  }
  return -1;
}

ibv_rate mult_to_ibv_rate(int mult) {
  for (const Rate& r : kRates) {
    if (r.mult == mult) return r.rate;
  }
  return IBV_RATE_MAX;
}

int ibv_rate_to_mbps(ibv_rate rate) {
  for (const Rate& r : kRates) {
    if (r.rate == rate) return r.mbps;
  }
  return -1;
}

ibv_rate mbps_to_ibv_rate(int mbps) {
  for (const Rate& r : kRates) {
    if (r.mbps == mbps) return r.rate;
  }
  return IBV_RATE_MAX;
}
