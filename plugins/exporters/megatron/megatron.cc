// megatron: an exporter plugin. `paraplan export RECIPE --to megatron` writes launch_megatron.sh,
// a bash script that runs Megatron-LM's pretrain_gpt.py under torchrun on every node of the plan
// with the flags that reproduce it: model shape, batch, precision, tensor/sequence/context/
// pipeline/expert/data parallelism, recomputation and MoE routing (translation.h). Flag names
// are Megatron-LM's, from megatron/training/arguments.py; what those flags cannot say (a
// schedule Megatron-LM lacks, a sharding it has no flag for, a strategy it does not know) is
// reported through the artifact sink and repeated in the script's header.
#include <string>

#include "launch_script.h"
#include "paraplan/sdk.hpp"
#include "translation.h"

namespace {

class Megatron : public paraplan::Exporter {
 public:
  static paraplan::PluginInfo info() {
    return {"megatron",
            "1.0.0",
            "Megatron-LM launch script: torchrun over the plan's nodes running pretrain_gpt.py with the plan's "
            "model, batch, precision, parallelism (tp/sp/cp/pp/ep, distributed optimizer, FSDP2) and recompute flags",
            {paraplan::ParamSpec::String("megatron_path", "/workspace/Megatron-LM",
                                         "Megatron-LM checkout holding pretrain_gpt.py (the script's MEGATRON_PATH "
                                         "default; the environment overrides it)"),
             paraplan::ParamSpec::Int("train_iters", 100, "training iterations (--train-iters)").at_least(1)}};
  }

  explicit Megatron(const paraplan::Params& params)
      : megatron_path_(params.string_value("megatron_path")), train_iters_(params.int_value("train_iters")) {}

  void export_plan(const paraplan::PlanView& plan, const pp_hardware_binding_v1& /*hardware*/,
                   const paraplan::ExportContext& context, const paraplan::ArtifactSink& artifacts) override {
    // Only what the 1.5 model fields say is translated so far: refuse the rest, never drop it.
    if (const std::string beyond = paraplan::beyond_uniform_transformer(plan.model(), /*writes_router_groups=*/true);
        !beyond.empty())
      throw paraplan::Error(PP_ERROR_UNSUPPORTED, "the model has " + beyond + ", which the Megatron-LM export does not write yet");
    paraplan_megatron::Translation flags;
    paraplan_megatron::translate_model(plan, train_iters_, flags);
    paraplan_megatron::translate_parallelism(plan, context, flags);

    paraplan_megatron::LaunchSettings settings;
    settings.recipe_file = context.recipe_file();
    settings.model_name = context.model_name();
    settings.megatron_path = megatron_path_;
    settings.num_gpus = plan.cluster().num_gpus;
    settings.gpus_per_node = plan.cluster().gpus_per_node;
    artifacts.text_file("launch_megatron.sh", paraplan_megatron::launch_script(
                                                  settings, paraplan_megatron::plan_summary(plan), flags));
    for (const std::string& line : flags.unexpressed) artifacts.unexpressed(line);
  }

 private:
  std::string megatron_path_;
  int64_t train_iters_;
};

}  // namespace

PARAPLAN_PLUGIN(Megatron)
