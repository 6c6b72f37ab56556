// launch_script.h: the bash script that starts pretrain_gpt.py on every node with torchrun.
#pragma once

#include <string>

#include "translation.h"

namespace paraplan_megatron {

struct LaunchSettings {
  std::string recipe_file;
  std::string model_name;
  std::string megatron_path;
  int64_t num_gpus = 1;
  int64_t gpus_per_node = 1;
};

// "tp 8 x pp 2 (1f1b, 256 micro-batches) x dp 4": the plan's mesh in one line.
std::string plan_summary(const paraplan::PlanView& plan);

std::string launch_script(const LaunchSettings& settings, const std::string& summary, const Translation& flags);

}  // namespace paraplan_megatron
