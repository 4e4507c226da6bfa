/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include "mr_transport_types.h"

namespace metaroce::transport {

const char* WcStatusName(WcStatus s) {
  switch (s) {
    case WcStatus::kSuccess: return "success";
    case WcStatus::kLocLenErr: return "local length error";
    case WcStatus::kLocQpOpErr: return "local QP operation error";
    case WcStatus::kLocProtErr: return "local protection error";
    case WcStatus::kWrFlushErr: return "work request flushed error";
    case WcStatus::kBadRespErr: return "bad response error";
    case WcStatus::kRemInvReqErr: return "remote invalid request error";
    case WcStatus::kRemAccessErr: return "remote access error";
    case WcStatus::kRemOpErr: return "remote operation error";
    case WcStatus::kRetryExcErr: return "transport retry counter exceeded";
    case WcStatus::kRnrRetryExcErr: return "RNR retry counter exceeded";
    case WcStatus::kGeneralErr: return "general error";
  }
  return "unknown";
}

}  // namespace metaroce::transport
