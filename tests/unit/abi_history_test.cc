// The promise of a stable ABI, proven: a plugin of every kind, compiled against the frozen public
// headers of every released minor (tests/abi/1.<m>), loads into today's host and runs, and the
// sizes those headers give are the rows of the history the loader checks against
// (host/plugin/abi_history.h), which docs/sdk.md prints.
#include "host/plugin/abi_history.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include "frozen_abi.h"
#include "host/export/exporting.h"
#include "paraplan/abi_history.h"
#include "test_support.h"

namespace paraplan::host {
namespace {

constexpr size_t AbiMinorSizes::*kColumns[] = {
    &AbiMinorSizes::plugin,        &AbiMinorSizes::strategy,    &AbiMinorSizes::executor,   &AbiMinorSizes::hardware,
    &AbiMinorSizes::exporter,      &AbiMinorSizes::hardware_profile, &AbiMinorSizes::op,    &AbiMinorSizes::memory_item,
    &AbiMinorSizes::pipeline,      &AbiMinorSizes::stage,       &AbiMinorSizes::schedule_step, &AbiMinorSizes::param_spec,
    &AbiMinorSizes::search_case,   &AbiMinorSizes::search_choice, &AbiMinorSizes::plan_figures};
const char* const kColumnNames[] = {"pp_plugin_v1", "pp_strategy_v1", "pp_executor_v1", "pp_hardware_v1",
                                    "pp_exporter_v1", "pp_hardware_profile", "pp_op", "pp_memory_item",
                                    "pp_pipeline", "pp_stage", "pp_schedule_step", "pp_param_spec",
                                    "pp_search_case", "pp_search_choice", "pp_plan_figures"};

std::string minor_name(uint32_t minor) { return "abi_1_" + std::to_string(minor); }

TEST(AbiHistory, OneRowPerReleasedMinorAndAFrozenCopyOfEach) {
  ASSERT_EQ(abi_history().size(), PP_ABI_MINOR + 1u);
  ASSERT_EQ(std::size(test::kFrozenAbiSizes), abi_history().size());
  for (uint32_t minor = 0; minor <= PP_ABI_MINOR; ++minor) EXPECT_EQ(abi_history()[minor].minor, minor);
}

// The current minor's frozen copy is today's headers, file for file: an SDK change either keeps
// them equal (refresh the copy while the minor is unreleased) or starts a new minor.
TEST(AbiHistory, TheCurrentMinorsCopyIsTodaysHeaders) {
  namespace fs = std::filesystem;
  const fs::path today = PARAPLAN_SOURCE_DIR "/sdk/include/paraplan";
  const fs::path frozen = fs::path(PARAPLAN_SOURCE_DIR "/tests/abi") / ("1." + std::to_string(PP_ABI_MINOR)) /
                          "include" / "paraplan";
  auto contents = [](const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(today)) {
    ++files;
    EXPECT_TRUE(fs::exists(frozen / entry.path().filename())) << entry.path().filename() << " is not in " << frozen;
    EXPECT_EQ(contents(entry.path()), contents(frozen / entry.path().filename()))
        << entry.path().filename() << " differs from its copy in " << frozen;
  }
  EXPECT_EQ(static_cast<size_t>(std::distance(fs::directory_iterator(frozen), fs::directory_iterator())), files);
}

// The frozen headers are the released ones; the table must say what they say, struct by struct.
TEST(AbiHistory, EveryFrozenMinorsSizesAreItsRow) {
  for (uint32_t minor = 0; minor <= PP_ABI_MINOR; ++minor)
    for (size_t column = 0; column < std::size(kColumns); ++column)
      EXPECT_EQ(test::kFrozenAbiSizes[minor][column], abi_history()[minor].*kColumns[column])
          << kColumnNames[column] << " in ABI 1." << minor;
}

// Sizes only grow: a later minor appends, it never removes or reorders.
TEST(AbiHistory, StructsOnlyGrow) {
  for (uint32_t minor = 1; minor <= PP_ABI_MINOR; ++minor)
    for (size_t column = 0; column < std::size(kColumns); ++column)
      EXPECT_GE(abi_history()[minor].*kColumns[column], abi_history()[minor - 1].*kColumns[column])
          << kColumnNames[column] << " shrank in ABI 1." << minor;
}

TEST(AbiHistory, AFieldIsReadOnlyWhenTheMinorAndTheSizeBothCoverIt) {
  const size_t with_search = abi_sizes(1).strategy;
  EXPECT_TRUE(holds_fields_of(1, static_cast<uint32_t>(with_search), 1, &AbiMinorSizes::strategy));
  EXPECT_FALSE(holds_fields_of(0, static_cast<uint32_t>(with_search), 1, &AbiMinorSizes::strategy));  // claims 1.0
  EXPECT_FALSE(holds_fields_of(1, static_cast<uint32_t>(abi_sizes(0).strategy), 1, &AbiMinorSizes::strategy));
  EXPECT_FALSE(holds_fields_of(PP_ABI_MINOR, 1u << 20, PP_ABI_MINOR + 1, &AbiMinorSizes::plugin));  // no such minor yet
}

// docs/sdk.md's table is this table (LP64, as the docs say).
TEST(AbiHistory, TheSdkGuidePrintsTheTable) {
  std::ifstream guide(PARAPLAN_SOURCE_DIR "/docs/sdk.md");
  std::stringstream text;
  text << guide.rdbuf();
  const std::string document = text.str();
  const size_t begin = document.find("<!-- abi-history: begin -->");
  const size_t end = document.find("<!-- abi-history: end -->");
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  std::stringstream table(document.substr(begin, end - begin));
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(table, line);) {
    if (!line.starts_with("| 1.")) continue;
    std::vector<std::string> cells;
    std::stringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) cells.push_back(std::regex_replace(cell, std::regex("^ +| +$"), ""));
    rows.push_back(cells);
  }
  ASSERT_EQ(rows.size(), abi_history().size());
  for (uint32_t minor = 0; minor <= PP_ABI_MINOR; ++minor) {
    ASSERT_GE(rows[minor].size(), std::size(kColumns) + 1);
    EXPECT_EQ(rows[minor][0], "1." + std::to_string(minor));
    for (size_t column = 0; column < std::size(kColumns); ++column) {
      const size_t size = abi_history()[minor].*kColumns[column];
      EXPECT_EQ(rows[minor][column + 1], size == 0 ? "-" : std::to_string(size))
          << kColumnNames[column] << " of ABI 1." << minor;
    }
  }
}

// Each minor's plugins are found by a scan (in a child process), listed with their own ABI, and
// loaded; the loader accepted tables exactly as large as their minor's.
TEST(FrozenAbi, EveryMinorsPluginsLoad) {
  for (uint32_t minor = 0; minor <= PP_ABI_MINOR; ++minor) {
    PluginCatalog catalog = PluginCatalog::scan({test::kFrozenAbiPluginDirs[minor]});
    EXPECT_TRUE(catalog.skipped().empty()) << (catalog.skipped().empty() ? "" : catalog.skipped()[0].reason);
    const size_t kinds = minor >= 3 ? 4 : 3;
    ASSERT_EQ(catalog.records().size(), kinds) << "ABI 1." << minor;
    for (const PluginRecord& record : catalog.records()) {
      EXPECT_EQ(record.abi_minor, minor) << record.name;
      const LoadedPlugin* plugin = catalog.find(record.name);
      ASSERT_NE(plugin, nullptr) << record.name;
      EXPECT_EQ(plugin->metadata->struct_size, abi_sizes(minor).plugin) << record.name;
    }
    EXPECT_EQ(catalog.require(minor_name(minor) + "_buffer", PP_KIND_STRATEGY).metadata->strategy->struct_size,
              abi_sizes(minor).strategy);
    EXPECT_EQ(catalog.require(minor_name(minor) + "_counter", PP_KIND_EXECUTOR).metadata->executor->struct_size,
              abi_sizes(minor).executor);
  }
}

std::string legacy_recipe(uint32_t minor, bool with_buffer) {
  std::string recipe =
      "[model]\nlayers = 4\nhidden = 1024\nheads = 8\nvocab = 32000\nseq_len = 2048\n"
      "[training]\nglobal_batch = 16\nmicro_batch = 1\n"
      "[cluster]\nhardware = \"" + minor_name(minor) + "_gpu\"\nnum_gpus = 8\n"
      "[[strategy]]\nname = \"tp\"\ndegree = 2\n";
  if (with_buffer) recipe += "[[strategy]]\nname = \"" + minor_name(minor) + "_buffer\"\ngib = 2.5\n";
  return recipe;
}

// Each minor's strategy, hardware profile and executor run together with today's bundled ones,
// and every figure that crossed the boundary is the one it must be.
TEST(FrozenAbi, EveryMinorsPluginsRun) {
  for (uint32_t minor = 0; minor <= PP_ABI_MINOR; ++minor) {
    SCOPED_TRACE("ABI 1." + std::to_string(minor));
    const PluginCatalog catalog = PluginCatalog::scan({PARAPLAN_BUNDLED_PLUGIN_DIR, test::kFrozenAbiPluginDirs[minor]});
    auto evaluate = [&](bool with_buffer, const std::string& executor) {
      auto recipe = parse_recipe(legacy_recipe(minor, with_buffer), "legacy.toml");
      auto hardware = open_hardware(*recipe, catalog);
      ComposedPlan composed = compose_plan(*recipe, catalog, gpus_per_node(*recipe, *hardware));
      ResultTree results = run_executor(executor, *recipe, catalog, composed, *hardware);
      return std::make_pair(std::move(composed), std::move(results));
    };
    const std::string counter = minor_name(minor) + "_counter";
    auto [plan, counted] = evaluate(true, counter);
    EXPECT_EQ(counted.number("legacy.built_against_minor"), static_cast<double>(minor));
    EXPECT_EQ(counted.number("legacy.peak_bf16"), 200e12);  // the legacy profile's, through the binding
    EXPECT_EQ(counted.text("legacy.hardware"), minor_name(minor) + "_gpu");
    EXPECT_EQ(counted.number("legacy.ops"), static_cast<double>(plan.plan->op_list().size()));
    // The strategy's 2.5 GiB buffer is among the memory items the executor summed.
    double memory = 0.0, forward_gemm_s = 0.0;
    for (const pp_memory_item& item : plan.plan->memory_items()) memory += item.bytes;
    EXPECT_DOUBLE_EQ(*counted.number("legacy.memory_bytes"), memory);
    bool found = false;
    for (const pp_memory_item& item : plan.plan->memory_items())
      found = found || (std::string(item.name) == "legacy.buffer" && item.bytes == 2.5 * 1073741824.0);
    EXPECT_TRUE(found);
    // The hardware's own GEMM time (2mnk / 100 TFLOP/s) answered the executor's call.
    for (const pp_op& op : plan.plan->op_list())
      if (op.kind == PP_OP_GEMM && op.phase == PP_PHASE_FORWARD) forward_gemm_s += 2.0 * op.m * op.n * op.k / 100e12 * op.count;
    EXPECT_NEAR(*counted.number("legacy.forward_gemm_s"), forward_gemm_s, forward_gemm_s * 1e-12);

    // With today's analytic executor: the buffer adds exactly its bytes to the busiest GPU.
    auto [plain_plan, plain] = evaluate(false, "analytic");
    auto [buffered_plan, buffered] = evaluate(true, "analytic");
    EXPECT_DOUBLE_EQ(*buffered.number("memory.per_gpu_bytes") - *plain.number("memory.per_gpu_bytes"), 2.5 * 1073741824.0);
    EXPECT_GT(*plain.number("time.step_s"), 0.0);
  }
}

TEST(FrozenAbi, ExportersFromEveryMinorThatHasThemRun) {
  for (uint32_t minor = 3; minor <= PP_ABI_MINOR; ++minor) {
    SCOPED_TRACE("ABI 1." + std::to_string(minor));
    const PluginCatalog catalog = PluginCatalog::scan({PARAPLAN_BUNDLED_PLUGIN_DIR, test::kFrozenAbiPluginDirs[minor]});
    auto recipe = parse_recipe(legacy_recipe(minor, true), "legacy.toml");
    auto hardware = open_hardware(*recipe, catalog);
    ComposedPlan composed = compose_plan(*recipe, catalog, gpus_per_node(*recipe, *hardware));
    ExportResult result = run_exporter(minor_name(minor) + "_notes", *recipe, catalog, composed, *hardware);
    ASSERT_EQ(result.files.size(), 1u);
    EXPECT_EQ(result.files[0].name, "legacy.txt");
    EXPECT_NE(result.files[0].data.find("tp degree=2"), std::string::npos) << result.files[0].data;
    EXPECT_NE(result.files[0].data.find(minor_name(minor) + "_buffer degree=1 gib=2.5"), std::string::npos)
        << result.files[0].data;
    ASSERT_EQ(result.unexpressed.size(), 1u);
  }
}

// The minor before the layer stack: its strategy runs on a model of several kinds of layer (its
// buffer counted once, as on a uniform model), through today's pipeline and analytic executor
// over pp stages that hold different kinds; its executor, which would count every layer as the
// first kind, is refused with the reason.
TEST(FrozenAbi, TheLastMinorBeforeTheLayerStackRunsOnALayeredModel) {
  const uint32_t minor = 5;  // 1.6 added the layer stack
  const PluginCatalog catalog = PluginCatalog::scan({PARAPLAN_BUNDLED_PLUGIN_DIR, test::kFrozenAbiPluginDirs[minor]});
  auto recipe_text = [&](bool with_buffer) {
    std::string text =
        "[model]\nlayers = 8\nhidden = 1024\nheads = 8\nkv_heads = 2\nffn_hidden = 2048\nffn_type = \"swiglu\"\n"
        "vocab = 32000\nseq_len = 2048\nmoe_experts = 8\nmoe_top_k = 2\nmoe_ffn_hidden = 512\ndense_layers = 2\n"
        "[training]\nglobal_batch = 16\nmicro_batch = 1\n"
        "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 8\n"
        "[[strategy]]\nname = \"tp\"\ndegree = 2\n[[strategy]]\nname = \"pp\"\ndegree = 2\n";
    if (with_buffer) text += "[[strategy]]\nname = \"" + minor_name(minor) + "_buffer\"\ngib = 2.5\n";
    return text;
  };
  auto evaluate = [&](bool with_buffer, const std::string& executor) {
    auto recipe = parse_recipe(recipe_text(with_buffer), "layered.toml");
    auto hardware = open_hardware(*recipe, catalog);
    ComposedPlan composed = compose_plan(*recipe, catalog, gpus_per_node(*recipe, *hardware));
    return run_executor(executor, *recipe, catalog, composed, *hardware);
  };
  const ResultTree plain = evaluate(false, "analytic"), buffered = evaluate(true, "analytic");
  EXPECT_DOUBLE_EQ(*buffered.number("memory.per_gpu_bytes") - *plain.number("memory.per_gpu_bytes"), 2.5 * 1073741824.0);
  EXPECT_DOUBLE_EQ(*buffered.number("time.step_s"), *plain.number("time.step_s"));
  test::expect_error<PlanError>([&] { evaluate(true, minor_name(minor) + "_counter"); },
                                {"executor '" + minor_name(minor) + "_counter' was built against SDK ABI 1." +
                                     std::to_string(minor) + ", before the layer stack (1.6)",
                                 "2 kinds of layer"});
}

// 1.7 added the Triton attention kernel, which a 1.6 executor would price as the tuned kernel:
// the host refuses to hand it such a recipe, and runs the same recipe with a current executor.
TEST(FrozenAbi, ThePreviousMinorsExecutorIsRefusedTheTritonKernel) {
  const uint32_t minor = 6;
  const PluginCatalog catalog = PluginCatalog::scan({PARAPLAN_BUNDLED_PLUGIN_DIR, test::kFrozenAbiPluginDirs[minor]});
  auto evaluate = [&](const std::string& kernel, const std::string& executor) {
    auto recipe = parse_recipe(
        "[model]\nlayers = 4\nhidden = 4096\nheads = 32\nvocab = 32000\nseq_len = 8192\n"
        "[training]\nglobal_batch = 8\nmicro_batch = 1\nattention_kernel = \"" + kernel + "\"\n"
        "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 1\n",
        "triton.toml");
    auto hardware = open_hardware(*recipe, catalog);
    ComposedPlan composed = compose_plan(*recipe, catalog, gpus_per_node(*recipe, *hardware));
    return run_executor(executor, *recipe, catalog, composed, *hardware);
  };
  EXPECT_GT(*evaluate("triton", "analytic").number("time.step_s"), *evaluate("flash2", "analytic").number("time.step_s"));
  EXPECT_NO_THROW(evaluate("flash2", minor_name(minor) + "_counter"));
  test::expect_error<PlanError>([&] { evaluate("triton", minor_name(minor) + "_counter"); },
                                {"executor '" + minor_name(minor) + "_counter' was built against SDK ABI 1.6, before "
                                 "attention_kernel \"triton\" (1.7)"});
}

// 1.8 added torchtitan's op policy to the recompute modules, which a 1.7 executor or exporter
// would read as Megatron-LM's modules: the host refuses it such a recipe, and runs the same
// recipe with Megatron-LM's selective recompute.
TEST(FrozenAbi, ThePreviousMinorsExecutorIsRefusedTorchtitansOpPolicyAndEagerKernels) {
  const uint32_t minor = 7;
  const PluginCatalog catalog = PluginCatalog::scan({PARAPLAN_BUNDLED_PLUGIN_DIR, test::kFrozenAbiPluginDirs[minor]});
  auto evaluate = [&](const std::string& modules, const std::string& executor) {
    auto recipe = parse_recipe(
        "[model]\nlayers = 4\nhidden = 4096\nheads = 32\nvocab = 32000\nseq_len = 8192\n"
        "[training]\nglobal_batch = 8\nmicro_batch = 1\nrecompute = \"selective\"\nrecompute_modules = [\"" +
            modules + "\"]\n[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 1\n",
        "op_policy.toml");
    auto hardware = open_hardware(*recipe, catalog);
    ComposedPlan composed = compose_plan(*recipe, catalog, gpus_per_node(*recipe, *hardware));
    return run_executor(executor, *recipe, catalog, composed, *hardware);
  };
  EXPECT_NO_THROW(evaluate("torchtitan_op", "analytic"));
  EXPECT_NO_THROW(evaluate("core_attn", minor_name(minor) + "_counter"));
  test::expect_error<PlanError>([&] { evaluate("torchtitan_op", minor_name(minor) + "_counter"); },
                                {"executor '" + minor_name(minor) + "_counter' was built against SDK ABI 1.7, before "
                                 "recompute_modules \"torchtitan_op\" (1.8)"});
  // 1.8's eager elementwise kernels likewise.
  auto eager = parse_recipe(
      "[model]\nlayers = 4\nhidden = 4096\nheads = 32\nvocab = 32000\nseq_len = 8192\n"
      "[training]\nglobal_batch = 8\nmicro_batch = 1\nelementwise_kernels = \"eager\"\n"
      "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 1\n",
      "eager.toml");
  auto hardware = open_hardware(*eager, catalog);
  ComposedPlan composed = compose_plan(*eager, catalog, gpus_per_node(*eager, *hardware));
  EXPECT_NO_THROW(run_executor("analytic", *eager, catalog, composed, *hardware));
  test::expect_error<PlanError>([&] { run_executor(minor_name(minor) + "_counter", *eager, catalog, composed, *hardware); },
                                {"before elementwise_kernels \"eager\" (1.8)"});
  // 1.8's FP8 attention and fused expert MLP likewise (an MoE model on MXFP8).
  for (const auto& [key, says] : {std::pair{"fp8_attention", "before fp8_attention (1.8)"},
                                  std::pair{"moe_fused_mlp", "before moe_fused_mlp (1.8)"}}) {
    auto fused = parse_recipe(
        "[model]\nlayers = 4\nhidden = 4096\nheads = 32\nvocab = 32000\nseq_len = 4096\nffn_type = \"swiglu\"\n"
        "ffn_hidden = 8192\nmoe_experts = 8\nmoe_top_k = 2\nmoe_ffn_hidden = 2048\n"
        "[training]\nglobal_batch = 8\nmicro_batch = 1\nprecision = \"mxfp8\"\n" + std::string(key) + " = true\n"
        "[cluster]\nhardware = \"b200\"\nnum_gpus = 1\n",
        "fused.toml");
    auto blackwell = open_hardware(*fused, catalog);
    ComposedPlan fused_plan = compose_plan(*fused, catalog, gpus_per_node(*fused, *blackwell));
    EXPECT_NO_THROW(run_executor("analytic", *fused, catalog, fused_plan, *blackwell));
    test::expect_error<PlanError>(
        [&] { run_executor(minor_name(minor) + "_counter", *fused, catalog, fused_plan, *blackwell); }, {says});
  }
}

// `plugins list` (the real command, in process) shows every minor's plugins with their own ABI.
TEST(FrozenAbi, ThePluginListShowsEachMinor) {
  for (uint32_t minor = 0; minor <= PP_ABI_MINOR; ++minor) {
    test::CommandRun list =
        test::run_command({"plugins", "list", "--json", std::string("--plugin-path=") + test::kFrozenAbiPluginDirs[minor]});
    ASSERT_EQ(list.exit_code, 0) << list.err;
    const auto report = nlohmann::json::parse(list.out);
    size_t listed = 0;
    for (const auto& plugin : report["plugins"])
      if (plugin["name"].get<std::string>().starts_with(minor_name(minor) + "_")) {
        EXPECT_EQ(plugin["abi"], "1." + std::to_string(minor));
        ++listed;
      }
    EXPECT_EQ(listed, minor >= 3 ? 4u : 3u);
  }
}

}  // namespace
}  // namespace paraplan::host
