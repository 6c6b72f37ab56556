#include "host/plan/captured_sync_check.h"

#include <algorithm>
#include <string_view>

#include "host/core/errors.h"
#include "paraplan/names.h"

namespace paraplan::host {

void check_captured_host_syncs(const Plan& plan, const std::string& file) {
  if (!(plan.training().cuda_graph_modules & PP_CUDA_GRAPH_MOE)) return;
  const std::vector<pp_op>& ops = plan.op_list();
  const bool waits = std::any_of(ops.begin(), ops.end(),
                                 [](const pp_op& op) { return std::string_view(op.name) == PP_OP_HOST_SYNC; });
  if (waits)
    throw PlanError(file + ": training.cuda_graph_modules: \"moe\" captures the whole MoE block, but the plan routes "
                    "dropless (each MoE layer waits for its token counts on the host, which a CUDA graph cannot "
                    "replay): route drop-and-pad (a capacity factor with padded buffers) or capture moe_router and "
                    "moe_preprocess instead");
}

}  // namespace paraplan::host
