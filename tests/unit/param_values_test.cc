// Schema validation happens in the host: every key of a plugin's table is checked against the
// schema the plugin declares. Uses test_good, whose schema has one key of each type.
#include "host/recipe/param_values.h"

#include "test_support.h"

namespace paraplan::host {
namespace {

const pp_plugin_v1& good_plugin() { return *test::bundled_catalog().require("test_good", PP_KIND_STRATEGY).metadata; }

ParamValues bind(const std::string& toml_text) {
  static std::vector<toml::table> keep_alive;
  keep_alive.push_back(toml::parse(std::string_view(toml_text), std::string_view("recipe.toml")));
  return ParamValues::bind(good_plugin(), &keep_alive.back(), "strategy[2]", "recipe.toml", {"name", "degree"});
}

const pp_param_value& value(const ParamValues& values, const std::string& name) {
  for (const pp_param_value& value : values.values())
    if (name == value.name) return value;
  throw std::runtime_error("no value " + name);
}

TEST(ParamValues, FillsEveryDefault) {
  ParamValues values = ParamValues::bind(good_plugin(), nullptr, "strategy[0]", "recipe.toml");
  ASSERT_EQ(values.set()->count, 5u);
  EXPECT_DOUBLE_EQ(value(values, "factor").float_value, 2.0);
  EXPECT_STREQ(value(values, "mode").string_value, "fast");
  EXPECT_EQ(value(values, "depth").int_value, 3);
  EXPECT_EQ(value(values, "verbose").bool_value, 0);
  EXPECT_STREQ(value(values, "label").string_value, "x");
}

TEST(ParamValues, DeliversTypedValues) {
  ParamValues values = bind("name = 'test_good'\ndegree = 2\nfactor = 4\nmode = 'slow'\ndepth = 7\nverbose = true\nlabel = 'y'\n");
  EXPECT_DOUBLE_EQ(value(values, "factor").float_value, 4.0);  // a TOML integer is a valid float
  EXPECT_STREQ(value(values, "mode").string_value, "slow");
  EXPECT_EQ(value(values, "depth").int_value, 7);
  EXPECT_EQ(value(values, "verbose").bool_value, 1);
  EXPECT_STREQ(value(values, "label").string_value, "y");
  EXPECT_EQ(values.summary(), "factor=4 mode=slow depth=7 verbose=true label=y");
}

TEST(ParamValues, UnknownKeyNamesTheKeyPathAndSuggests) {
  test::expect_error<InputError>([] { bind("name = 'test_good'\n\ndeph = 3\n"); },
                                 {"recipe.toml:3:1", "strategy[2].deph", "unknown key", "did you mean 'depth'?"});
}

TEST(ParamValues, WrongTypeIsRejected) {
  test::expect_error<InputError>([] { bind("depth = 'three'\n"); },
                                 {"recipe.toml:1:9", "strategy[2].depth", "expected an integer, got a string"});
  test::expect_error<InputError>([] { bind("depth = 2.5\n"); }, {"expected an integer, got a float"});
  test::expect_error<InputError>([] { bind("verbose = 1\n"); }, {"expected true or false"});
  test::expect_error<InputError>([] { bind("factor = true\n"); }, {"strategy[2].factor", "expected a number"});
}

TEST(ParamValues, OutOfRangeIsRejected) {
  test::expect_error<InputError>([] { bind("depth = 11\n"); }, {"strategy[2].depth", "11 is out of range [1, 10]"});
  test::expect_error<InputError>([] { bind("factor = 0.5\n"); }, {"0.5 is out of range [1, 8]"});
}

TEST(ParamValues, EnumValueMustBeListed) {
  test::expect_error<InputError>([] { bind("mode = 'slwo'\n"); },
                                 {"strategy[2].mode", "'slwo' is not one of fast|slow", "did you mean 'slow'?"});
}

TEST(ParamValues, DescribesTypesForHelp) {
  const pp_plugin_v1& plugin = good_plugin();
  EXPECT_EQ(describe_param_type(plugin.params[0]), "float in [1, 8]");
  EXPECT_EQ(describe_param_type(plugin.params[1]), "one of fast|slow");
  EXPECT_EQ(describe_param_default(plugin.params[1]), "\"fast\"");
  EXPECT_EQ(describe_param_type(plugin.params[3]), "bool");
}

}  // namespace
}  // namespace paraplan::host
