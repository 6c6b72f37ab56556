// Activation offloading (training.cpu_offloading_num_layers; Megatron-LM's
// --cpu-offloading-num-layers): the first N layers' activations are copied to host memory in the
// forward pass and back in the backward pass, beside the compute, and Transformer Engine's
// schedule keeps the other layers' activations alone at the peak (cpu_offload.py). Checked
// against that rule, against the copies' own floor (a copy cannot outrun its link) and against
// what Megatron-LM refuses.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "paraplan/sdk.hpp"
#include "test_support.h"

namespace paraplan::host {
namespace {

// Llama 2 7B (32 layers) under FSDP-3 on 8 H100, one micro-batch of 2 x 4096 tokens per GPU.
std::string recipe(const std::string& training, const std::string& hardware = "h100-sxm",
                   const std::string& strategies = "[[strategy]]\nname = \"fsdp\"\nstage = 3\n") {
  return "[model]\npreset = \"llama2-7b\"\n[training]\nglobal_batch = 16\nmicro_batch = 2\n" + training +
         "[cluster]\nhardware = \"" + hardware + "\"\nnum_gpus = 8\n" + strategies;
}

// The bytes of the plan's offload op (one per kind of layer: this model has one).
double offload_bytes(const test::Evaluated& run) {
  const pp_plan_view_v1 raw = run.composed.plan->view();
  const paraplan::PlanView view(raw);
  EXPECT_EQ(view.ops_named(PP_OP_ACTIVATION_OFFLOAD).size(), 1u);
  EXPECT_EQ(view.ops_named(PP_OP_ACTIVATION_RELOAD).size(), 1u);
  const pp_op& offload = view.ops()[view.ops_named(PP_OP_ACTIVATION_OFFLOAD).at(0)];
  const pp_op& reload = view.ops()[view.ops_named(PP_OP_ACTIVATION_RELOAD).at(0)];
  EXPECT_EQ(offload.kind, PP_OP_HOST_TRANSFER);
  EXPECT_EQ(offload.phase, PP_PHASE_FORWARD);
  EXPECT_EQ(reload.phase, PP_PHASE_BACKWARD);
  EXPECT_EQ(offload.overlap, PP_OVERLAP_COMPUTE);
  EXPECT_DOUBLE_EQ(reload.bytes, offload.bytes);
  return offload.bytes;
}

// N of 32 layers offloaded hold no activations at the peak: N layers' worth fewer than keeping
// them all, and each layer's copy is exactly that layer's worth.
TEST(ActivationOffload, TheFirstLayersHoldNothingAndCopyTheirOwnActivations) {
  const test::Evaluated none = test::evaluate_recipe(recipe(""));
  for (int layers : {1, 8, 31}) {
    SCOPED_TRACE(layers);
    const test::Evaluated offloaded =
        test::evaluate_recipe(recipe("cpu_offloading_num_layers = " + std::to_string(layers) + "\n"));
    const double per_layer =
        (none.number("memory.activations_bytes") - offloaded.number("memory.activations_bytes")) / layers;
    EXPECT_GT(per_layer, 0);
    EXPECT_NEAR(offload_bytes(offloaded), per_layer, 1e-9 * per_layer);
    // The simulator holds the same memory.
    const test::Evaluated simulated = test::evaluate_recipe(
        recipe("cpu_offloading_num_layers = " + std::to_string(layers) + "\n"), "simulate");
    EXPECT_NEAR(simulated.number("memory.per_gpu_bytes"), offloaded.number("memory.per_gpu_bytes"),
                1e-9 * offloaded.number("memory.per_gpu_bytes"));
  }
}

// On an H100's 64 GB/s host link, 8 layers' copies (about 0.15 s each way) hide behind a forward
// and backward pass that take longer, and copy engines take no SMs: the step is no-offload's.
// On a 1 GB/s link they cannot: the step is at least both copies at the link's rate, and at most
// those copies on top of everything else.
TEST(ActivationOffload, CopiesHideBehindComputeUntilTheLinkIsTooSlow) {
  const test::Evaluated none = test::evaluate_recipe(recipe(""));
  const test::Evaluated hidden = test::evaluate_recipe(recipe("cpu_offloading_num_layers = 8\n"));
  EXPECT_NEAR(hidden.number("time.step_s"), none.number("time.step_s"), 1e-9 * none.number("time.step_s"));

  const std::string slow_profile =
      "name = \"h100-slow-host-link\"\ngpus_per_node = 8\n[compute]\nfp32_tflops = 66.9\ntf32_tflops = 494.7\n"
      "bf16_tflops = 989.4\nfp16_tflops = 989.4\nfp8_tflops = 1978.9\n[memory]\ncapacity_gb = 80\n"
      "bandwidth_gb_s = 3350\nefficiency = 0.85\n[host_link]\nbandwidth_gb_s = 1\n[gemm]\nefficiency_max = 0.64\n"
      "[attention]\nefficiency = 0.81\n[[tiers]]\nname = \"nvlink\"\ndomain_size = 8\nbandwidth_gb_s = 450\n"
      "latency_us = 2\nefficiency = 0.80\n[[tiers]]\nname = \"infiniband\"\ndomain_size = 0\nbandwidth_gbit_s = 400\n"
      "latency_us = 5\nefficiency = 0.90\n";
  // The process id keeps two test runs at once from sharing a file.
  const std::string file = (std::filesystem::temp_directory_path() /
                            ("paraplan_test_" + std::to_string(getpid()) + "_slow_host_link.toml")).string();
  std::ofstream(file) << slow_profile;
  const test::Evaluated slow_none = test::evaluate_recipe(recipe("", file));
  const test::Evaluated slow = test::evaluate_recipe(recipe("cpu_offloading_num_layers = 8\n", file));
  const double copies_s = 2.0 * 8 * offload_bytes(slow) / 1e9;  // one micro-batch, out and back
  EXPECT_GE(slow.number("time.step_s"), copies_s);
  EXPECT_LE(slow.number("time.step_s"), copies_s + slow_none.number("time.step_s"));
  EXPECT_GT(slow.number("time.exposed_comm_s.model"), 0.5 * copies_s);
  // The simulator runs the copies on the host stream beside the layers: the same floor.
  const test::Evaluated simulated = test::evaluate_recipe(recipe("cpu_offloading_num_layers = 8\n", file), "simulate");
  EXPECT_GE(simulated.number("time.step_s"), copies_s);
  EXPECT_NEAR(simulated.number("time.step_s"), slow.number("time.step_s"), 0.05 * slow.number("time.step_s"));
  std::filesystem::remove(file);
}

// What Megatron-LM refuses (TransformerConfig.__post_init__): offloading with recomputation,
// offloading every layer, and offloading under pipeline parallelism.
TEST(ActivationOffload, RefusedWhereMegatronRefusesIt) {
  test::expect_error<InputError>(
      [&] { parse_recipe(recipe("recompute = \"selective\"\ncpu_offloading_num_layers = 4\n"), "r.toml"); },
      {"r.toml", "training.cpu_offloading_num_layers", "needs recompute = \"none\""});
  test::expect_error<InputError>([&] { parse_recipe(recipe("cpu_offloading_num_layers = 32\n"), "r.toml"); },
                                 {"r.toml", "training.cpu_offloading_num_layers", "less than the model's 32 layers"});
  test::expect_error<PlanError>(
      [&] {
        test::evaluate_recipe(recipe("cpu_offloading_num_layers = 4\n", "h100-sxm",
                                     "[[strategy]]\nname = \"pp\"\ndegree = 2\n[[strategy]]\nname = \"fsdp\"\nstage = 1\n"));
      },
      {"training.cpu_offloading_num_layers = 4", "without pipeline parallelism", "2 pipeline stages"});
}

}  // namespace
}  // namespace paraplan::host
