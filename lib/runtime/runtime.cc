/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Opening a runtime (ports, engines, steering) and running its shards' threads.

// DPDK 22.11 headers use ++/-- on volatile members (-Wvolatile in C++20).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wvolatile"
#include <rte_errno.h>
#include <rte_lcore.h>
#pragma GCC diagnostic pop
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "mr_log.h"
#include "mr_port_fault.h"
#include "runtime_private.h"

namespace metaroce::runtime {
namespace {

// What a shard's thread starts with.
struct ThreadStart {
  Runtime* rt;
  uint16_t index;
  const std::function<bool(Shard&)>* app;
  void (Runtime::*main)(uint16_t, const std::function<bool(Shard&)>&);
};

void* ThreadEntry(void* arg) {
  const ThreadStart* s = static_cast<const ThreadStart*>(arg);
  (s->rt->*(s->main))(s->index, *s->app);
  return nullptr;
}

}  // namespace

const char* SteeringName(Runtime::Steering s) {
  switch (s) {
    case Runtime::Steering::kSinglePort: return "single_port";
    case Runtime::Steering::kPortPerShard: return "port_per_shard";
    case Runtime::Steering::kFlowRules: return "flow_rules";
    case Runtime::Steering::kSoftware: return "software";
  }
  return "?";
}

absl::StatusOr<std::unique_ptr<Runtime>> Runtime::Open(const RuntimeConfig& cfg) {
  const uint16_t n = cfg.lcores;
  if (n < 1 || n > kMaxShards) {
    return absl::InvalidArgumentError(
        absl::StrCat("runtime: lcores='", n, "' is not allowed: 1..", kMaxShards));
  }
  if (!cfg.memory.empty() && cfg.memory.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat("runtime: memory lists ", cfg.memory.size(),
                                                   " accessors for lcores=", n,
                                                   ": give one per shard, or none"));
  }
  if (!cfg.cpus.empty()) {
    if (cfg.cpus.size() < n) {
      return absl::InvalidArgumentError(absl::StrCat("runtime: cpus lists ", cfg.cpus.size(),
                                                     " CPUs for lcores=", n,
                                                     ": give one per shard, or none"));
    }
    for (int c : cfg.cpus) {
      if (c < 0 || c >= CPU_SETSIZE) {
        return absl::InvalidArgumentError(
            absl::StrCat("runtime: cpu ", c, " is not allowed: 0..", CPU_SETSIZE - 1));
      }
    }
  }
  // Plane 0 is `port`, planes 1.. are cfg.planes: each opened the same way.
  std::vector<port::PlaneSpec> planes = {{cfg.port, cfg.faults}};
  planes.insert(planes.end(), cfg.planes.begin(), cfg.planes.end());
  std::vector<port::PortArgs> args;
  std::vector<std::optional<port::FaultSpec>> faults(planes.size());
  for (size_t k = 0; k < planes.size(); k++) {
    const std::string what = k == 0 ? "" : absl::StrCat("plane ", k, ": ");
    absl::StatusOr<port::PortArgs> a = port::PortArgs::Parse(planes[k].port);
    if (!a.ok()) return absl::Status(a.status().code(), what + std::string(a.status().message()));
    args.push_back(*a);
    if (planes[k].faults.empty()) continue;
    absl::StatusOr<port::FaultSpec> f = port::ParseFaultSpec(planes[k].faults);
    if (!f.ok()) return absl::Status(f.status().code(), what + std::string(f.status().message()));
    faults[k] = *f;
  }

  std::unique_ptr<Runtime> rt(new Runtime());
  rt->cfg_ = cfg;
  // A udp port has one queue: each shard opens its own, and the kernel steers by
  // destination port. Any other driver: one port, one queue per shard.
  const bool per_shard = n > 1 && PortPerShard(args[0].driver);
  const uint16_t num_ports = per_shard ? n : 1;
  for (size_t k = 0; k < planes.size(); k++) {
    for (uint16_t i = 0; i < num_ports; i++) {
      const std::string what = k == 0 ? "" : absl::StrCat("plane ", k, ": ");
      absl::StatusOr<std::string> spec =
          per_shard ? ShardPortSpec(args[k], i) : SharedPortSpec(args[k], n);
      if (!spec.ok()) return spec.status();
      absl::StatusOr<std::unique_ptr<port::Port>> p = port::OpenPort(*spec);
      if (!p.ok()) return absl::Status(p.status().code(), what + std::string(p.status().message()));
      std::unique_ptr<port::Port> port = std::move(*p);
      if (faults[k].has_value()) {
        port::FaultSpec f = *faults[k];
        f.seed += i;  // each shard's port its own random numbers
        port = port::WithFaults(std::move(port), f);
      }
      if (!per_shard && port->info().num_queues < n) {
        return absl::InvalidArgumentError(
            absl::StrCat("runtime: ", what, "port '", planes[k].port, "' has ",
                         port->info().num_queues, " queues; lcores=", n, " needs one per shard"));
      }
      rt->ports_.push_back(std::move(port));  // plane-major: ports_[k * num_ports + i]
    }
  }
  const port::PortInfo& info = rt->ports_[0]->info();
  rt->base_udp_port_ = info.udp_port;
  if (!per_shard && uint32_t{info.udp_port} + n - 1 > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("runtime: shard UDP ports ", info.udp_port, "..",
                                                   uint32_t{info.udp_port} + n - 1,
                                                   " pass 65535; give a lower udp_port"));
  }
  rt->InitClock();  // EAL, if a driver needed it, is up now
  rt->share_counts_ = std::make_unique<ShareCount[]>(n);

  for (uint16_t i = 0; i < n; i++) {
    std::unique_ptr<Shard> s(new Shard());
    s->index_ = i;
    s->rt_ = rt.get();
    std::vector<const port::PortInfo*> infos;
    for (size_t k = 0; k < planes.size(); k++) {
      s->ports_.push_back(rt->ports_[k * num_ports + (per_shard ? i : 0)].get());
      infos.push_back(&s->ports_.back()->info());
    }
    s->port_ = s->ports_[0];
    s->queue_ = per_shard ? 0 : i;
    s->udp_port_ = per_shard ? s->port_->info().udp_port : static_cast<uint16_t>(info.udp_port + i);
    absl::StatusOr<transport::EngineConfig> ec =
        ShardEngineConfig(cfg.engine, s->port_->info(), s->udp_port_, i);
    if (!ec.ok()) return ec.status();
    if (absl::Status st = port::AddPlanes(infos, &*ec); !st.ok()) {
      return absl::Status(st.code(), absl::StrCat("runtime: shard ", i, ": ", st.message()));
    }
    // Each shard shares out its part of the host's inbound capacity among
    // the senders it serves: an equal part to start, then max-min across
    // the shards' senders (Shard::ShareCapacity).
    if (cfg.engine.rx_capacity_mbps != 0) {
      ec->rx_capacity_mbps = ShardCapacityMbps(cfg.engine.rx_capacity_mbps, {}, {}, n);
      s->capacity_mbps_ = ec->rx_capacity_mbps;
    }
    transport::MemoryAccess* mem = cfg.memory.empty() ? &s->mem_ : cfg.memory[i];
    absl::StatusOr<std::unique_ptr<transport::Engine>> e = transport::Engine::Create(*ec, mem);
    if (!e.ok()) return e.status();
    s->engine_ = std::move(*e);
    s->st_->pacer = port::TxPacer(cfg.pace_bytes_per_sec);
    if (cfg.telemetry) {
      const std::string base =
          !cfg.name.empty()
              ? cfg.name
              : absl::StrCat(info.driver, ":", info.ip.ToString(), ":", info.udp_port);
      s->st_->publisher = telemetry::Publisher::Create(absl::StrCat(base, "/shard", i));
    }
    rt->shards_.push_back(std::move(s));
  }

  if (n == 1) {
    rt->steering_ = Steering::kSinglePort;
  } else if (per_shard) {
    rt->steering_ = Steering::kPortPerShard;
  } else {
    // A rule per shard on every plane's port (ports_ holds one per plane here).
    bool rules = true;
    for (size_t k = 0; k < rt->ports_.size() && rules; k++) {
      for (uint16_t i = 0; i < n && rules; i++) {
        absl::StatusOr<bool> r =
            rt->ports_[k]->SteerUdpDstPort(static_cast<uint16_t>(info.udp_port + i), i);
        if (!r.ok()) return r.status();
        rules = *r;
      }
    }
    rt->steering_ = rules ? Steering::kFlowRules : Steering::kSoftware;
    // With rules too: a packet that arrives on another queue (before the rules, or
    // one they miss) still reaches its shard.
    rt->steer_in_software_ = true;
    for (auto& s : rt->shards_) {
      absl::Status st = InitHandoff(s->index_, s->st_.get());
      if (!st.ok()) return st;
    }
  }
  return rt;
}

Runtime::~Runtime() {
  // Packets still in hand-off rings hold port buffers: give them back while the ports exist.
  for (auto& s : shards_) {
    if (s->st_->inbound == nullptr) continue;
    void* p = nullptr;
    while (s->st_->inbound->Dequeue(&p, 1) == 1) {
      auto* h = static_cast<Handoff*>(p);
      if (h->handle != nullptr) h->port->ReleaseRx(h->handle);
      h->handle = nullptr;
    }
  }
  shards_.clear();
  ports_.clear();
}

port::PortStats Runtime::port_stats() const {
  port::PortStats t;
  for (const auto& p : ports_) {
    const port::PortStats s = p->stats();
    t.rx_packets += s.rx_packets;
    t.rx_bytes += s.rx_bytes;
    t.rx_errors += s.rx_errors;
    t.tx_packets += s.tx_packets;
    t.tx_bytes += s.tx_bytes;
    t.tx_errors += s.tx_errors;
    t.tx_no_buffer += s.tx_no_buffer;
  }
  return t;
}

absl::Status Runtime::Run(std::function<bool(Shard&)> app) {
  if (running_.exchange(true)) {
    return absl::FailedPreconditionError("runtime: Run() is already running");
  }
  const uint16_t n = num_shards();
  apps_done_.store(0, std::memory_order_relaxed);
  std::vector<ThreadStart> starts(n);
  std::vector<pthread_t> threads;
  absl::Status status;
  for (uint16_t i = 0; i < n; i++) {
    starts[i] = ThreadStart{this, i, &app, &Runtime::ShardMain};
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (!cfg_.cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cfg_.cpus[i], &set);
      pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
    }
    pthread_t t;
    const int rc = pthread_create(&t, &attr, &ThreadEntry, &starts[i]);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
      status = absl::InternalError(
          cfg_.cpus.empty()
              ? absl::StrCat("runtime: starting shard ", i, "'s thread failed: ", strerror(rc))
              : absl::StrCat("runtime: starting shard ", i, "'s thread on CPU ", cfg_.cpus[i],
                             " failed: ", strerror(rc)));
      stop_.store(true, std::memory_order_relaxed);  // the ones started return at once
      break;
    }
    char name[16];
    snprintf(name, sizeof(name), "mr-shard-%u", static_cast<unsigned>(i));
    pthread_setname_np(t, name);
    threads.push_back(t);
  }
  for (pthread_t t : threads) pthread_join(t, nullptr);
  stop_.store(false, std::memory_order_relaxed);
  running_.store(false);
  return status;
}

void Runtime::ShardMain(uint16_t i, const std::function<bool(Shard&)>& app) {
  Shard& s = *shards_[i];
  // A registered thread has an lcore id of its own, so mempool caches work for it.
  const bool eal = rte_lcore_count() > 0;
  const bool registered = eal && rte_thread_register() == 0;
  if (eal && !registered) {
    MR_LOG(WARNING,
           "runtime: shard %u runs without an lcore id (rte_thread_register: %s); "
           "mbuf allocation bypasses the mempool cache",
           static_cast<unsigned>(i), rte_strerror(rte_errno));
  }
  const uint16_t n = num_shards();
  const uint32_t yield_after = cfg_.yield_after_idle_polls;
  bool app_done = false;
  uint32_t idle = 0;
  while (!stop_.load(std::memory_order_relaxed)) {
    size_t work = s.PollRx();
    if (!app_done && app && !app(s)) {
      app_done = true;
      apps_done_.fetch_add(1, std::memory_order_acq_rel);
    }
    s.ShareCapacity();
    work += s.PollTx();
    s.PublishIfDue();
    s.stats_.iterations.Add(1);
    if (work != 0) {
      idle = 0;
    } else {
      s.stats_.idle_polls.Add(1);
      if (yield_after != 0 && ++idle >= yield_after) {
        sched_yield();
        idle = 0;
      }
    }
    if (apps_done_.load(std::memory_order_acquire) == n) break;
  }
  if (registered) rte_thread_unregister();
}

}  // namespace metaroce::runtime
