/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The neighbour table: what to answer, what to learn, when to ask (doc/dpdk-driver.md,
// "Neighbour resolution"). Pure: times come from the caller, frames go back to it.

#include <algorithm>
#include <limits>

#include "neigh_private.h"

namespace metaroce::dpdk {

NeighTable::NeighTable(const wire::IpAddr& ip, const wire::MacAddr& mac,
                       const std::vector<StaticNeigh>& statics)
    : ip_(ip), mac_(mac) {
  for (const StaticNeigh& s : statics) {
    Entry& e = entries_[s.ip];
    e.mac = s.mac;
    e.resolved = true;
    e.is_static = true;
  }
}

NeighTable::Entry* NeighTable::Insert(const wire::IpAddr& ip) {
  if (entries_.size() >= kMaxNeighEntries) {
    // Room from an unresolved entry first, else from the one confirmed longest ago.
    auto victim = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      const Entry& e = it->second;
      if (e.is_static) continue;
      if (victim == entries_.end()) {
        victim = it;
        continue;
      }
      const Entry& v = victim->second;
      if ((!e.resolved && v.resolved) ||
          (e.resolved == v.resolved && e.confirmed_ns < v.confirmed_ns)) {
        victim = it;
      }
    }
    if (victim == entries_.end()) return nullptr;
    entries_.erase(victim);
    generation_++;
  }
  return &entries_[ip];
}

bool NeighTable::Learn(const wire::IpAddr& ip, const wire::MacAddr& mac, int64_t now_ns,
                       bool create) {
  if (ip.IsUnspecified()) return false;
  auto it = entries_.find(ip);
  Entry* e = nullptr;
  if (it != entries_.end()) {
    e = &it->second;
  } else if (create) {
    e = Insert(ip);
  }
  if (e == nullptr || e->is_static) return false;
  if (!e->resolved || e->mac != mac) generation_++;
  e->mac = mac;
  e->resolved = true;
  e->confirmed_ns = now_ns;
  e->next_request_ns = std::numeric_limits<int64_t>::min();
  return true;
}

size_t NeighTable::Request(const wire::IpAddr& target, const wire::MacAddr* to,
                           std::span<uint8_t> out) {
  const size_t n = target.v6 ? BuildNeighSolicit(mac_, ip_, target, to, out)
                             : BuildArpRequest(mac_, ip_, target, to, out);
  if (n != 0) stats_.requests_sent++;
  return n;
}

size_t NeighTable::OnFrame(std::span<const uint8_t> frame, int64_t now_ns,
                           std::span<uint8_t> reply) {
  NeighMsg m;
  const NeighParse p = ParseNeighFrame(frame, &m);
  if (p != NeighParse::kOk) {
    if (p == NeighParse::kMalformed) stats_.malformed++;
    return 0;
  }
  // Our own requests seen again (a loopback port, a packet socket seeing outgoing frames),
  // or another host claiming our address: nothing to learn, nothing to say.
  if (m.sender_ip == ip_ || m.sender_mac == mac_) {
    stats_.ignored++;
    return 0;
  }
  const bool for_us = m.target_ip == ip_;
  size_t n = 0;
  switch (m.op) {
    case NeighOp::kArpRequest:
    case NeighOp::kArpReply: {
      // RFC 826: update a sender we know; add it when it talks to us.
      const bool learnt = Learn(m.sender_ip, m.sender_mac, now_ns, for_us);
      if (m.op == NeighOp::kArpRequest && for_us) {
        n = BuildArpReply(mac_, ip_, m.sender_mac, m.sender_ip, reply);
        stats_.requests_answered++;
        if (learnt) stats_.requests_learnt++;
      } else if (m.op == NeighOp::kArpReply && learnt) {
        stats_.replies_learnt++;
      } else if (!for_us && !learnt) {
        stats_.ignored++;
      }
      break;
    }
    case NeighOp::kSolicit: {
      if (!for_us) {
        // Only a solicitation for us says who the sender is for sure (RFC 4861 7.2.3).
        stats_.ignored++;
        break;
      }
      if (m.dad) {  // someone wants our address: defend it to all nodes (RFC 4861 7.2.4)
        const wire::IpAddr all_nodes =
            wire::IpAddr::V6({0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01});
        const wire::MacAddr all_nodes_mac{{0x33, 0x33, 0, 0, 0, 0x01}};
        n = BuildNeighAdvert(mac_, ip_, all_nodes_mac, all_nodes, false, reply);
      } else {
        if (Learn(m.sender_ip, m.sender_mac, now_ns, true)) stats_.requests_learnt++;
        n = BuildNeighAdvert(mac_, ip_, m.sender_mac, m.sender_ip, true, reply);
      }
      stats_.requests_answered++;
      break;
    }
    case NeighOp::kAdvert:
      // Only for addresses we asked about or know (RFC 4861 7.2.5).
      if (Learn(m.sender_ip, m.sender_mac, now_ns, false)) {
        stats_.replies_learnt++;
      } else {
        stats_.ignored++;
      }
      break;
  }
  return n;
}

NeighTable::Resolution NeighTable::Resolve(const wire::IpAddr& dst, int64_t now_ns,
                                           std::span<uint8_t> request) {
  constexpr int64_t kForever = std::numeric_limits<int64_t>::max();
  Resolution r;
  if (dst == ip_) {  // to ourselves: a loopback port brings it back
    r.ok = true;
    r.mac = mac_;
    r.valid_until_ns = kForever;
    return r;
  }
  auto it = entries_.find(dst);
  Entry* e = it != entries_.end() ? &it->second : nullptr;
  if (e != nullptr && e->is_static) {
    r.ok = true;
    r.mac = e->mac;
    r.valid_until_ns = kForever;
    return r;
  }
  if (e != nullptr && e->resolved) {
    const int64_t age_ns = now_ns - e->confirmed_ns;
    if (age_ns < kNeighRefreshAfterNs) {
      r.ok = true;
      r.mac = e->mac;
      r.valid_until_ns = e->confirmed_ns + kNeighRefreshAfterNs;
      return r;
    }
    if (age_ns < kNeighExpireAfterNs) {  // still used; ask the neighbour directly
      if (now_ns >= e->next_request_ns) {
        r.request_len = Request(dst, &e->mac, request);
        e->next_request_ns = now_ns + kNeighRefreshIntervalNs;
      }
      r.ok = true;
      r.mac = e->mac;
      r.valid_until_ns = std::min(e->next_request_ns, e->confirmed_ns + kNeighExpireAfterNs);
      return r;
    }
    e->resolved = false;  // expired: ask everyone again
    e->next_request_ns = std::numeric_limits<int64_t>::min();
    generation_++;
  }
  stats_.unresolved_drops++;
  if (dst.v6 != ip_.v6) return r;  // no source address of that family to ask from
  if (e == nullptr) {
    e = Insert(dst);
    if (e == nullptr) return r;
  }
  if (now_ns >= e->next_request_ns) {
    r.request_len = Request(dst, nullptr, request);
    e->next_request_ns = now_ns + kNeighRequestIntervalNs;
  }
  return r;
}

std::optional<wire::MacAddr> NeighTable::Lookup(const wire::IpAddr& ip) const {
  auto it = entries_.find(ip);
  if (it == entries_.end() || !it->second.resolved) return std::nullopt;
  return it->second.mac;
}

NeighStats NeighTable::stats() const {
  NeighStats s = stats_;
  s.entries = entries_.size();
  return s;
}

}  // namespace metaroce::dpdk
