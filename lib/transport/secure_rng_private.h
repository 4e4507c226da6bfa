/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/*
 * The engine's random numbers: everything an off-path host must not predict
 * (connection ids, nonces, rkey tags, QP numbers, source ports, the cookie
 * secret) comes from a ChaCha20 keystream (libsodium). Its key comes from the
 * OS (getrandom) unless the caller asked for a reproducible engine with a
 * non-zero EngineConfig::seed; then the key is derived from the seed and the
 * engine's incarnation, so even a reproducible engine restarted with the same
 * seed draws new values once its incarnation differs.
 */

#ifndef METAROCE_TRANSPORT_SECURE_RNG_PRIVATE_H
#define METAROCE_TRANSPORT_SECURE_RNG_PRIVATE_H

#include <array>
#include <cstddef>
#include <cstdint>

namespace metaroce::transport {

class SecureRng {
 public:
  static constexpr size_t kKeyBytes = 32;
  using Key = std::array<uint8_t, kKeyBytes>;

  /** A keystream under @p key. */
  explicit SecureRng(const Key& key);
  ~SecureRng();
  SecureRng(const SecureRng&) = delete;
  SecureRng& operator=(const SecureRng&) = delete;

  /** A key from the OS's entropy source. */
  static Key OsKey();
  /** A key derived from a seed and an incarnation (reproducible engines). */
  static Key DerivedKey(uint64_t seed, uint64_t incarnation);
  /** A non-zero 64-bit value from the OS's entropy source. */
  static uint64_t OsNonZero64();

  uint64_t Next();
  /** Uniform in [0, n), n > 0 (rejection sampling: no modulo bias). */
  uint64_t Below(uint64_t n);
  /** A non-zero 32-bit value. */
  uint32_t NonZero32();
  /** Fills @p out with keystream bytes. */
  void Fill(uint8_t* out, size_t len);

 private:
  void Refill();
  static constexpr size_t kBlockBytes = 256;
  Key key_;
  uint64_t counter_ = 0;  ///< nonce of the next keystream block
  std::array<uint8_t, kBlockBytes> buf_{};
  size_t pos_ = kBlockBytes;
};

}  // namespace metaroce::transport

#endif  // METAROCE_TRANSPORT_SECURE_RNG_PRIVATE_H
