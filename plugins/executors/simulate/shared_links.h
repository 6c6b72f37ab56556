// shared_links.h: transfers that share link ports, and the simulator's event queue.
//
// A transfer occupies a set of ports (a rank's egress or ingress on one link tier) and needs
// `seconds` of work at full rate. Transfers that share a port split it: each runs at the rate of
// its most shared port, 1 / (transfers on it), and is re-timed whenever a transfer starts or ends
// on one of its ports (processor sharing). Work is conserved: two 1 s transfers on one port both
// end at 2 s.
//
//   EventQueue queue;
//   SharedLinks links(ports, queue);
//   int32_t flow = links.start(1.0, {port_a, port_b}, now);  // queues its end
//   ... queue.pop() -> Event{flow = true, target = flow, tag = version}
//   if (links.current(event.target, event.tag)) links.finish(event.target, event.time);
#pragma once

#include <cstddef>
#include <cstdint>
#include <queue>
#include <vector>

namespace simulate {

struct Event {
  double time;
  uint64_t order;  // ties resolve in creation order, so a run is deterministic
  int32_t target;  // a rank (compute) or a flow (transfer)
  uint32_t tag;    // the rank's stream, or the flow's version when it was timed
  bool flow;
};

class EventQueue {
 public:
  void push(double time, int32_t target, uint32_t tag, bool flow) { queue_.push({time, order_++, target, tag, flow}); }
  bool empty() const { return queue_.empty(); }
  Event pop() {
    const Event event = queue_.top();
    queue_.pop();
    return event;
  }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time != b.time ? a.time > b.time : a.order > b.order;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> queue_;
  uint64_t order_ = 0;
};

class SharedLinks {
 public:
  SharedLinks(size_t ports, EventQueue& queue) : users_(ports), queue_(queue) {}

  // Starts a transfer and queues its end; returns its id (ids are reused once finished).
  int32_t start(double seconds, const std::vector<int32_t>& ports, double now);
  // False for an end queued before the flow was re-timed (a later event stands for it).
  bool current(int32_t flow, uint32_t version) const;
  // Ends a flow at `now`: its ports free up and the flows that shared them speed up.
  void finish(int32_t flow, double now);

 private:
  struct Flow {
    double remaining = 0;  // seconds of work left at full rate
    double rate = 1;       // the fraction of full rate it gets now
    double updated = 0;    // when remaining was last brought up to date
    uint32_t version = 0;
    bool live = false;
    std::vector<int32_t> ports;
  };

  void retime(int32_t flow, double now);
  void retime_sharers(const std::vector<int32_t>& ports, double now);

  std::vector<Flow> flows_;
  std::vector<int32_t> free_;
  std::vector<std::vector<int32_t>> users_;  // per port: the live flows on it
  std::vector<uint64_t> seen_;                // per flow: the last sweep that re-timed it
  uint64_t sweep_ = 0;
  std::vector<int32_t> affected_;
  EventQueue& queue_;
};

}  // namespace simulate
