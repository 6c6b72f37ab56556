// zoo_bad_edits: a strategy whose plan edits are out of range (a dtype of 10^8, NaN flops), and
// which ignores the host's refusal and returns success: the host fails it with its own reason.
#include <cmath>

#include "c_abi_plugin.h"

namespace {

pp_status apply(void*, const pp_strategy_context*, const pp_plan_api_v1* plan, pp_error*) {
  pp_op op{};
  op.struct_size = sizeof(op);
  op.kind = PP_OP_GEMM;
  op.phase = PP_PHASE_FORWARD;
  op.scope = PP_SCOPE_LAYER;
  op.frequency = PP_PER_MICRO_BATCH;
  op.dtype = static_cast<pp_dtype>(100000000);
  op.repeat = 1;
  op.axis = -1;
  op.flops = NAN;
  std::snprintf(op.name, sizeof(op.name), "zoo_gemm");
  pp_plan_view_v1 view{};
  view.struct_size = sizeof(view);
  plan->get_view(plan->plan, &view);
  plan->insert_op(plan->plan, view.op_count, &op);  // refused, and the status is ignored
  return PP_OK;
}

pp_strategy_v1 table;
pp_plugin_v1 plugin;

}  // namespace

PP_EXTERN_C PP_EXPORT const pp_plugin_v1* paraplan_plugin_v1(void) {
  table = paraplan_test::accepting_strategy;
  table.struct_size = sizeof(pp_strategy_v1);  // this minor's table, search cases empty
  table.apply = &apply;
  plugin = paraplan_test::strategy_plugin("zoo_bad_edits", "plan edits out of range", PP_ABI_MAJOR, PP_ABI_MINOR, &table);
  return &plugin;
}
PP_DECLARE_ENTRY_ALIAS_V1(paraplan_plugin_v1)
