// Composition: degrees, the default data-parallel strategy, micro-batches, plugin failures.
#include "host/plan/composer.h"

#include "test_support.h"

namespace paraplan::host {
namespace {

using test::expect_error;

std::string recipe(int gpus, const std::string& strategies, int global_batch = 64) {
  return "[model]\npreset = \"llama2-7b\"\n[training]\nglobal_batch = " + std::to_string(global_batch) +
         "\nmicro_batch = 1\n[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = " + std::to_string(gpus) + "\n" + strategies;
}

ComposedPlan compose(const std::string& text, const PluginCatalog& catalog = test::bundled_catalog()) {
  auto parsed = parse_recipe(text, "recipe.toml");
  return compose_plan(*parsed, catalog, 8);
}

TEST(Composer, DataParallelTakesTheRemainder) {
  ComposedPlan composed = compose(recipe(16, "[[strategy]]\nname = \"test_good\"\n[[strategy]]\nname = \"fsdp\"\n"));
  ASSERT_EQ(composed.strategies.size(), 2u);
  EXPECT_EQ(composed.strategies[0].name, "fsdp");  // apply order 50 < test_good's 100
  EXPECT_EQ(composed.strategies[0].degree, 16);
  EXPECT_EQ(composed.strategies[1].degree, 1);     // no degree and no remainder flag: 1
  EXPECT_EQ(composed.plan->data_parallel_size(), 16);
  EXPECT_EQ(composed.plan->pipeline().micro_batches, 64 / (1 * 16));
}

TEST(Composer, StrategyGivenADegreeMustCreateItsAxis) {
  // test_good adds no mesh axis: a degree of 2 would leave half the GPUs without a role.
  expect_error<InputError>([] { compose(recipe(16, "[[strategy]]\nname = \"test_good\"\ndegree = 2\n")); },
                           {"strategy[0] 'test_good'", "degree 2", "created no mesh axis"});
}

TEST(Composer, AddsTheDefaultDataParallelStrategy) {
  ComposedPlan composed = compose(recipe(8, ""));
  ASSERT_EQ(composed.strategies.size(), 1u);
  EXPECT_EQ(composed.strategies[0].name, "fsdp");
  EXPECT_TRUE(composed.strategies[0].added_by_default);
  EXPECT_EQ(composed.strategies[0].degree, 8);
  EXPECT_EQ(composed.strategies[0].parameters, "stage=0 overlap=true bucket_parameters=0 prefetch=1");  // plain DP
}

TEST(Composer, DegreesMustDivideTheGpuCount) {
  expect_error<PlanError>([] { compose(recipe(8, "[[strategy]]\nname = \"test_good\"\ndegree = 3\n")); },
                          {"test_good=3", "do not divide cluster.num_gpus = 8"});
}

TEST(Composer, ExplicitDegreesMustMatchTheGpuCount) {
  expect_error<PlanError>([] { compose(recipe(8, "[[strategy]]\nname = \"fsdp\"\ndegree = 4\n")); },
                          {"fsdp=4 = 4 but cluster.num_gpus = 8"});
}

TEST(Composer, GlobalBatchMustSplitOverDataParallelRanks) {
  expect_error<PlanError>([] { compose(recipe(16, "", /*global_batch=*/24)); },
                          {"global_batch = 24", "micro_batch x data-parallel size = 1 x 16"});
}

TEST(Composer, GpusMustFillWholeNodes) {
  auto parsed = parse_recipe(recipe(12, ""), "recipe.toml");
  expect_error<PlanError>([&] { compose_plan(*parsed, test::bundled_catalog(), 8); },
                          {"num_gpus = 12 is not a whole number of nodes of gpus_per_node = 8"});
}

TEST(Composer, MeshOrderTypoIsCaught) {
  std::string text = recipe(8, "");
  text.replace(text.find("num_gpus = 8"), 12, "num_gpus = 8\nmesh_order = [\"tp\", \"dpp\"]");
  expect_error<InputError>([&] { compose(text); }, {"cluster.mesh_order: 'dpp' names no mesh axis (did you mean 'dp'?)"});
}

TEST(Composer, UnknownStrategyIsAnInputErrorAtItsLine) {
  expect_error<InputError>([] { compose(recipe(8, "[[strategy]]\nname = \"fsdq\"\n")); },
                           {"recipe.toml:10:8", "strategy[0].name", "no strategy plugin named 'fsdq'", "did you mean 'fsdp'?"});
}

TEST(Composer, SchemaErrorsNameTheStrategy) {
  expect_error<InputError>([] { compose(recipe(8, "[[strategy]]\nname = \"fsdp\"\nstage = 4\n")); },
                           {"recipe.toml:11:9", "strategy[0].stage", "4 is out of range [0, 3]"});
}

TEST(Composer, AppliesTheStrategy) {
  // test_good multiplies the flops of every "qkv" op by factor and adds a depth-MB buffer.
  ComposedPlan plain = compose(recipe(8, ""));
  ComposedPlan scaled = compose(recipe(8, "[[strategy]]\nname = \"test_good\"\nfactor = 3.0\ndepth = 5\n"));
  double plain_qkv = 0, scaled_qkv = 0, buffer = 0;
  for (const pp_op& op : plain.plan->op_list())
    if (std::string(op.name) == "qkv") plain_qkv += op.flops;
  for (const pp_op& op : scaled.plan->op_list())
    if (std::string(op.name) == "qkv") scaled_qkv += op.flops;
  for (const pp_memory_item& item : scaled.plan->memory_items())
    if (std::string(item.name) == "test_good.buffer") buffer = item.bytes;
  EXPECT_DOUBLE_EQ(scaled_qkv, 3.0 * plain_qkv);
  EXPECT_DOUBLE_EQ(buffer, 5e6);
}

TEST(Composer, PluginThatThrowsInCreateIsAnInputError) {
  PluginCatalog catalog = PluginCatalog::scan({PARAPLAN_BUNDLED_PLUGIN_DIR, PARAPLAN_TEST_PLUGINS_CREATE_THROWS_DIR});
  expect_error<InputError>([&] { compose(recipe(8, "[[strategy]]\nname = \"test_create_throws\"\n"), catalog); },
                           {"recipe.toml:9:1", "strategy[0] 'test_create_throws'", "boom in create"});
}

TEST(Composer, ConstraintFromApplyIsAPlanError) {
  PluginCatalog catalog = PluginCatalog::scan({PARAPLAN_BUNDLED_PLUGIN_DIR, PARAPLAN_TEST_PLUGINS_APPLY_ERROR_DIR});
  expect_error<PlanError>([&] { compose(recipe(8, "[[strategy]]\nname = \"test_apply_error\"\n"), catalog); },
                          {"strategy[0] 'test_apply_error'", "refuses every plan"});
  expect_error<InputError>([&] { compose(recipe(8, "[[strategy]]\nname = \"test_status_error\"\n"), catalog); },
                           {"strategy[0] 'test_status_error'", "bad parameters"});
}

}  // namespace
}  // namespace paraplan::host

namespace paraplan::host {
namespace {

TEST(Composer, ScheduleStepsOnlyWhenTheExecutorWalksThem) {
  auto parsed = parse_recipe(recipe(8, "[[strategy]]\nname = \"pp\"\ndegree = 4\n", /*global_batch=*/8), "recipe.toml");
  // p = 4 stages, m = 8 / 2 data-parallel ranks = 4 micro-batches: 4 x 4 x 2 steps for 1F1B.
  EXPECT_EQ(compose_plan(*parsed, test::bundled_catalog(), 8, /*wants_schedule=*/true).plan->view().step_count, 32u);
  EXPECT_EQ(compose_plan(*parsed, test::bundled_catalog(), 8, /*wants_schedule=*/false).plan->view().step_count, 0u);
}

}  // namespace
}  // namespace paraplan::host
