#include "chakra_trace.h"

#include <algorithm>
#include <set>
#include <span>

#include "paraplan/cost_model.hpp"
#include "plan_ops.h"
#include "stage_program.h"

namespace chakra_export {
namespace {

using rank_program::Instruction;
using rank_program::OpRun;
using rank_program::ProgramSet;
using rank_program::StageProgram;
using rank_program::Work;

// One stage program as Chakra nodes. Each instruction maps to the nodes that finish it (its
// exits); an instruction that becomes no node passes on the exits of what it waited for.
class StageTranslator {
 public:
  StageTranslator(const paraplan::PlanView& plan, const ProgramSet& set, int64_t stage, bool merge_compute,
                  std::set<std::string>& unexpressed)
      : plan_(plan), set_(set), stage_(stage), merge_compute_(merge_compute), unexpressed_(unexpressed) {}

  StageTrace translate(const StageProgram& program) {
    program_ = &program;
    exits_.assign(program.instructions.size(), {});
    for (size_t i = 0; i < program.instructions.size(); ++i) {
      const Instruction& instruction = program.instructions[i];
      std::vector<uint32_t> waits;
      for (uint32_t d = 0; d < instruction.deps_count; ++d) {
        const std::vector<uint32_t>& before = exits_[static_cast<size_t>(program.dependencies[instruction.deps_begin + d])];
        waits.insert(waits.end(), before.begin(), before.end());
      }
      std::sort(waits.begin(), waits.end());
      waits.erase(std::unique(waits.begin(), waits.end()), waits.end());
      exits_[i] = translate(instruction, std::move(waits));
    }
    return std::move(trace_);
  }

 private:
  std::span<const OpRun> runs(const Instruction& instruction) const {
    return {program_->runs.data() + instruction.runs_begin, instruction.runs_count};
  }
  std::string where(const Instruction& instruction) const {
    const std::string step = instruction.step >= 0 ? program_->step_labels[static_cast<size_t>(instruction.step)] : "tail";
    return instruction.label >= 0 ? step + " | " + program_->labels[static_cast<size_t>(instruction.label)] : step;
  }
  double run_seconds(const OpRun& run) const {
    const pp_op& op = plan_.ops()[run.op];
    return set_.op_seconds[run.op] * std::max<uint32_t>(op.repeat, 1) * run.share * run.times;
  }
  double run_flops(const OpRun& run) const {
    const pp_op& op = plan_.ops()[run.op];
    return op.flops * std::max<uint32_t>(op.repeat, 1) * run.share * run.times;
  }

  std::vector<uint32_t> translate(const Instruction& instruction, std::vector<uint32_t> waits) {
    switch (instruction.kind) {
      case Work::kMarker:
      case Work::kMemory:
        if (instruction.receive < 0) return waits;
        return {receive(instruction, std::move(waits))};
      case Work::kCompute: return {compute(instruction, std::move(waits))};
      case Work::kCollective: return collective(instruction, std::move(waits));
      case Work::kSend: return {send(instruction, std::move(waits))};
    }
    return waits;
  }

  uint32_t compute(const Instruction& instruction, std::vector<uint32_t> waits) {
    const bool host_copy = static_cast<size_t>(instruction.stream) + 1 == set_.streams.size();
    if (host_copy)  // Chakra's memory nodes model remote (disaggregated) memory, not a host copy engine.
      unexpressed_.insert("host transfers (offload) are written as COMP nodes of their priced duration");
    if (merge_compute_ || host_copy || instruction.runs_count <= 1) {
      TraceNode node;
      node.name = (host_copy ? "host copy " : "") + where(instruction);
      node.seconds = instruction.seconds;
      if (!host_copy)
        for (const OpRun& run : runs(instruction)) node.flops += run_flops(run);
      node.deps = std::move(waits);
      return add(std::move(node));
    }
    uint32_t last = 0;
    for (const OpRun& run : runs(instruction)) {
      TraceNode node;
      node.name = where(instruction) + " | " + plan_.ops()[run.op].name;
      node.seconds = run_seconds(run);
      node.flops = run_flops(run);
      node.deps = std::move(waits);
      waits = {last = add(std::move(node))};
    }
    return last;
  }

  // A collective op's instances, one after the other (they share a communicator).
  std::vector<uint32_t> collective(const Instruction& instruction, std::vector<uint32_t> waits) {
    const OpRun& run = runs(instruction).front();
    const pp_op& op = plan_.ops()[run.op];
    if (op.kind == PP_OP_SEND_RECV) {
      unexpressed_.insert(std::string("point-to-point op '") + op.name +
                          "' outside the pipeline boundary has no peer in the plan: left out of the traces");
      return waits;
    }
    if (paraplan::cost::routed_exchange(op))
      unexpressed_.insert(std::string("'") + op.name +
                          "' sends a token once per node across the network (DeepEP); Chakra has no such "
                          "collective: written as an ALL_TO_ALL of its buffer, which a simulator prices per copy");
    uint32_t last = 0;
    for (uint32_t i = 0; i < std::max<uint32_t>(op.repeat, 1); ++i) {
      TraceNode node;
      node.kind = NodeKind::kCollective;
      node.name = where(instruction);
      node.seconds = set_.op_seconds[run.op] * run.share * run.times;
      node.bytes = op.bytes * run.times;
      node.collective = op.collective;
      node.axis = op.axis;
      node.deps = std::move(waits);
      waits = {last = add(std::move(node))};
    }
    return {last};
  }

  uint32_t send(const Instruction& instruction, std::vector<uint32_t> waits) {
    const OpRun& run = runs(instruction).front();
    TraceNode node;
    node.kind = NodeKind::kSend;
    node.name = "send " + where(instruction);
    node.seconds = instruction.seconds;
    node.bytes = plan_.ops()[run.op].bytes;
    node.axis = instruction.axis;
    node.peer_stage = instruction.peer_stage;
    node.tag = set_.message_tag(instruction.message, run.op);
    node.deps = std::move(waits);
    return add(std::move(node));
  }

  // The receives a step starts with: one per point-to-point op of the message it waits for.
  uint32_t receive(const Instruction& instruction, std::vector<uint32_t> waits) {
    const int32_t slot = instruction.receive;
    const int64_t peer = set_.sender_stage(slot, stage_, static_cast<int64_t>(plan_.stages().size()));
    uint32_t last = 0;
    for (uint32_t op : set_.message_ops(slot)) {
      TraceNode node;
      node.kind = NodeKind::kRecv;
      node.name = "recv " + where(instruction) + " from stage " + std::to_string(peer) + " (" + plan_.ops()[op].name + ")";
      node.seconds = set_.op_seconds[op];
      node.bytes = plan_.ops()[op].bytes;
      node.axis = plan_.ops()[op].axis;
      node.peer_stage = static_cast<int32_t>(peer);
      node.tag = set_.message_tag(slot, op);
      node.deps = std::move(waits);
      waits = {last = add(std::move(node))};
    }
    return last;
  }

  uint32_t add(TraceNode node) {
    trace_.nodes.push_back(std::move(node));
    return static_cast<uint32_t>(trace_.nodes.size() - 1);
  }

  const paraplan::PlanView& plan_;
  const ProgramSet& set_;
  int64_t stage_;
  bool merge_compute_;
  std::set<std::string>& unexpressed_;
  const StageProgram* program_ = nullptr;
  std::vector<std::vector<uint32_t>> exits_;  // per instruction
  StageTrace trace_;
};

}  // namespace

TraceSet build_traces(const paraplan::PlanView& plan, const pp_hardware_binding_v1& hardware, const TraceOptions& options) {
  // Chakra has no memory nodes for activations: the runtime overhead is irrelevant here.
  const ProgramSet programs = rank_program::build_programs(plan, hardware, /*overhead_bytes=*/0);
  TraceSet set;
  set.pipeline_axis = programs.pipeline_axis;
  std::set<std::string> unexpressed;
  for (size_t stage = 0; stage < programs.stages.size(); ++stage)
    set.stages.push_back(StageTranslator(plan, programs, static_cast<int64_t>(stage), options.merge_compute, unexpressed)
                             .translate(programs.stages[stage]));
  set.unexpressed.assign(unexpressed.begin(), unexpressed.end());
  return set;
}

}  // namespace chakra_export
