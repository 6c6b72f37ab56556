#include "host/plugin/plugin_catalog.h"

#include <cstdlib>

#include "host/plugin/plugin_search_path.h"
#include "test_support.h"

namespace paraplan::host {
namespace {

using test::expect_error;

TEST(PluginSearchPath, CommandLineThenEnvironmentThenInstallTree) {
  auto directories = plugin_search_path({"/a", "/b"}, "/c::/d:", "/opt/paraplan");
  std::vector<std::filesystem::path> expected = {"/a", "/b", "/c", "/d", "/opt/paraplan/lib/paraplan/plugins"};
  ASSERT_EQ(directories.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(directories[i].path.lexically_normal(), expected[i].lexically_normal());
}

TEST(PluginSearchPath, NeverTheCurrentDirectory) {
  // Empty PATH-style entries mean "." in shells; they are dropped here.
  auto directories = plugin_search_path({}, ":", "");
  EXPECT_TRUE(directories.empty());
}

TEST(PluginCatalog, ScanSkipsBrokenFilesWithReasons) {
  PluginCatalog catalog = PluginCatalog::scan(
      {PARAPLAN_TEST_PLUGINS_GOOD_DIR, PARAPLAN_TEST_PLUGINS_ABI_MAJOR_DIR, PARAPLAN_TEST_PLUGINS_ABI_MINOR_DIR,
       PARAPLAN_TEST_PLUGINS_ABI_V2_ONLY_DIR, PARAPLAN_TEST_PLUGINS_NO_ENTRY_DIR, PARAPLAN_TEST_PLUGINS_NULL_ENTRY_DIR,
       PARAPLAN_TEST_PLUGINS_NOT_A_LIBRARY_DIR, "/nonexistent/directory"});
  EXPECT_EQ(catalog.records().size(), 4u);  // test_good, test_good_executor, test_good_hardware, test_good_exporter
  // abi_major, abi_minor, abi_v2_only, no_entry, null_entry, and two not-a-library files.
  EXPECT_EQ(catalog.skipped().size(), 7u);
  for (const SkippedPlugin& skipped : catalog.skipped())
    EXPECT_NE(skipped.reason.find(skipped.file.string()), std::string::npos) << skipped.reason;
}

TEST(PluginCatalog, EarlierDirectoryShadowsLaterOne) {
  PluginCatalog catalog = PluginCatalog::scan({PARAPLAN_TEST_PLUGINS_GOOD_DIR, PARAPLAN_TEST_PLUGINS_GOOD_DIR});
  EXPECT_EQ(catalog.records().size(), 4u);
  ASSERT_EQ(catalog.skipped().size(), 4u);
  EXPECT_NE(catalog.skipped()[0].reason.find("shadowed by"), std::string::npos);
}

TEST(PluginCatalog, RequireChecksTheKind) {
  const PluginCatalog& catalog = test::bundled_catalog();
  EXPECT_EQ(catalog.require("test_good", PP_KIND_STRATEGY).name(), "test_good");
  expect_error<InputError>([&] { catalog.require("test_good", PP_KIND_HARDWARE); },
                           {"'test_good'", "is a strategy plugin, not a hardware plugin"});
}

TEST(PluginCatalog, RequireSuggestsAndListsAlternatives) {
  const PluginCatalog& catalog = test::bundled_catalog();
  expect_error<InputError>([&] { catalog.require("fsdq", PP_KIND_STRATEGY); },
                           {"no strategy plugin named 'fsdq'", "did you mean 'fsdp'?", "available:"});
}

TEST(PluginCatalog, RequireExplainsWhyANamedPluginWasRefused) {
  PluginCatalog catalog = PluginCatalog::scan({PARAPLAN_TEST_PLUGINS_ABI_MAJOR_DIR});
  expect_error<InputError>([&] { catalog.require("test_abi_major", PP_KIND_STRATEGY); },
                           {"no strategy plugin named 'test_abi_major'", "refused",
                            "built for SDK ABI " + test::abi_text(PP_ABI_MAJOR + 1, PP_ABI_MINOR)});
}

}  // namespace
}  // namespace paraplan::host
