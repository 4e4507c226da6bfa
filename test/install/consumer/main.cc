/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <cstdio>
#include <string>
#include <vector>

#include <mr_config.h>
#include <mr_device.h>
#include <mr_wire.h>

int main() {
  using namespace metaroce::wire;
  Packet p;
  p.type = PacketType::kSend;
  p.dst_conn_id = 1;
  p.data.stream_id = 2;
  p.data.src_stream = 3;
  std::vector<uint8_t> buf(EncodedBytes(p));
  auto n = EncodeDatagram(p, buf);
  Packet q;
  if (!n.ok() || ParseDatagram(buf, ParseOptions{}, &q) != ParseError::kOk || !Equivalent(p, q)) {
    std::fprintf(stderr, "consumer: round trip through the installed library failed\n");
    return 1;
  }
  std::printf("consumer: encoded and parsed a %zu-byte SEND with installed metaroce\n", *n);
  // The drivers came along through pkg-config and registered themselves.
  metaroce::DeviceConfig cfg;
  cfg.port = "udp:ip=127.0.0.1,port=0";
  auto dev = metaroce::Device::Open(cfg);
  if (!dev.ok()) {
    std::fprintf(stderr, "consumer: %s\n", std::string(dev.status().message()).c_str());
    return 1;
  }
  std::printf("consumer: opened a device on %s port %u\n", (*dev)->port_info().driver.c_str(),
              (*dev)->port_info().udp_port);
  return 0;
}
