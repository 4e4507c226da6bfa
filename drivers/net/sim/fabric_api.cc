/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The public Fabric: a thin front over FabricImpl.

#include <algorithm>

#include "fabric_private.h"

namespace metaroce::sim {

Fabric::Fabric(uint64_t seed) : impl_(std::make_unique<FabricImpl>(seed)) {}
Fabric::~Fabric() = default;

uint64_t Fabric::seed() const { return impl_->seed_; }

absl::StatusOr<Host*> Fabric::AddHost(const HostConfig& config) { return impl_->AddHost(config); }

absl::StatusOr<SwitchId> Fabric::AddSwitch(const SwitchConfig& config) {
  return impl_->AddSwitch(config);
}

absl::StatusOr<LinkId> Fabric::Connect(NodeRef a, NodeRef b, const LinkConfig& config) {
  return impl_->Connect(a, b, config);
}

absl::Status Fabric::SetPortQueue(PortId port, const PortQueueConfig& config) {
  return impl_->SetPortQueue(port, config);
}

absl::Status Fabric::SetLinkFaults(LinkId link, const FaultConfig& faults, LinkDirection dir) {
  return impl_->SetLinkFaults(link, faults, dir);
}

absl::Status Fabric::SetAllLinkFaults(const FaultConfig& faults, LinkScope scope) {
  if (auto s = Validate(faults); !s.ok()) return s;
  for (LinkId l = 0; l < impl_->links_.size(); l++) {
    const LinkInfo& info = impl_->links_[l].info;
    const bool host_link =
        info.node_a.kind == NodeRef::Kind::kHost || info.node_b.kind == NodeRef::Kind::kHost;
    if (scope == LinkScope::kSwitchLinks && host_link) continue;
    if (scope == LinkScope::kHostLinks && !host_link) continue;
    if (auto s = impl_->SetLinkFaults(l, faults, LinkDirection::kBoth); !s.ok()) return s;
  }
  return absl::OkStatus();
}

SimTime Fabric::Now() const { return impl_->now_; }

void Fabric::RunUntil(SimTime t) {
  impl_->RunLoop(t);
  impl_->now_ = std::max(impl_->now_, t);
}

bool Fabric::RunUntilIdle(SimTime limit) {
  impl_->RunLoop(limit);
  return impl_->events_.empty();
}

void Fabric::ScheduleCallback(SimTime at, std::function<void()> fn) {
  impl_->ScheduleCallback(at, std::move(fn));
}

size_t Fabric::num_hosts() const { return impl_->hosts_.size(); }
size_t Fabric::num_switches() const { return impl_->switches_.size(); }
size_t Fabric::num_links() const { return impl_->links_.size(); }
size_t Fabric::num_ports() const { return impl_->ports_.size(); }
Host* Fabric::host(HostId id) { return impl_->hosts_[id].get(); }
Host* Fabric::FindHost(const wire::IpAddr& addr) { return impl_->FindHost(addr); }
const std::string& Fabric::switch_name(SwitchId id) const { return impl_->switches_[id].name; }

const std::vector<PortId>& Fabric::switch_ports(SwitchId id) const {
  return impl_->switches_[id].ports;
}

uint64_t Fabric::switch_no_route_drops(SwitchId id) const {
  return impl_->switches_[id].no_route_drops;
}

LinkInfo Fabric::link(LinkId id) const { return impl_->links_[id].info; }
NodeRef Fabric::port_owner(PortId port) const { return impl_->ports_[port].owner; }
const PortStats& Fabric::port_stats(PortId port) const { return impl_->ports_[port].stats; }

uint64_t Fabric::total_drops(DropCause cause) const {
  uint64_t n = 0;
  if (cause == DropCause::kNoRoute) {
    for (const SwitchState& s : impl_->switches_) n += s.no_route_drops;
    return n;
  }
  for (const PortState& p : impl_->ports_) n += p.stats.dropped(cause);
  return n;
}

uint64_t Fabric::events_processed() const { return impl_->events_processed_; }
size_t Fabric::pending_events() const { return impl_->events_.size(); }
size_t Fabric::frames_in_flight() const { return impl_->frames_.live(); }
uint64_t Fabric::trace_hash() const { return impl_->trace_.value(); }
uint64_t Fabric::trace_records() const { return impl_->trace_.records(); }

void Fabric::SetTraceObserver(std::function<void(const TraceRecord&)> observer) {
  impl_->observer_ = std::move(observer);
}

}  // namespace metaroce::sim
