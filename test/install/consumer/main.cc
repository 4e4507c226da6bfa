/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <cstdio>
#include <vector>

#include <mr_config.h>
#include <mr_wire.h>

int main() {
  using namespace metaroce::wire;
  Packet p;
  p.type = PacketType::kSend;
  p.dst_conn_id = 1;
  p.data.stream_id = 2;
  std::vector<uint8_t> buf(EncodedBytes(p));
  auto n = EncodeDatagram(p, buf);
  Packet q;
  if (!n.ok() || ParseDatagram(buf, ParseOptions{}, &q) != ParseError::kOk || !Equivalent(p, q)) {
    std::fprintf(stderr, "consumer: round trip through the installed library failed\n");
    return 1;
  }
  std::printf("consumer: encoded and parsed a %zu-byte SEND with installed metaroce\n", *n);
  return 0;
}
