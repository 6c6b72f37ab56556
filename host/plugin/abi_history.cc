#include "host/plugin/abi_history.h"

#include <stdexcept>

#include "paraplan/abi_history.h"

namespace paraplan::host {
namespace {

// What never grew within major 1.
constexpr size_t kHardware = sizeof(pp_hardware_v1), kExporter = sizeof(pp_exporter_v1);
constexpr size_t kOp = sizeof(pp_op), kMemory = sizeof(pp_memory_item), kPipeline = sizeof(pp_pipeline),
                 kStage = sizeof(pp_stage), kStep = sizeof(pp_schedule_step), kSpec = sizeof(pp_param_spec),
                 kCase = sizeof(pp_search_case), kChoice = sizeof(pp_search_choice),
                 kFigures = sizeof(pp_plan_figures);

constexpr AbiMinorSizes kHistory[] = {
    {0, PP_PLUGIN_V1_SIZE_1_0, PP_STRATEGY_V1_SIZE_1_0, PP_EXECUTOR_V1_SIZE_1_0, kHardware, 0,
     PP_HARDWARE_PROFILE_SIZE_1_0, kOp, kMemory, kPipeline, kStage, kStep, kSpec, 0, 0, 0},
    {1, PP_PLUGIN_V1_SIZE_1_0, PP_STRATEGY_V1_SIZE_1_1, PP_EXECUTOR_V1_SIZE_1_1, kHardware, 0,
     PP_HARDWARE_PROFILE_SIZE_1_0, kOp, kMemory, kPipeline, kStage, kStep, kSpec, kCase, kChoice, kFigures},
    {2, PP_PLUGIN_V1_SIZE_1_0, PP_STRATEGY_V1_SIZE_1_1, PP_EXECUTOR_V1_SIZE_1_1, kHardware, 0,
     PP_HARDWARE_PROFILE_SIZE_1_2, kOp, kMemory, kPipeline, kStage, kStep, kSpec, kCase, kChoice, kFigures},
    {3, PP_PLUGIN_V1_SIZE_1_3, PP_STRATEGY_V1_SIZE_1_1, PP_EXECUTOR_V1_SIZE_1_1, kHardware, kExporter,
     PP_HARDWARE_PROFILE_SIZE_1_2, kOp, kMemory, kPipeline, kStage, kStep, kSpec, kCase, kChoice, kFigures},
    {4, PP_PLUGIN_V1_SIZE_1_3, PP_STRATEGY_V1_SIZE_1_1, PP_EXECUTOR_V1_SIZE_1_4, kHardware, kExporter,
     PP_HARDWARE_PROFILE_SIZE_1_2, kOp, kMemory, kPipeline, kStage, kStep, kSpec, kCase, kChoice, kFigures},
    {5, PP_PLUGIN_V1_SIZE_1_5, PP_STRATEGY_V1_SIZE_1_1, PP_EXECUTOR_V1_SIZE_1_4, kHardware, kExporter,
     PP_HARDWARE_PROFILE_SIZE_1_2, kOp, kMemory, kPipeline, kStage, kStep, kSpec, kCase, kChoice, kFigures},
    {6, PP_PLUGIN_V1_SIZE_1_5, PP_STRATEGY_V1_SIZE_1_1, PP_EXECUTOR_V1_SIZE_1_4, kHardware, kExporter,
     PP_HARDWARE_PROFILE_SIZE_1_6, kOp, kMemory, kPipeline, kStage, kStep, kSpec, kCase, kChoice, kFigures},
    {7, PP_PLUGIN_V1_SIZE_1_5, PP_STRATEGY_V1_SIZE_1_1, PP_EXECUTOR_V1_SIZE_1_4, kHardware, kExporter,
     PP_HARDWARE_PROFILE_SIZE_1_6, kOp, kMemory, kPipeline, kStage, kStep, kSpec, kCase, kChoice, kFigures},
    {8, PP_PLUGIN_V1_SIZE_1_5, PP_STRATEGY_V1_SIZE_1_1, PP_EXECUTOR_V1_SIZE_1_4, kHardware, kExporter,
     PP_HARDWARE_PROFILE_SIZE_1_8, kOp, kMemory, kPipeline, kStage, kStep, kSpec, kCase, kChoice, kFigures},
};

static_assert(std::size(kHistory) == PP_ABI_MINOR + 1, "a row per released minor, this host's the last");
static_assert(kHistory[PP_ABI_MINOR].plugin == sizeof(pp_plugin_v1) &&
                  kHistory[PP_ABI_MINOR].strategy == sizeof(pp_strategy_v1) &&
                  kHistory[PP_ABI_MINOR].executor == sizeof(pp_executor_v1) &&
                  kHistory[PP_ABI_MINOR].hardware_profile == sizeof(pp_hardware_profile),
              "the current minor's row is today's sizeof");

}  // namespace

std::span<const AbiMinorSizes> abi_history() { return kHistory; }

const AbiMinorSizes& abi_sizes(uint32_t minor) {
  if (minor > PP_ABI_MINOR) throw std::out_of_range("ABI minor " + std::to_string(minor) + " is newer than this host");
  return kHistory[minor];
}

bool holds_fields_of(uint32_t plugin_minor, uint32_t struct_size, uint32_t since, size_t AbiMinorSizes::*column) {
  return plugin_minor >= since && since <= PP_ABI_MINOR && struct_size >= kHistory[since].*column;
}

}  // namespace paraplan::host
