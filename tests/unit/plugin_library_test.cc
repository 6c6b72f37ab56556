// The load-time handshake: every kind of broken plugin is refused with a message naming the
// file (and both versions for mismatches), and none of them crashes the host.
#include "host/plugin/plugin_library.h"

#include "test_support.h"

namespace paraplan::host {
namespace {

using test::expect_error;

TEST(PluginLibrary, LoadsAGoodPluginOfEachKind) {
  LoadedPlugin strategy = load_plugin_library(PARAPLAN_TEST_PLUGIN_GOOD_FILE);
  EXPECT_EQ(strategy.name(), "test_good");
  EXPECT_EQ(strategy.kind(), PP_KIND_STRATEGY);
  EXPECT_EQ(strategy.metadata->abi_major, static_cast<uint32_t>(PP_ABI_MAJOR));
  EXPECT_EQ(strategy.metadata->param_count, 5u);
  EXPECT_EQ(load_plugin_library(PARAPLAN_TEST_PLUGIN_GOOD_EXECUTOR_FILE).kind(), PP_KIND_EXECUTOR);
  EXPECT_EQ(load_plugin_library(PARAPLAN_TEST_PLUGIN_GOOD_HARDWARE_FILE).kind(), PP_KIND_HARDWARE);
}

TEST(PluginLibrary, RefusesAnotherMajorNamingBothVersions) {
  expect_error<PluginLoadError>([] { load_plugin_library(PARAPLAN_TEST_PLUGIN_ABI_MAJOR_FILE); },
                                {PARAPLAN_TEST_PLUGIN_ABI_MAJOR_FILE,
                                 "built for SDK ABI " + test::abi_text(PP_ABI_MAJOR + 1, PP_ABI_MINOR),
                                 "this host supports ABI " + test::kHostAbi});
}

TEST(PluginLibrary, RefusesAFutureEntryPointWithoutLoadingIt) {
  expect_error<PluginLoadError>([] { load_plugin_library(PARAPLAN_TEST_PLUGIN_ABI_V2_ONLY_FILE); },
                                {PARAPLAN_TEST_PLUGIN_ABI_V2_ONLY_FILE, "built for SDK ABI 2.x", "supports ABI " + test::kHostAbi});
}

TEST(PluginLibrary, RefusesANewerMinor) {
  expect_error<PluginLoadError>([] { load_plugin_library(PARAPLAN_TEST_PLUGIN_ABI_MINOR_FILE); },
                                {"built for SDK ABI " + test::abi_text(PP_ABI_MAJOR, PP_ABI_MINOR + 1),
                                 "newer than this host's ABI " + test::kHostAbi});
}

// The other side of the minor rule: a plugin built against 1.0, whose strategy table ends before
// the 1.1 search fields, still loads.
TEST(PluginLibrary, LoadsAPluginBuiltAgainstAnOlderMinor) {
  LoadedPlugin plugin = load_plugin_library(PARAPLAN_TEST_PLUGIN_ABI_1_0_FILE);
  EXPECT_EQ(plugin.name(), "test_abi_1_0");
  EXPECT_EQ(plugin.metadata->abi_minor, 0u);
  EXPECT_EQ(plugin.metadata->strategy->struct_size, PP_STRATEGY_V1_0_SIZE);
}

TEST(PluginLibrary, RefusesALibraryWithoutEntryPoint) {
  expect_error<PluginLoadError>([] { load_plugin_library(PARAPLAN_TEST_PLUGIN_NO_ENTRY_FILE); },
                                {"not a paraplan plugin", "paraplan_plugin_v1"});
}

TEST(PluginLibrary, RefusesAnEntryPointReturningNull) {
  expect_error<PluginLoadError>([] { load_plugin_library(PARAPLAN_TEST_PLUGIN_NULL_ENTRY_FILE); },
                                {"returned no metadata"});
}

TEST(PluginLibrary, RefusesAFileThatIsNotALibrary) {
  expect_error<PluginLoadError>([] { load_plugin_library(PARAPLAN_TEST_PLUGIN_NOT_A_LIBRARY_FILE); },
                                {"not a shared library"});
}

TEST(PluginLibrary, RefusesAMissingFile) {
  expect_error<PluginLoadError>([] { load_plugin_library("/nonexistent/plugin.so"); }, {"/nonexistent/plugin.so"});
}

TEST(PluginLibrary, LibraryStaysLoadedWhileACopyLives) {
  std::weak_ptr<boost::dll::shared_library> weak;
  const pp_plugin_v1* metadata = nullptr;
  {
    LoadedPlugin copy;
    {
      LoadedPlugin plugin = load_plugin_library(PARAPLAN_TEST_PLUGIN_GOOD_FILE);
      weak = plugin.library;
      copy = plugin;
    }
    EXPECT_FALSE(weak.expired());
    metadata = copy.metadata;
    EXPECT_STREQ(metadata->name, "test_good");  // still mapped: reading it is safe
  }
  EXPECT_TRUE(weak.expired());
}

TEST(PluginLibrary, KindNames) {
  EXPECT_STREQ(kind_name(PP_KIND_STRATEGY), "strategy");
  EXPECT_STREQ(kind_name(PP_KIND_HARDWARE), "hardware");
  EXPECT_STREQ(kind_name(PP_KIND_EXECUTOR), "executor");
}

}  // namespace
}  // namespace paraplan::host
