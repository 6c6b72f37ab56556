// parallelism_flags.cc: the plan's parallelism in Megatron-LM's flags (megatron/training/
// arguments.py, groups "distributed", "training" and "moe"), and what they cannot say.
//
//   tp    --tensor-model-parallel-size; overlap = true: --tp-comm-overlap, which Megatron-LM
//         allows only with --sequence-parallel (validate_args)
//   sp    megatron (or megatron_sp with a context-parallel mode): --sequence-parallel;
//         ring: --context-parallel-size --cp-comm-type p2p (ring attention);
//         ulysses: --context-parallel-size --cp-comm-type a2a (all-to-all over heads)
//   pp    --pipeline-model-parallel-size; interleaved-1f1b with v virtual stages:
//         --num-layers-per-virtual-pipeline-stage layers/(pp x v) (Megatron-LM has no
//         --virtual-pipeline-model-parallel-size flag); uneven first/last stages (plan's stage
//         layers): --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers;
//         gpipe and zero-bubble have no flag (the script runs 1F1B)
//   ep    --expert-model-parallel-size, --expert-tensor-parallel-size (ep's etp: tp's degree, or
//         1 for whole experts), --moe-token-dispatcher-type, --moe-expert-capacity-factor and
//         --moe-pad-expert-input-to-capacity (capacity_factor > 0); imbalance is a property of
//         the data, not a flag
//   fsdp  stage 0: DDP (--overlap-grad-reduce with overlap); stage 1: the distributed optimizer
//         (--use-distributed-optimizer, with overlap --overlap-grad-reduce
//         --overlap-param-gather); stage 3: --use-torch-fsdp2 (with
//         --no-gradient-accumulation-fusion, which FSDP2 requires); stage 2: FSDP2 without
//         resharding after forward (--torch-fsdp2-no-reshard-after-forward, "ZeRO-2" in
//         arguments.py); FSDP2 runs neither with pipeline nor expert parallelism, so there
//         stages 2 and 3 fall back to the distributed optimizer and are reported, except
//         stage 2 under pp, which the plan already prices as stage 1 (zero1_equivalent.h);
//         stages 0-2: --ddp-bucket-size, bucket_parameters or one layer's parameters where it is 0
//         (gradient_buckets.h), one bucket without overlap reported; FSDP2 reports buckets and a
//         prefetch other than 1
//   hsdp  stage 1: --use-distributed-optimizer --num-distributed-optimizer-instances R (the
//         optimizer state sharded within each of R groups, replicated across them); stages 2
//         and 3 have no hybrid form in these flags: exported as stage 1 and reported
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "plugins/exporters/internal/gradient_buckets.h"
#include "plugins/exporters/internal/zero1_equivalent.h"
#include "translation.h"

namespace paraplan_megatron {
namespace {

using Strategy = paraplan::ExportContext::Strategy;


// The pipeline: schedule, virtual stages and uneven first/last stages.
void translate_pipeline(const paraplan::PlanView& plan, Translation& out) {
  const pp_pipeline& pipeline = plan.pipeline();
  const int64_t stages = std::max<int64_t>(pipeline.stages, 1);
  const int64_t layers = plan.model().layers;
  out.parallelism.add("--pipeline-model-parallel-size", stages);
  if (stages <= 1) return;

  if (pipeline.schedule == PP_SCHEDULE_GPIPE || pipeline.schedule == PP_SCHEDULE_ZERO_BUBBLE ||
      pipeline.schedule == PP_SCHEDULE_DUALPIPE_V)
    out.unexpressed.push_back("pp schedule '" + std::string(paraplan::schedule_name(pipeline.schedule)) +
                              "': Megatron-LM's arguments.py has no flag for it; the script runs 1F1B" +
                              (pipeline.schedule == PP_SCHEDULE_DUALPIPE_V
                                   ? " on each stage's layers in model order (not DualPipe-V's V of two chunks)"
                                   : ""));

  const int64_t virtual_stages =
      pipeline.schedule == PP_SCHEDULE_INTERLEAVED_1F1B ? std::max<int64_t>(pipeline.virtual_stages, 1) : 1;
  // Chunks that are not each stage's even split (a layout string placed them): Megatron-LM's
  // --pipeline-model-parallel-layout says exactly that, entry c·p + s for chunk c of stage s.
  bool chunks_even = true;
  for (int64_t stage = 0; stage < stages; ++stage)
    for (int64_t chunk = 0; chunk < virtual_stages; ++chunk) {
      const int64_t even =
          paraplan::even_chunk_layers(plan.stages()[static_cast<size_t>(stage)].layers, virtual_stages, chunk);
      chunks_even = chunks_even && plan.layers_on_chunk(static_cast<size_t>(stage), static_cast<size_t>(chunk),
                                                        PP_EVERY_LAYER_KIND) == even;
    }
  if (!chunks_even) {
    std::string layout;
    for (int64_t entry = 0; entry < stages * virtual_stages; ++entry) {
      if (entry > 0) layout += "|";
      if (entry == 0) layout += "E";
      layout += std::string(static_cast<size_t>(plan.layers_on_chunk(static_cast<size_t>(entry % stages),
                                                                     static_cast<size_t>(entry / stages),
                                                                     PP_EVERY_LAYER_KIND)),
                            't');
      if (entry + 1 == stages * virtual_stages) layout += "L";
    }
    out.parallelism.add("--pipeline-model-parallel-layout", "'" + layout + "'");  // '|' is a shell pipe unquoted
    return;
  }

  // Layers per stage, from the plan (all of a stage's chunks together).
  std::vector<int64_t> per_stage;
  for (const pp_stage& stage : plan.stages()) per_stage.push_back(stage.layers);
  const bool even = std::all_of(per_stage.begin(), per_stage.end(),
                                [&](int64_t count) { return count == per_stage.front(); });

  if (!even && static_cast<int64_t>(per_stage.size()) == stages) {
    const int64_t first = per_stage.front(), last = per_stage.back();
    const bool middle_even =
        stages <= 2 || std::all_of(per_stage.begin() + 1, per_stage.end() - 1,
                                   [&](int64_t count) { return count == per_stage[1]; });
    if (virtual_stages > 1) {
      out.unexpressed.push_back("pp: uneven stages (first " + std::to_string(first) + ", last " +
                                std::to_string(last) + " layers) with " + std::to_string(virtual_stages) +
                                " virtual stages: Megatron-LM splits uneven pipelines with "
                                "--num-virtual-stages-per-pipeline-rank, whose chunk layout differs; exported "
                                "with that flag");
      out.parallelism.add("--num-virtual-stages-per-pipeline-rank", virtual_stages);
      return;
    }
    if (!middle_even) {
      out.unexpressed.push_back("pp: middle stages of unequal layer counts: --decoder-first-pipeline-num-layers "
                                "and --decoder-last-pipeline-num-layers split the rest evenly");
    }
    out.parallelism.add("--decoder-first-pipeline-num-layers", first);
    // With two stages the last one holds the rest; with more, Megatron-LM splits what first
    // and last leave evenly over the middle stages.
    if (stages > 2) out.parallelism.add("--decoder-last-pipeline-num-layers", last);
    return;
  }

  if (virtual_stages > 1) {
    if (layers % (stages * virtual_stages) == 0) {
      out.parallelism.add("--num-layers-per-virtual-pipeline-stage", layers / (stages * virtual_stages));
    } else {
      out.unexpressed.push_back("pp: " + std::to_string(layers) + " layers do not divide into " +
                                std::to_string(stages) + " x " + std::to_string(virtual_stages) +
                                " virtual stages; exported with --num-virtual-stages-per-pipeline-rank");
      out.parallelism.add("--num-virtual-stages-per-pipeline-rank", virtual_stages);
    }
  }
}

// The data-parallel strategy (fsdp or hsdp). Returns true when it runs torch FSDP2.
bool translate_data_parallel(const paraplan::PlanView& plan, const Strategy& strategy, Translation& out) {
  const int64_t stage = strategy.integer(PP_DP_PARAM_STAGE, strategy.name == PP_STRATEGY_HSDP ? 3 : 0);
  const bool overlap = strategy.setting(PP_DP_PARAM_OVERLAP).empty() || strategy.flag(PP_DP_PARAM_OVERLAP);
  const int64_t pipeline = std::max<int64_t>(plan.pipeline().stages, 1);
  const int64_t experts = plan.axis_degree(PP_AXIS_EP);
  const int64_t reducing = plan.axis_degree(PP_AXIS_DP) * std::max<int64_t>(plan.axis_degree(PP_AXIS_DP_REPLICATE), 1);

  // Megatron-LM's DDP buckets (distributed_data_parallel.py): --ddp-bucket-size parameters, the
  // distributed optimizer's all-gather on the same buckets; without --overlap-grad-reduce one
  // bucket for everything. Pipeline stages after the first (and model chunks after a stage's
  // first) reduce in one bucket too, after their last backward: stage s finishes backward s
  // micro-batch backwards before the first stage and waits for it at the optimizer (the gradient
  // norm spans the pipeline), so the bucket runs in that wait, about as long as the last
  // backward paraplan hides the buckets behind: the same bytes within about the same slack, not
  // reported.
  auto gradient_buckets = [&] {
    if (reducing <= 1) return;
    if (!overlap) {
      out.unexpressed.push_back(strategy.name + " overlap = false: Megatron-LM reduces all gradients in one bucket "
                                "without --overlap-grad-reduce; priced as one collective per layer or bucket");
      return;
    }
    out.parallelism.add("--ddp-bucket-size",
                        static_cast<int64_t>(std::llround(paraplan::exporters::bucket_size_parameters(plan, strategy))));
  };
  auto distributed_optimizer = [&] {
    out.parallelism.add("--use-distributed-optimizer");
    if (overlap) {
      out.parallelism.add("--overlap-grad-reduce");
      out.parallelism.add("--overlap-param-gather");
    }
    gradient_buckets();
  };

  if (strategy.name == PP_STRATEGY_HSDP) {
    const int64_t replicas = plan.axis_degree(PP_AXIS_DP_REPLICATE);
    distributed_optimizer();
    if (replicas > 1) out.parallelism.add("--num-distributed-optimizer-instances", replicas);
    if (stage >= 2)
      out.unexpressed.push_back("hsdp stage " + std::to_string(stage) +
                                ": Megatron-LM shards only the optimizer state within a group "
                                "(--num-distributed-optimizer-instances); exported as stage 1 in groups of " +
                                std::to_string(plan.axis_degree(PP_AXIS_DP)) + ", " + std::to_string(replicas) +
                                " replicas");
    return false;
  }

  if (stage == 0) {
    if (overlap) out.parallelism.add("--overlap-grad-reduce");
    gradient_buckets();
    return false;
  }
  if (stage == 1) {
    distributed_optimizer();
    return false;
  }
  if (pipeline > 1 || experts > 1) {
    // ZeRO-2 under pp already moves its state as the distributed optimizer does: nothing differs.
    if (!paraplan::exporters::moves_state_as_zero1(plan, PP_STRATEGY_FSDP))
      out.unexpressed.push_back("fsdp stage " + std::to_string(stage) + ": Megatron-LM's --use-torch-fsdp2 runs " +
                                "neither with pipeline nor with expert parallelism (validate_args); exported as "
                                "the distributed optimizer (stage 1)");
    distributed_optimizer();
    return false;
  }
  out.parallelism.add("--use-torch-fsdp2");
  if (stage == 2) out.parallelism.add("--torch-fsdp2-no-reshard-after-forward");
  out.parallelism.add("--no-gradient-accumulation-fusion");
  // FSDP2 reduces and gathers one module (a transformer layer) at a time, the next one prefetched.
  if (paraplan::exporters::bucket_parameters(strategy) > 0)
    out.unexpressed.push_back("fsdp bucket_parameters = " + strategy.setting(PP_DP_PARAM_BUCKET_PARAMETERS) +
                              ": torch FSDP2 (--use-torch-fsdp2) reduces one collective per layer");
  if (strategy.integer(PP_DP_PARAM_PREFETCH, 1) != 1)
    out.unexpressed.push_back("fsdp prefetch = " + strategy.setting(PP_DP_PARAM_PREFETCH) +
                              ": torch FSDP2 (--use-torch-fsdp2) prefetches one layer ahead");
  return true;
}

void translate_experts(const paraplan::PlanView& plan, const Strategy& strategy, Translation& out) {
  out.parallelism.add("--expert-model-parallel-size", plan.axis_degree(PP_AXIS_EP));
  const std::string etp = strategy.setting("etp");
  out.parallelism.add("--expert-tensor-parallel-size",
                      etp.empty() || etp == "0" ? plan.axis_degree(PP_AXIS_TP) : int64_t{std::stoll(etp)});
  const std::string dispatcher = strategy.setting("dispatcher");
  out.moe.add("--moe-token-dispatcher-type", dispatcher.empty() ? "alltoall" : dispatcher);
  // The flex dispatcher priced (a token sent once per rank that holds its experts) is DeepEP's
  // and HybridEP's; DeepEP runs across nodes as well as inside one.
  if (dispatcher == "flex") out.moe.add("--moe-flex-dispatcher-backend", "deepep");
  if (strategy.flag("overlap")) {
    out.moe.add("--overlap-moe-expert-parallel-comm");
    if (dispatcher == "allgather")
      out.unexpressed.push_back("ep overlap with the allgather dispatcher: Megatron-LM overlaps the expert "
                                "all-to-alls of the alltoall and flex dispatchers only");
    if (plan.pipeline().stages > 1 && plan.pipeline().virtual_stages <= 1)
      out.unexpressed.push_back("ep overlap with a non-interleaved pipeline: Megatron-LM's combined 1F1B "
                                "runs with PP = 1 or virtual pipeline stages only");
  }
  const std::string capacity = strategy.setting("capacity_factor");
  const double capacity_factor = capacity.empty() ? 0.0 : std::stod(capacity);
  if (capacity_factor > 0.0) {
    out.moe.add("--moe-expert-capacity-factor", decimal(capacity_factor));
    if (strategy.setting("pad_to_capacity").empty() || strategy.flag("pad_to_capacity"))
      out.moe.add("--moe-pad-expert-input-to-capacity");
  }
  if (plan.training().precision == PP_PRECISION_FP16)
    out.unexpressed.push_back("ep with fp16: Megatron-LM runs expert parallelism only without --fp16 "
                              "(validate_args); the script still says --fp16");
}

}  // namespace

void translate_parallelism(const paraplan::PlanView& plan, const paraplan::ExportContext& context, Translation& out) {
  const int64_t tensor = plan.axis_degree(PP_AXIS_TP);
  const int64_t context_parallel = plan.axis_degree(PP_AXIS_CP);
  const Strategy* tp = context.strategy(PP_STRATEGY_TP);
  const Strategy* sp = context.strategy(PP_STRATEGY_SP);
  const Strategy* ep = context.strategy(PP_STRATEGY_EP);

  out.parallelism.add("--tensor-model-parallel-size", tensor);
  const std::string sp_mode = sp ? sp->setting("mode") : "";
  const bool sequence_parallel =
      tensor > 1 && sp && (sp_mode == "megatron" || sp_mode.empty() || sp->flag("megatron_sp"));
  if (sequence_parallel) out.parallelism.add("--sequence-parallel");
  if (tp && tp->flag(PP_TP_PARAM_OVERLAP)) {
    if (sequence_parallel) {
      out.parallelism.add("--tp-comm-overlap");
      if (tp->setting(PP_TP_PARAM_OVERLAP_METHOD) == PP_TP_OVERLAP_MICRO_PIPELINE)
        out.unexpressed.push_back("tp overlap_method micro_pipeline (PyTorch's async TP, forward passes only): "
                                  "Megatron-LM overlaps with Transformer Engine's userbuffers (--tp-comm-overlap), "
                                  "which also hide the backward pass's collectives, faster than was evaluated");
    } else
      out.unexpressed.push_back("tp overlap: Megatron-LM overlaps tensor-parallel communication with GEMMs "
                                "(--tp-comm-overlap) only with --sequence-parallel, which the plan does not use");
  }
  if (context_parallel > 1) {
    out.parallelism.add("--context-parallel-size", context_parallel);
    out.parallelism.add("--cp-comm-type", sp_mode == "ulysses" ? "a2a" : "p2p");
    if (plan.model().seq_len % (2 * context_parallel) != 0)
      out.unexpressed.push_back("sp: Megatron-LM needs the sequence (" + std::to_string(plan.model().seq_len) +
                                ") to be a multiple of 2 x cp = " + std::to_string(2 * context_parallel) +
                                " (load-balanced causal chunks)");
  }

  translate_pipeline(plan, out);
  if (ep) translate_experts(plan, *ep, out);

  bool torch_fsdp2 = false;
  for (const Strategy& strategy : context.strategies()) {
    if (strategy.name == PP_STRATEGY_FSDP || strategy.name == PP_STRATEGY_HSDP) {
      torch_fsdp2 = translate_data_parallel(plan, strategy, out) || torch_fsdp2;
    } else if (strategy.name != PP_STRATEGY_TP && strategy.name != PP_STRATEGY_SP && strategy.name != PP_STRATEGY_PP &&
               strategy.name != PP_STRATEGY_EP) {
      out.unexpressed.push_back("strategy '" + strategy.name + "' (degree " + std::to_string(strategy.degree) +
                                "): Megatron-LM has no equivalent; the script runs without it");
    }
  }
  out.ordered_launches = (tensor > 1 || context_parallel > 1) && !torch_fsdp2;
}

}  // namespace paraplan_megatron
