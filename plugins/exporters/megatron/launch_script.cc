// launch_script.cc: the script. One bash array per flag group (the layout of Megatron-LM's own
// examples/ scripts), each flag on its own line, then torchrun over the nodes:
//
//   torchrun --nnodes N --nproc-per-node G --node-rank R --master-addr A --master-port P
//     $MEGATRON_PATH/pretrain_gpt.py "${MODEL_ARGS[@]}" ...   (lines continued with backslashes)
//
// NNODES and GPUS_PER_NODE come from the plan's cluster; every variable can be overridden from
// the environment (NODE_RANK and MASTER_ADDR differ per node).
#include "launch_script.h"

#include <algorithm>
#include <sstream>

namespace paraplan_megatron {
namespace {

std::string schedule_text(const pp_pipeline& pipeline) {
  if (pipeline.schedule == PP_SCHEDULE_NONE) return "";
  std::string text(paraplan::schedule_name(pipeline.schedule));
  if (pipeline.schedule == PP_SCHEDULE_INTERLEAVED_1F1B)
    text += ", " + std::to_string(pipeline.virtual_stages) + " virtual stages";
  return text;
}

}  // namespace

std::string plan_summary(const paraplan::PlanView& plan) {
  std::ostringstream text;
  bool first = true;
  for (const pp_mesh_axis& axis : plan.axes()) {
    if (axis.parent[0] != '\0') continue;
    text << (first ? "" : " x ") << axis.name << " " << axis.degree;
    first = false;
    if (std::string_view(axis.name) == PP_AXIS_PP)
      text << " (" << schedule_text(plan.pipeline()) << ", " << plan.pipeline().micro_batches << " micro-batches)";
    std::string inner;
    for (const pp_mesh_axis& child : plan.axes())
      if (std::string_view(child.parent) == axis.name)
        inner += (inner.empty() ? "" : " x ") + std::string(child.name) + " " + std::to_string(child.degree);
    if (!inner.empty()) text << " (" << inner << ")";
  }
  if (first) text << "1 GPU";
  return text.str();
}

std::string launch_script(const LaunchSettings& settings, const std::string& summary, const Translation& flags) {
  const int64_t per_node = std::max<int64_t>(1, std::min(settings.num_gpus, settings.gpus_per_node));
  const int64_t nodes = (settings.num_gpus + per_node - 1) / per_node;
  std::ostringstream script;
  script << "#!/usr/bin/env bash\n"
         << "# Megatron-LM launch script written by `paraplan export --to megatron`.\n"
         << "#   recipe: " << settings.recipe_file << " (model " << settings.model_name << ")\n"
         << "#   plan:   " << settings.num_gpus << " GPUs = " << summary << "\n"
         << "# Flag names follow Megatron-LM's megatron/training/arguments.py. Run it on every node with\n"
         << "# NODE_RANK=0..NNODES-1 and MASTER_ADDR set to node 0's address.\n";
  if (!flags.unexpressed.empty()) {
    script << "# Megatron-LM cannot express, so this run differs from the plan in:\n";
    for (const std::string& line : flags.unexpressed) script << "#   - " << line << "\n";
  }
  script << "set -euo pipefail\n\n"
         << "MEGATRON_PATH=\"${MEGATRON_PATH:-" << settings.megatron_path << "}\"\n"
         << "NNODES=\"${NNODES:-" << nodes << "}\"\n"
         << "GPUS_PER_NODE=\"${GPUS_PER_NODE:-" << per_node << "}\"\n"
         << "NODE_RANK=\"${NODE_RANK:-0}\"\n"
         << "MASTER_ADDR=\"${MASTER_ADDR:-localhost}\"\n"
         << "MASTER_PORT=\"${MASTER_PORT:-6000}\"\n";
  if (flags.ordered_launches)
    script << "\n# Tensor and context parallelism: Megatron-LM requires ordered kernel launches before Blackwell.\n"
           << "export CUDA_DEVICE_MAX_CONNECTIONS=1\n";

  std::vector<const FlagGroup*> groups;
  for (const FlagGroup* group : flags.groups())
    if (!group->flags.empty()) groups.push_back(group);
  for (const FlagGroup* group : groups) {
    script << "\n# " << group->comment << "\n" << group->array << "=(\n";
    for (const auto& [flag, value] : group->flags) script << "  " << flag << (value.empty() ? "" : " " + value) << "\n";
    script << ")\n";
  }

  script << "\ntorchrun \\\n"
         << "  --nnodes \"$NNODES\" \\\n"
         << "  --nproc-per-node \"$GPUS_PER_NODE\" \\\n"
         << "  --node-rank \"$NODE_RANK\" \\\n"
         << "  --master-addr \"$MASTER_ADDR\" \\\n"
         << "  --master-port \"$MASTER_PORT\" \\\n"
         << "  \"$MEGATRON_PATH/pretrain_gpt.py\"";
  for (const FlagGroup* group : groups) script << " \\\n  \"${" << group->array << "[@]}\"";
  script << "\n";
  return script.str();
}

}  // namespace paraplan_megatron
