// paraplan/host/plan/execution.h: running an executor plugin over a composed plan.
//
// The host adds the plan's own keys (plan.num_gpus, plan.mesh.<axis>, plan.micro_batch,
// plan.global_batch, plan.num_micro_batches, plan.strategies...) and the executor adds its
// results (memory.*, time.*, comm.*, throughput.*); every strategy of the plan has
// comm.<name>.bytes_per_gpu_per_step and time.exposed_comm_s.<name>, 0 when it communicates
// nothing. A boolean "memory.fits" = false makes the command exit with code 1 after printing
// the report.
#pragma once

#include <string>

#include "host/plan/composer.h"
#include "host/plan/hardware_binding.h"
#include "host/report/result_tree.h"

namespace paraplan::host {

void describe_plan(ResultTree& results, const Recipe& recipe, const ComposedPlan& composed,
                   const HardwareBinding& hardware);

ResultTree run_executor(const std::string& executor, const Recipe& recipe, const PluginCatalog& catalog,
                        const ComposedPlan& composed, const HardwareBinding& hardware);

// Whether `plugin` was built against ABI 1.6 or later, and so reads what 1.6 added to the plan:
// the layer stack, the block-scaled precisions, each chunk's first layers set apart (partially
// recomputed or offloaded: paraplan::PlanView::op_share).
bool reads_layer_stack(const LoadedPlugin& plugin);

// Throws PlanError when `plugin` (an executor or exporter, `role` in the message) does not read
// the layer stack and the recipe uses what 1.6 added: a model that is more than a uniform
// transformer (it would read the model's 1.5 fields and count every layer as the first kind), a
// block-scaled precision (its GEMMs' dtypes are past the ones it knows), partial recomputation
// or activation offloading (it would count every layer alike). Strategies of any minor work.
void require_plan_reader(const LoadedPlugin& plugin, const Recipe& recipe, const std::string& role);

}  // namespace paraplan::host
