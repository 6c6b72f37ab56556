// Scanning survives any file: each is probed in a child (a crash, an abort, a hang or a print
// there is the file's refusal, not the host's end), the answer is cached by the file's stamp, and
// the path rules and the precedence of names hold.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "host/plugin/plugin_catalog.h"
#include "host/plugin/plugin_scan_cache.h"
#include "host/plugin/plugin_trust.h"
#include "test_support.h"

namespace paraplan::host {
namespace {

namespace fs = std::filesystem;

#define ZOO(name) PARAPLAN_TEST_PLUGINS_ZOO_DIR "/" name PARAPLAN_TEST_PLUGIN_SUFFIX

// A fresh directory of copies (or links) of plugin files, removed afterwards.
struct Scratch {
  fs::path directory = fs::temp_directory_path() / ("paraplan_isolation_" + std::to_string(getpid()) + "_" +
                                                    std::to_string(counter++));
  Scratch() {
    fs::create_directories(directory);
    fs::permissions(directory, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                   fs::perms::others_read | fs::perms::others_exec);
  }
  ~Scratch() {
    std::error_code error;
    fs::remove_all(directory, error);
  }
  fs::path copy(const fs::path& file, const std::string& name = "") const {
    const fs::path target = directory / (name.empty() ? file.filename().string() : name);
    fs::copy_file(file, target, fs::copy_options::overwrite_existing);
    return target;
  }
  static inline int counter = 0;
};

const SkippedPlugin* skipped(const PluginCatalog& catalog, const std::string& file_part) {
  for (const SkippedPlugin& entry : catalog.skipped())
    if (entry.file.string().find(file_part) != std::string::npos) return &entry;
  return nullptr;
}

ScanOptions options(double timeout_s = 10) {
  ScanOptions scan;
  scan.timeout_s = timeout_s;
  scan.use_cache = false;
  return scan;
}

TEST(PluginProbe, CrashAbortHangAndStdoutAreRefusalsWithTheirCause) {
  Scratch scratch;
  for (const char* name : {ZOO("zoo_crash"), ZOO("zoo_abort"), ZOO("zoo_hang"), ZOO("zoo_prints"),
                           PARAPLAN_TEST_PLUGIN_GOOD_FILE})
    scratch.copy(name);
  const auto start = std::chrono::steady_clock::now();
  const PluginCatalog catalog = PluginCatalog::scan({{scratch.directory, PluginOrigin::kCommandLine}}, options(1.0));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(8));
  ASSERT_EQ(catalog.records().size(), 1u);
  EXPECT_EQ(catalog.records()[0].name, "test_good");
  ASSERT_NE(skipped(catalog, "zoo_crash"), nullptr);
  EXPECT_NE(skipped(catalog, "zoo_crash")->reason.find("killed by signal 11 (Segmentation fault)"), std::string::npos);
  EXPECT_NE(skipped(catalog, "zoo_abort")->reason.find("killed by signal 6 (Aborted)"), std::string::npos);
  EXPECT_NE(skipped(catalog, "zoo_hang")->reason.find("did not finish within 1 s"), std::string::npos);
  EXPECT_NE(skipped(catalog, "zoo_prints")->reason.find("wrote 22 bytes to stdout while loading"), std::string::npos);
  // Nothing was loaded into this process to find that out; the good one loads when asked for.
  EXPECT_NE(catalog.find("test_good"), nullptr);
}

TEST(PluginScanCache, AnAnswerIsKeptUntilTheFileChanges) {
  Scratch scratch;
  const fs::path hang = scratch.copy(ZOO("zoo_hang"));
  const fs::path cache = scratch.directory / "cache.json";
  {
    PluginScanCache store(cache);
    const std::optional<FileStamp> stamp = stamp_of(hang);
    ASSERT_TRUE(stamp);
    store.store(hang, *stamp, CachedProbe{std::nullopt, "remembered refusal"});
    store.save();
  }
  EXPECT_EQ(fs::status(cache).permissions() & (fs::perms::group_all | fs::perms::others_all), fs::perms::none);
  PluginScanCache reread(cache);
  const std::optional<CachedProbe> known = reread.lookup(hang, *stamp_of(hang));
  ASSERT_TRUE(known);
  EXPECT_EQ(known->refusal, "remembered refusal");
  // Another size or modification time is another file.
  std::ofstream(hang, std::ios::app) << "x";
  EXPECT_FALSE(reread.lookup(hang, *stamp_of(hang)));
  // A cache someone else could have written is not believed.
  fs::permissions(cache, fs::perms::others_write, fs::perm_options::add);
  EXPECT_FALSE(PluginScanCache(cache).lookup(hang, *stamp_of(hang)));
}

// Entries of files deleted or changed since are dropped when the cache is next written, so it
// holds what a scan can use, not every temporary plugin directory it ever saw.
TEST(PluginScanCache, FilesThatAreGoneLeaveTheCache) {
  Scratch scratch;
  const fs::path kept = scratch.copy(ZOO("zoo_hang"));
  const fs::path gone = scratch.copy(ZOO("zoo_crash"));
  const fs::path added = scratch.copy(ZOO("zoo_abort"));
  const fs::path cache = scratch.directory / "cache.json";
  const FileStamp kept_stamp = *stamp_of(kept), gone_stamp = *stamp_of(gone);
  {
    PluginScanCache store(cache);
    store.store(kept, kept_stamp, CachedProbe{std::nullopt, "kept"});
    store.store(gone, gone_stamp, CachedProbe{std::nullopt, "gone"});
    store.save();
  }
  ASSERT_TRUE(PluginScanCache(cache).lookup(gone, gone_stamp));
  fs::remove(gone);
  {
    PluginScanCache store(cache);
    store.store(added, *stamp_of(added), CachedProbe{std::nullopt, "added"});
    store.save();
  }
  const PluginScanCache reread(cache);
  EXPECT_FALSE(reread.lookup(gone, gone_stamp));
  ASSERT_TRUE(reread.lookup(kept, kept_stamp));
  EXPECT_EQ(reread.lookup(kept, kept_stamp)->refusal, "kept");
  EXPECT_TRUE(reread.lookup(added, *stamp_of(added)));
}

// A cache grown before stale entries were dropped (hundreds of deleted temporary plugins) is
// cleaned when read, and written back with only what still exists.
TEST(PluginScanCache, AnOverfullCacheIsCleanedWhenRead) {
  Scratch scratch;
  const fs::path kept = scratch.copy(ZOO("zoo_hang"));
  const fs::path cache = scratch.directory / "cache.json";
  const FileStamp stamp = *stamp_of(kept);
  {
    PluginScanCache store(cache);
    store.store(kept, stamp, CachedProbe{std::nullopt, "kept"});
    store.save();
  }
  // 300 entries of files that no longer exist, as an older host left them.
  std::ifstream in(cache);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string entry = R"({"refusal":"gone","size":1,"mtime_ns":1,"inode":1,"device":1})";
  std::string stale;
  for (int i = 0; i < 300; ++i) stale += "\"" + (scratch.directory / ("gone" + std::to_string(i) + ".so")).string() + "\":" + entry + ",";
  text.insert(text.find("\"entries\":{") + 11, stale);
  std::ofstream(cache, std::ios::trunc) << text;
  const auto entries_written = [&] {
    std::ifstream again(cache);
    const std::string now((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
    return static_cast<size_t>(std::count(now.begin(), now.end(), '{')) - 2;  // the document and "entries"
  };
  ASSERT_EQ(entries_written(), 301u);
  {
    PluginScanCache reread(cache);
    EXPECT_FALSE(reread.lookup(scratch.directory / "gone7.so", FileStamp{1, 1, 1, 1}));
    ASSERT_TRUE(reread.lookup(kept, stamp));
    reread.save();
  }
  EXPECT_EQ(entries_written(), 1u);
}

TEST(PluginTrust, WritableByEveryoneOrForeignIsRefused) {
  Scratch scratch;
  const fs::path file = scratch.copy(PARAPLAN_TEST_PLUGIN_GOOD_FILE);
  EXPECT_EQ(untrusted_file_reason(file), "");
  fs::permissions(file, fs::perms::others_write, fs::perm_options::add);
  EXPECT_NE(untrusted_file_reason(file).find("is writable by everyone"), std::string::npos);
  fs::permissions(file, fs::perms::others_write, fs::perm_options::remove);
  fs::permissions(scratch.directory, fs::perms::others_write, fs::perm_options::add);
  EXPECT_NE(untrusted_directory_reason(scratch.directory).find("is writable by everyone"), std::string::npos);
  EXPECT_NE(untrusted_file_reason(file).find("is writable by everyone"), std::string::npos);  // its directory
  EXPECT_NE(untrusted_directory_reason("/nonexistent").find("does not exist"), std::string::npos);
  EXPECT_TRUE(is_hidden(".secret.so"));
  EXPECT_FALSE(is_hidden("visible.so"));
}

TEST(PluginTrust, ALinkIsJudgedByWhereItLeads) {
  Scratch trusted, open;
  const fs::path target = open.copy(PARAPLAN_TEST_PLUGIN_GOOD_FILE);
  fs::permissions(open.directory, fs::perms::others_write, fs::perm_options::add);
  fs::create_symlink(target, trusted.directory / "link.so");
  const std::string reason = untrusted_file_reason(trusted.directory / "link.so");
  EXPECT_NE(reason.find("link.so leads into " + open.directory.string() + " is writable by everyone"), std::string::npos)
      << reason;
  // The scan refuses it, unless told to allow insecure files (and then says where it leads).
  const PluginCatalog refused = PluginCatalog::scan({{trusted.directory, PluginOrigin::kCommandLine}}, options());
  EXPECT_TRUE(refused.records().empty());
  ScanOptions allowed = options();
  allowed.allow_insecure = true;
  const PluginCatalog loaded = PluginCatalog::scan({{trusted.directory, PluginOrigin::kCommandLine}}, allowed);
  ASSERT_EQ(loaded.records().size(), 1u);
  EXPECT_EQ(loaded.records()[0].target, fs::canonical(target));
}

TEST(PluginCatalog, HiddenFilesAreNeverScanned) {
  Scratch scratch;
  scratch.copy(PARAPLAN_TEST_PLUGIN_GOOD_FILE, ".test_good.so");
  const PluginCatalog catalog = PluginCatalog::scan({{scratch.directory, PluginOrigin::kCommandLine}}, options());
  EXPECT_TRUE(catalog.records().empty());
  EXPECT_TRUE(catalog.skipped().empty());
}

// The same name twice: --plugin-path over bundled over PARAPLAN_PLUGIN_PATH, first wins otherwise.
TEST(PluginCatalog, ANameFoundTwiceIsResolvedByWhereItCameFrom) {
  const PluginDirectory bundled{PARAPLAN_BUNDLED_PLUGIN_DIR, PluginOrigin::kBundled};
  const PluginDirectory third_party_env{PARAPLAN_TEST_PLUGINS_NAMED_TP_DIR, PluginOrigin::kEnvironment};
  const PluginDirectory third_party_cli{PARAPLAN_TEST_PLUGINS_NAMED_TP_DIR, PluginOrigin::kCommandLine};
  const PluginCatalog from_env = PluginCatalog::scan({third_party_env, bundled}, options());
  EXPECT_EQ(from_env.require("tp", PP_KIND_STRATEGY).metadata->version, std::string("1.0.0"));  // the bundled one
  const SkippedPlugin* shadowed = skipped(from_env, "zoo_named_tp");
  ASSERT_NE(shadowed, nullptr);
  EXPECT_NE(shadowed->reason.find("PARAPLAN_PLUGIN_PATH cannot replace a bundled plugin"), std::string::npos);
  const PluginCatalog from_cli = PluginCatalog::scan({third_party_cli, bundled}, options());
  EXPECT_EQ(from_cli.require("tp", PP_KIND_STRATEGY).metadata->version, std::string("9.9.9"));
  EXPECT_NE(skipped(from_cli, "paraplan_strategy_tp"), nullptr);
}

TEST(PluginSearchPath, RelativeEntriesAreRefused) {
  test::expect_error<UsageError>([] { plugin_search_path({"lib/plugins"}, nullptr, ""); },
                                 {"--plugin-path 'lib/plugins': plugin directories must be absolute paths"});
  const std::vector<PluginDirectory> directories = plugin_search_path({}, "relative:/absolute:", "/opt/p");
  ASSERT_EQ(directories.size(), 2u);
  EXPECT_EQ(directories[0].path, "/absolute");
  EXPECT_EQ(directories[0].origin, PluginOrigin::kEnvironment);
  EXPECT_EQ(directories[1].origin, PluginOrigin::kBundled);
}

}  // namespace
}  // namespace paraplan::host
