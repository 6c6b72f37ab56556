// The plan-editing services strategies call: every edit is checked, so a misbehaving plugin gets
// an error status instead of corrupting the plan.
#include "host/plan/plan.h"

#include <cstring>
#include <functional>
#include <limits>
#include <vector>

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
  pp_training training{sizeof(pp_training), 32, 2, PP_PRECISION_BF16, PP_RECOMPUTE_NONE, PP_OPTIMIZER_ADAM, 0, 0, PP_MASTER_WEIGHTS_SEPARATE, PP_ATTENTION_KERNEL_TUNED, 0, 0, PP_ELEMENTWISE_FUSED, 0, 0};
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

TEST_F(PlanFixture, AnOpMustBeAtLeastAsLargeAsInAbi10) {
  // pp_op has not grown since ABI 1.0: a shorter one was never built by any released SDK, and its
  // missing fields would be guessed. One from a later minor (larger) gives its known prefix.
  pp_op op = make_op(PP_OP_GEMM, PP_PHASE_FORWARD, PP_SCOPE_LAYER, "qkv", "test");
  op.flops = 42;
  op.struct_size = offsetof(pp_op, collective);
  EXPECT_EQ(api.insert_op(api.plan, 0, &op), PP_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(plan.refusal().find("smaller than ABI 1.0's"), std::string::npos) << plan.refusal();
  struct LaterOp {
    pp_op op;
    double field_of_a_later_minor;
  } later{op, 7.0};
  later.op.struct_size = sizeof(LaterOp);
  ASSERT_EQ(api.insert_op(api.plan, 0, &later.op), PP_OK);
  EXPECT_EQ(plan.op_list()[0].struct_size, sizeof(pp_op));
  EXPECT_DOUBLE_EQ(plan.op_list()[0].flops, 42);
}

// Every enum out of range and every non-finite or negative number is refused, and the reason
// names the field: an executor indexes tables by dtype and divides by these numbers.
TEST_F(PlanFixture, OpFieldsOutOfRangeAreRefusedWithTheirName) {
  const pp_op good = make_op(PP_OP_GEMM, PP_PHASE_FORWARD, PP_SCOPE_LAYER, "qkv", "test");
  ASSERT_EQ(api.insert_op(api.plan, 0, &good), PP_OK);
  struct Case {
    const char* field;
    void (*spoil)(pp_op&);
  };
  const Case cases[] = {
      {"dtype", [](pp_op& op) { op.dtype = static_cast<pp_dtype>(100000000); }},
      {"dtype", [](pp_op& op) { op.dtype = static_cast<pp_dtype>(-1); }},
      {"kind", [](pp_op& op) { op.kind = static_cast<pp_op_kind>(7); }},
      {"phase", [](pp_op& op) { op.phase = PP_PHASE_WEIGHT_GRADIENT; }},  // schedule steps only
      {"scope", [](pp_op& op) { op.scope = static_cast<pp_scope>(0); }},
      {"frequency", [](pp_op& op) { op.frequency = static_cast<pp_frequency>(3); }},
      {"collective", [](pp_op& op) { op.collective = static_cast<pp_collective>(6); }},
      {"overlap", [](pp_op& op) { op.overlap = static_cast<pp_overlap>(2); }},
      {"repeat", [](pp_op& op) { op.repeat = 0; }},
      {"repeat", [](pp_op& op) { op.repeat = kMaxRepeat + 1; }},
      {"flops", [](pp_op& op) { op.flops = std::numeric_limits<double>::quiet_NaN(); }},
      {"bytes", [](pp_op& op) { op.bytes = std::numeric_limits<double>::infinity(); }},
      {"m", [](pp_op& op) { op.m = -1; }},
      {"count", [](pp_op& op) { op.count = std::numeric_limits<double>::infinity(); }},
      {"kind NONE", [](pp_op& op) { op.kind = PP_OP_COLLECTIVE, op.collective = PP_COLLECTIVE_NONE; }},
      {"empty name", [](pp_op& op) { op.name[0] = '\0'; }},
  };
  for (const Case& check : cases) {
    pp_op spoiled = good;
    check.spoil(spoiled);
    plan.clear_refusal();
    EXPECT_EQ(api.set_op(api.plan, 0, &spoiled), PP_ERROR_INVALID_ARGUMENT) << check.field;
    EXPECT_EQ(api.insert_op(api.plan, 1, &spoiled), PP_ERROR_INVALID_ARGUMENT) << check.field;
    EXPECT_NE(plan.refusal().find(check.field), std::string::npos) << plan.refusal();
  }
  EXPECT_EQ(plan.op_list().size(), 1u);
  EXPECT_EQ(plan.op_list()[0].dtype, PP_DTYPE_BF16);  // nothing was half-applied
}

TEST_F(PlanFixture, MemoryItemsOutOfRangeAreRefused) {
  pp_memory_item item = make_memory_item(PP_MEMORY_OTHER, PP_SCOPE_STEP, "buffer", "test", 1e9);
  ASSERT_EQ(api.add_memory(api.plan, &item), PP_OK);
  for (double bytes : {-1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    pp_memory_item spoiled = item;
    spoiled.bytes = bytes;
    EXPECT_EQ(api.add_memory(api.plan, &spoiled), PP_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(api.set_memory(api.plan, 0, &spoiled), PP_ERROR_INVALID_ARGUMENT);
  }
  pp_memory_item kind = item;
  kind.kind = static_cast<pp_memory_kind>(9);
  EXPECT_EQ(api.add_memory(api.plan, &kind), PP_ERROR_INVALID_ARGUMENT);
  pp_memory_item scope = item;
  scope.scope = static_cast<pp_scope>(5);
  EXPECT_EQ(api.add_memory(api.plan, &scope), PP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(plan.memory_items().size(), 1u);
  EXPECT_DOUBLE_EQ(plan.memory_items()[0].bytes, 1e9);
}

TEST_F(PlanFixture, PipelineFiguresMustBeFiniteAndInRange) {
  pp_stage stages[2] = {{sizeof(pp_stage), 2, 1, 0, 0.0}, {sizeof(pp_stage), 2, 0, 1, 0.0}};
  auto pipeline_with = [&](auto change) {
    pp_pipeline pipeline = plan.pipeline();
    pipeline.stages = 2;
    change(pipeline);
    return api.set_pipeline(api.plan, &pipeline, stages, 2);
  };
  EXPECT_EQ(pipeline_with([](pp_pipeline&) {}), PP_OK);
  EXPECT_EQ(pipeline_with([](pp_pipeline& p) { p.bubble_fraction = std::numeric_limits<double>::quiet_NaN(); }),
            PP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pipeline_with([](pp_pipeline& p) { p.in_flight_micro_batches = -1; }), PP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pipeline_with([](pp_pipeline& p) { p.schedule = static_cast<pp_schedule_kind>(9); }), PP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pipeline_with([](pp_pipeline& p) { p.virtual_stages = 5; }), PP_ERROR_INVALID_ARGUMENT);  // > 4 layers
  // Stage layer counts that wrap to the model's layer count when summed are refused one by one.
  stages[0].layers = std::numeric_limits<int64_t>::max();
  stages[1].layers = std::numeric_limits<int64_t>::min() + 5;
  EXPECT_EQ(pipeline_with([](pp_pipeline&) {}), PP_ERROR_INVALID_ARGUMENT);
  stages[0] = {sizeof(pp_stage), 2, 1, 0, std::numeric_limits<double>::infinity()};
  stages[1] = {sizeof(pp_stage), 2, 0, 1, 0.0};
  EXPECT_EQ(pipeline_with([](pp_pipeline&) {}), PP_ERROR_INVALID_ARGUMENT);
  // A step for a micro-batch or chunk the pipeline does not have.
  pp_schedule_step step{sizeof(pp_schedule_step), 0, 0, 0, PP_PHASE_FORWARD};
  EXPECT_EQ(api.set_schedule(api.plan, &step, 1), PP_OK);
  step.micro_batch = static_cast<int32_t>(plan.pipeline().micro_batches);
  EXPECT_EQ(api.set_schedule(api.plan, &step, 1), PP_ERROR_INVALID_ARGUMENT);
  step.micro_batch = 0, step.chunk = 1;
  EXPECT_EQ(api.set_schedule(api.plan, &step, 1), PP_ERROR_INVALID_ARGUMENT);
}

TEST_F(PlanFixture, AxisDegreesAreBoundedByTheGpuCount) {
  EXPECT_EQ(api.add_axis(api.plan, "tp", 17, nullptr, "tp"), -1);  // 16 GPUs
  EXPECT_NE(plan.refusal().find("degree 17"), std::string::npos) << plan.refusal();
  EXPECT_EQ(api.add_axis(api.plan, "tp", 16, nullptr, "tp"), 0);
  char unterminated[PP_AXIS_NAME_CAPACITY + 8];
  std::memset(unterminated, 'a', sizeof(unterminated));
  unterminated[sizeof(unterminated) - 1] = '\0';
  EXPECT_EQ(api.add_axis(api.plan, unterminated, 2, nullptr, "x"), -1);
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

// A region parent: ep and edp share the ranks tp x dp span together (Megatron-LM's expert grid
// with whole experts). 16 GPUs as tp 2 (stride 1), dp 4 (stride 2), pp 2 (stride 8): the region
// starts at tp's stride 1 and holds 8 ranks; ep 4 takes stride 1, edp 2 stride 4.
TEST_F(PlanFixture, RegionChildrenShareTheRanksOfNeighbouringAxes) {
  api.add_axis(api.plan, "dp", 4, nullptr, "fsdp");
  api.add_axis(api.plan, "tp", 2, nullptr, "tp");
  api.add_axis(api.plan, "pp", 2, nullptr, "pp");
  api.add_axis(api.plan, "ep", 4, "tp*dp", "ep");
  api.add_axis(api.plan, "edp", 2, "tp*dp", "ep");
  plan.lay_out_mesh({"tp", "dp", "pp"});
  EXPECT_EQ(plan.axes()[3].stride, 1);
  EXPECT_EQ(plan.axes()[4].stride, 4);
  // With pp between tp and dp the region is split: refused, naming both.
  test::expect_error<PlanError>([&] { plan.lay_out_mesh({"tp", "pp", "dp"}); },
                                {"axes inside 'tp*dp' need tp and dp next to each other"});
  // Children that do not divide the region's 8 ranks are refused.
  api.add_axis(api.plan, "ghost", 3, "tp*dp", "ep");
  test::expect_error<PlanError>([&] { plan.lay_out_mesh({"tp", "dp", "pp"}); },
                                {"axes inside 'tp*dp' have degree product 24, which does not divide the 8 ranks tp, dp span"});
}

TEST_F(PlanFixture, ARegionNamesAxesThatExist) {
  api.add_axis(api.plan, "dp", 16, nullptr, "fsdp");
  api.add_axis(api.plan, "ep", 2, "cp*dp", "ep");
  test::expect_error<PlanError>([&] { plan.lay_out_mesh({"dp"}); }, {"mesh region 'cp*dp' names an axis 'cp'"});
  EXPECT_EQ(paraplan::axis_region("tp*cp*dp"), (std::vector<std::string_view>{"tp", "cp", "dp"}));
  EXPECT_EQ(paraplan::axis_region("dp"), (std::vector<std::string_view>{"dp"}));
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

// Names are compared letter by letter up to the first difference, never past a shorter name's
// end: a prefix longer than the name, or the name continuing past a literal, is no match.
TEST(OpNames, PrefixesAndWholeNamesMatchOnlyAsSpelled) {
  const pp_op op = make_op(PP_OP_GEMM, PP_PHASE_FORWARD, PP_SCOPE_LAYER, "mla_up", "test");
  EXPECT_TRUE(paraplan::has_prefix(op.name, "mla_"));
  EXPECT_TRUE(paraplan::has_prefix(op.name, ""));
  EXPECT_TRUE(paraplan::has_prefix(op.name, "mla_up"));
  EXPECT_FALSE(paraplan::has_prefix(op.name, "mla_up_proj"));  // longer than the name
  EXPECT_FALSE(paraplan::has_prefix(op.name, "mlp_"));
  EXPECT_TRUE(paraplan::is_named(op.name, "mla_up"));
  EXPECT_FALSE(paraplan::is_named(op.name, "mla_"));    // the name goes on
  EXPECT_FALSE(paraplan::is_named(op.name, "mla_upx"));  // the literal goes on
  EXPECT_FALSE(paraplan::is_named(op.name, "nla_up"));
}

// The search restores a saved plan by copying back only the ops and items at or after the first
// one edited since (host/plan/plan.h). Nested saves and restores in the search's order, with edits
// anywhere (set, insert, remove, append) between them, must give back exactly what was saved: each
// restore is checked against the plan's full contents at its save, kept here by value.
TEST_F(PlanFixture, RestoringGivesBackExactlyWhatWasSavedAfterAnyEdits) {
  for (int i = 0; i < 12; ++i) {
    pp_op op = make_op(PP_OP_MEMORY, PP_PHASE_FORWARD, PP_SCOPE_LAYER, "op", "test");
    op.bytes = i;
    ASSERT_EQ(api.insert_op(api.plan, static_cast<uint32_t>(i), &op), PP_OK);
    pp_memory_item item = make_memory_item(PP_MEMORY_OTHER, PP_SCOPE_STEP, "item", "test", i);
    ASSERT_EQ(api.add_memory(api.plan, &item), PP_OK);
  }
  struct Contents {
    std::vector<double> ops, memory;
    bool operator==(const Contents&) const = default;
  };
  const auto contents = [&] {
    Contents now;
    for (const pp_op& op : plan.op_list()) now.ops.push_back(op.bytes);
    for (const pp_memory_item& item : plan.memory_items()) now.memory.push_back(item.bytes);
    return now;
  };
  uint32_t seed = 7;
  const auto next = [&](uint32_t below) {
    seed = seed * 1664525u + 1013904223u;
    return (seed >> 8) % below;
  };
  double stamp = 100;
  // One random edit, anywhere in the plan.
  const auto edit = [&] {
    const uint32_t ops = static_cast<uint32_t>(plan.op_list().size());
    pp_op op = make_op(PP_OP_MEMORY, PP_PHASE_FORWARD, PP_SCOPE_LAYER, "edited", "test");
    op.bytes = ++stamp;
    pp_memory_item item = make_memory_item(PP_MEMORY_OTHER, PP_SCOPE_STEP, "edited", "test", ++stamp);
    switch (next(5)) {
      case 0: ASSERT_EQ(api.set_op(api.plan, next(ops), &op), PP_OK); break;
      case 1: ASSERT_EQ(api.insert_op(api.plan, next(ops + 1), &op), PP_OK); break;
      case 2:
        if (ops > 1) {
          ASSERT_EQ(api.remove_op(api.plan, next(ops)), PP_OK);
        }
        break;
      case 3: ASSERT_EQ(api.set_memory(api.plan, next(static_cast<uint32_t>(plan.memory_items().size())), &item), PP_OK); break;
      default: ASSERT_EQ(api.add_memory(api.plan, &item), PP_OK); break;
    }
  };
  // Three levels of two or three options each, as Worker::descend walks them, twice over (the
  // second walk saves over the first walk's states).
  std::vector<Plan::State> saved(3);
  std::vector<Contents> expected(3);
  int restores = 0;
  const std::function<void(size_t)> descend = [&](size_t level) {
    if (level == saved.size()) return;
    const int options = 2 + static_cast<int>(next(2));
    for (int option = 0; option < options; ++option) {
      if (option == 0) plan.save(saved[level]), expected[level] = contents();
      if (option > 0) {
        plan.restore(saved[level]);
        ++restores;
        ASSERT_EQ(contents(), expected[level]) << "level " << level << ", option " << option;
      }
      for (uint32_t edits = next(4); edits > 0; --edits) edit();
      descend(level + 1);
    }
  };
  descend(0);
  descend(0);
  EXPECT_GT(restores, 10);
  // A state whose mark was dropped (one saved before it was restored since) is copied whole.
  plan.restore(saved[2]);
  EXPECT_EQ(contents(), expected[2]);
  plan.restore(saved[0]);
  EXPECT_EQ(contents(), expected[0]);
  plan.restore(saved[2]);
  EXPECT_EQ(contents(), expected[2]);
}

}  // namespace
}  // namespace paraplan::host
