// GPT-3 175B as Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
// Models") ran it: 64 GPUs, TP = 8, PP = 8, micro-batch 1, sequence 2048.
//  - Figure 1 / section 5: per GPU 45.56 GiB of weights, gradients and optimizer state
//    (Megatron-LM's 18 bytes per parameter for the 12 layers of a middle stage), 66.84 GiB of
//    activations without recompute and 12.35 GiB with sequence parallelism + selective recompute,
//    on the first stage of the interleaved schedule they used (v = 3: 4 layers per chunk, and
//    p·(1 + (p−1)/(p·v)) micro-batches' activations in flight).
//  - Table 4: 13.75 s per iteration at batch 64 is 51.4 % MFU by Megatron's F72 on A100 (312 TF/s).
#include <cmath>

#include "test_support.h"

namespace paraplan::host {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string gpt3_recipe(const std::string& training_extra, const std::string& sp) {
  return "[model]\npreset = \"gpt3-175b\"\n"
         "[training]\nglobal_batch = 64\nmicro_batch = 1\nflash_attention = false\n" + training_extra +
         "[cluster]\nhardware = \"a100-sxm-80g\"\nnum_gpus = 64\n"
         "[[strategy]]\nname = \"tp\"\ndegree = 8\n" + sp +
         "[[strategy]]\nname = \"pp\"\ndegree = 8\nschedule = \"interleaved-1f1b\"\nvirtual_stages = 3\n";
}

double stage_layer_state(const test::Evaluated& evaluated) {
  double bytes = 0;
  for (const pp_memory_item& item : evaluated.composed.plan->memory_items())
    if (item.scope == PP_SCOPE_LAYER && item.kind != PP_MEMORY_ACTIVATIONS) bytes += item.bytes * 12;  // 96 / 8 layers
  return bytes;
}

double first_stage_layer_activations(const test::Evaluated& evaluated) {
  double per_layer = 0;
  for (const pp_memory_item& item : evaluated.composed.plan->memory_items())
    if (item.scope == PP_SCOPE_LAYER && item.kind == PP_MEMORY_ACTIVATIONS) per_layer += item.bytes;
  return per_layer * 12 * evaluated.composed.plan->pipeline().in_flight_micro_batches;
}

TEST(Korthikanti, InFlightMicroBatchesOfTheInterleavedSchedule) {
  auto evaluated = test::evaluate_recipe(gpt3_recipe("", ""));
  const double p = 8, v = 3;
  EXPECT_DOUBLE_EQ(evaluated.composed.plan->pipeline().in_flight_micro_batches, p * (1 + (p - 1) / (p * v)));
}

TEST(Korthikanti, Figure1WeightsAndOptimizerState) {
  auto evaluated = test::evaluate_recipe(gpt3_recipe("", ""));
  // Norm weights (2h per layer, replicated under TP) are the only difference from 18·12·12h²/8.
  EXPECT_NEAR(stage_layer_state(evaluated) / kGiB, 45.56, 0.02);
}

TEST(Korthikanti, Figure1ActivationsWithoutRecompute) {
  auto evaluated = test::evaluate_recipe(gpt3_recipe("", ""));
  EXPECT_NEAR(first_stage_layer_activations(evaluated) / kGiB, 66.84, 0.05);
}

TEST(Korthikanti, Figure1ActivationsWithSequenceParallelismAndSelectiveRecompute) {
  auto evaluated = test::evaluate_recipe(gpt3_recipe("recompute = \"selective\"\n", "[[strategy]]\nname = \"sp\"\n"));
  EXPECT_NEAR(first_stage_layer_activations(evaluated) / kGiB, 12.35, 0.02);
}

TEST(Mfu, KorthikantiGpt3) {
  // Model FLOPs of one step do not depend on the parallel layout; divide by the measured time.
  auto evaluated = test::evaluate_recipe(gpt3_recipe("recompute = \"selective\"\n", "[[strategy]]\nname = \"sp\"\n"));
  const double measured_step_s = 13.75, gpus = 64, a100_bf16_peak = 312e12;
  EXPECT_NEAR(evaluated.number("throughput.model_flops_per_step") / (measured_step_s * gpus * a100_bf16_peak), 0.514,
              0.001);
}

}  // namespace
}  // namespace paraplan::host
