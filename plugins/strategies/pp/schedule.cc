// schedule.cc: bubble, in-flight activations and step order of each schedule (see schedule.h).
#include "schedule.h"

#include <algorithm>
#include <deque>
#include <utility>

#include "paraplan/sdk.hpp"

namespace pp_strategy {
namespace {

// Collects one stage's steps.
class StageSteps {
 public:
  StageSteps(std::vector<pp_schedule_step>& out, int64_t stage) : out_(out), stage_(static_cast<int32_t>(stage)) {}
  void add(int64_t micro_batch, int64_t chunk, pp_phase phase) {
    out_.push_back(pp_schedule_step{sizeof(pp_schedule_step), stage_, static_cast<int32_t>(micro_batch),
                                    static_cast<int32_t>(chunk), phase});
  }

 private:
  std::vector<pp_schedule_step>& out_;
  int32_t stage_;
};

void gpipe(const ScheduleShape& shape, StageSteps& steps) {
  for (int64_t micro_batch = 0; micro_batch < shape.micro_batches; ++micro_batch)
    steps.add(micro_batch, 0, PP_PHASE_FORWARD);
  for (int64_t micro_batch = 0; micro_batch < shape.micro_batches; ++micro_batch)
    steps.add(micro_batch, 0, PP_PHASE_BACKWARD);
}

// 1F1B; with split_weight_gradient, ZB-H1: each backward is B then a W that may be deferred.
void one_forward_one_backward(const ScheduleShape& shape, int64_t stage, bool split_weight_gradient,
                              StageSteps& steps) {
  const int64_t m = shape.micro_batches;
  const int64_t warmup = warmup_forwards(shape, stage);
  const int64_t deferred_limit = stage;  // ZB-H1: stage s may owe s weight-gradient passes
  int64_t next_weight_gradient = 0;
  auto backward = [&](int64_t micro_batch) {
    steps.add(micro_batch, 0, PP_PHASE_BACKWARD);
    if (!split_weight_gradient) return;
    if (micro_batch + 1 - next_weight_gradient > deferred_limit)
      steps.add(next_weight_gradient++, 0, PP_PHASE_WEIGHT_GRADIENT);
  };
  for (int64_t micro_batch = 0; micro_batch < warmup; ++micro_batch) steps.add(micro_batch, 0, PP_PHASE_FORWARD);
  for (int64_t micro_batch = 0; micro_batch < m; ++micro_batch) {
    if (warmup + micro_batch < m) steps.add(warmup + micro_batch, 0, PP_PHASE_FORWARD);
    backward(micro_batch);
  }
  while (split_weight_gradient && next_weight_gradient < m)
    steps.add(next_weight_gradient++, 0, PP_PHASE_WEIGHT_GRADIENT);
}

// Megatron-LM's mapping of the k-th chunk pass to (micro-batch, chunk).
struct ChunkPass {
  int64_t micro_batch, chunk;
};
ChunkPass chunk_pass(const ScheduleShape& shape, int64_t k, bool forward) {
  const int64_t p = shape.stages, v = shape.virtual_stages;
  const int64_t chunk = (k % (p * v)) / p;
  return {(k / (p * v)) * p + k % p, forward ? chunk : v - 1 - chunk};
}

void interleaved(const ScheduleShape& shape, int64_t stage, StageSteps& steps) {
  const int64_t total = shape.micro_batches * shape.virtual_stages;
  const int64_t warmup = warmup_forwards(shape, stage);
  auto run = [&](int64_t k, bool forward) {
    ChunkPass pass = chunk_pass(shape, k, forward);
    steps.add(pass.micro_batch, pass.chunk, forward ? PP_PHASE_FORWARD : PP_PHASE_BACKWARD);
  };
  for (int64_t k = 0; k < warmup; ++k) run(k, true);
  for (int64_t k = 0; k < total; ++k) {
    if (warmup + k < total) run(warmup + k, true);
    run(k, false);
  }
}

// dualpipev.py's DualPipeV.step for rank s, its eight loops in order. Each chunk takes its
// micro-batches in order; a backward "with zero bubble" runs B and queues its W, which a later
// weight step runs first in, first out; any other backward runs B then W at once. A paired
// forward-and-backward (F&B) is its forward, then its backward.
class DualPipeVRank {
 public:
  DualPipeVRank(StageSteps& steps) : steps_(steps) {}
  void forward(int64_t chunk) { steps_.add(next_forward_[chunk]++, chunk, PP_PHASE_FORWARD); }
  void backward(int64_t chunk, bool zero_bubble) {
    const int64_t micro_batch = next_backward_[chunk]++;
    steps_.add(micro_batch, chunk, PP_PHASE_BACKWARD);
    if (zero_bubble)
      queued_.emplace_back(micro_batch, chunk);
    else
      steps_.add(micro_batch, chunk, PP_PHASE_WEIGHT_GRADIENT);
  }
  void weight() {
    steps_.add(queued_.front().first, queued_.front().second, PP_PHASE_WEIGHT_GRADIENT);
    queued_.pop_front();
  }
  void paired(int64_t forward_chunk, int64_t backward_chunk) {
    forward(forward_chunk);
    backward(backward_chunk, false);
  }

 private:
  StageSteps& steps_;
  int64_t next_forward_[2] = {0, 0}, next_backward_[2] = {0, 0};
  std::deque<std::pair<int64_t, int64_t>> queued_;
};

void dualpipe_v(const ScheduleShape& shape, int64_t stage, StageSteps& steps) {
  const int64_t p = shape.stages, m = shape.micro_batches, s = stage;
  DualPipeVRank rank(steps);
  for (int64_t i = 0; i < 2 * (p - s - 1); ++i) rank.forward(0);  // 1: nF0
  for (int64_t i = 0; i < s + 1; ++i) rank.forward(0), rank.forward(1);  // 2: nF0F1
  for (int64_t i = 0; i < p - s - 1; ++i) rank.backward(1, true), rank.weight(), rank.forward(1);  // 3: nB1W1F1
  for (int64_t i = 0; i < m - 2 * p + s + 1; ++i) rank.paired(0, 1), rank.paired(1, 0);  // 4: nF0B1F1B0
  for (int64_t i = 0; i < p - s - 1; ++i) rank.backward(1, false), rank.paired(1, 0);  // 5: nB1F1B0
  bool zero_bubble = false;  // 6: nB1B0, the second half with zero bubble
  for (int64_t i = 0; i < s + 1; ++i) {
    if (i == (s + 1) / 2 && s % 2 == 1) zero_bubble = true;
    rank.backward(1, zero_bubble);
    if (i == (s + 1) / 2 && s % 2 == 0) zero_bubble = true;
    rank.backward(0, zero_bubble);
  }
  for (int64_t i = 0; i < p - s - 1; ++i) rank.weight(), rank.backward(0, true);  // 7: nWB0
  for (int64_t i = 0; i < s + 1; ++i) rank.weight();                                 // 8: nW
}

}  // namespace

double bubble_fraction(const ScheduleShape& shape) {
  const double p = static_cast<double>(shape.stages), m = static_cast<double>(shape.micro_batches);
  const double v = static_cast<double>(shape.virtual_stages);
  switch (shape.kind) {
    case PP_SCHEDULE_INTERLEAVED_1F1B: return (p - 1.0) / (v * m);
    case PP_SCHEDULE_ZERO_BUBBLE:
    case PP_SCHEDULE_DUALPIPE_V: return (p - 1.0) / (3.0 * m);
    case PP_SCHEDULE_NONE: return 0.0;
    default: return (p - 1.0) / m;
  }
}

double in_flight_micro_batches(const ScheduleShape& shape, int64_t stage) {
  const int64_t p = shape.stages, m = shape.micro_batches, v = shape.virtual_stages;
  switch (shape.kind) {
    case PP_SCHEDULE_GPIPE: return static_cast<double>(m);
    case PP_SCHEDULE_INTERLEAVED_1F1B: {
      const int64_t chunk_sets = std::min(warmup_forwards(shape, stage) + 1, m * v);
      return static_cast<double>(chunk_sets) / static_cast<double>(v);
    }
    // ZB-H1 defers up to `stage` weight-gradient passes, each holding its micro-batch's
    // activations: every stage peaks at p sets (Qi et al. 2023, same memory as 1F1B's stage 0).
    case PP_SCHEDULE_ZERO_BUBBLE: return static_cast<double>(std::min(p, m));
    // 2p + 1 chunk sets, each half the stage's layers when the chunks are alike.
    case PP_SCHEDULE_DUALPIPE_V: return static_cast<double>(std::min(2 * p + 1, 2 * m)) / 2.0;
    default: return static_cast<double>(std::min(p - stage, m));  // warm-up forwards + the one in flight
  }
}

int64_t dualpipe_v_chunk_in_flight(const ScheduleShape& shape, int64_t stage, int64_t chunk) {
  const int64_t sets = chunk == 0 ? 2 * shape.stages - stage : stage + 1;
  return std::min(sets, shape.micro_batches);
}

int64_t warmup_forwards(const ScheduleShape& shape, int64_t stage) {
  const int64_t p = shape.stages, m = shape.micro_batches, v = shape.virtual_stages;
  switch (shape.kind) {
    case PP_SCHEDULE_GPIPE: return m;
    case PP_SCHEDULE_INTERLEAVED_1F1B: return std::min((p - stage - 1) * 2 + (v - 1) * p, m * v);
    // dualpipev.py: 2(p - s - 1) chunk-0 forwards, then s + 1 pairs of chunk-0 and chunk-1 forwards.
    case PP_SCHEDULE_DUALPIPE_V: return std::min(2 * p, 2 * m);
    default: return std::min(p - stage - 1, m);
  }
}

int64_t steps_per_stage(const ScheduleShape& shape) {
  return shape.micro_batches * shape.virtual_stages * (paraplan::splits_backward(shape.kind) ? 3 : 2);
}

std::vector<pp_schedule_step> schedule_steps(const ScheduleShape& shape) {
  std::vector<pp_schedule_step> out;
  out.reserve(static_cast<size_t>(shape.stages * steps_per_stage(shape)));
  for (int64_t stage = 0; stage < shape.stages; ++stage) {
    StageSteps steps(out, stage);
    switch (shape.kind) {
      case PP_SCHEDULE_GPIPE: gpipe(shape, steps); break;
      case PP_SCHEDULE_INTERLEAVED_1F1B: interleaved(shape, stage, steps); break;
      case PP_SCHEDULE_ZERO_BUBBLE: one_forward_one_backward(shape, stage, true, steps); break;
      case PP_SCHEDULE_DUALPIPE_V: dualpipe_v(shape, stage, steps); break;
      default: one_forward_one_backward(shape, stage, false, steps); break;
    }
  }
  return out;
}

}  // namespace pp_strategy
