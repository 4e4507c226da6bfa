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

namespace {

absl::StatusOr<std::unique_ptr<port::Port>> OpenWithFaults(const std::string& spec,
                                                           const std::string& faults) {
  auto port = port::OpenPort(spec);
  if (!port.ok() || faults.empty()) return port;
  return port::WithFaults(std::move(*port), faults);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Device>> Device::Open(const DeviceConfig& cfg) {
  std::unique_ptr<Device> d(new Device());
  std::vector<const port::PortInfo*> infos;
  for (size_t k = 0; k <= cfg.planes.size(); k++) {
    auto p = k == 0 ? OpenWithFaults(cfg.port, cfg.faults)
                    : OpenWithFaults(cfg.planes[k - 1].port, cfg.planes[k - 1].faults);
    if (!p.ok()) {
      if (k == 0) return p.status();
      return absl::Status(p.status().code(),
                          absl::StrCat("plane ", k, " port: ", p.status().message()));
    }
    d->ports_.push_back(std::move(*p));
    d->port_ptrs_.push_back(d->ports_.back().get());
    infos.push_back(&d->ports_.back()->info());
  }
  const port::PortInfo& info = *infos[0];
  absl::StatusOr<transport::EngineConfig> ec =
      port::EngineConfigFor(cfg.engine, info, info.udp_port);
  if (!ec.ok()) return ec.status();
  if (auto st = port::AddPlanes(infos, &*ec); !st.ok()) return st;
  auto engine = transport::Engine::Create(*ec, &d->mem_);
  if (!engine.ok()) return engine.status();
  d->engine_ = std::move(*engine);
  d->pacer_ = port::TxPacer(cfg.pace_bytes_per_sec);
  d->name_ = !cfg.name.empty()
                 ? cfg.name
                 : absl::StrCat(
                       info.driver, ":",
                       info.ip.v6 ? absl::StrCat("[", info.ip.ToString(), "]") : info.ip.ToString(),
                       ":", info.udp_port);
  if (cfg.telemetry) d->publisher_ = telemetry::Publisher::Create(d->name_);
  MR_LOG(INFO,
         "device %s: %s port open, %zu plane(s), %u-byte payloads, %u paths; telemetry engine %lld",
         d->name_.c_str(), info.driver.c_str(), d->ports_.size(), ec->max_payload, ec->num_paths,
         static_cast<long long>(d->telemetry_index()));
  return d;
}

Device::~Device() = default;

int64_t Device::telemetry_index() const {
  return publisher_ != nullptr ? static_cast<int64_t>(publisher_->index()) : -1;
}

void Device::Publish(transport::TimeNs now) {
  const port::PortStats ps = ports_[0]->stats();
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
  const port::PortInfo& info = ports_[0]->info();
  return transport::PeerAddr{info.ip, info.mac, info.udp_port};
}

size_t Device::Poll(Replies replies) {
  transport::TimeNs now = Now();
  const int bursts = port::RxBurstsFor(&tx_step_, now);
  const bool late = bursts != 1;
  const auto tx_step = [this](transport::TimeNs at) {
    return port::TxStep(port_ptrs_, 0, *engine_, pacer_, at, tx_, &tx_step_,
                        [](transport::TxSlot&) {});
  };
  // A busy loop transmits first: what the application posted since the last
  // poll leaves at once, not after a look at the receive ring. A late poll
  // receives first, so that the ACKs that queued meanwhile are taken before
  // the engine's timers run (port::kLatePollNs).
  const size_t sent = late ? 0 : tx_step(now);
  size_t work = sent;
  const bool frames = ports_[0]->info().framing == transport::Framing::kEthernet;
  for (const auto& port : ports_) {  // every plane's packets go to the one engine
    for (int b = bursts; b > 0; b--) {
      const uint16_t n = port->RxBurst(0, rx_.data(), kBurst);
      if (n == 0) break;
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
  }
  // What the frames call for (ACKs, READ responses) leaves in this poll too,
  // unless the caller polls again at once: a caller that polls seldom must not
  // hold it until the next. A late poll transmits in any case (it sent
  // nothing before receiving).
  if (late || (work != sent && replies == Replies::kNow)) work += tx_step(now);
  if (publisher_ != nullptr && publisher_->Due(now)) Publish(now);
  return work;
}

}  // namespace metaroce
