/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <time.h>

#include "absl/strings/str_cat.h"

#include "mr_device.h"
#include "mr_log.h"
#include "mr_port_fault.h"
#include "mr_telemetry.h"

namespace metaroce {

absl::StatusOr<std::unique_ptr<Device>> Device::Open(const DeviceConfig& cfg) {
  auto port = port::OpenPort(cfg.port);
  if (!port.ok()) return port.status();
  std::unique_ptr<port::Port> p = std::move(*port);
  if (!cfg.faults.empty()) {
    auto faulty = port::WithFaults(std::move(p), cfg.faults);
    if (!faulty.ok()) return faulty.status();
    p = std::move(*faulty);
  }
  std::unique_ptr<Device> d(new Device());
  const port::PortInfo& info = p->info();
  absl::StatusOr<transport::EngineConfig> ec =
      port::EngineConfigFor(cfg.engine, info, info.udp_port);
  if (!ec.ok()) return ec.status();
  auto engine = transport::Engine::Create(*ec, &d->mem_);
  if (!engine.ok()) return engine.status();
  d->port_ = std::move(p);
  d->engine_ = std::move(*engine);
  d->pacer_ = port::TxPacer(cfg.pace_bytes_per_sec);
  d->name_ = !cfg.name.empty()
                 ? cfg.name
                 : absl::StrCat(
                       info.driver, ":",
                       info.ip.v6 ? absl::StrCat("[", info.ip.ToString(), "]") : info.ip.ToString(),
                       ":", info.udp_port);
  if (cfg.telemetry) d->publisher_ = telemetry::Publisher::Create(d->name_);
  MR_LOG(INFO, "device %s: %s port open, %u-byte payloads, %u paths; telemetry engine %lld",
         d->name_.c_str(), info.driver.c_str(), ec->max_payload, ec->num_paths,
         static_cast<long long>(d->telemetry_index()));
  return d;
}

Device::~Device() = default;

int64_t Device::telemetry_index() const {
  return publisher_ != nullptr ? static_cast<int64_t>(publisher_->index()) : -1;
}

void Device::Publish(transport::TimeNs now) {
  const port::PortStats ps = port_->stats();
  std::vector<telemetry::Event> events;
  publisher_->Publish(now, *engine_, &ps, &events);
  for (const telemetry::Event& e : events) log::Write(e.level, "device %s", e.text.c_str());
}

transport::TimeNs Device::Now() const {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<transport::TimeNs>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

transport::PeerAddr Device::address() const {
  const port::PortInfo& info = port_->info();
  return transport::PeerAddr{info.ip, info.mac, info.udp_port};
}

size_t Device::Poll() {
  size_t work = 0;
  transport::TimeNs now = Now();
  const bool frames = port_->info().framing == transport::Framing::kEthernet;
  for (int b = port::RxBurstsFor(&tx_step_, now); b > 0; b--) {
    const uint16_t n = port_->RxBurst(0, rx_.data(), kBurst);
    now = Now();
    for (uint16_t i = 0; i < n; i++) {
      if (frames) {
        engine_->OnFrame(now, rx_[i].data);
      } else {
        engine_->OnDatagram(now, rx_[i].addr, rx_[i].data);
      }
    }
    work += n;
    if (n < kBurst) break;
  }
  if (publisher_ != nullptr && publisher_->Due(now)) Publish(now);
  work += port::TxStep(*port_, 0, *engine_, pacer_, now, tx_, &tx_step_, [](transport::TxSlot&) {});
  return work;
}

}  // namespace metaroce
