// The plan-editing services strategies call: every edit is checked, so a misbehaving plugin gets
// an error status instead of corrupting the plan.
#include "host/plan/plan.h"

#include <cstring>

#include "paraplan/sdk.hpp"
#include "test_support.h"

namespace paraplan::host {
namespace {

pp_model small_model() {
  pp_model model{};
  model.struct_size = sizeof(model);
  model.name = "small";
  model.layers = 4, model.hidden = 64, model.heads = 4, model.kv_heads = 4, model.head_dim = 16;
  model.ffn_hidden = 256, model.ffn_type = PP_FFN_GELU, model.vocab = 100, model.seq_len = 32;
  return model;
}

struct PlanFixture : ::testing::Test {
  pp_model model = small_model();
  pp_training training{sizeof(pp_training), 32, 2, PP_PRECISION_BF16, PP_RECOMPUTE_NONE, PP_OPTIMIZER_ADAM};
  pp_cluster cluster{sizeof(pp_cluster), 16, 8};
  Plan plan{model, training, cluster, /*data_parallel_size=*/4};
  const pp_plan_api_v1& api = plan.api();
};

TEST_F(PlanFixture, StartsAsOneStageWithMicroBatchesFixed) {
  pp_plan_view_v1 view = plan.view();
  EXPECT_EQ(view.pipeline->stages, 1);
  EXPECT_EQ(view.pipeline->micro_batches, 32 / (2 * 4));
  ASSERT_EQ(view.stage_count, 1u);
  EXPECT_EQ(view.stages[0].layers, 4);
  EXPECT_EQ(view.data_parallel_size, 4);
}

TEST_F(PlanFixture, AddAxisRejectsDuplicatesAndBadDegrees) {
  EXPECT_EQ(api.add_axis(api.plan, "tp", 2, nullptr, "tp"), 0);
  EXPECT_EQ(api.add_axis(api.plan, "tp", 2, nullptr, "tp"), -1);
  EXPECT_EQ(api.add_axis(api.plan, "pp", 0, nullptr, "pp"), -1);
  EXPECT_EQ(api.add_axis(api.plan, "a_name_much_too_long_for_an_axis", 2, nullptr, "x"), -1);
}

TEST_F(PlanFixture, OpEditsAreChecked) {
  pp_op op = make_op(PP_OP_GEMM, PP_PHASE_FORWARD, PP_SCOPE_LAYER, "qkv", "test");
  EXPECT_EQ(api.insert_op(api.plan, 0, &op), PP_OK);
  EXPECT_EQ(api.insert_op(api.plan, 5, &op), PP_ERROR_INVALID_ARGUMENT);  // past the end
  EXPECT_EQ(api.set_op(api.plan, 1, &op), PP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.remove_op(api.plan, 1), PP_ERROR_INVALID_ARGUMENT);

  pp_op collective = make_op(PP_OP_COLLECTIVE, PP_PHASE_FORWARD, PP_SCOPE_LAYER, "all_reduce", "test");
  collective.collective = PP_COLLECTIVE_ALL_REDUCE;
  collective.axis = 3;  // no such axis
  EXPECT_EQ(api.insert_op(api.plan, 1, &collective), PP_ERROR_INVALID_ARGUMENT);

  pp_op unterminated = op;
  std::memset(unterminated.name, 'x', sizeof(unterminated.name));
  EXPECT_EQ(api.set_op(api.plan, 0, &unterminated), PP_ERROR_INVALID_ARGUMENT);

  pp_op negative = op;
  negative.flops = -1;
  EXPECT_EQ(api.set_op(api.plan, 0, &negative), PP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.set_op(api.plan, 0, nullptr), PP_ERROR_INVALID_ARGUMENT);
}

TEST_F(PlanFixture, AcceptsAnOlderShorterStruct) {
  // A plugin built against an older minor knows fewer trailing fields; the rest get defaults.
  pp_op op = make_op(PP_OP_GEMM, PP_PHASE_FORWARD, PP_SCOPE_LAYER, "qkv", "test");
  op.flops = 42;
  op.struct_size = offsetof(pp_op, collective);
  ASSERT_EQ(api.insert_op(api.plan, 0, &op), PP_OK);
  EXPECT_EQ(plan.ops()[0].struct_size, sizeof(pp_op));
  EXPECT_DOUBLE_EQ(plan.ops()[0].flops, 42);
  EXPECT_EQ(plan.ops()[0].repeat, 1u);
  EXPECT_EQ(plan.ops()[0].axis, -1);
}

TEST_F(PlanFixture, PipelineMustPlaceEveryLayerOnce) {
  pp_pipeline pipeline = plan.pipeline();
  pipeline.stages = 2;
  pp_stage stages[2] = {{sizeof(pp_stage), 2, 1, 0, 0.0}, {sizeof(pp_stage), 1, 0, 1, 0.0}};
  EXPECT_EQ(api.set_pipeline(api.plan, &pipeline, stages, 2), PP_ERROR_INVALID_ARGUMENT);  // 3 of 4 layers
  stages[1].layers = 2;
  EXPECT_EQ(api.set_pipeline(api.plan, &pipeline, stages, 1), PP_ERROR_INVALID_ARGUMENT);  // count mismatch
  EXPECT_EQ(api.set_pipeline(api.plan, &pipeline, stages, 2), PP_OK);
  EXPECT_EQ(plan.stages().size(), 2u);
  pp_schedule_step step{sizeof(pp_schedule_step), 2, 0, 0, PP_PHASE_FORWARD};
  EXPECT_EQ(api.set_schedule(api.plan, &step, 1), PP_ERROR_INVALID_ARGUMENT);  // stage 2 of 2
}

TEST_F(PlanFixture, MeshLayoutFollowsTheOrderInnermostFirst) {
  api.add_axis(api.plan, "dp", 4, nullptr, "fsdp");
  api.add_axis(api.plan, "tp", 2, nullptr, "tp");
  api.add_axis(api.plan, "pp", 2, nullptr, "pp");
  api.add_axis(api.plan, "ep", 2, "dp", "ep");
  plan.lay_out_mesh({"tp", "cp", "ep", "dp", "pp"});
  // tp innermost (stride 1), then dp (stride 2), then pp (stride 2*4 = 8); ep subdivides dp.
  EXPECT_EQ(plan.axes()[1].stride, 1);
  EXPECT_EQ(plan.axes()[0].stride, 2);
  EXPECT_EQ(plan.axes()[2].stride, 8);
  EXPECT_EQ(plan.axes()[3].stride, 2);
}

TEST_F(PlanFixture, MeshMustCoverTheCluster) {
  api.add_axis(api.plan, "dp", 4, nullptr, "fsdp");
  test::expect_error<PlanError>([&] { plan.lay_out_mesh({"dp"}); }, {"covers 4 GPUs but the cluster has 16"});
}

TEST_F(PlanFixture, ChildAxisNeedsItsParent) {
  api.add_axis(api.plan, "dp", 16, nullptr, "fsdp");
  api.add_axis(api.plan, "ep", 2, "ghost", "ep");
  test::expect_error<PlanError>([&] { plan.lay_out_mesh({"dp"}); }, {"'ep'", "'ghost'"});
}

}  // namespace
}  // namespace paraplan::host
