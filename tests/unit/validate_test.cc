// paraplan validate (host/validate): measured runs read from CSV, predicted by the search, and
// the statistics of the error.
//
// Every expected value is derived independently of the code under test: MAPE and Spearman by
// hand for small vectors; a row's prediction from ordinary recipes written out here, one per
// value of each blank knob, evaluated the way `paraplan evaluate` does (test::evaluate_recipe);
// tokens per second per GPU from that step time by global_batch x seq_len / (step x GPUs).
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "host/search/search_engine.h"
#include "host/validate/csv_records.h"
#include "host/validate/measured_runs.h"
#include "host/validate/run_recipe.h"
#include "host/validate/scatter_plot.h"
#include "host/validate/validation.h"
#include "host/validate/validation_report.h"
#include "host/validate/validation_statistics.h"
#include "test_support.h"

namespace paraplan::host {
namespace {

using test::expect_error;

const std::string kDataDir = PARAPLAN_TEST_DATA_DIR "/validation";

bool near(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }

// ---------------------------------------------------------------------------------------------
// CSV rows written in the test

// One row as column -> value: a small dense GPT on 8 H100s, tp 2 x pp 2 x dp 2, every knob
// published (the fields a test changes are overwritten).
using Row = std::map<std::string, std::string>;

Row pinned_row(const std::string& id) {
  return {{"id", id},          {"source", "Test runs"}, {"confidence", "made up"}, {"layers", "8"},
          {"hidden", "1024"},  {"heads", "16"},         {"ffn_hidden", "4096"},    {"ffn_type", "gelu"},
          {"vocab", "32000"},  {"seq_len", "2048"},     {"hardware", "h100-sxm"},  {"num_gpus", "8"},
          {"gpus_per_node", "8"}, {"tp", "2"},          {"pp", "2"},               {"vpp", "1"},
          {"dp", "2"},         {"cp", "1"},             {"ep", "1"},               {"sequence_parallel", "true"},
          {"zero_stage", "1"}, {"micro_batch", "2"},    {"global_batch", "16"},    {"recompute", "selective"},
          {"precision", "bf16"}, {"metric", "iteration_s"}, {"value", "0.5"}};
}

std::string csv_field(const std::string& value) {
  if (value.find_first_of(",\"\n") == std::string::npos) return value;
  std::string quoted = "\"";
  for (char c : value) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string csv_text(const std::vector<Row>& rows, std::vector<std::string> columns = standard_columns()) {
  std::string text;
  for (const std::string& column : columns) text += (text.empty() ? "" : ",") + column;
  text += "\n";
  for (const Row& row : rows) {
    std::string line;
    for (size_t i = 0; i < columns.size(); ++i) {
      auto found = row.find(columns[i]);
      line += (i ? "," : "") + csv_field(found == row.end() ? "" : found->second);
    }
    text += line + "\n";
  }
  return text;
}

// Rows as if read from kDataDir/inline.csv (a profile file would be looked for next to it).
std::vector<MeasuredRun> runs_of(const std::vector<Row>& rows, const std::vector<std::string>& columns = standard_columns()) {
  return parse_measured_runs(csv_text(rows, columns), kDataDir + "/inline.csv");
}

Prediction predict(const MeasuredRun& run) { return predict_run(run, test::bundled_catalog()); }

// The model of pinned_row as recipe text, and the training and cluster a test writes around it.
const std::string kSmallModel =
    "[model]\nlayers = 8\nhidden = 1024\nheads = 16\nffn_hidden = 4096\nffn_type = \"gelu\"\nvocab = 32000\nseq_len = 2048\n";

std::string training_and_cluster(int64_t micro_batch, const std::string& recompute, const std::string& hardware = "h100-sxm",
                                 const std::string& extra_training = "") {
  return "[training]\nglobal_batch = 16\nmicro_batch = " + std::to_string(micro_batch) + "\nrecompute = \"" + recompute +
         "\"\nprecision = \"bf16\"\n" + extra_training + "[cluster]\nhardware = \"" + hardware +
         "\"\nnum_gpus = 8\ngpus_per_node = 8\nmesh_order = [\"tp\", \"cp\", \"ep\", \"dp\", \"pp\"]\n";
}

// ---------------------------------------------------------------------------------------------
// Statistics by hand

TEST(ValidateStatistics, TiedValuesShareTheMeanOfTheirRanks) {
  EXPECT_EQ(average_ranks({10, 30, 20, 30}), (std::vector<double>{1, 3.5, 2, 3.5}));
  EXPECT_EQ(average_ranks({7, 7, 7}), (std::vector<double>{2, 2, 2}));
  EXPECT_EQ(average_ranks({3, 1, 2}), (std::vector<double>{3, 1, 2}));
}

TEST(ValidateStatistics, SpearmanMatchesAHandComputation) {
  // No ties: 1 - 6 sum(d^2) / (n (n^2 - 1)); d = (0, -1, 1, -1, 1) -> 1 - 6 x 4 / 120 = 0.8.
  EXPECT_NEAR(*spearman_correlation({1, 2, 3, 4, 5}, {1, 3, 2, 5, 4}), 0.8, 1e-12);
  // Ties: ranks x = (1, 2.5, 2.5, 4), y = (1, 3, 2, 4), both of mean 2.5; deviations
  // (-1.5, 0, 0, 1.5) and (-1.5, 0.5, -0.5, 1.5): covariance 4.5, variances 4.5 and 5, so
  // 4.5 / sqrt(4.5 x 5) = sqrt(0.9).
  EXPECT_NEAR(*spearman_correlation({1, 2, 2, 3}, {10, 30, 20, 40}), std::sqrt(0.9), 1e-12);
  // Any increasing map of the values ranks the same; reversed order is -1.
  EXPECT_NEAR(*spearman_correlation({0.1, 5, 2, 300}, {1, 3, 2, 4}), 1.0, 1e-12);
  EXPECT_NEAR(*spearman_correlation({1, 2, 3}, {9, 8, 7}), -1.0, 1e-12);
  // Fewer than 2 pairs, or a side without any order: no correlation.
  EXPECT_FALSE(spearman_correlation({}, {}).has_value());
  EXPECT_FALSE(spearman_correlation({1}, {2}).has_value());
  EXPECT_FALSE(spearman_correlation({1, 2, 3}, {5, 5, 5}).has_value());
}

TEST(ValidateStatistics, MapeWorstRowAndSourcesMatchAHandComputation) {
  // Measured 2, 4, 10 (iteration_s) and 100 tokens/s/GPU; predicted 2.2, 3, 10.5 and 80:
  // errors +10 %, -25 %, +5 %, -20 %. MAPE = (10 + 25 + 5 + 20) / 4 = 15; the worst is the
  // second row (|-25|). Source A holds rows 1 and 3 (MAPE 7.5), B rows 2 and 4 (22.5) and an
  // unevaluable row, C only an unevaluable one.
  // The tokens row as iteration time: 16 x 2048 / (tokens/s x 8 GPUs) = 4096 / tokens/s, so
  // measured 40.96 s, predicted 51.2 s. Iteration times measured (2, 4, 10, 40.96) and predicted
  // (2.2, 3, 10.5, 51.2) are in the same order: Spearman 1.
  const std::vector<double> measured = {2, 4, 10, 100}, predicted = {2.2, 3, 10.5, 80};
  std::vector<Row> rows;
  const std::vector<std::pair<std::string, std::string>> sources = {{"a1", "A"}, {"b1", "B"}, {"a2", "A"},
                                                                    {"b2", "B"}, {"b3", "B"}, {"c1", "C"}};
  for (const auto& [id, source] : sources) {
    Row row = pinned_row(id);
    row["source"] = source;
    if (rows.size() < measured.size()) row["value"] = std::to_string(measured[rows.size()]);
    rows.push_back(row);
  }
  rows[3]["metric"] = "tokens_per_s_per_gpu";
  const std::vector<MeasuredRun> runs = runs_of(rows);
  std::vector<Prediction> predictions(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    predictions[i].run = &runs[i];
    if (i >= measured.size()) {
      predictions[i].reason = "made up";
      continue;
    }
    predictions[i].predicted = predicted[i];
    predictions[i].error_pct = (predicted[i] - measured[i]) / measured[i] * 100;
  }
  EXPECT_NEAR(runs[3].iteration_seconds(100), 40.96, 1e-12);

  const ValidationSummary summary = summarize(predictions);
  EXPECT_EQ(summary.rows, 6u);
  EXPECT_EQ(summary.evaluated, 4u);
  EXPECT_EQ(summary.unevaluable, 2u);
  EXPECT_NEAR(*summary.mape_pct, 15.0, 1e-9);
  EXPECT_NEAR(*summary.max_abs_error_pct, 25.0, 1e-9);
  EXPECT_EQ(summary.worst, 1u);
  EXPECT_NEAR(*summary.spearman, 1.0, 1e-12);
  ASSERT_EQ(summary.sources.size(), 3u);
  EXPECT_EQ(summary.sources[0].source, "A");
  EXPECT_EQ(summary.sources[0].rows, 2u);
  EXPECT_NEAR(*summary.sources[0].mape_pct, 7.5, 1e-9);
  EXPECT_EQ(summary.sources[1].source, "B");
  EXPECT_EQ(summary.sources[1].rows, 2u);
  EXPECT_NEAR(*summary.sources[1].mape_pct, 22.5, 1e-9);
  EXPECT_EQ(summary.sources[2].rows, 0u);
  EXPECT_FALSE(summary.sources[2].mape_pct.has_value());
  EXPECT_NEAR(*mean_absolute_percentage_error({-3, 1, 2}), 2.0, 1e-12);
  EXPECT_FALSE(mean_absolute_percentage_error({}).has_value());
  // Every row is on h100-sxm: one hardware slice of 6 rows, 4 evaluated, MAPE 15, signed mean
  // (10 - 25 + 5 - 20) / 4 = -7.5. No row names a model: no model slice.
  ASSERT_EQ(summary.hardware.size(), 1u);
  EXPECT_EQ(summary.hardware[0].name, "h100-sxm");
  EXPECT_EQ(summary.hardware[0].rows, 6u);
  EXPECT_EQ(summary.hardware[0].evaluated, 4u);
  EXPECT_NEAR(*summary.hardware[0].mape_pct, 15.0, 1e-9);
  EXPECT_NEAR(*summary.hardware[0].mean_error_pct, -7.5, 1e-9);
  EXPECT_TRUE(summary.models.empty());
  // Models given for the first two rows only: two slices (+10 and -25), the rest left out.
  std::vector<MeasuredRun> named = runs;
  named[0].model = "m1", named[1].model = "m2";
  for (size_t i = 0; i < named.size(); ++i) predictions[i].run = &named[i];
  const ValidationSummary by_model = summarize(predictions);
  ASSERT_EQ(by_model.models.size(), 2u);
  EXPECT_NEAR(*by_model.models[0].mean_error_pct, 10.0, 1e-9);
  EXPECT_NEAR(*by_model.models[1].mape_pct, 25.0, 1e-9);
  EXPECT_EQ(by_model.models[1].rows, 1u);

  // One evaluated row: no Spearman.
  predictions.resize(1);
  EXPECT_FALSE(summarize(predictions).spearman.has_value());
}

// Plans of one model on one cluster, ranked: groups by model (or its shape), hardware and GPU
// count, of 3 or more evaluated rows; each group's Spearman, and their mean weighted by rows.
TEST(ValidateStatistics, PlansOfOneModelOnOneClusterRankedByHand) {
  // Group P (pinned model, 8 GPUs): measured 1, 2, 3, 4 predicted 1, 3, 2, 4: ranks (1, 3, 2, 4)
  // against (1, 2, 3, 4), d = (0, 1, -1, 0), rho = 1 - 6 * 2 / (4 * 15) = 0.8. Group Q (the same
  // model on 16 GPUs): measured 1, 2, 3 predicted 3, 2, 1: rho = -1. Group R (model "named", 8
  // GPUs): two rows, too few to rank; an unevaluable row of P is left out.
  const std::vector<std::tuple<int, std::string, double, double>> made = {
      {8, "", 1, 1}, {8, "", 2, 3}, {8, "", 3, 2}, {8, "", 4, 4}, {16, "", 1, 3},
      {16, "", 2, 2}, {16, "", 3, 1}, {8, "named", 1, 1}, {8, "named", 2, 2}, {8, "", 5, 0}};
  std::vector<Row> rows;
  for (const auto& [gpus, model, measured, predicted] : made) {
    Row row = pinned_row("r" + std::to_string(rows.size()));
    row["num_gpus"] = std::to_string(gpus);
    row["dp"] = std::to_string(gpus / 4);
    row["value"] = std::to_string(measured);
    rows.push_back(row);
  }
  std::vector<MeasuredRun> runs = runs_of(rows);
  std::vector<Prediction> predictions(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    runs[i].model = std::get<1>(made[i]);
    predictions[i].run = &runs[i];
    const double predicted = std::get<3>(made[i]);
    if (predicted == 0) {
      predictions[i].reason = "made up";
      continue;
    }
    predictions[i].predicted = predicted;
    predictions[i].error_pct = (predicted - std::get<2>(made[i])) / std::get<2>(made[i]) * 100;
  }
  const ValidationSummary summary = summarize(predictions);
  ASSERT_EQ(summary.rankings.size(), 2u);
  EXPECT_EQ(summary.rankings[0].model, "8 layers, hidden 1024");  // pinned_row's shape, no name
  EXPECT_EQ(summary.rankings[0].num_gpus, 8);
  EXPECT_EQ(summary.rankings[0].rows, 4u);
  EXPECT_NEAR(*summary.rankings[0].spearman, 0.8, 1e-12);
  EXPECT_EQ(summary.rankings[1].num_gpus, 16);
  EXPECT_NEAR(*summary.rankings[1].spearman, -1.0, 1e-12);
  EXPECT_NEAR(*summary.within_model_spearman, (4 * 0.8 + 3 * -1.0) / 7, 1e-12);
  predictions.resize(3);  // three rows of P: (1, 2, 3) predicted (1, 3, 2): rho = 0.5
  EXPECT_NEAR(*summarize(predictions).within_model_spearman, 0.5, 1e-12);
  predictions.resize(2);
  EXPECT_TRUE(summarize(predictions).rankings.empty());
  EXPECT_FALSE(summarize(predictions).within_model_spearman.has_value());
}

// ---------------------------------------------------------------------------------------------
// Reading CSV

TEST(ValidateCsv, QuotedFieldsHoldCommasQuotesAndLineBreaks) {
  const std::vector<CsvRecord> records =
      parse_csv("a,b,c\r\n\"x, y\",\"say \"\"hi\"\"\",\"two\nlines\"\r\n\r\n  \nlast,,\n", "t.csv");
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].fields, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(records[1].line, 2u);
  EXPECT_EQ(records[1].fields, (std::vector<std::string>{"x, y", "say \"hi\"", "two\nlines"}));
  EXPECT_EQ(records[2].line, 6u);  // the record spanning lines 2-3, then blank lines 4 and 5
  EXPECT_EQ(records[2].fields, (std::vector<std::string>{"last", "", ""}));

  expect_error<InputError>([] { parse_csv("a,b\n1,\"open\n\n", "t.csv"); }, {"t.csv:2: field 2: ", "never closes"});
  expect_error<InputError>([] { parse_csv("a,b\n1,\"x\"y\n", "t.csv"); }, {"t.csv:2: field 2: text after the closing quote"});
  expect_error<InputError>([] { parse_csv("a,b\n1,x\"y\n", "t.csv"); }, {"t.csv:2: field 2: a quote inside an unquoted field"});
}

TEST(ValidateCsv, ShippedFilesReadWithTheirOptionalColumns) {
  const std::vector<MeasuredRun> runs = read_measured_runs(kDataDir + "/small.csv");
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[0].id, "small-pinned");
  EXPECT_EQ(runs[0].source, "Test runs, pinned");
  EXPECT_EQ(runs[1].line, 3u);
  EXPECT_FALSE(runs[1].micro_batch.has_value());
  EXPECT_FALSE(runs[1].vpp.has_value());
  EXPECT_FALSE(runs[1].sequence_parallel.has_value());
  EXPECT_EQ(runs[2].metric, Metric::kTokensPerSecondPerGpu);
  EXPECT_EQ(runs[0].cp, 1);
  // A profile file is found next to the CSV, wherever paraplan runs.
  EXPECT_EQ(runs[3].hardware_path,
            (std::filesystem::absolute(kDataDir) / "test-gpu.toml").lexically_normal().string());
  EXPECT_TRUE(runs[0].hardware_path.empty());
}

// Each malformed file gives one message with the file, the line and the column.
TEST(ValidateCsv, MalformedFilesNameFileLineAndColumn) {
  auto with = [](const std::string& column, const std::string& value) {
    Row row = pinned_row("bad");
    row[column] = value;
    return csv_text({pinned_row("good"), row});
  };
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"tp", "x"}, "bad.csv:3: column 'tp': 'x' is not an integer >= 1"},
      {{"tp", ""}, "bad.csv:3: column 'tp': is blank, but required"},
      {{"pp", "0"}, "bad.csv:3: column 'pp': '0' is not an integer >= 1"},
      {{"layers", "8.5"}, "bad.csv:3: column 'layers': '8.5' is not an integer >= 1"},
      {{"moe_experts", "-1"}, "bad.csv:3: column 'moe_experts': '-1' is not an integer >= 0"},
      {{"zero_stage", "4"}, "bad.csv:3: column 'zero_stage': '4' is not an integer in [0, 3]"},
      {{"sequence_parallel", "yes"}, "bad.csv:3: column 'sequence_parallel': 'yes' is not true or false"},
      {{"recompute", "selectiv"},
       "bad.csv:3: column 'recompute': 'selectiv' is not one of none|selective|full (did you mean 'selective'?)"},
      {{"precision", "fp32"}, "bad.csv:3: column 'precision': 'fp32' is not one of bf16|fp16|fp8|mxfp8|nvfp4"},
      {{"metric", "step_s"}, "bad.csv:3: column 'metric': 'step_s' is not one of iteration_s|tokens_per_s_per_gpu"},
      {{"value", "-2"}, "bad.csv:3: column 'value': '-2' is not a positive number"},
      {{"value", "fast"}, "bad.csv:3: column 'value': 'fast' is not a positive number"},
      {{"ffn_type", "relu"}, "bad.csv:3: column 'ffn_type': 'relu' is not one of gelu|swiglu"},
      {{"id", "good"}, "bad.csv:3: column 'id': 'good' is already the id of the row at bad.csv:2"},
  };
  for (const auto& [change, message] : cases)
    expect_error<InputError>([&] { parse_measured_runs(with(change[0], change[1]), "bad.csv"); }, {message});

  std::vector<std::string> columns = standard_columns();
  columns.erase(std::find(columns.begin(), columns.end(), "zero_stage"));
  expect_error<InputError>([&] { parse_measured_runs(csv_text({pinned_row("a")}, columns), "bad.csv"); },
                           {"bad.csv: header: missing column 'zero_stage'"});
  columns = standard_columns();
  *std::find(columns.begin(), columns.end(), "micro_batch") = "micro_bach";
  expect_error<InputError>([&] { parse_measured_runs(csv_text({pinned_row("a")}, columns), "bad.csv"); },
                           {"bad.csv:1: header: unknown column 'micro_bach' (did you mean 'micro_batch'?)"});
  std::string short_row = csv_text({pinned_row("a")});
  short_row.erase(short_row.rfind(','));  // the last field (notes) goes
  expect_error<InputError>([&] { parse_measured_runs(short_row, "bad.csv"); }, {"bad.csv:2: expected 34 fields, found 33"});
  expect_error<InputError>([] { parse_measured_runs("", "bad.csv"); }, {"bad.csv: header: the file is empty"});
  expect_error<InputError>([] { read_measured_runs(kDataDir + "/no-such-file.csv"); }, {"no-such-file.csv: cannot open file"});
  expect_error<InputError>([] { read_measured_runs(kDataDir + "/malformed.csv"); },
                           {"malformed.csv:4: column 'tp': 'two' is not an integer >= 1"});
}

// ---------------------------------------------------------------------------------------------
// Row -> recipe

TEST(ValidateRecipe, PublishedValuesArePinnedAndBlankKnobsLeftOpen) {
  Row blank = pinned_row("blank");
  for (const char* knob : {"micro_batch", "vpp", "recompute", "sequence_parallel", "zero_stage"}) blank[knob] = "";
  Row interleaved = pinned_row("interleaved");
  interleaved["vpp"] = "2";
  Row ring = pinned_row("ring");
  ring["sequence_parallel"] = "false";
  ring["cp"] = "2";
  ring["dp"] = "1";
  const std::vector<MeasuredRun> runs = runs_of({pinned_row("pinned"), blank, interleaved, ring});

  const std::string pinned = run_recipe_text(runs[0]);
  for (const char* line : {"micro_batch = 2\n", "recompute = \"selective\"\n", "hardware = \"h100-sxm\"\n",
                           "mesh_order = [\"tp\", \"cp\", \"ep\", \"dp\", \"pp\"]\n", "schedule = \"1f1b\"\n",
                           "name = \"sp\"\nmode = \"megatron\"\n", "name = \"fsdp\"\ndegree = 2\nstage = 1\n"})
    EXPECT_NE(pinned.find(line), std::string::npos) << line << "\nin\n" << pinned;
  EXPECT_EQ(pinned.find("virtual_stages"), std::string::npos);
  EXPECT_EQ(unlisted_strategies_tried(runs[0]), std::vector<std::string>{});
  EXPECT_NE(pinned.find("[search]\ntry_unlisted = []\n"), std::string::npos) << pinned;

  const std::string open = run_recipe_text(runs[1]);
  EXPECT_NE(open.find("[search]\ntry_unlisted = [\"sp\"]\n"), std::string::npos) << open;
  for (const char* absent : {"micro_batch", "recompute", "stage =", "name = \"sp\""})
    EXPECT_EQ(open.find(absent), std::string::npos) << absent << "\nin\n" << open;
  EXPECT_NE(open.find("schedule = [\"1f1b\", \"interleaved-1f1b\"]\n"), std::string::npos) << open;
  EXPECT_EQ(unlisted_strategies_tried(runs[1]), std::vector<std::string>{"sp"});

  EXPECT_NE(run_recipe_text(runs[2]).find("schedule = \"interleaved-1f1b\"\nvirtual_stages = 2\n"), std::string::npos);
  EXPECT_NE(run_recipe_text(runs[3]).find("name = \"sp\"\nmode = \"ring\"\ndegree = 2\n\n[[strategy]]"), std::string::npos);
  EXPECT_NE(pinned.find("name = \"pp\"\ndegree = 2\ntrim_ends = true\n"), std::string::npos) << pinned;
  // With tp, a ring row's published SP is megatron_sp on the ring; blank SP tries both.
  MeasuredRun ring_sp = runs[3], ring_blank = runs[3];
  ring_sp.sequence_parallel = true;
  ring_blank.sequence_parallel.reset();
  EXPECT_NE(run_recipe_text(ring_sp).find("degree = 2\nmegatron_sp = true\n"), std::string::npos);
  EXPECT_NE(run_recipe_text(ring_blank).find("degree = 2\nmegatron_sp = [false, true]\n"), std::string::npos);
  EXPECT_EQ(unlisted_strategies_tried(ring_blank), std::vector<std::string>{});
  EXPECT_EQ(run_recipe_name(runs[0]), kDataDir + "/inline.csv:2 (row pinned)");
}

// [search] try_unlisted: a search tries exactly the unlisted strategies it names.
const std::string kUnlistedRecipe =
    kSmallModel + "[training]\nglobal_batch = 16\nmicro_batch = 1\nrecompute = \"none\"\n"
                  "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 4\nmesh_order = [\"tp\", \"cp\", \"dp\", \"pp\"]\n"
                  "[[strategy]]\nname = \"tp\"\ndegree = 2\n[[strategy]]\nname = \"fsdp\"\ndegree = 2\nstage = 0\n";

TEST(ValidateRecipe, UnlistedTriedLimitsTheStrategiesASearchAddsOnItsOwn) {
  auto slots_and_plans = [](std::optional<std::vector<std::string>> unlisted) {
    RecipeReaderOptions options;
    options.search = true;
    std::string text = kUnlistedRecipe;
    if (unlisted) {
      text += "[search]\ntry_unlisted = [";
      for (const std::string& name : *unlisted) text += "\"" + name + "\",";
      text += "]\n";
    }
    std::unique_ptr<Recipe> recipe = parse_recipe(text, "unlisted.toml", options);
    SearchSettings settings;
    settings.threads = 1;
    SearchResult result = run_search(*recipe, test::bundled_catalog(), settings);
    std::vector<std::string> names;
    for (const StrategySlot& slot : result.space.slots) names.push_back(slot.name);
    return std::make_pair(names, result.plans);
  };
  // None: only the listed tp and fsdp, one plan.
  EXPECT_EQ(slots_and_plans(std::vector<std::string>{}),
            std::make_pair(std::vector<std::string>{"tp", "data parallelism"}, uint64_t{1}));
  // sp: left out, or its degree-1 case (megatron); ring and ulysses need a degree the pinned
  // tp x fsdp = 4 GPUs leave none of: 2 plans.
  EXPECT_EQ(slots_and_plans(std::vector<std::string>{"sp"}),
            std::make_pair(std::vector<std::string>{"tp", "sp", "data parallelism"}, uint64_t{2}));
  // Null (`paraplan search`): every bundled strategy with search cases is in the space too; ep
  // refuses this dense model at every degree and pp has no GPUs left, so only sp's two remain.
  auto [names, plans] = slots_and_plans(std::nullopt);
  EXPECT_EQ(names, (std::vector<std::string>{"tp", "sp", "ep", "pp", "data parallelism"}));  // apply order
  EXPECT_EQ(plans, 2u);
}

// [search] is a search table: evaluate refuses it, a search refuses keys it does not know and
// names that are no strategy plugin, each with the file and line.
TEST(ValidateRecipe, TheSearchTableIsCheckedWhereItIsWritten) {
  RecipeReaderOptions evaluate, search;
  search.search = true;
  test::expect_error<InputError>([&] { parse_recipe(kUnlistedRecipe + "[search]\ntry_unlisted = []\n", "a.toml", evaluate); },
                                 {"a.toml:", "[search]: only `paraplan search`"});
  test::expect_error<InputError>([&] { parse_recipe(kUnlistedRecipe + "[search]\ntry_unlisted = []\ntry = 1\n", "b.toml", search); },
                                 {"b.toml:", "search.try", "unknown key"});
  test::expect_error<InputError>([&] { parse_recipe(kUnlistedRecipe + "[search]\ntry_unlisted = \"sp\"\n", "c.toml", search); },
                                 {"c.toml:", "search.try_unlisted", "expected an array of strings"});
  std::unique_ptr<Recipe> recipe = parse_recipe(kUnlistedRecipe + "[search]\ntry_unlisted = [\"spp\"]\n", "d.toml", search);
  test::expect_error<InputError>([&] { build_search_space(*recipe, test::bundled_catalog()); },
                                 {"d.toml:", "search.try_unlisted:", "spp"});
}

// ---------------------------------------------------------------------------------------------
// Predictions against explicit evaluations

TEST(Validate, BlankKnobsPredictTheBestOfEveryExplicitChoice) {
  // micro_batch (powers of 2 up to 16 dividing the batch, and micro_batch x dp dividing 16:
  // 1, 2, 4, 8), recompute (3 modes), SP (with, without), the pipeline schedule (1f1b; interleaved
  // with 2 or 4 virtual stages, which divide 4 layers a stage: 3 and 6 do not) and the ZeRO stage
  // (0-3) are blank: 4 x 3 x 2 x 3 x 4 = 288 recipes, each written out and evaluated. The
  // interleaved schedule refuses micro_batch 8 (16 / (8 x dp 2) = 1 micro-batch a step, not a
  // multiple of pp = 2): 3 x 2 x 2 x 4 = 48 of them.
  Row row = pinned_row("blank");
  for (const char* knob : {"micro_batch", "vpp", "recompute", "sequence_parallel", "zero_stage"}) row[knob] = "";
  const std::vector<MeasuredRun> runs = runs_of({row});
  const Prediction prediction = predict(runs[0]);
  ASSERT_TRUE(prediction.evaluated()) << prediction.reason;

  double best = INFINITY;
  std::set<std::pair<int64_t, std::string>> best_training;  // (micro_batch, recompute) of the plans at `best`
  int evaluated = 0, refused = 0;
  for (int64_t micro_batch : {1, 2, 4, 8})
    for (const char* recompute : {"none", "selective", "full"})
      for (bool sequence_parallel : {false, true})
        for (int64_t virtual_stages : {1, 2, 4})
          for (int stage = 0; stage <= 3; ++stage) {
            std::string text = kSmallModel + training_and_cluster(micro_batch, recompute) +
                               "[[strategy]]\nname = \"tp\"\ndegree = 2\n";
            if (sequence_parallel) text += "[[strategy]]\nname = \"sp\"\ndegree = 1\nmode = \"megatron\"\n";
            text += "[[strategy]]\nname = \"pp\"\ndegree = 2\ntrim_ends = true\n";
            text += virtual_stages == 1 ? std::string("schedule = \"1f1b\"\n")
                                        : "schedule = \"interleaved-1f1b\"\nvirtual_stages = " +
                                              std::to_string(virtual_stages) + "\n";
            text += "[[strategy]]\nname = \"fsdp\"\ndegree = 2\nstage = " + std::to_string(stage) + "\n";
            test::Evaluated plan;
            try {
              plan = test::evaluate_recipe(text);
            } catch (const PlanError& failure) {
              EXPECT_NE(std::string(failure.what()).find("needs the micro-batches per step to be a multiple of pp"),
                        std::string::npos)
                  << failure.what();
              ++refused;
              continue;
            }
            ASSERT_LE(plan.number("memory.per_gpu_bytes"), 80e9) << text;  // every one fits
            ++evaluated;
            const double step = plan.number("time.step_s");
            if (step < best && !near(step, best)) best_training.clear();
            if (step < best || near(step, best)) best_training.insert({micro_batch, recompute});
            best = std::min(best, step);
          }
  EXPECT_EQ(evaluated, 240);
  EXPECT_EQ(refused, 48);
  EXPECT_TRUE(near(*prediction.predicted, best)) << *prediction.predicted << " vs " << best;
  EXPECT_TRUE(near(prediction.error_pct, (best - 0.5) / 0.5 * 100));
  EXPECT_TRUE(best_training.count({prediction.micro_batch, prediction.recompute}))
      << prediction.micro_batch << " " << prediction.recompute << ": " << prediction.plan;
}

TEST(Validate, TokensPerSecondIsTheBatchsTokensOverStepTimeAndGpus) {
  // tp 1, pp 1, dp 8, ZeRO 0, micro_batch 1, no recompute: 16 x 2048 tokens a step on 8 GPUs.
  const std::vector<MeasuredRun> runs = read_measured_runs(kDataDir + "/small.csv");
  const MeasuredRun& run = runs[2];
  ASSERT_EQ(run.metric, Metric::kTokensPerSecondPerGpu);
  const Prediction prediction = predict(run);
  ASSERT_TRUE(prediction.evaluated()) << prediction.reason;
  const test::Evaluated plan = test::evaluate_recipe(kSmallModel + training_and_cluster(1, "none") +
                                                     "[[strategy]]\nname = \"fsdp\"\ndegree = 8\nstage = 0\n");
  const double step = plan.number("time.step_s");
  const double tokens = 16.0 * 2048.0 / (step * 8.0);
  EXPECT_TRUE(near(*prediction.predicted, tokens)) << *prediction.predicted << " vs " << tokens;
  EXPECT_TRUE(near(plan.number("throughput.tokens_per_s_per_gpu"), tokens));
  EXPECT_TRUE(near(prediction.error_pct, (tokens - 300000) / 300000 * 100));
  EXPECT_TRUE(near(run.iteration_seconds(*prediction.predicted), step));
  EXPECT_EQ(prediction.plan, "fsdp=8 (stage=0); micro_batch 1, recompute none, mesh dp");
}

TEST(Validate, OptionalColumnsReachThePlan) {
  // flash_attention = false, tp_comm_overlap = true, dp_comm_overlap = false against the same
  // keys written into an ordinary recipe; blank optional columns keep the defaults.
  std::vector<std::string> columns = standard_columns();
  columns.insert(columns.end(), optional_columns().begin(), optional_columns().end());
  Row changed = pinned_row("changed");
  changed["flash_attention"] = "false";
  changed["tp_comm_overlap"] = "true";
  changed["dp_comm_overlap"] = "false";
  const std::vector<MeasuredRun> runs = runs_of({changed, pinned_row("defaults")}, columns);
  const std::string strategies = "[[strategy]]\nname = \"tp\"\ndegree = 2\n{tp}[[strategy]]\nname = \"sp\"\ndegree = 1\n"
                                 "mode = \"megatron\"\n[[strategy]]\nname = \"pp\"\ndegree = 2\nschedule = \"1f1b\"\n"
                                 "trim_ends = true\n[[strategy]]\nname = \"fsdp\"\ndegree = 2\nstage = 1\n{dp}";
  auto recipe = [&](const std::string& training, const std::string& tp, const std::string& dp) {
    std::string text = kSmallModel + training_and_cluster(2, "selective", "h100-sxm", training) + strategies;
    text.replace(text.find("{tp}"), 4, tp);
    text.replace(text.find("{dp}"), 4, dp);
    return test::evaluate_recipe(text).number("time.step_s");
  };
  const double changed_step = recipe("flash_attention = false\n", "overlap = true\n", "overlap = false\n");
  const double default_step = recipe("", "", "");
  EXPECT_NE(changed_step, default_step);
  EXPECT_TRUE(near(*predict(runs[0]).predicted, changed_step));
  EXPECT_TRUE(near(*predict(runs[1]).predicted, default_step));
}

// modern.csv's columns become the recipe keys of their names (docs/validation.md): the layer
// stack, recompute_modules as an array, fsdp below dp as hsdp shard groups; an etp other than tp
// with expert parallelism is refused; measured_memory_gib sits beside the prediction's memory.
TEST(Validate, ModernColumnsReachTheRecipe) {
  std::vector<std::string> columns = standard_columns();
  columns.insert(columns.end(), optional_columns().begin(), optional_columns().end());
  Row row = pinned_row("modern");
  row["attention"] = "gqa", row["kv_heads"] = "4", row["ffn_type"] = "squared_relu";
  row["sliding_window"] = "128", row["full_attention_every"] = "2";
  row["zero_stage"] = "3", row["fsdp"] = "1";
  row["recompute_modules"] = "core_attn, layernorm";
  row["measured_memory_gib"] = "30.5";
  Row moe = pinned_row("moe-etp");
  moe["moe_experts"] = "8", moe["moe_top_k"] = "2", moe["ep"] = "2", moe["etp"] = "4";
  const std::vector<MeasuredRun> runs = runs_of({row, moe}, columns);
  const std::string text = run_recipe_text(runs[0]);
  for (const char* line : {"attention = \"gqa\"", "ffn_type = \"squared_relu\"", "sliding_window = 128",
                           "full_attention_every = 2", "dropout = 0.0", "recompute_modules = [\"core_attn\", \"layernorm\"]",
                           "name = \"hsdp\"\ndegree = 2\nshard_group = 1\nstage = 3"})
    EXPECT_NE(text.find(line), std::string::npos) << line << " not in\n" << text;
  expect_error<PlanError>([&] { run_recipe_text(runs[1]); },
                          {"etp = 4 is neither 1 nor tp = 2: an expert tensor-parallel group of its own size is not modelled"});
  // The dispatcher and the all-to-all's overlap (paraplan's columns, from the rows' notes) become
  // the ep strategy's keys; blank is Megatron's default (pinned, not searched); anything else names
  // the column.
  Row flex = pinned_row("moe-flex");
  flex["tp"] = "1", flex["dp"] = "4", flex["moe_experts"] = "8", flex["moe_top_k"] = "2", flex["ep"] = "2";
  flex["moe_dispatcher"] = "flex", flex["moe_a2a_overlap"] = "true";
  Row plain = flex;
  plain["id"] = "moe-plain", plain["moe_dispatcher"] = "", plain["moe_a2a_overlap"] = "";
  const std::vector<MeasuredRun> moe_runs = runs_of({flex, plain}, columns);
  const std::string flex_text = run_recipe_text(moe_runs[0]);
  // tp = 1: the experts are whole whatever etp says, and the recipe leaves it out.
  EXPECT_NE(flex_text.find("name = \"ep\"\ndegree = 2\ndispatcher = \"flex\"\noverlap = true\n"), std::string::npos)
      << flex_text;
  EXPECT_EQ(flex_text.find("etp ="), std::string::npos) << flex_text;
  const std::string plain_text = run_recipe_text(moe_runs[1]);
  EXPECT_NE(plain_text.find("name = \"ep\"\ndegree = 2\ndispatcher = \"alltoall\"\noverlap = false\n"),
            std::string::npos)
      << plain_text;
  // A blank etp is Megatron's: tp's degree where ep x tp divides the stage's ranks, else 1 (the
  // only one it allows): tp 2, dp 4, ep 8 has whole experts, ep 4 split ones.
  Row wide = flex;
  wide["id"] = "moe-wide", wide["tp"] = "2", wide["pp"] = "1", wide["dp"] = "4", wide["ep"] = "8", wide["etp"] = "";
  Row narrow = wide;
  narrow["id"] = "moe-narrow", narrow["ep"] = "4";
  const std::vector<MeasuredRun> inferred = runs_of({wide, narrow}, columns);
  EXPECT_NE(run_recipe_text(inferred[0]).find("degree = 8\ndispatcher = \"flex\"\noverlap = true\netp = 1\n"), std::string::npos);
  EXPECT_NE(run_recipe_text(inferred[1]).find("degree = 4\ndispatcher = \"flex\"\noverlap = true\netp = 2\n"), std::string::npos);
  Row bad = flex;
  bad["moe_dispatcher"] = "deepep";
  expect_error<InputError>([&] { parse_measured_runs(csv_text({bad}, columns), "bad.csv"); },
                           {"bad.csv:2: column 'moe_dispatcher': 'deepep' is not one of alltoall|allgather|flex"});

  const Prediction prediction = predict(runs[0]);
  ASSERT_TRUE(prediction.evaluated()) << prediction.reason;
  const std::vector<Prediction> predictions = {prediction};
  const ValidationReport report{{"inline.csv"}, predictions, summarize(predictions), {}};
  const nlohmann::ordered_json json = validation_json(report);
  EXPECT_EQ(json["rows"][0]["measured_memory_gib"], 30.5);
  EXPECT_NEAR(json["rows"][0]["memory_gib"].get<double>(), prediction.memory_per_gpu_bytes / (1024.0 * 1024 * 1024), 1e-9);
  EXPECT_GT(prediction.memory_per_gpu_bytes, 1e9);
}

// main_grads (modern.csv: the dtype Megatron's grad buffer has, bf16 when grad_reduce_in_fp32 is
// off, as NVIDIA's benchmark scripts run) becomes [training] main_grads: the gradients on a GPU
// take 2 bytes per parameter instead of 4, so the fullest GPU holds half its fp32 gradient bytes
// less; blank keeps fp32.
TEST(Validate, MainGradsColumnSetsTheGradientDtype) {
  std::vector<std::string> columns = standard_columns();
  columns.insert(columns.end(), optional_columns().begin(), optional_columns().end());
  Row bf16 = pinned_row("bf16-grads");
  bf16["main_grads"] = "bf16";
  const std::vector<MeasuredRun> runs = runs_of({bf16, pinned_row("fp32-grads")}, columns);
  EXPECT_NE(run_recipe_text(runs[0]).find("main_grads = \"bf16\""), std::string::npos) << run_recipe_text(runs[0]);
  EXPECT_EQ(run_recipe_text(runs[1]).find("main_grads"), std::string::npos) << run_recipe_text(runs[1]);

  const std::string strategies = "[[strategy]]\nname = \"tp\"\ndegree = 2\n[[strategy]]\nname = \"sp\"\ndegree = 1\n"
                                 "mode = \"megatron\"\n[[strategy]]\nname = \"pp\"\ndegree = 2\nschedule = \"1f1b\"\n"
                                 "trim_ends = true\n[[strategy]]\nname = \"fsdp\"\ndegree = 2\nstage = 1\n";
  const double fp32_gradients =
      test::evaluate_recipe(kSmallModel + training_and_cluster(2, "selective") + strategies).number("memory.gradients_bytes");
  const Prediction with_bf16 = predict(runs[0]);
  const Prediction with_fp32 = predict(runs[1]);
  ASSERT_TRUE(with_bf16.evaluated() && with_fp32.evaluated()) << with_bf16.reason << with_fp32.reason;
  EXPECT_GT(fp32_gradients, 1e7);
  EXPECT_NEAR(with_fp32.memory_per_gpu_bytes - with_bf16.memory_per_gpu_bytes, fp32_gradients / 2, 1.0);

  Row bad = pinned_row("bad");
  bad["main_grads"] = "fp16";
  expect_error<InputError>([&] { parse_measured_runs(csv_text({bad}, columns), "bad.csv"); },
                           {"bad.csv:2: column 'main_grads': 'fp16' is not one of fp32|bf16"});
}

// tp_overlap_method (modern.csv: micro_pipeline for torchtitan's async-TP runs) becomes tp's
// overlap_method; it says how overlap ran, so it needs tp_comm_overlap = true.
TEST(Validate, TpOverlapMethodColumnReachesTheStrategy) {
  std::vector<std::string> columns = standard_columns();
  columns.insert(columns.end(), optional_columns().begin(), optional_columns().end());
  Row micro = pinned_row("micro");
  micro["tp_comm_overlap"] = "true";
  micro["tp_overlap_method"] = "micro_pipeline";
  Row userbuffers = pinned_row("userbuffers");
  userbuffers["tp_comm_overlap"] = "true";
  const std::vector<MeasuredRun> runs = runs_of({micro, userbuffers}, columns);
  EXPECT_NE(run_recipe_text(runs[0]).find("overlap = true\noverlap_method = \"micro_pipeline\""), std::string::npos)
      << run_recipe_text(runs[0]);
  EXPECT_EQ(run_recipe_text(runs[1]).find("overlap_method"), std::string::npos) << run_recipe_text(runs[1]);

  Row alone = pinned_row("alone");
  alone["tp_overlap_method"] = "micro_pipeline";
  expect_error<InputError>([&] { parse_measured_runs(csv_text({alone}, columns), "bad.csv"); },
                           {"bad.csv:2: column 'tp_overlap_method': says how TP overlap ran, but tp_comm_overlap is not true"});
  Row bad = pinned_row("bad");
  bad["tp_comm_overlap"] = "true";
  bad["tp_overlap_method"] = "nccl";
  expect_error<InputError>([&] { parse_measured_runs(csv_text({bad}, columns), "bad.csv"); },
                           {"bad.csv:2: column 'tp_overlap_method': 'nccl' is not one of userbuffers|micro_pipeline"});
}

// fp8_attention and moe_fused_mlp (modern.csv: the Megatron-Bridge runs whose configuration sets
// fp8_dot_product_attention and cutedsl_fused_grouped_mlp) become the recipe's training keys; a
// value other than true/false is refused with its file, line and column.
TEST(Validate, FusedKernelColumnsReachTheTrainingTable) {
  std::vector<std::string> columns = standard_columns();
  columns.insert(columns.end(), optional_columns().begin(), optional_columns().end());
  Row fused = pinned_row("fused");
  fused["precision"] = "fp8";
  fused["fp8_attention"] = "true";
  Row plain = pinned_row("plain");
  plain["fp8_attention"] = "false";
  const std::vector<MeasuredRun> runs = runs_of({fused, plain}, columns);
  EXPECT_NE(run_recipe_text(runs[0]).find("fp8_attention = true"), std::string::npos) << run_recipe_text(runs[0]);
  EXPECT_EQ(run_recipe_text(runs[1]).find("fp8_attention"), std::string::npos) << run_recipe_text(runs[1]);
  EXPECT_EQ(run_recipe_text(runs[0]).find("moe_fused_mlp"), std::string::npos);
  Row bad = pinned_row("bad");
  bad["moe_fused_mlp"] = "yes";
  expect_error<InputError>([&] { parse_measured_runs(csv_text({bad}, columns), "bad.csv"); },
                           {"bad.csv:2: column 'moe_fused_mlp'"});
}

TEST(Validate, SequenceParallelWithContextParallelIsMegatronSpInsideTheRing) {
  // tp = 2, cp = 2 (ring), dp = 2: published SP is sp's megatron_sp on the ring; blank SP is
  // the better of the two, written out as ordinary recipes here.
  Row published = pinned_row("sp-published");
  published["pp"] = "1";
  published["cp"] = "2";
  Row blank = published;
  blank["id"] = "sp-blank";
  blank["sequence_parallel"] = "";
  const std::vector<MeasuredRun> runs = runs_of({published, blank});
  auto step = [](bool megatron_sp) {
    return test::evaluate_recipe(kSmallModel + training_and_cluster(2, "selective") +
                                 "[[strategy]]\nname = \"tp\"\ndegree = 2\n[[strategy]]\nname = \"sp\"\nmode = \"ring\"\n"
                                 "degree = 2\nmegatron_sp = " +
                                 (megatron_sp ? "true" : "false") +
                                 "\n[[strategy]]\nname = \"fsdp\"\ndegree = 2\nstage = 1\n")
        .number("time.step_s");
  };
  const Prediction with_sp = predict(runs[0]);
  ASSERT_TRUE(with_sp.evaluated()) << with_sp.reason;
  EXPECT_TRUE(near(*with_sp.predicted, step(true)));
  EXPECT_NE(step(true), step(false));
  EXPECT_TRUE(near(*predict(runs[1]).predicted, std::min(step(true), step(false))));
}

TEST(Validate, AProfileFileIsReadRelativeToTheCsv) {
  const std::vector<MeasuredRun> runs = read_measured_runs(kDataDir + "/small.csv");
  const Prediction prediction = predict(runs[3]);
  ASSERT_TRUE(prediction.evaluated()) << prediction.reason;
  const std::string text = "[model]\nlayers = 8\nhidden = 1024\nheads = 16\nffn_hidden = 4096\nffn_type = \"gelu\"\n"
                           "vocab = 32000\nseq_len = 2048\n[training]\nglobal_batch = 16\nmicro_batch = 2\n"
                           "recompute = \"full\"\nprecision = \"fp16\"\n[cluster]\nhardware = \"" +
                           kDataDir + "/test-gpu.toml\"\nnum_gpus = 8\ngpus_per_node = 8\n"
                           "mesh_order = [\"tp\", \"cp\", \"ep\", \"dp\", \"pp\"]\n"
                           "[[strategy]]\nname = \"tp\"\ndegree = 2\n[[strategy]]\nname = \"fsdp\"\ndegree = 4\nstage = 1\n";
  EXPECT_TRUE(near(*prediction.predicted, test::evaluate_recipe(text).number("time.step_s")));
}

TEST(Validate, UnevaluableRowsAreCountedWithTheirReasons) {
  Row vpp_without_pp = pinned_row("vpp-without-pp");
  vpp_without_pp["pp"] = "1";
  vpp_without_pp["dp"] = "4";
  vpp_without_pp["vpp"] = "2";
  // tp 2 x dp 2 = 4 ranks per stage: ep = 8 fits neither cp x dp (2) nor tp x cp x dp (4).
  Row ep = pinned_row("ep-not-dividing-the-stage");
  ep["ep"] = "8";
  Row huge = pinned_row("does-not-fit");  // 96 x 12288 (174B parameters) on 8 GPUs
  huge["layers"] = "96";
  huge["hidden"] = "12288";
  huge["heads"] = "96";
  huge["ffn_hidden"] = "49152";
  Row unknown_gpu = pinned_row("no-such-gpu");
  unknown_gpu["hardware"] = "h100-sxn";
  Row product = pinned_row("degrees-do-not-multiply");
  product["dp"] = "1";
  const std::vector<MeasuredRun> runs = runs_of({pinned_row("fine"), unknown_gpu, product, vpp_without_pp, ep, huge});
  const std::vector<Prediction> predictions = predict_runs(runs, test::bundled_catalog(), 2);
  ASSERT_EQ(predictions.size(), 6u);
  EXPECT_TRUE(predictions[0].evaluated()) << predictions[0].reason;
  const std::vector<std::vector<std::string>> reasons = {
      {"cluster.hardware 'h100-sxn'", "did you mean 'h100-sxm'"},
      {"tp x pp x dp x cp = 2 x 2 x 1 x 1 = 4, not num_gpus = 8"},
      {"vpp = 2 needs pipeline parallelism, but pp = 1"},
      {"ep = 8 does not divide cp x dp = 2"},
      {"no plan survives the search", "memory"},
  };
  for (size_t i = 1; i < predictions.size(); ++i) {
    EXPECT_FALSE(predictions[i].evaluated()) << runs[i].id;
    for (const std::string& fragment : reasons[i - 1])
      EXPECT_NE(predictions[i].reason.find(fragment), std::string::npos) << runs[i].id << ": " << predictions[i].reason;
    // The row's location is the report's to add; the generated recipe's is not shown.
    EXPECT_FALSE(predictions[i].reason.starts_with(kDataDir)) << predictions[i].reason;
  }
  const ValidationSummary summary = summarize(predictions);
  EXPECT_EQ(summary.evaluated, 1u);
  EXPECT_EQ(summary.unevaluable, 5u);
  EXPECT_NEAR(*summary.mape_pct, std::abs(predictions[0].error_pct), 1e-12);
  EXPECT_FALSE(summary.spearman.has_value());
}

TEST(Validate, ThreadsDoNotChangeTheResults) {
  std::vector<Row> rows;
  for (int i = 0; i < 6; ++i) {
    Row row = pinned_row("row" + std::to_string(i));
    row["micro_batch"] = i % 2 ? "" : "1";
    row["zero_stage"] = i % 3 ? "" : "2";
    rows.push_back(row);
  }
  const std::vector<MeasuredRun> runs = runs_of(rows);
  const std::vector<Prediction> one = predict_runs(runs, test::bundled_catalog(), 1);
  const std::vector<Prediction> three = predict_runs(runs, test::bundled_catalog(), 3);
  for (size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(one[i].run, &runs[i]);
    EXPECT_EQ(three[i].run, &runs[i]);
    EXPECT_EQ(one[i].predicted, three[i].predicted);
    EXPECT_EQ(one[i].plan, three[i].plan);
  }
}

// ---------------------------------------------------------------------------------------------
// The command

TEST(ValidateCommand, ReportsJsonPlotAndExitCodes) {
  const std::string small = kDataDir + "/small.csv";
  const std::filesystem::path plot =
      std::filesystem::temp_directory_path() / ("paraplan_validate_" + std::to_string(getpid()) + ".svg");
  test::CommandRun run = test::run_command({"validate", small, "--json", "--plot", plot.string(), "--threads", "2"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json["files"], nlohmann::json::array({small}));
  EXPECT_EQ(json["evaluated"], 4);
  EXPECT_EQ(json["unevaluable"], 0);
  ASSERT_EQ(json["rows"].size(), 4u);
  EXPECT_EQ(json["rows"][2]["metric"], "tokens_per_s_per_gpu");
  EXPECT_EQ(json["rows"][2]["plan"], "fsdp=8 (stage=0); micro_batch 1, recompute none, mesh dp");
  double sum = 0;
  for (const nlohmann::json& row : json["rows"]) sum += std::abs(row["error_pct"].get<double>());
  EXPECT_NEAR(json["mape_pct"].get<double>(), sum / 4, 1e-9);
  EXPECT_EQ(json["sources"].size(), 2u);
  EXPECT_EQ(json["sources"][0]["source"], "Test runs, pinned");
  EXPECT_EQ(json["sources"][0]["rows"], 3);

  std::ifstream stream(plot);
  const std::string svg((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
  std::filesystem::remove(plot);
  EXPECT_TRUE(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\"")) << svg.substr(0, 80);
  size_t points = 0;
  for (size_t at = svg.find("<title>"); at != std::string::npos; at = svg.find("<title>", at + 1)) ++points;
  EXPECT_EQ(points, 4u);
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);  // the +/-10 % lines

  // Text: every row, the statistics.
  run = test::run_command({"validate", small});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("4 rows: 4 evaluated, 0 unevaluable"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("small-profile-file"), std::string::npos);
  EXPECT_NE(run.out.find("MAPE by source:"), std::string::npos);

  // Only unevaluable rows: exit 1, the rows and reasons still printed.
  run = test::run_command({"validate", kDataDir + "/unevaluable.csv"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("no row could be evaluated"), std::string::npos) << run.err;
  EXPECT_NE(run.out.find("degrees-do-not-multiply (" + kDataDir + "/unevaluable.csv:3):\n    tp x pp x dp x cp"),
            std::string::npos)
      << run.out;

  run = test::run_command({"validate", small, "--fail-above", "0"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("exceeds --fail-above 0 %"), std::string::npos) << run.err;
  EXPECT_EQ(test::run_command({"validate", small, "--fail-above", "1000"}).exit_code, 0);
  EXPECT_EQ(test::run_command({"validate"}).exit_code, 2);
  EXPECT_EQ(test::run_command({"validate", small, "--fail-above", "-1"}).exit_code, 2);
  run = test::run_command({"validate", kDataDir + "/malformed.csv"});
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_NE(run.err.find("malformed.csv:4: column 'tp'"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace paraplan::host
