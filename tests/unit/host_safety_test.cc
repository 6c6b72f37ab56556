// The host's defences, piece by piece: text from plugins made printable, untrusted code run in a
// child, input files bounded, TOML nesting measured before toml++ recurses, result keys checked.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "host/core/checked_math.h"
#include "host/core/isolated_call.h"
#include "host/core/text_sanitizer.h"
#include "host/recipe/input_file.h"
#include "host/report/result_tree.h"
#include "test_support.h"

namespace paraplan::host {
namespace {

using test::expect_error;

TEST(TextSanitizer, InvalidUtf8BecomesTheReplacementCharacter) {
  EXPECT_EQ(valid_utf8("plain"), "plain");
  EXPECT_EQ(valid_utf8("caf\xc3\xa9"), "caf\xc3\xa9");                 // é stays
  EXPECT_EQ(valid_utf8("a\xff" "b"), "a\xef\xbf\xbd" "b");             // a stray byte
  EXPECT_EQ(valid_utf8("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");       // an overlong '/'
  EXPECT_EQ(valid_utf8("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // a surrogate, byte by byte
  EXPECT_EQ(valid_utf8("\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80");       // U+1F600
  EXPECT_EQ(valid_utf8("\xe2\x82"), "\xef\xbf\xbd\xef\xbf\xbd");       // cut short
}

TEST(TextSanitizer, OneLineHasNoControlCharactersAndABound) {
  EXPECT_EQ(one_line("two\nlines\tand \x1b[31mred"), "two lines and  [31mred");
  EXPECT_EQ(one_line(std::string(10, 'x'), 4), "xxxx...");
  EXPECT_EQ(one_line("\xc3\xa9\xc3\xa9", 3), "\xc3\xa9...");  // never half a character
  const char unterminated[4] = {'a', 'b', 'c', 'd'};
  EXPECT_EQ(bounded_string(unterminated, 4), "abcd");
  EXPECT_EQ(bounded_string(nullptr, 4), "");
}

TEST(CheckedMath, ProductsThatLeaveInt64AreCaught) {
  EXPECT_EQ(checked_product(1 << 20, 1 << 20), int64_t{1} << 40);
  EXPECT_FALSE(checked_product(int64_t{4294967296}, int64_t{4294967296}));
  EXPECT_FALSE(checked_product(3, int64_t{6148914691236517208}));  // issue 15's fsdp degree times pp = 3
}

TEST(IsolatedCall, ReportsHowTheChildEnded) {
  const IsolatedOutcome clean = run_isolated([](int result) { write_all(result, "answer"); }, 10);
  EXPECT_TRUE(clean.exited_cleanly());
  EXPECT_EQ(clean.result, "answer");
  const IsolatedOutcome crashed = run_isolated([](int) { raise(SIGSEGV); }, 10);
  EXPECT_EQ(crashed.end, IsolatedOutcome::End::kSignalled);
  EXPECT_EQ(crashed.signal, SIGSEGV);
  EXPECT_NE(crashed.describe(10).find("killed by signal 11"), std::string::npos) << crashed.describe(10);
  const IsolatedOutcome threw = run_isolated([](int) { throw std::runtime_error("x"); }, 10);
  EXPECT_EQ(threw.exit_code, kBodyThrew);
}

TEST(IsolatedCall, ATimeoutEndsTheChildAndItsChildren) {
  const auto start = std::chrono::steady_clock::now();
  const IsolatedOutcome hung = run_isolated(
      [](int) {
        if (fork() == 0) pause();  // a grandchild holding the pipes open must not keep us waiting
        pause();
      },
      0.3);
  EXPECT_EQ(hung.end, IsolatedOutcome::End::kTimedOut);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(hung.describe(0.3).find("did not finish within 0.3 s"), std::string::npos);
}

TEST(IsolatedCall, CapturesWhatTheChildPrints) {
  const IsolatedOutcome chatty = run_isolated(
      [](int) {
        std::fputs("to stdout\n", stdout);
        std::fflush(stdout);
        std::string big(100000, 'e');
        if (write(STDERR_FILENO, big.data(), big.size()) < 0) _exit(1);
      },
      10);
  EXPECT_TRUE(chatty.exited_cleanly());
  EXPECT_EQ(chatty.out, "to stdout\n");
  EXPECT_EQ(chatty.err_bytes, 100000u);  // drained in full, kept in part
  EXPECT_EQ(chatty.err.size(), IsolatedOutcome::kCaptureLimit);
}

std::filesystem::path scratch_file(const std::string& name, const std::string& text) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / (std::to_string(getpid()) + "_" + name);
  std::ofstream(path) << text;
  return path;
}

TEST(InputFile, OnlyBoundedRegularFiles) {
  const auto small = scratch_file("small.toml", "x = 1\n");
  EXPECT_EQ(read_bounded_file(small, 100, "recipe"), "x = 1\n");
  expect_error<InputError>([&] { read_bounded_file(small, 3, "recipe"); }, {"6 bytes, more than the 3 a recipe may have"});
  expect_error<InputError>([] { read_bounded_file("/dev/zero", 100, "recipe"); }, {"/dev/zero: not a regular file"});
  expect_error<InputError>([] { read_bounded_file("/", 100, "recipe"); }, {"/: not a regular file"});
  const std::filesystem::path fifo = std::filesystem::temp_directory_path() / (std::to_string(getpid()) + "_fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  expect_error<InputError>([&] { read_bounded_file(fifo, 100, "recipe"); }, {"not a regular file"});  // and no wait
  std::filesystem::remove(fifo);
  std::filesystem::remove(small);
}

TEST(TomlDepth, RealRecipesPassEveryShippedOne) {
  for (const auto& entry : std::filesystem::recursive_directory_iterator(PARAPLAN_RECIPES_DIR)) {
    if (entry.path().extension() != ".toml") continue;
    std::ifstream in(entry.path());
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    EXPECT_NO_THROW(check_toml_depth(text, entry.path().string())) << entry.path();
  }
}

TEST(TomlDepth, CountsKeysTablesAndArraysButNotStringsOrComments) {
  auto dotted = [](size_t segments) {
    std::string key = "a";
    for (size_t i = 1; i < segments; ++i) key += ".a";
    return key;
  };
  EXPECT_NO_THROW(check_toml_depth(dotted(64) + " = 1\n", "f"));
  expect_error<InputError>([&] { check_toml_depth(dotted(65) + " = 1\n", "f"); }, {"f:1:", "nesting deeper than 64"});
  expect_error<InputError>([&] { check_toml_depth("x = 1\n[" + dotted(65) + "]\n", "f"); }, {"f:2:"});
  expect_error<InputError>([&] { check_toml_depth("x = " + std::string(65, '[') + "\n", "f"); }, {"f:1:"});
  expect_error<InputError>([&] { check_toml_depth("x = {" + dotted(64) + " = 1}\n", "f"); }, {"nesting deeper"});
  // Dots and brackets inside strings, comments and numbers are not nesting.
  EXPECT_NO_THROW(check_toml_depth("x = \"" + dotted(500) + std::string(500, '[') + "\"\n", "f"));
  EXPECT_NO_THROW(check_toml_depth("x = '''\n" + std::string(500, '{') + "\n'''\n", "f"));
  EXPECT_NO_THROW(check_toml_depth("# " + dotted(500) + "\nx = 1.5\n", "f"));
  EXPECT_NO_THROW(check_toml_depth("x = [1.5, 2.5, 3.5]\ny = [[1, 2], [3, 4]]\n", "f"));
  EXPECT_NO_THROW(check_toml_depth("\"" + dotted(100) + "\" = 1\n", "f"));  // one quoted key
}

TEST(ResultSink, PluginKeysAreChecked) {
  ResultTree results;
  results.set("plan.model", std::string("llama2-7b"));
  results.reserve_section("plan");
  const pp_result_sink_v1 sink = results.sink("executor 'test'");
  sink.number(sink.context, "time.step_s", 1.5);
  sink.number(sink.context, "", 1.0);
  sink.number(sink.context, nullptr, 1.0);
  sink.number(sink.context, "plan", 2.0);
  sink.text(sink.context, "plan.model", "replaced");
  sink.number(sink.context, "time.step_s.inside", 3.0);
  sink.number(sink.context, "time", 3.0);
  sink.number(sink.context, "a..b", 3.0);
  sink.number(sink.context, std::string(300, 'k').c_str(), 3.0);
  sink.text(sink.context, "zoo.text", "bad \xff bytes");
  sink.number(sink.context, "zoo.nan", std::nan(""));
  EXPECT_EQ(results.text("plan.model"), "llama2-7b");
  EXPECT_EQ(results.number("time.step_s"), 1.5);
  EXPECT_EQ(results.text("zoo.text"), "bad \xef\xbf\xbd bytes");
  EXPECT_EQ(results.find("time.step_s.inside"), nullptr);
  EXPECT_EQ(results.warnings().size(), 9u);  // 8 refused keys and the NaN
  const nlohmann::ordered_json json = results.to_json();
  EXPECT_TRUE(json["zoo"]["nan"].is_null());
  EXPECT_EQ(json["warnings"].size(), 9u);
  EXPECT_NO_THROW(json.dump());  // valid UTF-8 throughout
}

}  // namespace
}  // namespace paraplan::host
