#include "event_engine.h"

#include <algorithm>
#include <queue>
#include <string>

#include "paraplan/sdk.hpp"

namespace simulate {
namespace {

enum StreamState : uint8_t { kIdle, kWaiting, kRunning };

struct Event {
  double time;
  uint64_t order;  // ties resolve in creation order, so a run is deterministic
  int32_t target;  // the rank (compute) or the flow
  uint32_t tag;    // the stream (compute) or the flow's version when it was timed
  bool flow;
};

struct Later {
  bool operator()(const Event& a, const Event& b) const {
    return a.time != b.time ? a.time > b.time : a.order > b.order;
  }
};

// A transfer in progress: a collective of its members, or one send.
struct Flow {
  double remaining = 0;  // seconds left at full rate
  double rate = 1;       // fraction of full rate it gets now
  double updated = 0;
  uint32_t version = 0;
  bool live = false;
  int16_t stream = 0;
  std::vector<int32_t> ranks;  // whose instruction it runs
  std::vector<int32_t> ports;  // link ports it occupies
  int32_t receiver = -1, message = -1;
};

struct RankState {
  const StageProgram* program = nullptr;
  std::vector<int32_t> head;          // per stream: the instruction it runs next, -1 when done
  std::vector<uint8_t> stream_state;  // per stream
  std::vector<double> started;        // per stream: when its running instruction started
  std::vector<double> arrived;        // per boundary message slot, -1 until it arrives
  std::vector<int16_t> streams;       // the streams the program uses
  double compute_slowdown = 1;
};

}  // namespace

struct EventEngine::State {
  const ProgramSet& programs;
  const RankMesh& mesh;
  EngineOptions options;
  uint32_t tiers;
  std::vector<RankState> ranks;
  // [stream][group on the stream's axis]: members waiting at the stream's next collective. A
  // stream runs its collectives in program order, so a group has one pending at a time.
  std::vector<std::vector<int32_t>> arrivals;
  std::vector<int32_t> group_size;            // per axis: simulated members of a group
  std::vector<Flow> flows;
  std::vector<int32_t> free_flows;
  std::vector<std::vector<int32_t>> port_users;
  std::vector<uint64_t> seen;  // per flow: the last sweep that touched it
  uint64_t sweep = 0;
  std::priority_queue<Event, std::vector<Event>, Later> queue;
  uint64_t order = 0;
  std::vector<int32_t> members, affected;

  State(const ProgramSet& set, const RankMesh& rank_mesh, const pp_hardware_profile& profile,
        const EngineOptions& engine_options)
      : programs(set), mesh(rank_mesh), options(engine_options), tiers(std::max<uint32_t>(profile.tier_count, 1)) {}

  void push(double time, int32_t target, uint32_t tag, bool flow) { queue.push({time, order++, target, tag, flow}); }
};

EventEngine::EventEngine(const ProgramSet& programs, const RankMesh& mesh, const pp_hardware_profile& profile,
                         const EngineOptions& options)
    : state_(std::make_unique<State>(programs, mesh, profile, options)) {
  State& s = *state_;
  const size_t streams = programs.streams.size();
  s.ranks.resize(static_cast<size_t>(mesh.size()));
  records_.resize(static_cast<size_t>(mesh.size()));
  for (int32_t r = 0; r < mesh.size(); ++r) {
    RankState& rank = s.ranks[static_cast<size_t>(r)];
    rank.program = &programs.stages.at(static_cast<size_t>(mesh.stage(r)));
    rank.head = rank.program->first_on_stream;
    rank.stream_state.assign(streams, kIdle);
    rank.started.assign(streams, 0.0);
    rank.arrived.assign(static_cast<size_t>(programs.message_slots), -1.0);
    for (size_t stream = 0; stream < streams; ++stream)
      if (rank.head[stream] >= 0) rank.streams.push_back(static_cast<int16_t>(stream));
    if (r == options.straggler_rank) rank.compute_slowdown = options.straggler_slowdown;
    RankRecord& record = records_[static_cast<size_t>(r)];
    record.finish.assign(rank.program->instructions.size(), -1.0);
    if (options.record_timeline) {
      record.start.assign(rank.program->instructions.size(), -1.0);
      record.memory.emplace_back(0.0, rank.program->static_bytes);
    }
    record.busy_s.assign(streams, 0.0);
    record.exposed_comm_s.assign(programs.owners.size(), 0.0);
  }
  // Streams: compute, then two per axis (its collectives, its gradient reductions), then host.
  const int32_t axes = static_cast<int32_t>((streams - 2) / 2);
  s.arrivals.resize(streams);
  for (int32_t axis = 0; axis < axes; ++axis) {
    for (size_t stream : {1 + 2 * static_cast<size_t>(axis), 2 + 2 * static_cast<size_t>(axis)})
      s.arrivals[stream].assign(static_cast<size_t>(mesh.groups(axis)), 0);
    mesh.members(0, axis, s.members);
    s.group_size.push_back(static_cast<int32_t>(s.members.size()));
  }
  s.port_users.resize(static_cast<size_t>(mesh.size()) * s.tiers * 2);
}

EventEngine::~EventEngine() = default;

const StageProgram& EventEngine::program(int32_t rank) const { return *state_->ranks[static_cast<size_t>(rank)].program; }

void EventEngine::run() {
  State& s = *state_;
  auto& ranks = s.ranks;
  auto& records = records_;

  auto port = [&](int32_t rank, uint8_t tier, int direction) {
    return static_cast<int32_t>((static_cast<size_t>(rank) * s.tiers + std::min<uint32_t>(tier, s.tiers - 1)) * 2 +
                                static_cast<size_t>(direction));
  };

  // Re-times a flow after the ports it shares changed: progress so far at the old rate, the rest
  // at the rate of its most shared port.
  auto retime = [&](int32_t id, double now) {
    Flow& flow = s.flows[static_cast<size_t>(id)];
    flow.remaining = std::max(0.0, flow.remaining - (now - flow.updated) * flow.rate);
    flow.updated = now;
    size_t busiest = 1;
    for (int32_t p : flow.ports) busiest = std::max(busiest, s.port_users[static_cast<size_t>(p)].size());
    flow.rate = 1.0 / static_cast<double>(busiest);
    ++flow.version;
    s.push(now + flow.remaining / flow.rate, id, flow.version, true);
  };
  auto retime_sharers = [&](const std::vector<int32_t>& ports, double now, int32_t skip) {
    ++s.sweep;
    s.affected.clear();
    for (int32_t p : ports)
      for (int32_t user : s.port_users[static_cast<size_t>(p)])
        if (user != skip && s.seen[static_cast<size_t>(user)] != s.sweep) {
          s.seen[static_cast<size_t>(user)] = s.sweep;
          s.affected.push_back(user);
        }
    for (int32_t user : s.affected) retime(user, now);
  };

  auto launch = [&](double seconds, int16_t stream, const std::vector<int32_t>& members, std::vector<int32_t> ports,
                    int32_t receiver, int32_t message, double now) {
    int32_t id;
    if (!s.free_flows.empty()) {
      id = s.free_flows.back();
      s.free_flows.pop_back();
    } else {
      id = static_cast<int32_t>(s.flows.size());
      s.flows.emplace_back();
      s.seen.push_back(0);
    }
    Flow& flow = s.flows[static_cast<size_t>(id)];
    flow.remaining = seconds;
    flow.rate = 1;
    flow.updated = now;
    flow.live = true;
    flow.stream = stream;
    flow.ranks = members;
    flow.ports = std::move(ports);
    flow.receiver = receiver;
    flow.message = message;
    for (int32_t p : flow.ports) s.port_users[static_cast<size_t>(p)].push_back(id);
    retime_sharers(s.flows[static_cast<size_t>(id)].ports, now, -1);
  };

  // Path time: compute in steps is work; communication is its owner's exposed time.
  auto charge = [&](RankRecord& record, const Instruction& instruction, double seconds) {
    if (instruction.owner >= 0) {
      record.exposed_comm_s[static_cast<size_t>(instruction.owner)] += seconds;
      if (instruction.step >= 0) record.exposed_comm_in_steps_s += seconds;
    } else if (instruction.kind == Work::kCompute && instruction.step >= 0) {
      record.compute_s += seconds;
    }
  };

  // A path instruction that starts after the path's previous one ended waited for the last of
  // its inputs: a transfer it could not hide (charged to the transfer's owner), a boundary
  // message or another rank (left to the bubble).
  auto charge_wait = [&](const RankState& rank, RankRecord& record, int32_t i, double now) {
    const StageProgram& program = *rank.program;
    const Instruction& instruction = program.instructions[static_cast<size_t>(i)];
    const double previous = instruction.path_previous >= 0 ? record.finish[static_cast<size_t>(instruction.path_previous)] : 0.0;
    if (now <= previous) return;
    double latest = previous;
    int32_t cause = -1;
    auto consider = [&](int32_t input) {
      if (input >= 0 && record.finish[static_cast<size_t>(input)] > latest) {
        latest = record.finish[static_cast<size_t>(input)];
        cause = input;
      }
    };
    const int32_t* deps = program.dependencies.data() + instruction.deps_begin;
    for (uint32_t d = 0; d < instruction.deps_count; ++d) consider(deps[d]);
    consider(program.previous_on_stream[static_cast<size_t>(i)]);
    if (instruction.receive >= 0 && rank.arrived[static_cast<size_t>(instruction.receive)] > latest) return;
    if (cause < 0) return;
    const Instruction& waited_for = program.instructions[static_cast<size_t>(cause)];
    if (waited_for.owner < 0) return;
    Instruction charged = waited_for;
    charged.step = instruction.step;  // the wait belongs to where the path was
    charge(record, charged, now - previous);
  };

  // The instruction heading `stream` on `rank` has finished.
  auto complete = [&](int32_t r, int16_t stream, double now) {
    RankState& rank = ranks[static_cast<size_t>(r)];
    RankRecord& record = records[static_cast<size_t>(r)];
    const int32_t i = rank.head[static_cast<size_t>(stream)];
    const Instruction& instruction = rank.program->instructions[static_cast<size_t>(i)];
    record.finish[static_cast<size_t>(i)] = now;
    const double ran = now - rank.started[static_cast<size_t>(stream)];
    if (instruction.kind != Work::kMarker && instruction.kind != Work::kMemory) record.busy_s[static_cast<size_t>(stream)] += ran;
    if (instruction.on_path) charge(record, instruction, ran);
    if (instruction.step_end) record.pipeline_end_s = now;
    rank.head[static_cast<size_t>(stream)] = rank.program->next_on_stream[static_cast<size_t>(i)];
    rank.stream_state[static_cast<size_t>(stream)] = kIdle;
  };

  auto expert_factor = [&](int32_t r, const Instruction& instruction) {
    const double x = s.options.expert_imbalance;
    if (instruction.expert_slot < 0 || x <= 0 || s.programs.expert_axis < 0) return 1.0;
    if (!s.mesh.every_rank()) return 1.0 + x;  // the representative stands for the busiest
    const int64_t e = s.mesh.degree(s.programs.expert_axis);
    if (e < 2) return 1.0;
    const bool busiest = s.mesh.coordinate(r, s.programs.expert_axis) == instruction.expert_slot % e;
    return busiest ? 1.0 + x : std::max(0.0, 1.0 - x / static_cast<double>(e - 1));
  };

  auto begin = [&](int32_t r, int16_t stream, int32_t i, double now) {
    RankState& rank = ranks[static_cast<size_t>(r)];
    RankRecord& record = records[static_cast<size_t>(r)];
    const Instruction& instruction = rank.program->instructions[static_cast<size_t>(i)];
    const size_t si = static_cast<size_t>(stream);
    rank.started[si] = now;
    if (s.options.record_timeline) record.start[static_cast<size_t>(i)] = now;
    if (instruction.on_path) charge_wait(rank, record, i, now);
    switch (instruction.kind) {
      case Work::kMemory:
        record.activation_bytes += instruction.bytes;
        record.peak_activation_bytes = std::max(record.peak_activation_bytes, record.activation_bytes);
        if (s.options.record_timeline) record.memory.emplace_back(now, rank.program->static_bytes + record.activation_bytes);
        complete(r, stream, now);
        return;
      case Work::kMarker: complete(r, stream, now); return;
      case Work::kCompute: {
        const double factor = stream == 0 ? rank.compute_slowdown * expert_factor(r, instruction) : 1.0;
        rank.stream_state[si] = kRunning;
        s.push(now + instruction.seconds * factor, r, static_cast<uint32_t>(stream), false);
        return;
      }
      case Work::kSend: {
        rank.stream_state[si] = kRunning;
        const int32_t receiver = s.mesh.at_stage(r, instruction.peer_stage);
        s.members.assign(1, r);
        launch(instruction.seconds, stream, s.members, {port(r, instruction.tier, 0), port(receiver, instruction.tier, 1)},
               receiver, instruction.message, now);
        return;
      }
      case Work::kCollective: {
        rank.stream_state[si] = kWaiting;
        const int32_t axis = instruction.axis;
        int32_t& waiting = s.arrivals[si][static_cast<size_t>(s.mesh.group(r, axis))];
        if (++waiting < s.group_size[static_cast<size_t>(axis)]) return;
        waiting = 0;  // the slowest member has arrived: everyone starts now
        s.mesh.members(r, axis, s.members);
        std::vector<int32_t> ports;
        for (int32_t member : s.members) {
          RankState& other = ranks[static_cast<size_t>(member)];
          other.stream_state[si] = kRunning;
          other.started[si] = now;
          if (s.options.record_timeline)
            records[static_cast<size_t>(member)].start[static_cast<size_t>(other.head[si])] = now;
          ports.push_back(port(member, instruction.tier, 0));
          ports.push_back(port(member, instruction.tier, 1));
        }
        launch(instruction.seconds, stream, s.members, std::move(ports), -1, -1, now);
        return;
      }
    }
  };

  auto ready = [&](const RankState& rank, const RankRecord& record, const Instruction& instruction) {
    if (instruction.receive >= 0 && rank.arrived[static_cast<size_t>(instruction.receive)] < 0) return false;
    const int32_t* deps = rank.program->dependencies.data() + instruction.deps_begin;
    for (uint32_t d = 0; d < instruction.deps_count; ++d)
      if (record.finish[static_cast<size_t>(deps[d])] < 0) return false;
    return true;
  };

  // Starts whatever can start on `rank` now; zero-time instructions finish at once and may
  // unblock others, so it sweeps until nothing changes.
  auto advance = [&](int32_t r, double now) {
    RankState& rank = ranks[static_cast<size_t>(r)];
    const RankRecord& record = records[static_cast<size_t>(r)];
    for (bool progressed = true; progressed;) {
      progressed = false;
      for (int16_t stream : rank.streams) {
        const size_t si = static_cast<size_t>(stream);
        const int32_t i = rank.head[si];
        if (i < 0 || rank.stream_state[si] != kIdle) continue;
        if (!ready(rank, record, rank.program->instructions[static_cast<size_t>(i)])) continue;
        begin(r, stream, i, now);
        progressed = true;
      }
    }
  };

  for (int32_t r = 0; r < s.mesh.size(); ++r) advance(r, 0.0);
  double now = 0;
  std::vector<int32_t> finished;
  while (!s.queue.empty()) {
    const Event event = s.queue.top();
    s.queue.pop();
    if (event.flow) {
      const Flow& flow = s.flows[static_cast<size_t>(event.target)];
      if (!flow.live || flow.version != event.tag) continue;  // re-timed since: a later event stands for it
    }
    ++events_;
    now = event.time;
    if (!event.flow) {
      complete(event.target, static_cast<int16_t>(event.tag), now);
      advance(event.target, now);
      continue;
    }
    Flow& flow = s.flows[static_cast<size_t>(event.target)];
    flow.live = false;
    for (int32_t p : flow.ports) {
      std::vector<int32_t>& users = s.port_users[static_cast<size_t>(p)];
      users.erase(std::find(users.begin(), users.end(), event.target));
    }
    finished = flow.ranks;
    const int16_t stream = flow.stream;
    const int32_t receiver = flow.receiver, message = flow.message;
    const std::vector<int32_t> ports = std::move(flow.ports);
    s.free_flows.push_back(event.target);
    retime_sharers(ports, now, event.target);
    for (int32_t member : finished) complete(member, stream, now);
    if (receiver >= 0 && message >= 0) ranks[static_cast<size_t>(receiver)].arrived[static_cast<size_t>(message)] = now;
    for (int32_t member : finished) advance(member, now);
    if (receiver >= 0) advance(receiver, now);
  }
  step_s_ = now;

  for (int32_t r = 0; r < s.mesh.size(); ++r) {
    const RankState& rank = ranks[static_cast<size_t>(r)];
    for (int16_t stream : rank.streams) {
      const int32_t i = rank.head[static_cast<size_t>(stream)];
      if (i < 0) continue;
      const Instruction& instruction = rank.program->instructions[static_cast<size_t>(i)];
      const std::string label = instruction.label >= 0 ? rank.program->labels[static_cast<size_t>(instruction.label)]
                                                       : std::string("a step boundary");
      throw paraplan::Error(PP_ERROR_UNSUPPORTED,
                            "the simulation cannot finish the step: rank " + std::to_string(s.mesh.global_rank(r)) +
                                " (stage " + std::to_string(s.mesh.stage(r)) + ") waits forever on stream '" +
                                s.programs.streams[static_cast<size_t>(stream)] + "' at '" + label + "'");
    }
  }
}

}  // namespace simulate
