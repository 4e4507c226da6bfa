/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <sodium.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "secure_rng_private.h"

namespace metaroce::transport {
namespace {

void InitSodium() {
  // Idempotent and thread-safe; fails only when the OS has no entropy source.
  if (sodium_init() < 0) std::abort();
}

}  // namespace

SecureRng::SecureRng(const Key& key) : key_(key) { InitSodium(); }

SecureRng::~SecureRng() {
  sodium_memzero(key_.data(), key_.size());
  sodium_memzero(buf_.data(), buf_.size());
}

SecureRng::Key SecureRng::OsKey() {
  InitSodium();
  Key k;
  randombytes_buf(k.data(), k.size());
  return k;
}

SecureRng::Key SecureRng::DerivedKey(uint64_t seed, uint64_t incarnation) {
  InitSodium();
  uint8_t in[16];
  std::memcpy(in, &seed, 8);
  std::memcpy(in + 8, &incarnation, 8);
  Key k;
  crypto_generichash(k.data(), k.size(), in, sizeof(in), nullptr, 0);
  return k;
}

uint64_t SecureRng::OsNonZero64() {
  InitSodium();
  uint64_t v = 0;
  while (v == 0) randombytes_buf(&v, sizeof(v));
  return v;
}

void SecureRng::Refill() {
  static_assert(crypto_stream_chacha20_NONCEBYTES == sizeof(counter_));
  static_assert(crypto_stream_chacha20_KEYBYTES == kKeyBytes);
  uint8_t nonce[sizeof(counter_)];
  std::memcpy(nonce, &counter_, sizeof(nonce));
  counter_++;
  crypto_stream_chacha20(buf_.data(), buf_.size(), nonce, key_.data());
  pos_ = 0;
}

void SecureRng::Fill(uint8_t* out, size_t len) {
  while (len > 0) {
    if (pos_ == buf_.size()) Refill();
    const size_t n = std::min(len, buf_.size() - pos_);
    std::memcpy(out, buf_.data() + pos_, n);
    sodium_memzero(buf_.data() + pos_, n);  // a value handed out is not kept
    pos_ += n;
    out += n;
    len -= n;
  }
}

uint64_t SecureRng::Next() {
  uint64_t v;
  Fill(reinterpret_cast<uint8_t*>(&v), sizeof(v));
  return v;
}

uint64_t SecureRng::Below(uint64_t n) {
  // Values below 2^64 mod n would be drawn once more often than the rest.
  const uint64_t reject_below = (0 - n) % n;
  for (;;) {
    const uint64_t v = Next();
    if (v >= reject_below) return v % n;
  }
}

uint32_t SecureRng::NonZero32() {
  for (;;) {
    const auto v = static_cast<uint32_t>(Next());
    if (v != 0) return v;
  }
}

}  // namespace metaroce::transport
