/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Control request bodies: fixed structs in, fixed structs out, errno values
// for the shim (objects.cc, srq.cc).

#ifndef METAROCE_APP_METAROCED_REQUEST_H
#define METAROCE_APP_METAROCED_REQUEST_H

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/status/status.h"

namespace metaroce::daemon {

/** Copies the body into @p out if it is exactly one T. */
template <typename T>
bool Parse(const uint8_t* body, size_t len, T* out) {
  if (len != sizeof(T)) return false;
  std::memcpy(out, body, sizeof(T));
  return true;
}

template <typename T>
void Reply(std::vector<uint8_t>* r, const T& v) {
  r->resize(sizeof(T));
  std::memcpy(r->data(), &v, sizeof(T));
}

/** The errno an engine error becomes for the application. */
inline int ErrnoOf(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kOk: return 0;
    case absl::StatusCode::kNotFound: return EINVAL;
    case absl::StatusCode::kInvalidArgument: return EINVAL;
    case absl::StatusCode::kResourceExhausted: return ENOMEM;
    case absl::StatusCode::kFailedPrecondition: return EBUSY;
    default: return EIO;
  }
}

}  // namespace metaroce::daemon

#endif  // METAROCE_APP_METAROCED_REQUEST_H
