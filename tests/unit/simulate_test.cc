// The simulate executor: pipeline bubbles against the schedules' formulas, activation memory
// against the schedules' in-flight counts, step times against the analytic model with the same
// work, stragglers against a hand calculation, toy programs timed by hand (gating, shared links,
// a deadlock), and the trace file's format.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include "event_engine.h"
#include "finish_windows.h"
#include "paraplan/cost_model.hpp"
#include "rank_mesh.h"
#include "stage_program.h"
#include "test_support.h"

namespace paraplan {
namespace {

using test::Evaluated;

// Uniform stages whose communication is free (tests/data/simulate/free-network.toml): every
// stage holds 8 layers of a wide model, and the embedding and a vocabulary of 8 are too small to
// make the end stages differ. Memory does not matter here: the plan is only timed.
std::string uniform_pipeline(const std::string& schedule, int virtual_stages, int stages = 8, int micro_batches = 32) {
  return "[model]\nlayers = " + std::to_string(stages * 8) +
         "\nhidden = 8192\nheads = 64\nvocab = 8\nseq_len = 4096\n"
         "[training]\nglobal_batch = " + std::to_string(micro_batches) + "\nmicro_batch = 1\n"
         "[cluster]\nhardware = \"" PARAPLAN_TEST_DATA_DIR "/simulate/free-network.toml\"\nnum_gpus = " +
         std::to_string(stages) +
         "\n[[strategy]]\nname = \"pp\"\ndegree = " + std::to_string(stages) + "\nschedule = \"" + schedule +
         "\"\nvirtual_stages = " + std::to_string(virtual_stages) + "\n";
}

double stage_number(const Evaluated& run, const std::string& key, int stage) {
  return run.number(key + ".stage_" + std::to_string(stage));
}

// ---------------------------------------------------------------------------------------------
// The pipeline as the schedule runs it

// Narayanan et al. 2021: GPipe and 1F1B idle (p-1)/m of the ideal time, interleaving with v
// chunks (p-1)/(v·m).
TEST(Simulate, BubbleMatchesTheScheduleFormulasOnUniformStages) {
  struct Case {
    const char* schedule;
    int v, p, m;
  };
  for (const Case& c : {Case{"1f1b", 1, 8, 32}, Case{"gpipe", 1, 8, 32}, Case{"1f1b", 1, 4, 8},
                        Case{"interleaved-1f1b", 2, 8, 32}, Case{"interleaved-1f1b", 4, 8, 32},
                        Case{"interleaved-1f1b", 2, 4, 16}}) {
    const Evaluated run = test::evaluate_recipe(uniform_pipeline(c.schedule, c.v, c.p, c.m), "simulate");
    const double formula = (c.p - 1.0) / (c.v * static_cast<double>(c.m));
    EXPECT_NEAR(run.number("pipeline.bubble_fraction") / formula, 1.0, 0.005)
        << c.schedule << " v=" << c.v << " p=" << c.p << " m=" << c.m;
  }
}

// ZB-H1 (Qi et al. 2023) fills 1F1B's bubble with deferred weight-gradient passes.
TEST(Simulate, ZeroBubbleIdlesLessThanOneForwardOneBackward) {
  const Evaluated one_f_one_b = test::evaluate_recipe(uniform_pipeline("1f1b", 1), "simulate");
  const Evaluated zero_bubble = test::evaluate_recipe(uniform_pipeline("zero-bubble", 1), "simulate");
  EXPECT_LT(zero_bubble.number("pipeline.bubble_fraction"), 0.6 * one_f_one_b.number("pipeline.bubble_fraction"));
  EXPECT_GT(zero_bubble.number("pipeline.bubble_fraction"), 0.0);
  EXPECT_LT(zero_bubble.number("time.step_s"), one_f_one_b.number("time.step_s"));
  // The same work: only the idle time differs.
  EXPECT_NEAR(zero_bubble.number("time.work_s") / one_f_one_b.number("time.work_s"), 1.0, 1e-9);
}

// Activation sets held at each stage's peak, counted from the schedule by hand: 1F1B stage s
// keeps its p - s - 1 warm-up forwards plus the one in flight; GPipe all m; ZB-H1 p on every
// stage (stage s defers s weight-gradient passes); interleaving 2(p - s - 1) + (v - 1)p warm-up
// chunk forwards plus one, each 1/v of the stage (middle stages: no embedding or head skews it).
TEST(Simulate, PeakActivationsAreTheSchedulesInFlightCount) {
  const int p = 8, m = 32;
  const Evaluated one_f_one_b = test::evaluate_recipe(uniform_pipeline("1f1b", 1), "simulate");
  const Evaluated gpipe = test::evaluate_recipe(uniform_pipeline("gpipe", 1), "simulate");
  const Evaluated zero_bubble = test::evaluate_recipe(uniform_pipeline("zero-bubble", 1), "simulate");
  const Evaluated short_1f1b = test::evaluate_recipe(uniform_pipeline("1f1b", 1, p, 4), "simulate");
  for (int s = 0; s < p; ++s) {
    EXPECT_NEAR(stage_number(one_f_one_b, "memory.in_flight_micro_batches", s), p - s, 1e-9) << s;
    EXPECT_NEAR(stage_number(gpipe, "memory.in_flight_micro_batches", s), m, 1e-9) << s;
    EXPECT_NEAR(stage_number(zero_bubble, "memory.in_flight_micro_batches", s), p, 1e-9) << s;
    EXPECT_NEAR(stage_number(short_1f1b, "memory.in_flight_micro_batches", s), std::min(p - s, 4), 1e-9) << s;
  }
  for (int v : {2, 4}) {
    const Evaluated interleaved = test::evaluate_recipe(uniform_pipeline("interleaved-1f1b", v), "simulate");
    for (int s = 1; s + 1 < p; ++s) {
      const double chunk_sets = std::min(2 * (p - s - 1) + (v - 1) * p, m * v) + 1;
      EXPECT_NEAR(stage_number(interleaved, "memory.in_flight_micro_batches", s), chunk_sets / v, 1e-9)
          << "v=" << v << " stage " << s;
    }
  }
}

// The analytic model holds the same activation sets (schedule.h) and the same model state.
TEST(Simulate, PeakMemoryMatchesTheAnalyticModel) {
  for (const char* recipe : {"/scenarios/seed1-llama2-70b-4k-64xh100.toml", "/scenarios/seed3-pp8-80-layers-32-micro-batches.toml",
                             "/llama2-7b-fsdp-64xh100.toml", "/scenarios/seed6-mixtral-8x7b-ep8-8xh100.toml"}) {
    const std::string file = std::string(PARAPLAN_RECIPES_DIR) + recipe;
    const Evaluated analytic = test::evaluate_file(file, "analytic");
    const Evaluated simulated = test::evaluate_file(file, "simulate");
    EXPECT_NEAR(simulated.number("memory.per_gpu_bytes") / analytic.number("memory.per_gpu_bytes"), 1.0, 1e-9) << recipe;
    EXPECT_DOUBLE_EQ(simulated.number("memory.headroom_bytes"),
                     simulated.number("memory.capacity_bytes") - simulated.number("memory.per_gpu_bytes"))
        << recipe;
  }
}

// ---------------------------------------------------------------------------------------------
// Against the analytic model

// The recipes with their data-parallel overlap switched off (every collective on the critical
// path): both executors price the same serial work, and only the pipeline's fill and drain are
// counted differently (closed form vs the schedule run).
struct ShippedRecipe {
  const char* file;
  const char* data_parallel;  // the strategy whose overlap is switched off, or nullptr
};
const ShippedRecipe kShipped[] = {
    {"/scenarios/seed1-llama2-70b-4k-64xh100.toml", "fsdp"},
    {"/scenarios/seed2-llama3-405b-8k-512xh100.toml", "fsdp"},
    {"/scenarios/seed3-pp8-80-layers-32-micro-batches.toml", nullptr},
    {"/scenarios/seed5-llama2-7b-fsdp3-scaling.toml", "fsdp"},
    {"/scenarios/seed6-mixtral-8x7b-ep8-8xh100.toml", "fsdp"},
    {"/scenarios/seed7-llama2-70b-fsdp3-4xb200.toml", "fsdp"},
    {"/llama2-7b-fsdp-64xh100.toml", "fsdp"},
    {"/simulate/llama2-7b-interleaved-fsdp3-32xh100.toml", "fsdp"},
};

std::vector<std::string> without_overlap(const ShippedRecipe& recipe) {
  if (!recipe.data_parallel) return {};
  return {std::string("strategy.") + recipe.data_parallel + ".overlap=false"};
}

// The pacing rank's step splits into compute, optimizer, exposed communication and idle time; the
// parts are measured separately (idle is what is left), so a negative idle time would mean time
// counted twice.
TEST(Simulate, TheStepSplitsWithoutCountingTimeTwice) {
  for (const ShippedRecipe& recipe : kShipped) {
    for (const std::vector<std::string>& overrides : {std::vector<std::string>{}, without_overlap(recipe)}) {
      const Evaluated run = test::evaluate_file(std::string(PARAPLAN_RECIPES_DIR) + recipe.file, "simulate", overrides);
      const double step = run.number("time.step_s");
      EXPECT_GE(run.number("time.idle_s"), -1e-9 * step) << recipe.file;
      EXPECT_LE(run.number("time.bubble_s"), run.number("time.pipeline_s")) << recipe.file;
      EXPECT_GT(run.number("time.compute_s"), 0.5 * step) << recipe.file;
    }
  }
}

TEST(Simulate, WithoutOverlapAgreesWithTheAnalyticModelWithinTwoPercent) {
  for (const ShippedRecipe& recipe : kShipped) {
    const std::string file = std::string(PARAPLAN_RECIPES_DIR) + recipe.file;
    const double analytic = test::evaluate_file(file, "analytic", without_overlap(recipe)).number("time.step_s");
    const double simulated = test::evaluate_file(file, "simulate", without_overlap(recipe)).number("time.step_s");
    EXPECT_NEAR(simulated / analytic, 1.0, 0.02) << recipe.file;
  }
}

// Overlap hides communication but slows the compute beside it (the profile's
// overlap_compute_slowdown): never by more than a little. On a deep pipeline each stage's slowed
// backward delays the next one's, so hiding the gradient reductions can cost slightly more than
// it saves (seed2, 16 stages: +0.06 %).
TEST(Simulate, OverlapIsNeverMuchSlowerThanTheNoOverlapBound) {
  for (const ShippedRecipe& recipe : kShipped) {
    const std::string file = std::string(PARAPLAN_RECIPES_DIR) + recipe.file;
    const double serial = test::evaluate_file(file, "simulate", without_overlap(recipe)).number("time.step_s");
    const Evaluated overlapped = test::evaluate_file(file, "simulate");
    EXPECT_LE(overlapped.number("time.step_s"), serial * 1.01) << recipe.file;
    EXPECT_EQ(test::evaluate_file(file, "simulate", without_overlap(recipe)).number("time.overlap_contention_s"), 0.0)
        << recipe.file;
  }
  // Megatron-LM's --tp-comm-overlap hides the tensor-parallel collectives behind the GEMMs.
  const std::string seed1 = PARAPLAN_RECIPES_DIR "/scenarios/seed1-llama2-70b-4k-64xh100.toml";
  EXPECT_LT(test::evaluate_file(seed1, "simulate", {"strategy.tp.overlap=true"}).number("time.step_s"),
            0.9 * test::evaluate_file(seed1, "simulate").number("time.step_s"));
}

// With every transfer on the critical path both executors split the pacing stage's time the same
// way: the same compute, the same exposed communication per strategy (pipeline sends aside: the
// closed form charges every stage both directions' sends, the end stages make only one).
TEST(Simulate, WithoutOverlapTheTimeSplitsLikeTheAnalyticModel) {
  for (const ShippedRecipe& recipe : kShipped) {
    const std::string file = std::string(PARAPLAN_RECIPES_DIR) + recipe.file;
    const Evaluated analytic = test::evaluate_file(file, "analytic", without_overlap(recipe));
    const Evaluated simulated = test::evaluate_file(file, "simulate", without_overlap(recipe));
    EXPECT_NEAR(simulated.number("time.compute_s") / analytic.number("time.compute_s"), 1.0, 1e-9) << recipe.file;
    for (const char* owner : {"tp", "ep", "fsdp"}) {
      const std::string key = std::string("time.exposed_comm_s.") + owner;
      if (!analytic.results.find(key) || analytic.number(key) == 0) continue;
      EXPECT_NEAR(simulated.number(key) / analytic.number(key), 1.0, 0.02) << recipe.file << " " << key;
    }
  }
}

// FSDP-3 without a pipeline: the closed form hides every gather and reduction behind its phase's
// compute, slowing it; the simulation finds what cannot hide (the first layer's gathers, the last
// layer's reduce-scatter before the optimizer), during which no compute runs to be slowed: the
// exposed time and the contention the compute did not pay are the whole difference in step time.
TEST(Simulate, TheDifferenceFromTheAnalyticModelIsTheExposedCommunication) {
  for (const char* recipe : {"/llama2-7b-fsdp-64xh100.toml", "/scenarios/seed5-llama2-7b-fsdp3-scaling.toml",
                             "/scenarios/seed7-llama2-70b-fsdp3-4xb200.toml"}) {
    const std::string file = std::string(PARAPLAN_RECIPES_DIR) + recipe;
    const Evaluated analytic = test::evaluate_file(file, "analytic");
    const Evaluated simulated = test::evaluate_file(file, "simulate");
    const double slower = simulated.number("time.step_s") - analytic.number("time.step_s");
    const double exposed = simulated.number("time.exposed_comm_s.fsdp") - analytic.number("time.exposed_comm_s.fsdp");
    const double contention =
        simulated.number("time.overlap_contention_s") - analytic.number("time.overlap_contention_s");
    EXPECT_GT(slower, 0.0) << recipe;
    EXPECT_LT(contention, 0.0) << recipe;
    EXPECT_NEAR((exposed + contention) / slower, 1.0, 1e-6) << recipe;
    EXPECT_NEAR(simulated.number("time.bubble_s"), 0.0, 1e-12 * simulated.number("time.step_s")) << recipe;
  }
}

// ---------------------------------------------------------------------------------------------
// Every rank

// Without stragglers every rank of a stage runs the same program and meets its groups at the
// same time: the representatives' answer is every rank's.
TEST(Simulate, EveryRankAgreesWithOneRankPerStage) {
  for (const char* recipe : {"/simulate/llama2-7b-interleaved-fsdp3-32xh100.toml", "/simulate/gpt3-175b-512xa100.toml"}) {
    const std::string file = std::string(PARAPLAN_RECIPES_DIR) + recipe;
    const Evaluated stages = test::evaluate_file(file, "simulate");
    const Evaluated every = test::evaluate_file(file, "simulate", {"executor.simulate.ranks=all"});
    EXPECT_EQ(every.number("simulation.ranks"), every.number("plan.num_gpus")) << recipe;
    EXPECT_EQ(stages.number("simulation.ranks"), stages.number("pipeline.stages")) << recipe;
    EXPECT_NEAR(every.number("time.step_s") / stages.number("time.step_s"), 1.0, 1e-9) << recipe;
  }
}

// Data parallelism without a pipeline, communication on the critical path: a straggler computing
// 1.5 x slower holds every rank back at the gradient all-reduce by half its compute, the
// micro-batches' and the optimizer's (the analytic model's time.compute_s and time.optimizer_s).
TEST(Simulate, AStragglerDelaysEveryRankByItsExtraCompute) {
  const std::string file = PARAPLAN_RECIPES_DIR "/llama2-7b-fsdp-64xh100.toml";
  const std::vector<std::string> serial = {"strategy.fsdp.stage=0", "strategy.fsdp.overlap=false"};
  const Evaluated analytic = test::evaluate_file(file, "analytic", serial);
  const double extra = 0.5 * (analytic.number("time.compute_s") + analytic.number("time.optimizer_s"));
  std::vector<std::string> slow = serial;
  slow.insert(slow.end(), {"executor.simulate.straggler_rank=37", "executor.simulate.straggler_slowdown=1.5"});
  const double base = test::evaluate_file(file, "simulate", serial).number("time.step_s");
  for (const char* ranks : {"stage", "all"}) {
    std::vector<std::string> overrides = slow;
    overrides.push_back(std::string("executor.simulate.ranks=") + ranks);
    const double delayed = test::evaluate_file(file, "simulate", overrides).number("time.step_s");
    EXPECT_NEAR((delayed - base) / extra, 1.0, 1e-6) << ranks;
  }
  test::expect_error<host::InputError>(
      [&] { test::evaluate_file(file, "simulate", {"executor.simulate.straggler_rank=64", "executor.simulate.straggler_slowdown=2"}); },
      {"straggler_rank = 64 is not a rank of this 64-GPU plan"});
}

// The all-to-all after the experts waits for the busiest rank: simulating every rank (the busiest
// rotating) or one rank priced as the busiest gives the same step; the others idle meanwhile.
TEST(Simulate, ExpertImbalanceMakesTheBusiestRankLate) {
  const std::string file = PARAPLAN_RECIPES_DIR "/scenarios/seed6-mixtral-8x7b-ep8-8xh100.toml";
  const std::string imbalance = "executor.simulate.expert_imbalance=0.5";
  const Evaluated balanced = test::evaluate_file(file, "simulate");
  const Evaluated busiest = test::evaluate_file(file, "simulate", {imbalance});
  const Evaluated every = test::evaluate_file(file, "simulate", {imbalance, "executor.simulate.ranks=all"});
  EXPECT_GT(busiest.number("time.step_s"), balanced.number("time.step_s") * 1.05);
  EXPECT_NEAR(every.number("time.step_s") / busiest.number("time.step_s"), 1.0, 1e-6);
  // Every rank is the busiest once in 8: on average it computes less than the representative.
  EXPECT_LT(every.number("streams.stage_0.compute.busy_fraction"),
            busiest.number("streams.stage_0.compute.busy_fraction") - 0.02);
}

// ---------------------------------------------------------------------------------------------
// The engine, on programs timed by hand

struct ToyRun {
  rank_program::ProgramSet programs;
  std::vector<pp_mesh_axis> axes;
  pp_hardware_profile profile{};
};

// One stage; streams: compute, then two per axis ("dp", "dp reduce"), then host. Two ranks on a
// "dp" axis, and a second tier so transfers can use different links.
ToyRun toy(std::vector<rank_program::Instruction> instructions, std::vector<int32_t> dependencies = {}) {
  ToyRun run;
  run.programs.streams = {"compute", "dp", "dp reduce", "host"};
  run.programs.message_slots = 2;
  rank_program::StageProgram program;
  program.instructions = std::move(instructions);
  program.dependencies = std::move(dependencies);
  program.labels = {"work"};
  for (rank_program::Instruction& instruction : program.instructions) instruction.label = 0;
  rank_program::index_streams(program, run.programs.streams.size());
  run.programs.stages.push_back(program);
  pp_mesh_axis axis{sizeof(pp_mesh_axis), "dp", "", "fsdp", 2, 1};
  run.axes.push_back(axis);
  run.profile.struct_size = sizeof(pp_hardware_profile);
  run.profile.tier_count = 2;
  return run;
}

rank_program::Instruction compute(double seconds) {
  rank_program::Instruction instruction;
  instruction.seconds = seconds;
  return instruction;
}

rank_program::Instruction collective(double seconds, int16_t stream, uint8_t tier) {
  rank_program::Instruction instruction;
  instruction.kind = rank_program::Work::kCollective;
  instruction.seconds = seconds;
  instruction.axis = 0;
  instruction.stream = stream;
  instruction.tier = tier;
  return instruction;
}

double run_toy(const ToyRun& run, simulate::EngineOptions options, bool every_rank = true) {
  rank_program::RankMesh mesh(run.axes, 2, 1, -1, every_rank);
  simulate::EventEngine engine(run.programs, mesh, run.profile, options);
  engine.run();
  return engine.step_s();
}

// Two 1 s transfers at once on one rank's port of one tier share it: both end at 2 s. On
// different tiers they do not meet: 1 s.
TEST(SimulateEngine, TransfersOnOneLinkShareItsBandwidth) {
  EXPECT_DOUBLE_EQ(run_toy(toy({collective(1.0, 1, 0), collective(1.0, 2, 0)}), {}), 2.0);
  EXPECT_DOUBLE_EQ(run_toy(toy({collective(1.0, 1, 0), collective(1.0, 2, 1)}), {}), 1.0);
  // A 1 s and a 3 s transfer: half rate while both run (2 s for the first), then full rate for
  // the rest of the second (3 - 1 = 2 s of work left): 4 s.
  EXPECT_DOUBLE_EQ(run_toy(toy({collective(1.0, 1, 0), collective(3.0, 2, 0)}), {}), 4.0);
}

// Each rank computes 1 s, then a 0.5 s collective; rank 1 computes 2 x slower: the collective
// starts when it arrives (2 s) and ends at 2.5 s for both. Rank 0 waited 1 s without working.
TEST(SimulateEngine, TheSlowestMemberGatesACollective) {
  ToyRun run = toy({compute(1.0), collective(0.5, 1, 0)}, {0});
  run.programs.stages[0].instructions[1].deps_begin = 0;
  run.programs.stages[0].instructions[1].deps_count = 1;
  simulate::EngineOptions options;
  options.straggler_rank = 1;
  options.straggler_slowdown = 2.0;
  options.record_timeline = true;  // keeps every finish time
  rank_program::RankMesh mesh(run.axes, 2, 1, -1, true);
  simulate::EventEngine engine(run.programs, mesh, run.profile, options);
  engine.run();
  EXPECT_DOUBLE_EQ(engine.step_s(), 2.5);
  EXPECT_DOUBLE_EQ(engine.record(0).busy_s[0], 1.0);
  EXPECT_DOUBLE_EQ(engine.record(1).busy_s[0], 2.0);
  EXPECT_DOUBLE_EQ(engine.record(0).finish[1], 2.5);
  EXPECT_DOUBLE_EQ(engine.record(0).busy_s[1], 0.5);
  // One rank standing for both: the group is itself, nothing to wait for but its own compute.
  EXPECT_DOUBLE_EQ(run_toy(run, {}, /*every_rank=*/false), 1.5);
}

// Overlapped communication slows the compute beside it (overlap_compute_slowdown s = 0.25: the
// compute runs at 1 / 1.25 while a transfer off the path runs). A 1 s compute beside a 0.5 s
// transfer does 0.5 / 1.25 = 0.4 s of its work meanwhile, the other 0.6 s alone: 1.1 s, the closed
// form's C + O s / (1 + s). Beside a 2 s transfer it runs slowed throughout, 1.25 s, and the
// transfer ends the step at 2 s. A transfer on the path (critical communication, here running
// beside the compute on a stream of its own) slows nothing: the compute ends at 1 s.
TEST(SimulateEngine, OverlappedTransfersSlowTheComputeBesideThem) {
  auto overlapped = [](double compute_s, double transfer_s, bool on_path) {
    rank_program::Instruction transfer = collective(transfer_s, 1, 0);
    transfer.on_path = on_path;
    ToyRun run = toy({compute(compute_s), transfer});
    run.profile.overlap_compute_slowdown = 0.25;
    rank_program::RankMesh mesh(run.axes, 2, 1, -1, true);
    simulate::EngineOptions options;
    options.record_timeline = true;  // keeps every finish time
    simulate::EventEngine engine(run.programs, mesh, run.profile, options);
    engine.run();
    return std::pair{engine.step_s(), engine.record(0).finish[0]};
  };
  EXPECT_DOUBLE_EQ(overlapped(1.0, 0.5, false).second, 1.1);
  EXPECT_DOUBLE_EQ(overlapped(1.0, 0.5, false).first, paraplan::cost::overlapped_elapsed_s(1.0, 0.5, 0.25));
  EXPECT_DOUBLE_EQ(overlapped(1.0, 2.0, false).second, 1.25);
  EXPECT_DOUBLE_EQ(overlapped(1.0, 2.0, false).first, 2.0);
  EXPECT_DOUBLE_EQ(overlapped(1.0, 0.5, true).second, 1.0);
}

// Finish-time windows (finish_windows.h), by hand. Compute stream: c0, c1 on the path; stream 1:
// x0 (waits for c0), x1, x2; c1 reads x0's finish time when it starts. Nothing on stream 1 waits
// for c1, so all three may have finished by then: x0 must survive two later finishes, a window of
// 3 (4, a power of two). When x2 waits for c1, only x0 and x1 can have finished: a window of 2.
// The compute stream reads only the instruction before the running one: 1.
TEST(FinishWindows, AStreamKeepsWhatCanFinishBeforeItsReaderStarts) {
  auto windows = [](bool x2_waits_for_c1) {
    rank_program::StageProgram program;
    rank_program::Instruction c0 = compute(1.0), c1 = compute(1.0);
    c0.on_path = c1.on_path = true;
    c1.path_previous = 0;
    rank_program::Instruction x0 = collective(1.0, 1, 0), x1 = collective(1.0, 1, 0), x2 = collective(1.0, 1, 0);
    x0.deps_begin = 0, x0.deps_count = 1;  // c0
    c1.deps_begin = 1, c1.deps_count = 1;  // x0
    program.dependencies = {0, 1};
    if (x2_waits_for_c1) {
      x2.deps_begin = 2, x2.deps_count = 1;
      program.dependencies.push_back(3);
    }
    program.instructions = {c0, x0, x1, c1, x2};
    rank_program::index_streams(program, 4);
    return simulate::finish_windows(program, 4);
  };
  const simulate::FinishWindows free = windows(false), held = windows(true);
  EXPECT_EQ(free.mask[0] + 1, 1u);
  EXPECT_EQ(free.mask[1] + 1, 4u);
  EXPECT_EQ(held.mask[1] + 1, 2u);
  EXPECT_EQ(held.block, 1u + 2u + 1u + 1u);  // streams 2 and 3 unused: one entry each
  EXPECT_EQ(held.position, (std::vector<int32_t>{0, 0, 1, 1, 2}));
}

// The engine reads finish times from the windows: c1 waits for x0 (done at 0.1 s, x1 after it at
// 0.2 s) and for y (stream 2, done at 2 s, owner 1), and starts at 2 s, after its path's c0 (1 s). It must
// still find x0's finish among stream 1's, not x1's, and charge the second it waited to y. With a
// timeline the engine checks every read against the full record (an undersized window throws).
TEST(FinishWindows, TheEngineReadsAnInputsFinishAfterItsStreamMovedOn) {
  rank_program::Instruction c0 = compute(1.0), c1 = compute(1.0);
  c0.on_path = c1.on_path = true;
  c1.path_previous = 0;
  rank_program::Instruction x0 = collective(0.1, 1, 0), x1 = collective(0.1, 1, 0), y = collective(2.0, 2, 1);
  x0.owner = 0;
  y.owner = 1;
  c1.deps_begin = 0, c1.deps_count = 2;
  ToyRun run = toy({c0, x0, x1, y, c1}, {1, 3});
  run.programs.owners = {"dp", "other"};
  simulate::EngineOptions options;
  options.record_timeline = true;
  rank_program::RankMesh mesh(run.axes, 2, 1, -1, true);
  simulate::EventEngine engine(run.programs, mesh, run.profile, options);
  ASSERT_NO_THROW(engine.run());
  EXPECT_DOUBLE_EQ(engine.step_s(), 3.0);
  EXPECT_DOUBLE_EQ(engine.record(0).exposed_comm_s[1], 1.0);
  EXPECT_DOUBLE_EQ(engine.record(0).exposed_comm_s[0], 0.0);
  EXPECT_EQ(engine.finish_times_per_rank(), 1u + 2u + 1u + 1u);
}

// A rank's finish times are bounded by its program's structure, not its length: four times the
// micro-batches, the same windows. The simulator keeps every finish time beside the windows when
// it records a timeline and checks each read against it: every shipped scenario runs so, with
// expert imbalance.
TEST(FinishWindows, DoNotGrowWithTheStepAndLoseNothingRead) {
  const std::string gpt3 = std::string(PARAPLAN_RECIPES_DIR) + "/simulate/gpt3-175b-512xa100.toml";
  auto largest_block = [&](int micro_batches) {
    const Evaluated run = test::evaluate_file(gpt3, "simulate", {"training.global_batch=" + std::to_string(8 * micro_batches)});
    EXPECT_EQ(run.number("pipeline.micro_batches"), micro_batches);
    return run.number("simulation.finish_times_per_rank");
  };
  const double block = largest_block(16);
  EXPECT_GT(block, 0);
  EXPECT_EQ(largest_block(64), block);
  const std::string trace = (std::filesystem::temp_directory_path() / "paraplan_finish_windows_trace.json").string();
  const std::string with_trace = "executor.simulate.trace=\"" + trace + "\"", imbalance = "executor.simulate.expert_imbalance=0.3";
  for (const auto& entry : std::filesystem::directory_iterator(std::string(PARAPLAN_RECIPES_DIR) + "/scenarios")) {
    SCOPED_TRACE(entry.path().filename().string());
    EXPECT_NO_THROW(test::evaluate_file(entry.path().string(), "simulate", {with_trace, imbalance}));
  }
  // Every rank where that takes under a second: MoE with rotating imbalance, a hybrid, a pipeline.
  for (const char* name : {"gpt-oss-120b-64xh100", "nemotron-3-nano-8xb300", "seed3-pp8-80-layers-32-micro-batches",
                           "seed6-mixtral-8x7b-ep8-8xh100", "seed7-deepseek-v3-256xb200"}) {
    SCOPED_TRACE(name);
    EXPECT_NO_THROW(test::evaluate_file(std::string(PARAPLAN_RECIPES_DIR) + "/scenarios/" + name + ".toml", "simulate",
                                        {with_trace, imbalance, "executor.simulate.ranks=all"}));
  }
  std::remove(trace.c_str());
}

TEST(SimulateEngine, AReceiveThatNeverArrivesIsReportedNotHung) {
  rank_program::Instruction waits = compute(1.0);
  waits.receive = 0;
  test::expect_error<paraplan::Error>([&] { run_toy(toy({waits}), {}); },
                                      {"cannot finish the step", "rank 0", "waits forever on stream 'compute'"});
}

// ---------------------------------------------------------------------------------------------
// The trace

TEST(Simulate, TraceIsChromeTraceEventJson) {
  const std::string trace = (std::filesystem::temp_directory_path() / "paraplan_simulate_test_trace.json").string();
  const std::string file = PARAPLAN_RECIPES_DIR "/simulate/llama2-7b-interleaved-fsdp3-32xh100.toml";
  const Evaluated run = test::evaluate_file(file, "simulate", {"executor.simulate.trace=\"" + trace + "\""});
  std::ifstream in(trace);
  const nlohmann::json document = nlohmann::json::parse(in);
  std::remove(trace.c_str());
  ASSERT_TRUE(document.contains("traceEvents"));
  EXPECT_EQ(document["otherData"]["trace_format"], 2);  // memory in args.GB
  EXPECT_EQ(document["otherData"]["generator"], "paraplan");
  const nlohmann::json& events = document["traceEvents"];
  EXPECT_EQ(static_cast<double>(events.size()), run.number("trace.events"));

  const int p = 4, m = 8, v = 2;
  std::set<std::pair<int, int>> named_threads, used_threads;
  std::set<int> named_processes;
  int steps = 0, gathers = 0, sends = 0;
  std::map<int, double> last_gather_us, first_backward_us;
  double peak_gb = 0;
  const std::regex step_name("(fwd|bwd) mb[0-9]+ chunk[0-9]+");
  for (const nlohmann::json& event : events) {
    ASSERT_TRUE(event.contains("name") && event["name"].is_string()) << event;
    ASSERT_TRUE(event.contains("ph") && event.contains("pid")) << event;
    const std::string ph = event["ph"], name = event["name"];
    const int pid = event["pid"];
    if (ph == "M") {
      ASSERT_TRUE(event.contains("args")) << event;
      if (name == "process_name") named_processes.insert(pid);
      if (name == "thread_name") named_threads.insert({pid, event["tid"].get<int>()});
    } else if (ph == "X") {
      ASSERT_TRUE(event.contains("tid") && event.contains("ts") && event.contains("dur")) << event;
      EXPECT_GE(event["ts"].get<double>(), 0.0);
      EXPECT_GE(event["dur"].get<double>(), 0.0);
      used_threads.insert({pid, event["tid"].get<int>()});
      if (event["cat"] == "step") {
        EXPECT_TRUE(std::regex_match(name, step_name)) << name;
        ++steps;
      }
      if (std::regex_match(name, std::regex("all-gather fsdp layer [0-9]+ \\(per step\\) \\(param_all_gather\\)"))) {
        ++gathers;
        last_gather_us[pid] = std::max(last_gather_us[pid], event["ts"].get<double>());
      }
      if (event["cat"] == "step" && name.starts_with("bwd"))
        first_backward_us[pid] = std::min(first_backward_us.count(pid) ? first_backward_us[pid] : 1e300,
                                          event["ts"].get<double>());
      if (name.starts_with("send_activations mb")) ++sends;
    } else if (ph == "C") {
      ASSERT_EQ(name, "memory");
      peak_gb = std::max(peak_gb, event["args"]["GB"].get<double>());
    } else {
      ADD_FAILURE() << "unexpected phase " << ph;
    }
  }
  EXPECT_EQ(named_processes, (std::set<int>{0, 8, 16, 24}));  // one rank per stage: pp is outermost, stride 8
  for (const auto& thread : used_threads) EXPECT_TRUE(named_threads.count(thread)) << thread.first << "/" << thread.second;
  EXPECT_EQ(steps, p * m * v * 2);
  // FSDP-3 under pipelining keeps the gathered weights through the step
  // (torch.distributed.pipelining turns off resharding and gradient sync until the last
  // backward): each of the 32 layers is gathered once, during its stage's first forward passes.
  EXPECT_EQ(gathers, 32);
  for (const auto& [pid, at] : last_gather_us) EXPECT_LT(at, first_backward_us[pid]) << "rank " << pid;
  // Every chunk pass but the last virtual stage's sends its activations on.
  EXPECT_EQ(sends, (p * v - 1) * m);
  EXPECT_NEAR(peak_gb * 1e9 / run.number("memory.per_gpu_bytes"), 1.0, 1e-4);
}

}  // namespace
}  // namespace paraplan
