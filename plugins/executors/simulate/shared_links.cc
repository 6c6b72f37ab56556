#include "shared_links.h"

#include <algorithm>

namespace simulate {

int32_t SharedLinks::start(double seconds, const std::vector<int32_t>& ports, double now) {
  int32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = static_cast<int32_t>(flows_.size());
    flows_.emplace_back();
    seen_.push_back(0);
  }
  Flow& flow = flows_[static_cast<size_t>(id)];
  flow.remaining = seconds;
  flow.rate = 1;
  flow.updated = now;
  flow.live = true;
  flow.ports.assign(ports.begin(), ports.end());  // reuses a finished flow's storage
  for (int32_t port : flow.ports) users_[static_cast<size_t>(port)].push_back(id);
  retime_sharers(flow.ports, now);  // itself included
  return id;
}

bool SharedLinks::current(int32_t flow, uint32_t version) const {
  const Flow& candidate = flows_[static_cast<size_t>(flow)];
  return candidate.live && candidate.version == version;
}

void SharedLinks::finish(int32_t id, double now) {
  Flow& flow = flows_[static_cast<size_t>(id)];
  flow.live = false;
  for (int32_t port : flow.ports) {
    std::vector<int32_t>& users = users_[static_cast<size_t>(port)];
    users.erase(std::find(users.begin(), users.end(), id));
  }
  free_.push_back(id);
  retime_sharers(flow.ports, now);  // re-timing never touches the finished flow
}

// Progress so far at the old rate, the rest at the rate of its most shared port.
void SharedLinks::retime(int32_t id, double now) {
  Flow& flow = flows_[static_cast<size_t>(id)];
  flow.remaining = std::max(0.0, flow.remaining - (now - flow.updated) * flow.rate);
  flow.updated = now;
  size_t busiest = 1;
  for (int32_t port : flow.ports) busiest = std::max(busiest, users_[static_cast<size_t>(port)].size());
  flow.rate = 1.0 / static_cast<double>(busiest);
  ++flow.version;
  queue_.push(now + flow.remaining / flow.rate, id, flow.version, /*flow=*/true);
}

// Every live flow on one of `ports`, once.
void SharedLinks::retime_sharers(const std::vector<int32_t>& ports, double now) {
  ++sweep_;
  affected_.clear();
  for (int32_t port : ports)
    for (int32_t user : users_[static_cast<size_t>(port)])
      if (seen_[static_cast<size_t>(user)] != sweep_) {
        seen_[static_cast<size_t>(user)] = sweep_;
        affected_.push_back(user);
      }
  for (int32_t user : affected_) retime(user, now);
}

}  // namespace simulate
