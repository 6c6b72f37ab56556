#include "stage_program.h"

#include <algorithm>
#include <iterator>
#include <span>
#include <string_view>
#include <unordered_map>

#include "paraplan/cost_model.hpp"
#include "paraplan/host_issue.hpp"
#include "plan_ops.h"

namespace rank_program {
namespace {

// Which half of a backward pass a step runs (zero-bubble splits them).
enum class Part { kForward, kBackward, kInputGradient, kWeightGradient };

const char* part_word(Part part) {
  switch (part) {
    case Part::kForward: return "fwd";
    case Part::kBackward: return "bwd";
    case Part::kInputGradient: return "bwd-input";
    case Part::kWeightGradient: return "bwd-weight";
  }
  return "";
}

// One block of a step: a scope (and layer) run in one phase for one micro-batch.
struct Block {
  int32_t step;
  pp_scope scope;
  int64_t layer;  // global layer index for LAYER blocks
  uint32_t kind;  // the layer's kind (PP_EVERY_LAYER_KIND for the other scopes)
  Part part;
  int64_t micro_batch;
  bool last_backward;  // the stage's last backward (or weight-gradient) pass over this chunk
  bool first_forward;  // the stage's first forward pass over this chunk
  // A LAYER block's share of its chunk's layers (PlanView::op_share): among the first ones set
  // apart (recomputed or offloaded) or the rest; kAll when every layer is treated alike.
  paraplan::LayerShare share;
};

class StageBuilder {
 public:
  struct Context {
    const paraplan::PlanView& plan;
    const pp_hardware_profile& profile;
    const OpTable& ops;
    const ProgramSet& set;
    const std::vector<std::vector<int64_t>>& chunk_layers;
    const std::vector<std::vector<int64_t>>& first_layer;  // global index of each chunk's first layer
    const std::vector<uint32_t>& layer_kind;                // of every layer, in model order
    bool split_backward;  // backward passes as B then W steps (zero-bubble, DualPipe-V)
  };

  StageBuilder(const Context& context, int64_t stage) : c_(context), stage_(stage) {}

  StageProgram build(const std::vector<pp_schedule_step>& steps, double overhead_bytes) {
    size_memory(overhead_bytes);
    plan_blocks(steps);
    last_on_stream_.assign(c_.set.streams.size(), -1);
    size_t next_block = 0;
    emit_prefetch(0);
    for (size_t k = 0; k < steps.size(); ++k) {
      const pp_schedule_step& step = steps[k];
      const int32_t index = static_cast<int32_t>(k);
      const Part part = part_of(step.phase);
      const bool forward = part == Part::kForward;
      // The neighbouring virtual stages, nothing to receive or send where there is none or
      // where it runs on this rank (the turn of DualPipe-V's V).
      const int64_t virtual_stage = paraplan::virtual_stage_of(c_.plan.pipeline(), stage_, step.chunk);
      const int64_t before = forward ? virtual_stage - 1 : virtual_stage + 1;
      const int64_t after = forward ? virtual_stage + 1 : virtual_stage - 1;
      const bool upstream = exists_elsewhere(before), downstream = exists_elsewhere(after);
      const bool boundary = part == Part::kForward || part == Part::kBackward || part == Part::kInputGradient;
      program_.step_labels.push_back(std::string(part_word(part)) + " mb" + std::to_string(step.micro_batch) +
                                     " chunk" + std::to_string(step.chunk));

      Instruction begin = marker(index);
      if (boundary && upstream && pipeline_stages() > 1)
        begin.receive = c_.set.message_slot(forward, step.micro_batch, step.chunk);
      on_path(begin);
      if (boundary && upstream) {
        for (uint32_t op : c_.ops.boundary[forward ? 0 : 1]) {
          const pp_op& received = c_.plan.ops()[op];
          if (received.kind == PP_OP_SEND_RECV) continue;
          communicate({op}, c_.ops.one[op], index, intern(label_of(received, "mb" + std::to_string(step.micro_batch))),
                      false);
        }
      }
      if (forward) memory(index, chunk_activation_bytes(step.chunk));
      while (next_block < blocks_.size() && blocks_[next_block].step == index) {
        emit_prefetch(next_block + 1);
        emit_block(next_block);
        ++next_block;
      }
      if (boundary && downstream && pipeline_stages() > 1) send(step, index, forward);
      if (part == Part::kWeightGradient || (part == Part::kBackward && !c_.split_backward))
        memory(index, -chunk_activation_bytes(step.chunk));
      Instruction end = marker(index);
      end.step_end = true;
      on_path(end);
    }
    emit_tail();
    return std::move(program_);
  }

 private:
  int64_t pipeline_stages() const { return static_cast<int64_t>(c_.plan.stages().size()); }
  int64_t chunks() const { return c_.set.virtual_stages; }
  bool exists_elsewhere(int64_t virtual_stage) const {
    if (virtual_stage < 0 || virtual_stage >= pipeline_stages() * chunks()) return false;
    return paraplan::stage_chunk_of(c_.plan.pipeline(), virtual_stage).stage != stage_;
  }
  const pp_stage& stage() const { return c_.plan.stages()[static_cast<size_t>(stage_)]; }
  bool holds(pp_scope scope, int64_t chunk) const {
    if (scope == PP_SCOPE_EMBEDDING) return stage().has_embedding && chunk == 0;
    if (scope == PP_SCOPE_HEAD) return stage().has_head && chunk == chunks() - 1;
    return true;
  }

  Part part_of(pp_phase phase) const {
    if (phase == PP_PHASE_FORWARD) return Part::kForward;
    if (phase == PP_PHASE_WEIGHT_GRADIENT) return Part::kWeightGradient;
    return c_.split_backward ? Part::kInputGradient : Part::kBackward;
  }

  void size_memory(double overhead_bytes) {
    program_.static_bytes = overhead_bytes;
    for (std::vector<double>& share : layer_activations_) share.assign(c_.plan.raw().layer_kind_count, 0.0);
    const auto items = c_.plan.memory();
    for (size_t index = 0; index < items.size(); ++index) {
      const pp_memory_item& item = items[index];
      const uint32_t kind = c_.plan.memory_layer_kind(index);
      const double times = c_.plan.memory_multiplicity(index, static_cast<size_t>(stage_));
      if (item.kind == PP_MEMORY_ACTIVATIONS) {
        if (item.scope == PP_SCOPE_LAYER) {
          std::vector<double>& share = layer_activations_[static_cast<size_t>(c_.plan.memory_share(index))];
          for (uint32_t k = 0; k < share.size(); ++k)
            if (kind == PP_EVERY_LAYER_KIND || kind == k) share[k] += item.bytes;
        } else {
          activations_[item.scope - 1] += item.bytes;
        }
        program_.activation_bytes_per_micro_batch += times * item.bytes;
      } else {
        program_.static_bytes += times * item.bytes;
      }
    }
  }

  double chunk_activation_bytes(int64_t chunk) const {
    double bytes = activations_[PP_SCOPE_STEP - 1] / static_cast<double>(chunks());
    for (size_t share = 0; share < std::size(layer_activations_); ++share)
      for (uint32_t kind = 0; kind < layer_activations_[share].size(); ++kind)
        bytes += static_cast<double>(c_.plan.layers_on_chunk(static_cast<size_t>(stage_), static_cast<size_t>(chunk), kind,
                                                             static_cast<paraplan::LayerShare>(share))) *
                 layer_activations_[share][kind];
    if (holds(PP_SCOPE_EMBEDDING, chunk)) bytes += activations_[PP_SCOPE_EMBEDDING - 1];
    if (holds(PP_SCOPE_HEAD, chunk)) bytes += activations_[PP_SCOPE_HEAD - 1];
    return bytes;
  }

  // Every block of every step, in execution order, so a block can prefetch the next one's parameters.
  void plan_blocks(const std::vector<pp_schedule_step>& steps) {
    const pp_phase final_backward = c_.split_backward ? PP_PHASE_WEIGHT_GRADIENT : PP_PHASE_BACKWARD;
    std::vector<int32_t> last_backward(static_cast<size_t>(chunks()), -1), first_forward(static_cast<size_t>(chunks()), -1);
    for (size_t k = 0; k < steps.size(); ++k) {
      const size_t chunk = static_cast<size_t>(steps[k].chunk);
      if (steps[k].phase == final_backward) last_backward[chunk] = static_cast<int32_t>(k);
      if (steps[k].phase == PP_PHASE_FORWARD && first_forward[chunk] < 0) first_forward[chunk] = static_cast<int32_t>(k);
    }
    for (size_t k = 0; k < steps.size(); ++k) {
      const pp_schedule_step& step = steps[k];
      const Part part = part_of(step.phase);
      const int32_t index = static_cast<int32_t>(k);
      const bool last = last_backward[static_cast<size_t>(step.chunk)] == index;
      const bool first_pass = first_forward[static_cast<size_t>(step.chunk)] == index;
      const int64_t first = c_.first_layer[static_cast<size_t>(stage_)][static_cast<size_t>(step.chunk)];
      const int64_t count = c_.chunk_layers[static_cast<size_t>(stage_)][static_cast<size_t>(step.chunk)];
      std::vector<Block> order;
      if (holds(PP_SCOPE_EMBEDDING, step.chunk))
        order.push_back({index, PP_SCOPE_EMBEDDING, -1, PP_EVERY_LAYER_KIND, part, step.micro_batch, last, first_pass,
                         paraplan::LayerShare::kAll});
      for (int64_t layer = first; layer < first + count; ++layer)
        order.push_back({index, PP_SCOPE_LAYER, layer, c_.layer_kind[static_cast<size_t>(layer)], part, step.micro_batch, last, first_pass,
                         share_of(layer - first)});
      if (holds(PP_SCOPE_HEAD, step.chunk))
        order.push_back({index, PP_SCOPE_HEAD, -1, PP_EVERY_LAYER_KIND, part, step.micro_batch, last, first_pass,
                         paraplan::LayerShare::kAll});
      if (part != Part::kForward) std::reverse(order.begin(), order.end());
      blocks_.insert(blocks_.end(), order.begin(), order.end());
    }
  }

  // Whether op `index` runs in a block of layer kind `kind` (ops of other scopes: every block).
  bool runs_in(uint32_t index, uint32_t kind) const {
    const uint32_t op_kind = c_.plan.op_layer_kind(index);
    return kind == PP_EVERY_LAYER_KIND || op_kind == PP_EVERY_LAYER_KIND || op_kind == kind;
  }
  std::vector<uint32_t> of_kind(const std::vector<uint32_t>& ops, uint32_t kind) const {
    std::vector<uint32_t> kept;
    for (uint32_t op : ops)
      if (runs_in(op, kind)) kept.push_back(op);
    return kept;
  }

  // The share of the layer at `position` in its chunk (0: the first): the chunk's first
  // first_layers_apart are set apart from the rest (recomputed or offloaded).
  paraplan::LayerShare share_of(int64_t position) const {
    const int64_t apart = paraplan::first_layers_apart(c_.plan.training());
    if (apart == 0) return paraplan::LayerShare::kAll;
    return position < apart ? paraplan::LayerShare::kFirst : paraplan::LayerShare::kRest;
  }
  // The ops of `ops` a block of `share` runs: those of every layer and those of its share.
  std::vector<uint32_t> of_share(std::vector<uint32_t> ops, paraplan::LayerShare share) const {
    if (share == paraplan::LayerShare::kAll) return ops;
    std::erase_if(ops, [&](uint32_t op) {
      const paraplan::LayerShare runs_on = c_.plan.op_share(op);
      return runs_on != paraplan::LayerShare::kAll && runs_on != share;
    });
    return ops;
  }

  // The ops a block runs in its phase, in execution order: its scope's, of its layer's kind.
  const std::vector<uint32_t>& block_ops(const Block& block) {
    const size_t scope = static_cast<size_t>(block.scope - 1), part = static_cast<size_t>(block.part);
    auto [found, inserted] = block_ops_.try_emplace(block_key(block.scope, block.kind, part, block.share));
    std::vector<uint32_t>& ops = found->second;
    if (!inserted) return ops;
    if (block.part == Part::kForward) return ops = of_share(of_kind(c_.ops.per_micro_batch[scope][0], block.kind), block.share);
    if (block.part != Part::kWeightGradient)
      ops = of_share(of_kind(c_.ops.per_micro_batch[scope][2], block.kind), block.share);  // recompute first
    const std::vector<uint32_t> backward = of_share(of_kind(c_.ops.per_micro_batch[scope][1], block.kind), block.share);
    ops.insert(ops.end(), backward.rbegin(), backward.rend());
    return ops;
  }
  static uint64_t block_key(pp_scope scope, uint32_t kind, size_t part, paraplan::LayerShare share) {
    return uint64_t{static_cast<uint32_t>(share)} << 40 | uint64_t{kind} << 8 |
           uint64_t{static_cast<uint32_t>(scope)} << 4 | part;
  }

  // Labels are the same for every micro-batch: built once per op (or op range) and block.
  int32_t block_label(uint32_t op_index, const Block& block, bool per_step = false) {
    const uint64_t key = uint64_t{op_index} << 40 | uint64_t{static_cast<uint32_t>(block.scope)} << 36 |
                         static_cast<uint64_t>(block.layer + 1) << 4 | (per_step ? 1u : 0u);
    auto [found, inserted] = transfer_labels_.try_emplace(key, -1);
    if (inserted) {
      const pp_op& op = c_.plan.ops()[op_index];
      found->second = intern(label_of(op, block_name(block) + (per_step ? " (per step)" : "")));
    }
    return found->second;
  }

  std::string block_name(const Block& block) const {
    if (block.scope == PP_SCOPE_LAYER) return "layer " + std::to_string(block.layer);
    return block.scope == PP_SCOPE_EMBEDDING ? "embedding" : "head";
  }

  // What share of an op's priced time a step runs: the input-gradient and weight-gradient steps
  // of a zero-bubble schedule each run half of a backward GEMM (the same flops, Qi et al. 2023).
  float share(const pp_op& op, Part part) const {
    const bool split_gemm = op.kind == PP_OP_GEMM && op.phase == PP_PHASE_BACKWARD;
    if (part == Part::kWeightGradient) return split_gemm ? 0.5f : (reduces_gradients(op) ? 1.0f : 0.0f);
    if (part == Part::kInputGradient) {
      if (reduces_gradients(op)) return 0.0f;
      return split_gemm ? 0.5f : 1.0f;
    }
    return 1.0f;
  }

  void emit_prefetch(size_t block_index) {
    if (block_index >= blocks_.size()) return;
    const Block& block = blocks_[block_index];
    if (block.part == Part::kWeightGradient) return;
    for (uint32_t op : block_ops(block)) {
      const pp_op& gather = c_.plan.ops()[op];
      if (!gathers_parameters(gather) || gather.overlap != PP_OVERLAP_COMPUTE) continue;
      const int32_t at = communicate({op}, c_.ops.seconds[op], block.step, block_label(op, block), /*overlapped=*/true);
      prefetched_[block_index].push_back(at);
    }
    for (uint32_t op : once_per_step_gathers(block)) {
      if (c_.plan.ops()[op].overlap != PP_OVERLAP_COMPUTE) continue;
      const int32_t at = communicate({op}, c_.ops.seconds[op], block.step, block_label(op, block, /*per_step=*/true),
                                     /*overlapped=*/true);
      prefetched_[block_index].push_back(at);
    }
  }

  // The block's gathers that run once per step (gathers_once_per_step), on its first forward pass.
  std::vector<uint32_t> once_per_step_gathers(const Block& block) const {
    std::vector<uint32_t> gathers;
    if (!block.first_forward || block.part != Part::kForward) return gathers;
    for (uint32_t op : c_.ops.per_step[static_cast<size_t>(block.scope - 1)])
      if (gathers_once_per_step(c_.plan.ops()[op]) && runs_in(op, block.kind) && c_.ops.seconds[op] > 0)
        gathers.push_back(op);
    return gathers;
  }

  void emit_block(size_t block_index) {
    const Block& block = blocks_[block_index];
    const std::vector<uint32_t>& ops = block_ops(block);
    std::vector<int32_t> joins;
    auto found = prefetched_.find(block_index);
    if (found != prefetched_.end()) {
      pending_.insert(pending_.end(), found->second.begin(), found->second.end());
      prefetched_.erase(found);
    }
    // Critical parameter gathers before anything else.
    for (uint32_t op : ops) {
      const pp_op& gather = c_.plan.ops()[op];
      if (gathers_parameters(gather) && gather.overlap != PP_OVERLAP_COMPUTE && block.part != Part::kWeightGradient)
        communicate({op}, c_.ops.seconds[op], block.step, block_label(op, block), false);
    }
    for (uint32_t op : once_per_step_gathers(block))
      if (c_.plan.ops()[op].overlap != PP_OVERLAP_COMPUTE)
        communicate({op}, c_.ops.seconds[op], block.step, block_label(op, block, /*per_step=*/true), false);
    // Overlappable communication runs alongside the block's compute, wherever the plan lists it,
    // on the axis's second stream: an overlapped share is another micro-batch's exchange (ep's
    // batch-level overlap) or a ring's next block, which the engines issue on a stream of their
    // own, so the block's critical transfers on the axis do not queue behind it.
    for (uint32_t op_index : ops) {
      const pp_op& op = c_.plan.ops()[op_index];
      const double seconds = c_.ops.seconds[op_index] * share(op, block.part);
      if (communicates(op) && op.overlap == PP_OVERLAP_COMPUTE && !gathers_parameters(op) && !reduces_gradients(op) &&
          seconds > 0)
        joins.push_back(communicate({op_index, share(op, block.part)}, seconds, block.step, block_label(op_index, block),
                                    /*overlapped=*/true, /*second_stream=*/true));
    }
    Segment segment;
    for (uint32_t op_index : ops) {
      const pp_op& op = c_.plan.ops()[op_index];
      const double seconds = c_.ops.seconds[op_index] * share(op, block.part);
      if (!communicates(op)) {
        if (seconds <= 0) continue;
        const bool expert = is_expert(op.name), recompute = op.phase == PP_PHASE_RECOMPUTE;
        if (segment.seconds > 0 && (segment.expert != expert || segment.recompute != recompute)) flush(segment, block);
        segment.add({op_index, share(op, block.part)}, seconds, expert, recompute);
        continue;
      }
      if (gathers_parameters(op) || reduces_gradients(op) || op.overlap == PP_OVERLAP_COMPUTE || seconds <= 0) continue;
      flush(segment, block);
      communicate({op_index, share(op, block.part)}, seconds, block.step, block_label(op_index, block),
                  /*overlapped=*/false);
    }
    flush(segment, block);
    wait_for_host(block);
    pending_.insert(pending_.end(), joins.begin(), joins.end());
    // Weight-gradient reductions once the block's gradients exist.
    for (uint32_t op_index : ops) {
      const pp_op& op = c_.plan.ops()[op_index];
      const double seconds = c_.ops.seconds[op_index] * share(op, block.part);
      if (reduces_gradients(op) && seconds > 0)
        communicate({op_index, share(op, block.part)}, seconds, block.step, block_label(op_index, block),
                    op.overlap == PP_OVERLAP_COMPUTE, /*second_stream=*/true);
    }
    // Per-step gradient reductions of this block, after the stage's last backward pass over it.
    if (block.last_backward && block.part != Part::kInputGradient) {
      for (uint32_t op_index : c_.ops.per_step[static_cast<size_t>(block.scope - 1)]) {
        const pp_op& op = c_.plan.ops()[op_index];
        if (op.overlap == PP_OVERLAP_COMPUTE && !gathers_once_per_step(op) && runs_in(op_index, block.kind))
          communicate({op_index}, c_.ops.seconds[op_index], block.step,
                      block_label(op_index, block, /*per_step=*/true), true, /*reduce=*/reduces_gradients(op));
      }
    }
  }

  // The compute stream idle while the host issues a layer's ops (host_issue.hpp): an instruction
  // of no op after the layer's compute, as long as the analytic model's wait for that pass (a
  // zero-bubble step half of the backward's).
  void wait_for_host(const Block& block) {
    if (block.scope != PP_SCOPE_LAYER) return;
    double seconds = 0;
    if (block.part == Part::kForward) {
      seconds = host_wait(block.kind, PP_PHASE_FORWARD, block.share);
    } else {
      seconds = host_wait(block.kind, PP_PHASE_BACKWARD, block.share) + host_wait(block.kind, PP_PHASE_RECOMPUTE, block.share);
      if (block.part != Part::kBackward) seconds *= 0.5;
    }
    if (seconds <= 0) return;
    Instruction idle;
    idle.kind = Work::kCompute;
    idle.host_wait = true;
    idle.seconds = seconds;
    idle.step = block.step;
    idle.label = intern(std::string("host wait ") + part_word(block.part) + " " + block_name(block));
    on_path(idle);
  }
  double host_wait(uint32_t kind, pp_phase phase, paraplan::LayerShare share) {
    auto [found, inserted] = host_waits_.try_emplace(
        uint64_t{static_cast<uint32_t>(share)} << 40 | uint64_t{kind} << 8 | static_cast<uint32_t>(phase), 0.0);
    if (inserted) {
      const auto on_stream = [&](size_t op) {
        return paraplan::issue::holds_compute_stream(c_.plan.ops()[op]) ? c_.ops.seconds[op] : 0.0;
      };
      found->second =
          paraplan::issue::idle_s(paraplan::issue::layer_pass(c_.plan, c_.profile, kind, phase, on_stream, share));
    }
    return found->second;
  }

  // Consecutive compute ops merged into one instruction.
  struct Segment {
    double seconds = 0;
    bool expert = false, recompute = false;
    int64_t first = -1, last = -1;  // plan op indices
    std::vector<OpRun> runs;
    void add(OpRun run, double more, bool is_expert_op, bool is_recompute) {
      if (first < 0) first = run.op, expert = is_expert_op, recompute = is_recompute;
      last = run.op;
      seconds += more;
      runs.push_back(run);
    }
  };

  void flush(Segment& segment, const Block& block) {
    if (segment.seconds <= 0) return;
    Instruction compute;
    compute.kind = Work::kCompute;
    compute.seconds = segment.seconds;
    compute.step = block.step;
    const uint64_t key = static_cast<uint64_t>(segment.first) << 48 | static_cast<uint64_t>(segment.last) << 32 |
                         uint64_t{static_cast<uint32_t>(block.scope)} << 28 | static_cast<uint64_t>(block.layer + 1) << 4 |
                         (segment.recompute ? 8u : static_cast<uint32_t>(block.part));
    auto [found, inserted] = compute_labels_.try_emplace(key, -1);
    if (inserted) {
      const std::string first = c_.plan.ops()[static_cast<size_t>(segment.first)].name;
      const std::string last = c_.plan.ops()[static_cast<size_t>(segment.last)].name;
      found->second = intern(std::string(segment.recompute ? "recompute" : part_word(block.part)) + " " +
                             block_name(block) + ": " + (first == last ? first : first + ".." + last));
    }
    compute.label = found->second;
    if (segment.expert)
      compute.expert_slot =
          static_cast<int32_t>(block.micro_batch * (c_.plan.model().layer_sequence_length + 1) + block.layer + 1);
    on_path(compute, segment.runs);
    segment.seconds = 0, segment.first = segment.last = -1;
    segment.runs.clear();
  }

  // A transfer on its axis's stream. Critical ones sit on the rank's path (the next compute
  // waits); overlapped ones start when the path reaches them and are joined by the caller.
  // `second_stream`: the axis's other stream (gradient reductions, overlapped shares of exchanges).
  int32_t communicate(OpRun run, double seconds, int32_t step, int32_t label, bool overlapped,
                      bool second_stream = false) {
    const pp_op& op = c_.plan.ops()[run.op];
    Instruction transfer;
    transfer.seconds = seconds;
    transfer.step = step;
    transfer.label = label;
    transfer.owner = owner_of(op);
    if (op.kind == PP_OP_HOST_TRANSFER) {
      transfer.kind = Work::kCompute;  // a copy engine: no group, no mesh link
      transfer.stream = static_cast<int16_t>(c_.set.streams.size() - 1);
    } else {
      transfer.kind = Work::kCollective;
      transfer.axis = static_cast<int16_t>(op.axis);
      transfer.stream = static_cast<int16_t>(1 + 2 * op.axis + (second_stream ? 1 : 0));
      const pp_mesh_axis& axis = c_.plan.axes()[static_cast<size_t>(op.axis)];
      transfer.tier = static_cast<uint8_t>(paraplan::cost::tier_for_span(
          c_.profile, op.kind == PP_OP_SEND_RECV ? axis.stride + 1 : axis.stride * axis.degree));
    }
    return overlapped ? beside_path(transfer, {&run, 1}) : on_path(transfer, {&run, 1});
  }

  void send(const pp_schedule_step& step, int32_t index, bool forward) {
    const int64_t virtual_stage = paraplan::virtual_stage_of(c_.plan.pipeline(), stage_, step.chunk);
    const paraplan::StageChunk next =
        paraplan::stage_chunk_of(c_.plan.pipeline(), forward ? virtual_stage + 1 : virtual_stage - 1);
    const int64_t peer = next.stage, chunk = next.chunk;
    const std::vector<uint32_t>& ops = c_.ops.boundary[forward ? 0 : 1];
    uint32_t last_send = static_cast<uint32_t>(ops.size());
    for (uint32_t i = 0; i < ops.size(); ++i)
      if (c_.plan.ops()[ops[i]].kind == PP_OP_SEND_RECV) last_send = i;
    for (uint32_t i = 0; i < ops.size(); ++i) {
      const pp_op& op = c_.plan.ops()[ops[i]];
      if (op.kind != PP_OP_SEND_RECV) continue;
      Instruction transfer;
      transfer.kind = Work::kSend;
      transfer.seconds = c_.ops.one[ops[i]];
      transfer.step = index;
      transfer.axis = static_cast<int16_t>(op.axis);
      transfer.stream = static_cast<int16_t>(1 + 2 * op.axis);
      const pp_mesh_axis& axis = c_.plan.axes()[static_cast<size_t>(op.axis)];
      transfer.tier = static_cast<uint8_t>(paraplan::cost::tier_for_span(c_.profile, axis.stride + 1));
      transfer.peer_stage = static_cast<int32_t>(peer);
      transfer.owner = owner_of(op);
      transfer.message = c_.set.message_slot(forward, step.micro_batch, chunk);
      transfer.delivers = i == last_send;
      transfer.label = intern(std::string(op.name) + " mb" + std::to_string(step.micro_batch) + " chunk" +
                              std::to_string(step.chunk) + " to stage " + std::to_string(peer));
      const OpRun run{ops[i]};
      if (op.overlap == PP_OVERLAP_COMPUTE)
        beside_path(transfer, {&run, 1});
      else
        on_path(transfer, {&run, 1});
    }
  }

  // After the last step: every stream drained, then the per-step ops no block drained, then phase STEP.
  void emit_tail() {
    for (int32_t last : last_on_stream_)
      if (last >= 0) pending_.push_back(last);
    on_path(marker(-1));
    for (pp_scope scope : {PP_SCOPE_HEAD, PP_SCOPE_LAYER, PP_SCOPE_EMBEDDING, PP_SCOPE_STEP}) {
      for (uint32_t op_index : c_.ops.per_step[static_cast<size_t>(scope - 1)]) {
        // Scope STEP has no block to drain behind: its per-step ops all run here.
        const pp_op& op = c_.plan.ops()[op_index];
        if (gathers_once_per_step(op)) continue;  // the first forward pass issued it
        if (!communicates(op) || op.overlap != PP_OVERLAP_COMPUTE || scope == PP_SCOPE_STEP) tail_op(op_index);
      }
    }
    for (uint32_t op_index : c_.ops.tail) tail_op(op_index);
  }

  // One op of the tail, all its repetitions on this stage at once.
  void tail_op(uint32_t op_index) {
    const pp_op& op = c_.plan.ops()[op_index];
    const double times = c_.plan.op_multiplicity(op_index, static_cast<size_t>(stage_));
    const double seconds = times * c_.ops.seconds[op_index];
    if (seconds <= 0) return;
    const OpRun run{op_index, 1.0f, static_cast<float>(times)};
    if (communicates(op)) {
      communicate(run, seconds, -1, intern(label_of(op, scope_name(op.scope))), false, reduces_gradients(op));
      return;
    }
    Instruction compute;
    compute.seconds = seconds;
    compute.label = intern(std::string(op.name) + " (" + scope_name(op.scope) + ")");
    on_path(compute, {&run, 1});
  }

  std::string scope_name(pp_scope scope) const {
    switch (scope) {
      case PP_SCOPE_LAYER: return std::to_string(stage().layers) + " layers";
      case PP_SCOPE_EMBEDDING: return "embedding";
      case PP_SCOPE_HEAD: return "head";
      default: return "step";
    }
  }

  int16_t owner_of(const pp_op& op) const {
    const auto& owners = c_.set.owners;
    return static_cast<int16_t>(std::find(owners.begin(), owners.end(), std::string_view(op.owner)) - owners.begin());
  }

  std::string label_of(const pp_op& op, const std::string& where) const {
    return std::string(transfer_word(op)) + " " + op.owner + " " + where + " (" + op.name + ")";
  }

  Instruction marker(int32_t step) const {
    Instruction mark;
    mark.kind = Work::kMarker;
    mark.step = step;
    return mark;
  }

  void memory(int32_t step, double bytes) {
    Instruction change = marker(step);
    change.kind = Work::kMemory;
    change.bytes = bytes;
    on_path(change);
  }

  // Appends an instruction on the rank's path: after the previous one and whatever was joined.
  int32_t on_path(Instruction instruction, std::span<const OpRun> runs = {}) {
    instruction.on_path = true;
    instruction.path_previous = last_on_path_;
    if (last_on_path_ >= 0) pending_.push_back(last_on_path_);
    last_on_path_ = add(instruction, pending_, runs);
    pending_.clear();
    return last_on_path_;
  }

  // Appends an instruction that starts when the path reaches this point and runs beside it.
  int32_t beside_path(const Instruction& instruction, std::span<const OpRun> runs) {
    return add(instruction, std::span<const int32_t>(&last_on_path_, last_on_path_ >= 0 ? 1 : 0), runs);
  }

  int32_t add(Instruction instruction, std::span<const int32_t> deps, std::span<const OpRun> runs) {
    instruction.runs_begin = static_cast<uint32_t>(program_.runs.size());
    instruction.runs_count = static_cast<uint32_t>(runs.size());
    program_.runs.insert(program_.runs.end(), runs.begin(), runs.end());
    instruction.deps_begin = static_cast<uint32_t>(program_.dependencies.size());
    for (int32_t dep : deps)
      if (dep >= 0) program_.dependencies.push_back(dep);
    instruction.deps_count = static_cast<uint32_t>(program_.dependencies.size()) - instruction.deps_begin;
    const int32_t index = static_cast<int32_t>(program_.instructions.size());
    program_.instructions.push_back(instruction);
    last_on_stream_[static_cast<size_t>(instruction.stream)] = index;
    return index;
  }

  int32_t intern(const std::string& label) {
    auto [found, inserted] = label_index_.try_emplace(label, static_cast<int32_t>(program_.labels.size()));
    if (inserted) program_.labels.push_back(label);
    return found->second;
  }

  const Context& c_;
  int64_t stage_;
  StageProgram program_;
  std::vector<Block> blocks_;
  double activations_[kScopes] = {};     // per micro-batch, of the scopes other than LAYER
  // Per micro-batch, one layer of each kind, by paraplan::LayerShare (all, recomputed, kept layers).
  std::vector<double> layer_activations_[3];
  int32_t last_on_path_ = -1;
  std::vector<int32_t> pending_;  // overlapped transfers the next instruction on the path waits for
  std::vector<int32_t> last_on_stream_;
  std::unordered_map<size_t, std::vector<int32_t>> prefetched_;  // block -> its prefetched gathers
  std::unordered_map<std::string, int32_t> label_index_;
  std::unordered_map<uint64_t, int32_t> transfer_labels_, compute_labels_;  // see block_label(), flush()
  std::unordered_map<uint64_t, std::vector<uint32_t>> block_ops_;  // see block_ops(), block_key()
  std::unordered_map<uint64_t, double> host_waits_;  // see host_wait()
};

}  // namespace

void index_streams(StageProgram& program, size_t streams) {
  program.next_on_stream.assign(program.instructions.size(), -1);
  program.previous_on_stream.assign(program.instructions.size(), -1);
  program.first_on_stream.assign(streams, -1);
  std::vector<int32_t> last(streams, -1);
  for (size_t i = 0; i < program.instructions.size(); ++i) {
    const size_t stream = static_cast<size_t>(program.instructions[i].stream);
    if (last[stream] < 0)
      program.first_on_stream[stream] = static_cast<int32_t>(i);
    else
      program.next_on_stream[static_cast<size_t>(last[stream])] = static_cast<int32_t>(i);
    program.previous_on_stream[i] = last[stream];
    last[stream] = static_cast<int32_t>(i);
  }
}

ProgramSet build_programs(const paraplan::PlanView& plan, const pp_hardware_binding_v1& given, double overhead_bytes) {
  const pp_hardware_profile profile = paraplan::cost::fit_to_cluster(*given.profile, plan.cluster());
  pp_hardware_binding_v1 hardware = given;
  hardware.profile = &profile;

  ProgramSet set;
  set.streams.push_back("compute");
  for (const pp_mesh_axis& axis : plan.axes()) {
    set.streams.push_back(axis.name);
    set.streams.push_back(std::string(axis.name) + " reduce");
  }
  set.streams.push_back("host");
  for (const pp_op& op : plan.ops())
    if (communicates(op) && std::find(set.owners.begin(), set.owners.end(), op.owner) == set.owners.end())
      set.owners.push_back(op.owner);
  set.micro_batches = std::max<int64_t>(plan.pipeline().micro_batches, 1);
  set.virtual_stages = std::max<int64_t>(plan.pipeline().virtual_stages, 1);
  set.message_slots = static_cast<int32_t>(2 * set.micro_batches * set.virtual_stages);
  const auto ops = plan.ops();
  for (const pp_op& op : ops)
    if (op.kind == PP_OP_SEND_RECV && op.scope == PP_SCOPE_STEP && set.pipeline_axis < 0) set.pipeline_axis = op.axis;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (std::string_view(ops[i].name) != PP_OP_EXPERT_UP) continue;
    for (size_t j = i; j-- > 0 && ops[j].kind == PP_OP_COLLECTIVE;) set.expert_axis = ops[j].axis;
    break;
  }
  if (plan.stages().size() > 1 && set.pipeline_axis < 0)
    throw paraplan::Error(PP_ERROR_UNSUPPORTED, "the plan has " + std::to_string(plan.stages().size()) +
                                                    " pipeline stages but no point-to-point op says which axis links them");

  const OpTable table = sort_ops(plan, hardware);
  set.op_seconds = table.one;
  for (int direction = 0; direction < 2; ++direction)
    for (uint32_t op : table.boundary[direction])
      if (ops[op].kind == PP_OP_SEND_RECV) set.boundary_sends[direction].push_back(op);
  const std::vector<std::vector<int64_t>> layers = chunk_layers(plan, set.virtual_stages);
  const std::vector<uint32_t> kinds = layer_kinds_in_order(plan, layers);
  const int64_t p = static_cast<int64_t>(plan.stages().size());
  std::vector<std::vector<int64_t>> first_layer(layers.size(), std::vector<int64_t>(layers[0].size()));
  int64_t next = 0;
  for (int64_t virtual_stage = 0; virtual_stage < p * set.virtual_stages; ++virtual_stage) {
    const paraplan::StageChunk held = paraplan::stage_chunk_of(plan.pipeline(), virtual_stage);
    const size_t stage = static_cast<size_t>(held.stage), chunk = static_cast<size_t>(held.chunk);
    first_layer[stage][chunk] = next;
    next += layers[stage][chunk];
  }
  const StageBuilder::Context context{plan, profile, table, set, layers, first_layer, kinds,
                                      paraplan::splits_backward(plan.pipeline().schedule)};
  const std::vector<std::vector<pp_schedule_step>> steps = steps_by_stage(plan);
  for (int64_t stage = 0; stage < p; ++stage) {
    StageProgram program = StageBuilder(context, stage).build(steps[static_cast<size_t>(stage)], overhead_bytes);
    index_streams(program, set.streams.size());
    set.stages.push_back(std::move(program));
  }
  return set;
}

}  // namespace rank_program
