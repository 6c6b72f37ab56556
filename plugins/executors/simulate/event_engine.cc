#include "event_engine.h"

#include <algorithm>
#include <string>
#include <tuple>

#include "paraplan/cost_model.hpp"
#include "paraplan/sdk.hpp"
#include "shared_links.h"

namespace simulate {
namespace {

enum StreamState : uint8_t { kIdle, kWaiting, kRunning };

// What a transfer in flight runs: the instruction heading `stream` on each of `ranks`, and for a
// send the message it delivers.
struct Transfer {
  int16_t stream = 0;
  std::vector<int32_t> ranks;
  int32_t receiver = -1, message = -1;
  bool overlapped = false;  // off the ranks' paths: it slows their compute while it runs
};

// A compute event's tag: its stream, and for the compute stream the version of the rank's
// compute timing it was queued under, modulo 2^24 (a re-timed instruction's earlier end is
// stale; 16 million re-timings pass before a version repeats).
constexpr uint32_t kStreamBits = 8;
constexpr uint32_t kStreamMask = (1u << kStreamBits) - 1;
uint32_t compute_tag(int16_t stream, uint32_t version) {
  return static_cast<uint32_t>(stream) | (version << kStreamBits);
}
bool current_version(uint32_t tag, uint32_t version) { return (tag >> kStreamBits) == (version & (~0u >> kStreamBits)); }

struct RankState {
  const StageProgram* program = nullptr;
  std::vector<int32_t> head;          // per stream: the instruction it runs next, -1 when done
  std::vector<uint8_t> stream_state;  // per stream
  std::vector<double> started;        // per stream: when its running instruction started
  std::vector<double> arrived;        // per boundary message slot, -1 until it arrives
  std::vector<int16_t> streams;       // the streams the program uses
  double compute_slowdown = 1;
  // The compute stream's running instruction, timed by the work it has left: it runs slower
  // while overlapped transfers (`contending` of them) run on the rank.
  int32_t contending = 0;
  bool computing = false;           // a compute instruction (not a host wait) runs on stream 0
  bool slowed = false;              // ... and has run slower at some point
  double nominal_s = 0;             // its time alone
  double remaining_s = 0, rate = 1, updated = 0;
  uint32_t version = 0;
};

}  // namespace

class EventEngine::State {
 public:
  State(const ProgramSet& programs, const RankMesh& mesh, const pp_hardware_profile& profile,
        const EngineOptions& options, std::vector<RankRecord>& records)
      : programs_(programs),
        mesh_(mesh),
        options_(options),
        tiers_(std::max<uint32_t>(profile.tier_count, 1)),
        slowdown_(paraplan::cost::overlap_compute_slowdown(profile)),
        records_(records),
        links_(static_cast<size_t>(mesh.size()) * tiers_ * 2, queue_) {
    const size_t streams = programs.streams.size();
    if (streams > kStreamMask + 1)
      throw paraplan::Error(PP_ERROR_UNSUPPORTED, "the simulation runs at most " + std::to_string(kStreamMask + 1) +
                                                      " streams per rank; the plan needs " + std::to_string(streams));
    ranks_.resize(static_cast<size_t>(mesh.size()));
    records_.resize(static_cast<size_t>(mesh.size()));
    for (int32_t r = 0; r < mesh.size(); ++r) {
      RankState& rank = ranks_[static_cast<size_t>(r)];
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
    arrivals_.resize(streams);
    for (int32_t axis = 0; axis < axes; ++axis) {
      for (size_t stream : {1 + 2 * static_cast<size_t>(axis), 2 + 2 * static_cast<size_t>(axis)})
        arrivals_[stream].assign(static_cast<size_t>(mesh.groups(axis)), 0);
      mesh.members(0, axis, members_);
      group_size_.push_back(static_cast<int32_t>(members_.size()));
    }
  }

  const StageProgram& program(int32_t rank) const { return *ranks_[static_cast<size_t>(rank)].program; }

  // Returns the step's end and the events processed.
  std::pair<double, uint64_t> run() {
    for (int32_t r = 0; r < mesh_.size(); ++r) advance(r, 0.0);
    double now = 0;
    uint64_t events = 0;
    while (!queue_.empty()) {
      const Event event = queue_.pop();
      // Re-timed transfers and compute: a later event stands for them.
      const int16_t stream = static_cast<int16_t>(event.tag & kStreamMask);
      if (event.flow ? !links_.current(event.target, event.tag)
                     : stream == 0 && !current_version(event.tag, ranks_[static_cast<size_t>(event.target)].version))
        continue;
      ++events;
      now = event.time;
      if (event.flow) {
        finish_transfer(event.target, now);
      } else {
        complete(event.target, stream, now);
        advance(event.target, now);
      }
    }
    check_finished();
    return {now, events};
  }

 private:
  void finish_transfer(int32_t flow, double now) {
    links_.finish(flow, now);
    // Copied out: advancing the members may start a transfer that reuses the flow's slot.
    const Transfer& transfer = transfers_[static_cast<size_t>(flow)];
    finishing_.assign(transfer.ranks.begin(), transfer.ranks.end());
    if (transfer.overlapped)
      for (int32_t member : finishing_) contend(member, -1, now);
    const int16_t stream = transfer.stream;
    const int32_t receiver = transfer.receiver, message = transfer.message;
    for (int32_t member : finishing_) complete(member, stream, now);
    if (receiver >= 0 && message >= 0) ranks_[static_cast<size_t>(receiver)].arrived[static_cast<size_t>(message)] = now;
    for (int32_t member : finishing_) advance(member, now);
    if (receiver >= 0) advance(receiver, now);
  }

  // Starts whatever can start on `rank` now. A zero-time instruction finishes at once and may
  // unblock others, so the sweep repeats while one did.
  void advance(int32_t r, double now) {
    RankState& rank = ranks_[static_cast<size_t>(r)];
    for (bool finished_at_once = true; finished_at_once;) {
      finished_at_once = false;
      for (int16_t stream : rank.streams) {
        const size_t si = static_cast<size_t>(stream);
        const int32_t i = rank.head[si];
        if (i < 0 || rank.stream_state[si] != kIdle || !ready(r, i)) continue;
        begin(r, stream, i, now);
        finished_at_once |= rank.stream_state[si] == kIdle;
      }
    }
  }

  bool ready(int32_t r, int32_t i) const {
    const RankState& rank = ranks_[static_cast<size_t>(r)];
    const RankRecord& record = records_[static_cast<size_t>(r)];
    const Instruction& instruction = rank.program->instructions[static_cast<size_t>(i)];
    if (instruction.receive >= 0 && rank.arrived[static_cast<size_t>(instruction.receive)] < 0) return false;
    const int32_t* deps = rank.program->dependencies.data() + instruction.deps_begin;
    for (uint32_t d = 0; d < instruction.deps_count; ++d)
      if (record.finish[static_cast<size_t>(deps[d])] < 0) return false;
    return true;
  }

  void begin(int32_t r, int16_t stream, int32_t i, double now) {
    RankState& rank = ranks_[static_cast<size_t>(r)];
    RankRecord& record = records_[static_cast<size_t>(r)];
    const Instruction& instruction = rank.program->instructions[static_cast<size_t>(i)];
    const size_t si = static_cast<size_t>(stream);
    rank.started[si] = now;
    if (options_.record_timeline) record.start[static_cast<size_t>(i)] = now;
    if (instruction.on_path) charge_wait(r, i, now);
    switch (instruction.kind) {
      case Work::kMemory:
        record.activation_bytes += instruction.bytes;
        record.peak_activation_bytes = std::max(record.peak_activation_bytes, record.activation_bytes);
        if (options_.record_timeline)
          record.memory.emplace_back(now, rank.program->static_bytes + record.activation_bytes);
        complete(r, stream, now);
        return;
      case Work::kMarker: complete(r, stream, now); return;
      case Work::kCompute: {
        rank.stream_state[si] = kRunning;
        if (stream != 0) {
          queue_.push(now + instruction.seconds, r, compute_tag(stream, 0), /*flow=*/false);
          return;
        }
        rank.nominal_s = instruction.seconds * rank.compute_slowdown * expert_factor(r, instruction);
        rank.computing = !instruction.host_wait;  // an idle GPU loses nothing to the transfers
        rank.slowed = false;
        rank.remaining_s = rank.nominal_s;
        time_compute(r, now);
        return;
      }
      case Work::kSend: {
        rank.stream_state[si] = kRunning;
        const int32_t receiver = mesh_.at_stage(r, instruction.peer_stage);
        ports_.assign({port(r, instruction.tier, 0), port(receiver, instruction.tier, 1)});
        members_.assign(1, r);
        start_transfer(instruction.seconds, stream, receiver, instruction.delivers ? instruction.message : -1,
                       !instruction.on_path, now);
        return;
      }
      case Work::kCollective: {
        rank.stream_state[si] = kWaiting;
        const int32_t axis = instruction.axis;
        int32_t& waiting = arrivals_[si][static_cast<size_t>(mesh_.group(r, axis))];
        if (++waiting < group_size_[static_cast<size_t>(axis)]) return;
        waiting = 0;  // the slowest member has arrived: everyone starts now
        mesh_.members(r, axis, members_);
        ports_.clear();
        for (int32_t member : members_) {
          RankState& other = ranks_[static_cast<size_t>(member)];
          other.stream_state[si] = kRunning;
          other.started[si] = now;
          if (options_.record_timeline) records_[static_cast<size_t>(member)].start[static_cast<size_t>(other.head[si])] = now;
          ports_.push_back(port(member, instruction.tier, 0));
          ports_.push_back(port(member, instruction.tier, 1));
        }
        start_transfer(instruction.seconds, stream, -1, -1, !instruction.on_path, now);
        return;
      }
    }
  }

  // Queues the end of the compute stream's running instruction at the pace it runs at now.
  void time_compute(int32_t r, double now) {
    RankState& rank = ranks_[static_cast<size_t>(r)];
    rank.updated = now;
    rank.rate = rank.computing && rank.contending > 0 ? 1.0 / (1.0 + slowdown_) : 1.0;
    rank.slowed |= rank.rate < 1.0;
    ++rank.version;
    queue_.push(now + rank.remaining_s / rank.rate, r, compute_tag(0, rank.version), /*flow=*/false);
  }

  // An overlapped transfer starts (+1) or ends (-1) on rank r: its compute changes pace when the
  // first one starts or the last one ends.
  void contend(int32_t r, int32_t change, double now) {
    RankState& rank = ranks_[static_cast<size_t>(r)];
    const bool before = rank.contending > 0;
    rank.contending += change;
    if (slowdown_ <= 0 || !rank.computing || before == (rank.contending > 0)) return;
    rank.remaining_s = std::max(0.0, rank.remaining_s - (now - rank.updated) * rank.rate);
    time_compute(r, now);
  }

  // A transfer over ports_ running the instruction heading `stream` on each of members_.
  void start_transfer(double seconds, int16_t stream, int32_t receiver, int32_t message, bool overlapped, double now) {
    const int32_t flow = links_.start(seconds, ports_, now);
    if (transfers_.size() <= static_cast<size_t>(flow)) transfers_.resize(static_cast<size_t>(flow) + 1);
    Transfer& transfer = transfers_[static_cast<size_t>(flow)];
    transfer.stream = stream;
    transfer.ranks.assign(members_.begin(), members_.end());  // reuses a finished transfer's storage
    transfer.receiver = receiver;
    transfer.message = message;
    transfer.overlapped = overlapped;
    if (overlapped)
      for (int32_t member : members_) contend(member, +1, now);
  }

  // The instruction heading `stream` on `rank` has finished.
  void complete(int32_t r, int16_t stream, double now) {
    RankState& rank = ranks_[static_cast<size_t>(r)];
    RankRecord& record = records_[static_cast<size_t>(r)];
    const size_t si = static_cast<size_t>(stream);
    const int32_t i = rank.head[si];
    const Instruction& instruction = rank.program->instructions[static_cast<size_t>(i)];
    record.finish[static_cast<size_t>(i)] = now;
    const double ran = now - rank.started[si];
    if (instruction.kind != Work::kMarker && instruction.kind != Work::kMemory) record.busy_s[si] += ran;
    // Compute's time beyond its own is what the transfers beside it cost.
    const bool slowed = stream == 0 && instruction.kind == Work::kCompute && rank.computing && rank.slowed;
    if (stream == 0 && instruction.kind == Work::kCompute) rank.computing = false;
    if (instruction.on_path) {
      const double lost = slowed ? std::max(0.0, ran - rank.nominal_s) : 0.0;
      charge(record, instruction, ran - lost);
      record.contention_s += lost;
      if (instruction.step >= 0) record.contention_in_steps_s += lost;
    }
    if (instruction.step_end) record.pipeline_end_s = now;
    rank.head[si] = rank.program->next_on_stream[static_cast<size_t>(i)];
    rank.stream_state[si] = kIdle;
  }

  // Path time: compute, in the steps or after them; communication is its owner's exposed time.
  static void charge(RankRecord& record, const Instruction& instruction, double seconds) {
    if (instruction.owner >= 0) {
      record.exposed_comm_s[static_cast<size_t>(instruction.owner)] += seconds;
      if (instruction.step >= 0) record.exposed_comm_in_steps_s += seconds;
    } else if (instruction.host_wait) {
      record.host_wait_s += seconds;
    } else if (instruction.kind == Work::kCompute) {
      (instruction.step >= 0 ? record.compute_s : record.tail_compute_s) += seconds;
    }
  }

  // A path instruction that starts after the path's previous one ended waited for the last of
  // its inputs: a transfer it could not hide (charged to the transfer's owner), a boundary
  // message or another rank (left to the bubble).
  void charge_wait(int32_t r, int32_t i, double now) {
    const RankState& rank = ranks_[static_cast<size_t>(r)];
    RankRecord& record = records_[static_cast<size_t>(r)];
    const StageProgram& program = *rank.program;
    const Instruction& instruction = program.instructions[static_cast<size_t>(i)];
    const double previous =
        instruction.path_previous >= 0 ? record.finish[static_cast<size_t>(instruction.path_previous)] : 0.0;
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
    if (cause < 0 || program.instructions[static_cast<size_t>(cause)].owner < 0) return;
    Instruction charged = program.instructions[static_cast<size_t>(cause)];
    charged.step = instruction.step;  // the wait belongs to where the path was
    charge(record, charged, now - previous);
  }

  double expert_factor(int32_t r, const Instruction& instruction) const {
    const double x = options_.expert_imbalance;
    if (instruction.expert_slot < 0 || x <= 0 || programs_.expert_axis < 0) return 1.0;
    if (!mesh_.every_rank()) return 1.0 + x;  // the representative stands for the busiest
    const int64_t e = mesh_.degree(programs_.expert_axis);
    if (e < 2) return 1.0;
    const bool busiest = mesh_.coordinate(r, programs_.expert_axis) == instruction.expert_slot % e;
    return busiest ? 1.0 + x : std::max(0.0, 1.0 - x / static_cast<double>(e - 1));
  }

  int32_t port(int32_t rank, uint8_t tier, int direction) const {
    return static_cast<int32_t>((static_cast<size_t>(rank) * tiers_ + std::min<uint32_t>(tier, tiers_ - 1)) * 2 +
                                static_cast<size_t>(direction));
  }

  // An instruction still unfinished when nothing is left to happen can never run.
  void check_finished() const {
    for (int32_t r = 0; r < mesh_.size(); ++r) {
      const RankState& rank = ranks_[static_cast<size_t>(r)];
      for (int16_t stream : rank.streams) {
        const int32_t i = rank.head[static_cast<size_t>(stream)];
        if (i < 0) continue;
        const Instruction& instruction = rank.program->instructions[static_cast<size_t>(i)];
        const std::string label = instruction.label >= 0 ? rank.program->labels[static_cast<size_t>(instruction.label)]
                                                         : std::string("a step boundary");
        throw paraplan::Error(PP_ERROR_UNSUPPORTED,
                              "the simulation cannot finish the step: rank " + std::to_string(mesh_.global_rank(r)) +
                                  " (stage " + std::to_string(mesh_.stage(r)) + ") waits forever on stream '" +
                                  programs_.streams[static_cast<size_t>(stream)] + "' at '" + label + "'");
      }
    }
  }

  const ProgramSet& programs_;
  const RankMesh& mesh_;
  EngineOptions options_;
  uint32_t tiers_;
  double slowdown_;  // compute's, beside overlapped communication (pp_hardware_profile)
  std::vector<RankRecord>& records_;
  std::vector<RankState> ranks_;
  EventQueue queue_;
  SharedLinks links_;
  std::vector<Transfer> transfers_;  // per flow id
  // [stream][group on the stream's axis]: members waiting at the stream's next collective. A
  // stream runs its collectives in program order, so a group has one pending at a time.
  std::vector<std::vector<int32_t>> arrivals_;
  std::vector<int32_t> group_size_;  // per axis: simulated members of a group
  std::vector<int32_t> members_, ports_, finishing_;  // scratch, reused
};

EventEngine::EventEngine(const ProgramSet& programs, const RankMesh& mesh, const pp_hardware_profile& profile,
                         const EngineOptions& options)
    : state_(std::make_unique<State>(programs, mesh, profile, options, records_)) {}

EventEngine::~EventEngine() = default;

const StageProgram& EventEngine::program(int32_t rank) const { return state_->program(rank); }

void EventEngine::run() { std::tie(step_s_, events_) = state_->run(); }

}  // namespace simulate
