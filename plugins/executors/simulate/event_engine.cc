#include "event_engine.h"

#include <algorithm>
#include <string>
#include <tuple>

#include "paraplan/cost_model.hpp"
#include "paraplan/sdk.hpp"
#include "finish_windows.h"
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

// The compute stream's running instruction on one rank, timed by the work it has left: it runs
// slower while overlapped transfers (`contending` of them) run on the rank.
struct ComputePace {
  double slowdown = 1;  // the straggler's
  double nominal_s = 0;  // the running instruction's time alone
  double remaining_s = 0, rate = 1, updated = 0;
  uint32_t version = 0;
  int32_t contending = 0;
  bool computing = false;  // a compute instruction (not a host wait) runs on stream 0
  bool slowed = false;     // ... and has run slower at some point
};

}  // namespace

// Per-rank state lives in flat arrays indexed by rank and stream (at()), not in per-rank objects,
// so a rank costs a few hundred bytes plus its finish-time windows (finish_windows.h), and the
// event loop touches a few cache lines per event whatever the rank count.
class EventEngine::State {
 public:
  State(const ProgramSet& programs, const RankMesh& mesh, const pp_hardware_profile& profile,
        const EngineOptions& options, std::vector<RankRecord>& records)
      : programs_(programs),
        mesh_(mesh),
        options_(options),
        tiers_(std::max<uint32_t>(profile.tier_count, 1)),
        slowdown_(paraplan::cost::overlap_compute_slowdown(profile)),
        streams_(programs.streams.size()),
        slots_(static_cast<size_t>(std::max(programs.message_slots, 0))),
        records_(records),
        links_(static_cast<size_t>(mesh.size()) * tiers_ * 2, queue_) {
    if (streams_ > kStreamMask + 1)
      throw paraplan::Error(PP_ERROR_UNSUPPORTED, "the simulation runs at most " + std::to_string(kStreamMask + 1) +
                                                      " streams per rank; the plan needs " + std::to_string(streams_));
    for (const StageProgram& program : programs.stages) {
      windows_.push_back(finish_windows(program, streams_));
      std::vector<int16_t>& used = stage_streams_.emplace_back();
      for (size_t stream = 0; stream < streams_; ++stream)
        if (program.first_on_stream[stream] >= 0) used.push_back(static_cast<int16_t>(stream));
    }
    const size_t ranks = static_cast<size_t>(mesh.size());
    stage_.resize(ranks);
    window_base_.resize(ranks + 1, 0);
    for (int32_t r = 0; r < mesh.size(); ++r) {
      stage_[static_cast<size_t>(r)] = mesh.stage(r);
      window_base_[static_cast<size_t>(r) + 1] = window_base_[static_cast<size_t>(r)] + windows(r).block;
    }
    finish_.assign(window_base_.back(), -1.0);
    head_.resize(ranks * streams_);
    stream_state_.assign(ranks * streams_, kIdle);
    started_.assign(ranks * streams_, 0.0);
    done_.assign(ranks * streams_, 0);
    arrived_.assign(ranks * slots_, -1.0);
    pace_.resize(ranks);
    records_.resize(ranks);
    for (int32_t r = 0; r < mesh.size(); ++r) {
      const StageProgram& stage = program(r);
      std::copy(stage.first_on_stream.begin(), stage.first_on_stream.end(), head_.begin() + static_cast<ptrdiff_t>(at(r, 0)));
      if (r == options.straggler_rank) pace_[static_cast<size_t>(r)].slowdown = options.straggler_slowdown;
      RankRecord& record = records_[static_cast<size_t>(r)];
      if (options.record_timeline) {
        record.start.assign(stage.instructions.size(), -1.0);
        record.finish.assign(stage.instructions.size(), -1.0);
        record.memory.emplace_back(0.0, stage.static_bytes);
      }
      record.busy_s.assign(streams_, 0.0);
      record.exposed_comm_s.assign(programs.owners.size(), 0.0);
    }
    // Streams: compute, then two per axis (its collectives, its gradient reductions), then host.
    const int32_t axes = static_cast<int32_t>((streams_ - 2) / 2);
    arrivals_.resize(streams_);
    for (int32_t axis = 0; axis < axes; ++axis) {
      for (size_t stream : {1 + 2 * static_cast<size_t>(axis), 2 + 2 * static_cast<size_t>(axis)})
        arrivals_[stream].assign(static_cast<size_t>(mesh.groups(axis)), 0);
      mesh.members(0, axis, members_);
      group_size_.push_back(static_cast<int32_t>(members_.size()));
    }
  }

  uint32_t finish_times_per_rank() const {
    uint32_t most = 0;
    for (const FinishWindows& stage : windows_) most = std::max(most, stage.block);
    return most;
  }

  const StageProgram& program(int32_t r) const { return programs_.stages[static_cast<size_t>(stage_[static_cast<size_t>(r)])]; }

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
                     : stream == 0 && !current_version(event.tag, pace_[static_cast<size_t>(event.target)].version))
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
  size_t at(int32_t r, size_t stream) const { return static_cast<size_t>(r) * streams_ + stream; }
  const FinishWindows& windows(int32_t r) const { return windows_[static_cast<size_t>(stage_[static_cast<size_t>(r)])]; }

  // Streams run in order: instruction i has finished once its stream has completed past it.
  bool finished(int32_t r, int32_t i) const {
    const Instruction& instruction = program(r).instructions[static_cast<size_t>(i)];
    return done_[at(r, static_cast<size_t>(instruction.stream))] > windows(r).position[static_cast<size_t>(i)];
  }
  // When instruction i finished on rank r, -1 if it has not (or i is -1). A timeline keeps every
  // finish time besides: the window is checked against it (tests run plans with one).
  double finish_time(int32_t r, int32_t i) const {
    if (i < 0 || !finished(r, i)) return -1.0;
    const double kept =
        finish_[window_base_[static_cast<size_t>(r)] + windows(r).slot(program(r).instructions[static_cast<size_t>(i)], i)];
    if (options_.record_timeline && kept != records_[static_cast<size_t>(r)].finish[static_cast<size_t>(i)])
      throw paraplan::Error(PP_ERROR_INTERNAL, "simulate: rank " + std::to_string(r) + "'s finish-time window lost instruction " +
                                                   std::to_string(i) + " before it was read");
    return kept;
  }

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
    if (receiver >= 0 && message >= 0) arrived_[static_cast<size_t>(receiver) * slots_ + static_cast<size_t>(message)] = now;
    for (int32_t member : finishing_) advance(member, now);
    if (receiver >= 0) advance(receiver, now);
  }

  // Starts whatever can start on `rank` now. A zero-time instruction finishes at once and may
  // unblock others, so the sweep repeats while one did.
  void advance(int32_t r, double now) {
    const std::vector<int16_t>& streams = stage_streams_[static_cast<size_t>(stage_[static_cast<size_t>(r)])];
    for (bool finished_at_once = true; finished_at_once;) {
      finished_at_once = false;
      for (int16_t stream : streams) {
        const size_t k = at(r, static_cast<size_t>(stream));
        const int32_t i = head_[k];
        if (i < 0 || stream_state_[k] != kIdle || !ready(r, i)) continue;
        begin(r, stream, i, now);
        finished_at_once |= stream_state_[k] == kIdle;
      }
    }
  }

  bool ready(int32_t r, int32_t i) const {
    const StageProgram& stage = program(r);
    const Instruction& instruction = stage.instructions[static_cast<size_t>(i)];
    if (instruction.receive >= 0 && arrived_[static_cast<size_t>(r) * slots_ + static_cast<size_t>(instruction.receive)] < 0)
      return false;
    const int32_t* deps = stage.dependencies.data() + instruction.deps_begin;
    for (uint32_t d = 0; d < instruction.deps_count; ++d)
      if (!finished(r, deps[d])) return false;
    return true;
  }

  void begin(int32_t r, int16_t stream, int32_t i, double now) {
    RankRecord& record = records_[static_cast<size_t>(r)];
    const StageProgram& stage = program(r);
    const Instruction& instruction = stage.instructions[static_cast<size_t>(i)];
    const size_t k = at(r, static_cast<size_t>(stream));
    started_[k] = now;
    if (options_.record_timeline) record.start[static_cast<size_t>(i)] = now;
    if (instruction.on_path) charge_wait(r, i, now);
    switch (instruction.kind) {
      case Work::kMemory:
        record.activation_bytes += instruction.bytes;
        record.peak_activation_bytes = std::max(record.peak_activation_bytes, record.activation_bytes);
        if (options_.record_timeline) record.memory.emplace_back(now, stage.static_bytes + record.activation_bytes);
        complete(r, stream, now);
        return;
      case Work::kMarker: complete(r, stream, now); return;
      case Work::kCompute: {
        stream_state_[k] = kRunning;
        if (stream != 0) {
          queue_.push(now + instruction.seconds, r, compute_tag(stream, 0), /*flow=*/false);
          return;
        }
        ComputePace& pace = pace_[static_cast<size_t>(r)];
        pace.nominal_s = instruction.seconds * pace.slowdown * expert_factor(r, instruction);
        pace.computing = !instruction.host_wait;  // an idle GPU loses nothing to the transfers
        pace.slowed = false;
        pace.remaining_s = pace.nominal_s;
        time_compute(r, now);
        return;
      }
      case Work::kSend: {
        stream_state_[k] = kRunning;
        const int32_t receiver = mesh_.at_stage(r, instruction.peer_stage);
        ports_.assign({port(r, instruction.tier, 0), port(receiver, instruction.tier, 1)});
        members_.assign(1, r);
        start_transfer(instruction.seconds, stream, receiver, instruction.delivers ? instruction.message : -1,
                       !instruction.on_path, now);
        return;
      }
      case Work::kCollective: {
        stream_state_[k] = kWaiting;
        const int32_t axis = instruction.axis;
        int32_t& waiting = arrivals_[static_cast<size_t>(stream)][static_cast<size_t>(mesh_.group(r, axis))];
        if (++waiting < group_size_[static_cast<size_t>(axis)]) return;
        waiting = 0;  // the slowest member has arrived: everyone starts now
        mesh_.members(r, axis, members_);
        ports_.clear();
        for (int32_t member : members_) {
          const size_t mk = at(member, static_cast<size_t>(stream));
          stream_state_[mk] = kRunning;
          started_[mk] = now;
          if (options_.record_timeline) records_[static_cast<size_t>(member)].start[static_cast<size_t>(head_[mk])] = now;
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
    ComputePace& pace = pace_[static_cast<size_t>(r)];
    pace.updated = now;
    pace.rate = pace.computing && pace.contending > 0 ? 1.0 / (1.0 + slowdown_) : 1.0;
    pace.slowed |= pace.rate < 1.0;
    ++pace.version;
    queue_.push(now + pace.remaining_s / pace.rate, r, compute_tag(0, pace.version), /*flow=*/false);
  }

  // An overlapped transfer starts (+1) or ends (-1) on rank r: its compute changes pace when the
  // first one starts or the last one ends.
  void contend(int32_t r, int32_t change, double now) {
    ComputePace& pace = pace_[static_cast<size_t>(r)];
    const bool before = pace.contending > 0;
    pace.contending += change;
    if (slowdown_ <= 0 || !pace.computing || before == (pace.contending > 0)) return;
    pace.remaining_s = std::max(0.0, pace.remaining_s - (now - pace.updated) * pace.rate);
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
    RankRecord& record = records_[static_cast<size_t>(r)];
    const StageProgram& stage = program(r);
    const size_t k = at(r, static_cast<size_t>(stream));
    const int32_t i = head_[k];
    const Instruction& instruction = stage.instructions[static_cast<size_t>(i)];
    finish_[window_base_[static_cast<size_t>(r)] + windows(r).slot(instruction, i)] = now;
    ++done_[k];
    if (options_.record_timeline) record.finish[static_cast<size_t>(i)] = now;
    const double ran = now - started_[k];
    if (instruction.kind != Work::kMarker && instruction.kind != Work::kMemory) record.busy_s[static_cast<size_t>(stream)] += ran;
    // Compute's time beyond its own is what the transfers beside it cost.
    ComputePace& pace = pace_[static_cast<size_t>(r)];
    const bool slowed = stream == 0 && instruction.kind == Work::kCompute && pace.computing && pace.slowed;
    if (stream == 0 && instruction.kind == Work::kCompute) pace.computing = false;
    if (instruction.on_path) {
      const double lost = slowed ? std::max(0.0, ran - pace.nominal_s) : 0.0;
      charge(record, instruction, ran - lost);
      record.contention_s += lost;
      if (instruction.step >= 0) record.contention_in_steps_s += lost;
    }
    if (instruction.step_end) record.pipeline_end_s = now;
    head_[k] = stage.next_on_stream[static_cast<size_t>(i)];
    stream_state_[k] = kIdle;
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
    RankRecord& record = records_[static_cast<size_t>(r)];
    const StageProgram& stage = program(r);
    const Instruction& instruction = stage.instructions[static_cast<size_t>(i)];
    const double previous = instruction.path_previous >= 0 ? finish_time(r, instruction.path_previous) : 0.0;
    if (now <= previous) return;
    double latest = previous;
    int32_t cause = -1;
    auto consider = [&](int32_t input) {
      const double finished_at = finish_time(r, input);
      if (finished_at > latest) {
        latest = finished_at;
        cause = input;
      }
    };
    const int32_t* deps = stage.dependencies.data() + instruction.deps_begin;
    for (uint32_t d = 0; d < instruction.deps_count; ++d) consider(deps[d]);
    consider(stage.previous_on_stream[static_cast<size_t>(i)]);
    if (instruction.receive >= 0 &&
        arrived_[static_cast<size_t>(r) * slots_ + static_cast<size_t>(instruction.receive)] > latest)
      return;
    if (cause < 0 || stage.instructions[static_cast<size_t>(cause)].owner < 0) return;
    Instruction charged = stage.instructions[static_cast<size_t>(cause)];
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
      for (int16_t stream : stage_streams_[static_cast<size_t>(stage_[static_cast<size_t>(r)])]) {
        const int32_t i = head_[at(r, static_cast<size_t>(stream))];
        if (i < 0) continue;
        const StageProgram& stage = program(r);
        const Instruction& instruction = stage.instructions[static_cast<size_t>(i)];
        const std::string label = instruction.label >= 0 ? stage.labels[static_cast<size_t>(instruction.label)]
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
  size_t streams_;   // per rank, every stage alike (ProgramSet::streams)
  size_t slots_;     // boundary message slots per rank
  std::vector<RankRecord>& records_;
  // Per stage.
  std::vector<FinishWindows> windows_;
  std::vector<std::vector<int16_t>> stage_streams_;  // the streams its program uses
  // Per rank.
  std::vector<int32_t> stage_;
  std::vector<size_t> window_base_;  // its block of finish_ (one past the last rank's: the total)
  std::vector<ComputePace> pace_;
  // Per rank and stream, at(rank, stream).
  std::vector<int32_t> head_;           // the instruction it runs next, -1 when done
  std::vector<uint8_t> stream_state_;
  std::vector<double> started_;         // when its running instruction started
  std::vector<int32_t> done_;           // instructions it has completed
  std::vector<double> finish_;          // finish times, per rank a block of per-stream rings
  std::vector<double> arrived_;         // per rank and boundary message slot, -1 until it arrives
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

uint32_t EventEngine::finish_times_per_rank() const { return state_->finish_times_per_rank(); }

void EventEngine::run() { std::tie(step_s_, events_) = state_->run(); }

}  // namespace simulate
