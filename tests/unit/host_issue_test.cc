// The host issuing a plan's ops (paraplan/host_issue.hpp): the recurrence worked by hand, the
// dropless MoE layer's wait for its token counts as Megatron-Core places it, CUDA graphs, the
// recipe key's rules (Megatron-LM's TransformerConfig), and the analytic model and the
// simulator charging the same wait.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "paraplan/host_issue.hpp"
#include "test_support.h"

namespace paraplan {
namespace {

using issue::IssuedOp;

IssuedOp op(double host_s, double gpu_s, bool sync = false) {
  IssuedOp issued;
  issued.host_s = host_s, issued.gpu_s = gpu_s, issued.sync = sync;
  return issued;
}

TEST(HostIssue, WithoutASyncTheGpuWaitsOnlyForAHostThatIsSlowerOverall) {
  // The host runs ahead: issuing 3 x 1 s of ops that run 3 x 2 s costs nothing.
  EXPECT_EQ(issue::idle_s({op(1, 2), op(1, 2), op(1, 2)}), 0.0);
  // The host is slower: 3 s issued, 1.5 s run: the GPU idles 1.5 s per pass.
  EXPECT_DOUBLE_EQ(issue::idle_s({op(1, 0.5), op(1, 0.5), op(1, 0.5)}), 1.5);
}

TEST(HostIssue, AfterASyncTheGpuWaitsForEveryOpShorterThanIssuingTheNext) {
  // A (c 1, d 3), the sync, B (1, 0.5), C (1, 0.5), D (1, 2). After the sync the GPU's queue is
  // empty: it idles 1 s while B is issued, then 0.5 s before C (issuing C takes 1, B runs 0.5)
  // and 0.5 s before D; D's 2 s let the host issue the next layer's A ahead. Idle: 2 s.
  const std::vector<IssuedOp> pass = {op(1, 3), op(0, 0, true), op(1, 0.5), op(1, 0.5), op(1, 2)};
  EXPECT_DOUBLE_EQ(issue::idle_s(pass), 2.0);
  // The same ops without the sync: 4 s issued, 6 s run, no wait.
  const std::vector<IssuedOp> unsynced = {op(1, 3), op(0, 0), op(1, 0.5), op(1, 0.5), op(1, 2)};
  EXPECT_EQ(issue::idle_s(unsynced), 0.0);
  // Free issuing: no wait, sync or not.
  EXPECT_EQ(issue::idle_s({op(0, 3), op(0, 0, true), op(0, 0.5)}), 0.0);
}

TEST(HostIssue, OpsBelongToTheirLayersBlocksAsMegatronCapturesThem) {
  const issue::LayerBlocks moe{false, true}, dense{false, false}, mamba{true, false};
  EXPECT_EQ(issue::cuda_graph_module_of(PP_OP_QKV, moe), PP_CUDA_GRAPH_ATTN);
  EXPECT_EQ(issue::cuda_graph_module_of(PP_OP_ATTN_NORM, mamba), PP_CUDA_GRAPH_MAMBA);
  EXPECT_EQ(issue::cuda_graph_module_of(PP_OP_MLP_NORM, moe), PP_CUDA_GRAPH_MOE_ROUTER);
  EXPECT_EQ(issue::cuda_graph_module_of(PP_OP_MLP_NORM, dense), PP_CUDA_GRAPH_MLP);
  EXPECT_EQ(issue::cuda_graph_module_of(PP_OP_ROUTER_AUX_LOSS, moe), PP_CUDA_GRAPH_MOE_ROUTER);
  EXPECT_EQ(issue::cuda_graph_module_of(PP_OP_HOST_SYNC, moe), PP_CUDA_GRAPH_MOE_PREPROCESS);
  EXPECT_EQ(issue::cuda_graph_module_of(PP_OP_EP_DISPATCH, moe), PP_CUDA_GRAPH_MOE);
  EXPECT_EQ(issue::cuda_graph_module_of(PP_OP_MTP_PROJECTION, moe), 0u);
  // The whole MoE block's graph holds its router; the router's graph not the experts.
  EXPECT_TRUE(issue::captured(PP_CUDA_GRAPH_MOE, PP_CUDA_GRAPH_MOE_ROUTER));
  EXPECT_FALSE(issue::captured(PP_CUDA_GRAPH_MOE_ROUTER, PP_CUDA_GRAPH_MOE));
  EXPECT_TRUE(issue::captured(PP_CUDA_GRAPH_FULL_ITERATION, 0));
}

// A small dropless MoE model on one H100 node, one micro-batch of 2K tokens: host-bound.
std::string moe_recipe(const std::string& ep_extra = "capacity_factor = 0.0\n", const std::string& training_extra = "") {
  return "[model]\nlayers = 4\nhidden = 1024\nheads = 8\nffn_hidden = 2816\nffn_type = \"swiglu\"\nvocab = 32000\n"
         "seq_len = 2048\nmoe_experts = 8\nmoe_top_k = 2\nmoe_ffn_hidden = 512\n"
         "[training]\nglobal_batch = 8\nmicro_batch = 1\n" +
         training_extra +
         "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 8\n"
         "[[strategy]]\nname = \"ep\"\ndegree = 8\n" +
         ep_extra + "[[strategy]]\nname = \"fsdp\"\ndegree = 8\nstage = 1\n";
}

std::vector<pp_phase> sync_phases(const test::Evaluated& evaluated) {
  const PlanView plan(evaluated.composed.plan->view());
  std::vector<pp_phase> phases;
  for (uint32_t index : plan.ops_named(PP_OP_HOST_SYNC)) phases.push_back(plan.ops()[index].phase);
  return phases;
}

TEST(HostIssue, DroplessRoutingWaitsForTheTokenCountsBeforeTheDispatch) {
  const test::Evaluated dropless = test::evaluate_recipe(moe_recipe());
  const PlanView plan(dropless.composed.plan->view());
  // One op per layer kind (the plan counts it once per layer held), forward only.
  EXPECT_EQ(sync_phases(dropless), std::vector<pp_phase>{PP_PHASE_FORWARD});
  // token_dispatcher.py's "before_ep_alltoall": after the permutation, right before the dispatch.
  const uint32_t sync = plan.ops_named(PP_OP_HOST_SYNC).front();
  const uint32_t dispatch = plan.ops_named(PP_OP_EP_DISPATCH).front();
  EXPECT_LT(plan.ops_named(PP_OP_MOE_PERMUTE).front(), sync);
  EXPECT_EQ(plan.ops()[dispatch].phase, PP_PHASE_FORWARD);
  EXPECT_LT(sync, dispatch);
  EXPECT_GT(dropless.number("time.host_wait_s"), 0.0);
  // Drop-and-pad buffers are sized in advance: no wait for the host (ep's default capacity).
  const test::Evaluated padded = test::evaluate_recipe(moe_recipe(""));
  EXPECT_TRUE(sync_phases(padded).empty());
  EXPECT_LT(padded.number("time.host_wait_s"), dropless.number("time.host_wait_s"));
  // A recomputed MoE block waits again when it is re-run.
  const test::Evaluated recomputed =
      test::evaluate_recipe(moe_recipe("capacity_factor = 0.0\n", "recompute = \"selective\"\nrecompute_modules = [\"moe\"]\n"));
  std::vector<pp_phase> phases = sync_phases(recomputed);
  std::sort(phases.begin(), phases.end());
  EXPECT_EQ(phases, (std::vector<pp_phase>{PP_PHASE_FORWARD, PP_PHASE_RECOMPUTE}));
}

TEST(HostIssue, TheWaitIsWhatTheRecurrenceGivesForEachLayerAndPass) {
  const test::Evaluated evaluated = test::evaluate_recipe(moe_recipe());
  const PlanView plan(evaluated.composed.plan->view());
  const pp_hardware_binding_v1 hardware = evaluated.hardware->binding();
  double per_layer = 0;
  for (pp_phase phase : {PP_PHASE_FORWARD, PP_PHASE_BACKWARD, PP_PHASE_RECOMPUTE})
    per_layer += issue::idle_s(issue::layer_pass(plan, hardware, 0, phase));
  // 4 layers, 8 / 8 = 1 micro-batch per rank.
  EXPECT_NEAR(evaluated.number("time.host_wait_s"), 4.0 * per_layer, 1e-12);
  // The forward pass by hand: every op issued in 85 us (the bundled profiles' figure) but the
  // FP8 casts (none here: bf16) and nothing captured.
  for (const IssuedOp& issued : issue::layer_pass(plan, hardware, 0, PP_PHASE_FORWARD))
    EXPECT_DOUBLE_EQ(issued.host_s, 85e-6);
}

// every_layer_pass lists in one scan what layer_pass lists pass by pass: the same ops, in the same
// order, with the same times, for every kind, share and phase (DeepSeek-V3's dense, MoE and MTP
// kinds; partial recomputation setting each chunk's first layer apart; CUDA graphs of some
// blocks, which make the blocks matter), and no empty pass.
TEST(HostIssue, EveryPassInOneScanIsEachPassListedAlone) {
  const std::vector<test::Evaluated> plans = [] {
    std::vector<test::Evaluated> evaluated;
    const std::string seed7 = std::string(PARAPLAN_RECIPES_DIR) + "/scenarios/seed7-deepseek-v3-256xb200.toml";
    evaluated.push_back(test::evaluate_file(seed7, "analytic"));
    evaluated.push_back(test::evaluate_recipe(
        "[model]\npreset = \"deepseek-v3\"\n[training]\nglobal_batch = 1024\nmicro_batch = 1\nprecision = \"mxfp8\"\n"
        "recompute = \"full\"\nrecompute_num_layers = 1\ncuda_graph_modules = [\"attn\", \"moe_router\"]\n"
        "[cluster]\nhardware = \"b200\"\nnum_gpus = 256\n[[strategy]]\nname = \"pp\"\ndegree = 8\n"
        "[[strategy]]\nname = \"ep\"\ndegree = 32\n[[strategy]]\nname = \"fsdp\"\nstage = 1\n"));
    evaluated.push_back(test::evaluate_recipe(moe_recipe()));
    return evaluated;
  }();
  bool split = false;
  for (const test::Evaluated& evaluated : plans) {
    const PlanView plan(evaluated.composed.plan->view());
    const pp_hardware_binding_v1 hardware = evaluated.hardware->binding();
    const auto seconds = [&](size_t i) { return issue::gpu_time(plan, hardware, plan.ops()[i]); };
    split = split || plan.splits_layers();
    std::vector<LayerShare> shares{LayerShare::kAll};
    if (plan.splits_layers()) shares = {LayerShare::kFirst, LayerShare::kRest};
    const std::vector<issue::LayerPass> listed = issue::every_layer_pass(plan, *hardware.profile, shares, seconds);
    size_t at = 0;
    const uint32_t kinds = plan.raw().layer_kind_count;
    for (uint32_t kind = 0; kind < std::max(kinds, 1u); ++kind)
      for (LayerShare share : shares)
        for (pp_phase phase : {PP_PHASE_FORWARD, PP_PHASE_BACKWARD, PP_PHASE_RECOMPUTE}) {
          const uint32_t of = kinds == 0 ? PP_EVERY_LAYER_KIND : kind;
          const std::vector<IssuedOp> alone = issue::layer_pass(plan, *hardware.profile, of, phase, seconds, share);
          if (alone.empty()) continue;
          ASSERT_LT(at, listed.size());
          const issue::LayerPass& pass = listed[at++];
          EXPECT_EQ(pass.kind, of);
          EXPECT_EQ(pass.share, share);
          EXPECT_EQ(pass.phase, phase);
          ASSERT_EQ(pass.ops.size(), alone.size());
          for (size_t i = 0; i < alone.size(); ++i) {
            EXPECT_EQ(pass.ops[i].index, alone[i].index);
            EXPECT_EQ(pass.ops[i].host_s, alone[i].host_s);
            EXPECT_EQ(pass.ops[i].gpu_s, alone[i].gpu_s);
            EXPECT_EQ(pass.ops[i].sync, alone[i].sync);
            EXPECT_EQ(pass.ops[i].communicates, alone[i].communicates);
          }
        }
    EXPECT_EQ(at, listed.size());
  }
  EXPECT_TRUE(split);
}

// The passes a model's features add are issued by the module that runs them (the rotary
// embedding inside attention's call, a GLU's clamps inside the activation's), the experts' bias
// loop as a call of its own (experts.py's _apply_bias: a Python loop over the local experts).
TEST(HostIssue, AModelsOwnPassesAreIssuedWithTheirModule) {
  pp_hardware_profile profile{};
  profile.struct_size = sizeof(profile);
  profile.host_op_overhead_s = 85e-6;
  for (const char* name : {PP_OP_ROTARY, PP_OP_MLP_CLAMP, PP_OP_EXPERT_CLAMP, PP_OP_EXPERT_BIAS, PP_OP_EXPERT_ACT}) {
    pp_op pass = make_op(PP_OP_MEMORY, PP_PHASE_FORWARD, PP_SCOPE_LAYER, name, PP_OWNER_MODEL);
    const bool own_call = std::string(name) == PP_OP_EXPERT_BIAS || std::string(name) == PP_OP_EXPERT_ACT;
    EXPECT_DOUBLE_EQ(issue::issue_time(profile, 0, pass, issue::LayerBlocks{}), own_call ? 85e-6 : 0.0) << name;
  }
}

TEST(HostIssue, CudaGraphsReplayWhatTheyCapture) {
  const double eager = test::evaluate_recipe(moe_recipe()).number("time.host_wait_s");
  const double router =
      test::evaluate_recipe(moe_recipe("capacity_factor = 0.0\n",
                                       "cuda_graph_modules = [\"attn\", \"moe_router\", \"moe_preprocess\"]\n"))
          .number("time.host_wait_s");
  const double full =
      test::evaluate_recipe(moe_recipe("capacity_factor = 0.0\n", "cuda_graph_modules = [\"full_iteration\"]\n"))
          .number("time.host_wait_s");
  EXPECT_LT(router, eager);
  EXPECT_EQ(full, 0.0);
}

TEST(HostIssue, TheSimulatorWaitsAsLongAsTheAnalyticModel) {
  const std::string recipe = moe_recipe();
  const test::Evaluated analytic = test::evaluate_recipe(recipe, "analytic");
  const test::Evaluated simulated = test::evaluate_recipe(recipe, "simulate");
  EXPECT_GT(simulated.number("time.host_wait_s"), 0.0);
  EXPECT_NEAR(simulated.number("time.host_wait_s") / analytic.number("time.host_wait_s"), 1.0, 1e-9);
  EXPECT_NEAR(simulated.number("time.compute_s") / analytic.number("time.compute_s"), 1.0, 1e-9);
}

TEST(HostIssue, CudaGraphModulesFollowMegatronsRules) {
  auto refused = [](const std::string& training, const std::vector<std::string>& fragments,
                    const std::string& ep = "capacity_factor = 0.0\n") {
    test::expect_error<host::InputError>([&] { test::evaluate_recipe(moe_recipe(ep, training)); }, fragments);
  };
  refused("cuda_graph_modules = [\"atn\"]\n", {"recipe.toml:", "training.cuda_graph_modules", "'atn'", "attn"});
  refused("cuda_graph_modules = [\"full_iteration\", \"attn\"]\n", {"full_iteration", "no other module"});
  refused("cuda_graph_modules = [\"moe\", \"moe_router\"]\n", {"moe or moe_router, not both"});
  refused("cuda_graph_modules = [\"moe_preprocess\"]\n", {"moe_preprocess needs moe_router"});
  test::expect_error<host::InputError>(
      [] {
        test::evaluate_recipe(
            "[model]\nlayers = 2\nhidden = 512\nheads = 4\nvocab = 1000\nseq_len = 128\n"
            "[training]\nglobal_batch = 8\ncuda_graph_modules = [\"moe_router\"]\n[cluster]\nhardware = \"h100-sxm\"\n"
            "num_gpus = 8\n[[strategy]]\nname = \"fsdp\"\n");
      },
      {"training.cuda_graph_modules", "need an MoE model"});
  // The whole MoE block is captured only with drop-and-pad routing (ep's rule, Megatron-Core's).
  test::expect_error<host::PlanError>(
      [] { test::evaluate_recipe(moe_recipe("capacity_factor = 0.0\n", "cuda_graph_modules = [\"moe\"]\n")); },
      {"cuda_graph_modules \"moe\"", "drop-and-pad"});
  // With it, every op of these layers is replayed: nothing left to wait for.
  EXPECT_EQ(test::evaluate_recipe(moe_recipe("", "cuda_graph_modules = [\"attn\", \"moe\"]\n")).number("time.host_wait_s"),
            0.0);
}

// Without expert parallelism every rank holds every expert and routes dropless, so its MoE layers
// wait for their token counts: the whole block cannot be captured either, whichever strategies
// the plan has (host/plan/captured_sync_check.h). Whole-iteration graphs run the sync-free path.
TEST(HostIssue, NoPlanCapturesAHostWait) {
  const std::string without_ep =
      "[model]\nlayers = 4\nhidden = 1024\nheads = 8\nffn_hidden = 2816\nffn_type = \"swiglu\"\nvocab = 32000\n"
      "seq_len = 2048\nmoe_experts = 8\nmoe_top_k = 2\nmoe_ffn_hidden = 512\n"
      "[training]\nglobal_batch = 8\nmicro_batch = 1\ncuda_graph_modules = [\"moe\"]\n"
      "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 8\n"
      "[[strategy]]\nname = \"fsdp\"\ndegree = 8\nstage = 1\n";
  test::expect_error<host::PlanError>([&] { test::evaluate_recipe(without_ep); },
                                      {"recipe.toml", "training.cuda_graph_modules", "dropless", "moe_router"});
  std::string whole = without_ep;
  whole.replace(whole.find("[\"moe\"]"), 7, "[\"full_iteration\"]");
  EXPECT_EQ(test::evaluate_recipe(whole).number("time.host_wait_s"), 0.0);
}

}  // namespace
}  // namespace paraplan
