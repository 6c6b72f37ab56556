/* The struct sizes one frozen minor's headers give, as the array PARAPLAN_ABI_SIZES_SYMBOL, in
 * the column order of host/plugin/abi_history.h (0 where the minor has no such struct). */
#include "paraplan/plugin.h"

const size_t PARAPLAN_ABI_SIZES_SYMBOL[15] = {
    sizeof(pp_plugin_v1), sizeof(pp_strategy_v1), sizeof(pp_executor_v1), sizeof(pp_hardware_v1),
#if PP_ABI_MINOR >= 3
    sizeof(pp_exporter_v1),
#else
    0,
#endif
    sizeof(pp_hardware_profile), sizeof(pp_op), sizeof(pp_memory_item), sizeof(pp_pipeline), sizeof(pp_stage),
    sizeof(pp_schedule_step), sizeof(pp_param_spec),
#if PP_ABI_MINOR >= 1
    sizeof(pp_search_case), sizeof(pp_search_choice), sizeof(pp_plan_figures),
#else
    0, 0, 0,
#endif
};
