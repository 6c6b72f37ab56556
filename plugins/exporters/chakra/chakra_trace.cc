#include "chakra_trace.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <unordered_map>

#include "paraplan/cost_model.hpp"
#include "plan_ops.h"

namespace chakra_export {
namespace {

using simulate::communicates;
using simulate::gathers_parameters;
using simulate::reduces_gradients;

// Which half of a backward pass a step runs (zero-bubble schedules split them).
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

struct Block {
  int32_t step;
  pp_scope scope;
  int64_t layer;  // global layer index for LAYER blocks
  Part part;
  int64_t micro_batch;
  bool last_backward;  // the stage's last backward (or weight-gradient) pass over this chunk
};

struct Context {
  const paraplan::PlanView& plan;
  const simulate::OpTable& ops;
  const std::vector<std::vector<int64_t>>& chunk_layers;
  const std::vector<std::vector<int64_t>>& first_layer;
  int64_t chunks;
  int64_t micro_batches;
  bool zero_bubble;
  bool merge_compute;
  std::set<std::string>& unexpressed;
};

class StageWalker {
 public:
  StageWalker(const Context& context, int64_t stage) : c_(context), stage_(stage) {}

  StageTrace build(const std::vector<pp_schedule_step>& steps) {
    plan_blocks(steps);
    size_t next_block = 0;
    prefetch(0);
    for (size_t k = 0; k < steps.size(); ++k) {
      const pp_schedule_step& step = steps[k];
      const Part part = part_of(step.phase);
      const bool forward = part == Part::kForward;
      const int64_t virtual_stage = step.chunk * stages() + stage_;
      const int64_t last_virtual = stages() * c_.chunks - 1;
      const bool upstream = forward ? virtual_stage > 0 : virtual_stage < last_virtual;
      const bool downstream = forward ? virtual_stage < last_virtual : virtual_stage > 0;
      const bool boundary = part != Part::kWeightGradient;
      const std::string where = std::string(part_word(part)) + " mb" + std::to_string(step.micro_batch);
      if (boundary && upstream && stages() > 1) transfer(step, forward, /*send=*/false);
      if (boundary && upstream) {
        for (uint32_t op : c_.ops.boundary[forward ? 0 : 1]) {
          const pp_op& received = c_.plan.ops()[op];
          if (received.kind != PP_OP_SEND_RECV) communicate(op, 1.0, 1.0, where, /*overlapped=*/false);
        }
      }
      while (next_block < blocks_.size() && blocks_[next_block].step == static_cast<int32_t>(k)) {
        prefetch(next_block + 1);
        emit_block(next_block);
        ++next_block;
      }
      if (boundary && downstream && stages() > 1) transfer(step, forward, /*send=*/true);
    }
    emit_tail();
    return std::move(trace_);
  }

 private:
  int64_t stages() const { return static_cast<int64_t>(c_.plan.stages().size()); }
  const pp_stage& stage() const { return c_.plan.stages()[static_cast<size_t>(stage_)]; }
  bool holds(pp_scope scope, int64_t chunk) const {
    if (scope == PP_SCOPE_EMBEDDING) return stage().has_embedding && chunk == 0;
    if (scope == PP_SCOPE_HEAD) return stage().has_head && chunk == c_.chunks - 1;
    return true;
  }
  Part part_of(pp_phase phase) const {
    if (phase == PP_PHASE_FORWARD) return Part::kForward;
    if (phase == PP_PHASE_WEIGHT_GRADIENT) return Part::kWeightGradient;
    return c_.zero_bubble ? Part::kInputGradient : Part::kBackward;
  }

  void plan_blocks(const std::vector<pp_schedule_step>& steps) {
    const pp_phase final_backward = c_.zero_bubble ? PP_PHASE_WEIGHT_GRADIENT : PP_PHASE_BACKWARD;
    std::vector<int32_t> last_backward(static_cast<size_t>(c_.chunks), -1);
    for (size_t k = 0; k < steps.size(); ++k)
      if (steps[k].phase == final_backward) last_backward[static_cast<size_t>(steps[k].chunk)] = static_cast<int32_t>(k);
    for (size_t k = 0; k < steps.size(); ++k) {
      const pp_schedule_step& step = steps[k];
      const Part part = part_of(step.phase);
      const int32_t index = static_cast<int32_t>(k);
      const bool last = last_backward[static_cast<size_t>(step.chunk)] == index;
      const int64_t first = c_.first_layer[static_cast<size_t>(stage_)][static_cast<size_t>(step.chunk)];
      const int64_t count = c_.chunk_layers[static_cast<size_t>(stage_)][static_cast<size_t>(step.chunk)];
      std::vector<Block> order;
      if (holds(PP_SCOPE_EMBEDDING, step.chunk))
        order.push_back({index, PP_SCOPE_EMBEDDING, -1, part, step.micro_batch, last});
      for (int64_t layer = first; layer < first + count; ++layer)
        order.push_back({index, PP_SCOPE_LAYER, layer, part, step.micro_batch, last});
      if (holds(PP_SCOPE_HEAD, step.chunk)) order.push_back({index, PP_SCOPE_HEAD, -1, part, step.micro_batch, last});
      if (part != Part::kForward) std::reverse(order.begin(), order.end());
      blocks_.insert(blocks_.end(), order.begin(), order.end());
    }
  }

  // The ops a block runs in its phase, in execution order (backward: recompute first, then the
  // backward entries in reverse).
  std::vector<uint32_t> block_ops(const Block& block) const {
    const size_t scope = static_cast<size_t>(block.scope - 1);
    if (block.part == Part::kForward) return c_.ops.per_micro_batch[scope][0];
    std::vector<uint32_t> ops;
    if (block.part != Part::kWeightGradient) ops = c_.ops.per_micro_batch[scope][2];
    const std::vector<uint32_t>& backward = c_.ops.per_micro_batch[scope][1];
    ops.insert(ops.end(), backward.rbegin(), backward.rend());
    return ops;
  }

  // Zero-bubble steps each run half of a backward GEMM; the weight-gradient step runs the grad_*
  // reductions, the input-gradient step everything else.
  double share(const pp_op& op, Part part) const {
    const bool split_gemm = op.kind == PP_OP_GEMM && op.phase == PP_PHASE_BACKWARD;
    if (part == Part::kWeightGradient) return split_gemm ? 0.5 : (reduces_gradients(op) ? 1.0 : 0.0);
    if (part == Part::kInputGradient) {
      if (reduces_gradients(op)) return 0.0;
      return split_gemm ? 0.5 : 1.0;
    }
    return 1.0;
  }

  std::string block_name(const Block& block) const {
    std::string where = std::string(part_word(block.part)) + " mb" + std::to_string(block.micro_batch) + " ";
    if (block.scope == PP_SCOPE_LAYER) return where + "layer" + std::to_string(block.layer);
    return where + (block.scope == PP_SCOPE_EMBEDDING ? "embedding" : "head");
  }

  void prefetch(size_t block_index) {
    if (block_index >= blocks_.size()) return;
    const Block& block = blocks_[block_index];
    if (block.part == Part::kWeightGradient) return;
    for (uint32_t op : block_ops(block)) {
      const pp_op& gather = c_.plan.ops()[op];
      if (!gathers_parameters(gather) || gather.overlap != PP_OVERLAP_COMPUTE) continue;
      for (uint32_t id : communicate(op, 1.0, 1.0, block_name(block), /*overlapped=*/true))
        prefetched_[block_index].push_back(id);
    }
  }

  struct Segment {
    double seconds = 0, flops = 0;
    bool expert = false, recompute = false;
    int64_t first = -1, last = -1;
  };

  void emit_block(size_t block_index) {
    const Block& block = blocks_[block_index];
    const std::vector<uint32_t> ops = block_ops(block);
    const std::string where = block_name(block);
    auto found = prefetched_.find(block_index);
    if (found != prefetched_.end()) {
      joins_.insert(joins_.end(), found->second.begin(), found->second.end());
      prefetched_.erase(found);
    }
    for (uint32_t op_index : ops) {
      const pp_op& op = c_.plan.ops()[op_index];
      if (gathers_parameters(op) && op.overlap != PP_OVERLAP_COMPUTE && block.part != Part::kWeightGradient)
        communicate(op_index, 1.0, 1.0, where, false);
    }
    std::vector<uint32_t> block_joins;
    for (uint32_t op_index : ops) {
      const pp_op& op = c_.plan.ops()[op_index];
      if (communicates(op) && op.overlap == PP_OVERLAP_COMPUTE && !gathers_parameters(op) && !reduces_gradients(op) &&
          share(op, block.part) > 0)
        for (uint32_t id : communicate(op_index, share(op, block.part), 1.0, where, true)) block_joins.push_back(id);
    }
    Segment segment;
    for (uint32_t op_index : ops) {
      const pp_op& op = c_.plan.ops()[op_index];
      const double part_share = share(op, block.part);
      const double seconds = c_.ops.seconds[op_index] * part_share;
      if (!communicates(op)) {
        if (seconds <= 0 && op.flops * part_share <= 0) continue;
        const bool expert = simulate::is_expert(op.name), recompute = op.phase == PP_PHASE_RECOMPUTE;
        if (segment.first >= 0 &&
            (!c_.merge_compute || segment.expert != expert || segment.recompute != recompute))
          flush(segment, block);
        if (segment.first < 0) segment.first = op_index, segment.expert = expert, segment.recompute = recompute;
        segment.last = op_index;
        segment.seconds += seconds;
        segment.flops += op.flops * std::max<uint32_t>(op.repeat, 1) * part_share;
        continue;
      }
      if (gathers_parameters(op) || reduces_gradients(op) || op.overlap == PP_OVERLAP_COMPUTE || part_share <= 0) continue;
      flush(segment, block);
      communicate(op_index, part_share, 1.0, where, false);
    }
    flush(segment, block);
    joins_.insert(joins_.end(), block_joins.begin(), block_joins.end());
    for (uint32_t op_index : ops) {
      const pp_op& op = c_.plan.ops()[op_index];
      if (!reduces_gradients(op) || share(op, block.part) <= 0) continue;
      const bool overlapped = op.overlap == PP_OVERLAP_COMPUTE;
      for (uint32_t id : communicate(op_index, 1.0, 1.0, where, overlapped))
        if (overlapped) drains_.push_back(id);
    }
    if (block.last_backward && block.part != Part::kInputGradient) {
      for (uint32_t op_index : c_.ops.per_step[static_cast<size_t>(block.scope - 1)]) {
        const pp_op& op = c_.plan.ops()[op_index];
        if (communicates(op) && op.overlap == PP_OVERLAP_COMPUTE)
          for (uint32_t id : communicate(op_index, 1.0, 1.0, where + " per-step", true)) drains_.push_back(id);
      }
    }
  }

  void flush(Segment& segment, const Block& block) {
    if (segment.first < 0) return;
    TraceNode node;
    node.kind = NodeKind::kCompute;
    node.seconds = segment.seconds;
    node.flops = segment.flops;
    const std::string first = c_.plan.ops()[static_cast<size_t>(segment.first)].name;
    const std::string last = c_.plan.ops()[static_cast<size_t>(segment.last)].name;
    node.name = (segment.recompute ? "recompute " : "") + block_name(block) + ": " +
                (first == last ? first : first + ".." + last);
    on_path(std::move(node));
    segment = Segment{};
  }

  // One communication op: `repeat` nodes (identical back-to-back instances), each `scale` times
  // its buffer (the tail's per-layer ops bucketed over the stage's layers).
  std::vector<uint32_t> communicate(uint32_t op_index, double time_share, double scale, const std::string& where,
                                    bool overlapped) {
    const pp_op& op = c_.plan.ops()[op_index];
    std::vector<uint32_t> ids;
    if (op.kind == PP_OP_SEND_RECV) {
      c_.unexpressed.insert(std::string("point-to-point op '") + op.name +
                            "' outside the pipeline boundary has no peer in the plan: left out of the traces");
      return ids;
    }
    const uint32_t repeat = std::max<uint32_t>(op.repeat, 1);
    for (uint32_t i = 0; i < repeat; ++i) {
      TraceNode node;
      node.seconds = c_.ops.one[op_index] * time_share * scale;
      if (op.kind == PP_OP_HOST_TRANSFER) {
        // Chakra's memory nodes model remote (disaggregated) memory, not a host copy engine.
        c_.unexpressed.insert("host transfers (offload) are written as COMP nodes of their priced duration");
        node.kind = NodeKind::kCompute;
        node.name = "host copy " + where + " (" + op.name + ")";
      } else {
        node.kind = NodeKind::kCollective;
        node.collective = op.collective;
        node.axis = op.axis;
        node.bytes = op.bytes * scale;
        node.name = std::string(simulate::transfer_word(op)) + " " + c_.plan.axes()[static_cast<size_t>(op.axis)].name +
                    " " + where + " (" + op.name + ")";
      }
      ids.push_back(overlapped ? beside_path(std::move(node)) : on_path(std::move(node)));
    }
    return ids;
  }

  // The pipeline boundary of a step: receives from upstream before it, sends downstream after.
  void transfer(const pp_schedule_step& step, bool forward, bool send) {
    const int64_t p = stages();
    int64_t peer, receiver_chunk = step.chunk;
    if (send == forward) {  // towards stage + 1: a forward send, or a backward receive
      peer = stage_ + 1;
      if (peer == p) peer = 0, receiver_chunk += send ? 1 : 0;
    } else {
      peer = stage_ - 1;
      if (peer < 0) peer = p - 1, receiver_chunk -= send ? 1 : 0;
    }
    const std::vector<uint32_t>& ops = c_.ops.boundary[forward ? 0 : 1];
    int32_t sends = 0;
    for (uint32_t op : ops)
      if (c_.plan.ops()[op].kind == PP_OP_SEND_RECV) ++sends;
    int32_t slot = 0;
    for (uint32_t op_index : ops) {
      const pp_op& op = c_.plan.ops()[op_index];
      if (op.kind != PP_OP_SEND_RECV) continue;
      TraceNode node;
      node.kind = send ? NodeKind::kSend : NodeKind::kRecv;
      node.seconds = c_.ops.one[op_index];
      node.bytes = op.bytes;
      node.axis = op.axis;
      node.peer_stage = static_cast<int32_t>(peer);
      node.tag = static_cast<int32_t>((((forward ? 0 : 1) * c_.micro_batches + step.micro_batch) * c_.chunks +
                                       receiver_chunk) * sends + slot);
      ++slot;
      node.name = std::string(send ? "send " : "recv ") + (forward ? "fwd" : "bwd") + " mb" +
                  std::to_string(step.micro_batch) + " chunk" + std::to_string(step.chunk) +
                  (send ? " to stage " : " from stage ") + std::to_string(peer) + " (" + op.name + ")";
      if (send && op.overlap == PP_OVERLAP_COMPUTE)
        drains_.push_back(beside_path(std::move(node)));
      else
        on_path(std::move(node));
    }
  }

  // After the last step: per-step ops that could not overlap, then phase STEP (the optimizer
  // update and what follows it), waiting for every overlapped transfer still running.
  void emit_tail() {
    joins_.insert(joins_.end(), drains_.begin(), drains_.end());
    drains_.clear();
    for (pp_scope scope : {PP_SCOPE_HEAD, PP_SCOPE_LAYER, PP_SCOPE_EMBEDDING, PP_SCOPE_STEP})
      for (uint32_t op_index : c_.ops.per_step[static_cast<size_t>(scope - 1)]) {
        const pp_op& op = c_.plan.ops()[op_index];
        if (!communicates(op) || op.overlap != PP_OVERLAP_COMPUTE || scope == PP_SCOPE_STEP) tail_op(op_index);
      }
    for (uint32_t op_index : c_.ops.tail) tail_op(op_index);
  }

  double multiplicity(pp_scope scope) const {
    switch (scope) {
      case PP_SCOPE_LAYER: return static_cast<double>(stage().layers);
      case PP_SCOPE_EMBEDDING: return stage().has_embedding ? 1.0 : 0.0;
      case PP_SCOPE_HEAD: return stage().has_head ? 1.0 : 0.0;
      default: return 1.0;
    }
  }

  void tail_op(uint32_t op_index) {
    const pp_op& op = c_.plan.ops()[op_index];
    const double times = multiplicity(op.scope);
    if (times <= 0) return;
    const std::string where = op.scope == PP_SCOPE_LAYER ? std::to_string(stage().layers) + " layers"
                              : op.scope == PP_SCOPE_EMBEDDING ? "embedding"
                              : op.scope == PP_SCOPE_HEAD      ? "head"
                                                               : "step";
    if (communicates(op)) {
      communicate(op_index, 1.0, times, "tail " + where, false);
      return;
    }
    TraceNode node;
    node.seconds = c_.ops.seconds[op_index] * times;
    node.flops = op.flops * std::max<uint32_t>(op.repeat, 1) * times;
    if (node.seconds <= 0 && node.flops <= 0) return;
    node.name = std::string("tail ") + op.name + " (" + where + ")";
    on_path(std::move(node));
  }

  uint32_t add(TraceNode node) {
    const uint32_t id = static_cast<uint32_t>(trace_.nodes.size());
    std::sort(node.deps.begin(), node.deps.end());
    node.deps.erase(std::unique(node.deps.begin(), node.deps.end()), node.deps.end());
    trace_.nodes.push_back(std::move(node));
    return id;
  }
  // On the rank's path: after the node before it and whatever was joined.
  uint32_t on_path(TraceNode node) {
    if (last_ >= 0) node.deps.push_back(static_cast<uint32_t>(last_));
    node.deps.insert(node.deps.end(), joins_.begin(), joins_.end());
    joins_.clear();
    const uint32_t id = add(std::move(node));
    last_ = id;
    return id;
  }
  // Starts when the path reaches it and runs beside it.
  uint32_t beside_path(TraceNode node) {
    if (last_ >= 0) node.deps.push_back(static_cast<uint32_t>(last_));
    return add(std::move(node));
  }

  const Context& c_;
  int64_t stage_;
  StageTrace trace_;
  std::vector<Block> blocks_;
  int64_t last_ = -1;
  std::vector<uint32_t> joins_, drains_;
  std::unordered_map<size_t, std::vector<uint32_t>> prefetched_;
};

}  // namespace

TraceSet build_traces(const paraplan::PlanView& plan, const pp_hardware_binding_v1& given, const TraceOptions& options) {
  const pp_hardware_profile profile = paraplan::cost::fit_to_cluster(*given.profile, plan.cluster());
  pp_hardware_binding_v1 hardware = given;
  hardware.profile = &profile;

  TraceSet set;
  for (const pp_op& op : plan.ops())
    if (op.kind == PP_OP_SEND_RECV && op.scope == PP_SCOPE_STEP && set.pipeline_axis < 0) set.pipeline_axis = op.axis;
  if (plan.stages().size() > 1 && set.pipeline_axis < 0)
    throw paraplan::Error(PP_ERROR_UNSUPPORTED, "the plan has " + std::to_string(plan.stages().size()) +
                                                    " pipeline stages but no point-to-point op says which axis links them");
  const int64_t chunks = std::max<int64_t>(plan.pipeline().virtual_stages, 1);
  const simulate::OpTable table = simulate::sort_ops(plan, hardware);
  const std::vector<std::vector<int64_t>> layers = simulate::chunk_layers(plan, chunks);
  const int64_t p = static_cast<int64_t>(plan.stages().size());
  std::vector<std::vector<int64_t>> first_layer(layers.size(), std::vector<int64_t>(static_cast<size_t>(chunks)));
  int64_t next = 0;
  for (int64_t virtual_stage = 0; virtual_stage < p * chunks; ++virtual_stage) {
    const size_t stage = static_cast<size_t>(virtual_stage % p), chunk = static_cast<size_t>(virtual_stage / p);
    first_layer[stage][chunk] = next;
    next += layers[stage][chunk];
  }
  std::set<std::string> unexpressed;
  const Context context{plan,
                        table,
                        layers,
                        first_layer,
                        chunks,
                        std::max<int64_t>(plan.pipeline().micro_batches, 1),
                        plan.pipeline().schedule == PP_SCHEDULE_ZERO_BUBBLE,
                        options.merge_compute,
                        unexpressed};
  const std::vector<std::vector<pp_schedule_step>> steps = simulate::steps_by_stage(plan);
  for (int64_t stage = 0; stage < p; ++stage)
    set.stages.push_back(StageWalker(context, stage).build(steps[static_cast<size_t>(stage)]));
  set.unexpressed.assign(unexpressed.begin(), unexpressed.end());
  return set;
}

}  // namespace chakra_export
