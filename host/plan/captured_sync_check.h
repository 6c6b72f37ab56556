// paraplan/host/plan/captured_sync_check.h: a CUDA graph cannot hold a wait for the host.
//
// A graph replays fixed kernels of fixed sizes. A dropless MoE layer sizes its dispatch from token
// counts it copies to the host first (the plan's host_sync op), so Megatron-Core refuses to
// capture the whole MoE block ("moe" in cuda_graph_modules) unless the routing is drop-and-pad,
// whose sizes are known in advance (transformer_config.py). Strategies that set the routing check
// their own; this check holds for a plan whatever its strategies (an MoE model without expert
// parallelism routes dropless). "full_iteration" is not checked: it runs Megatron-Core's
// sync-free MoE path (token counts kept on the GPU, from release 26.04).
#pragma once

#include <string>

#include "host/plan/plan.h"

namespace paraplan::host {

// PlanError naming `file` and the key when the composed plan keeps a host_sync op while
// training.cuda_graph_modules captures the MoE block.
void check_captured_host_syncs(const Plan& plan, const std::string& file);

}  // namespace paraplan::host
