// Pipeline parallelism through the whole pipeline (recipe -> pp plugin -> analytic executor),
// against hand derivations: the bubble fractions of Narayanan et al. 2021 and Qi et al. 2023
// (ZB-H1), activation memory in flight (Korthikanti et al. 2022), the stage layouts, the exact
// step order of every schedule (replayed here under the pipeline's data dependencies) and the
// point-to-point volume.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "paraplan/sdk.hpp"
#include "test_support.h"

namespace paraplan::host {
namespace {

using test::expect_error;

// A small GPT: 32 layers of width 1024, a 4h GELU MLP, 1024-token sequences.
std::string small_recipe(int gpus, int global_batch, const std::string& pp_keys, int layers = 32) {
  return "[model]\nlayers = " + std::to_string(layers) +
         "\nhidden = 1024\nheads = 16\nvocab = 8192\nseq_len = 1024\n"
         "[training]\nglobal_batch = " +
         std::to_string(global_batch) +
         "\nmicro_batch = 1\n"
         "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = " +
         std::to_string(gpus) + "\n[[strategy]]\nname = \"pp\"\n" + pp_keys;
}

// pp = p on p GPUs: data-parallel size 1, so the micro-batches per step are global_batch.
std::string pipeline(int p, int micro_batches, const std::string& schedule, int virtual_stages = 1, int layers = 32) {
  return small_recipe(p, micro_batches,
                      "degree = " + std::to_string(p) + "\nschedule = \"" + schedule +
                          "\"\nvirtual_stages = " + std::to_string(virtual_stages) + "\n",
                      layers);
}

std::vector<int64_t> stage_layers(const test::Evaluated& evaluated) {
  std::vector<int64_t> layers;
  for (const pp_stage& stage : evaluated.composed.plan->stages()) layers.push_back(stage.layers);
  return layers;
}

std::vector<pp_schedule_step> steps_of(const test::Evaluated& evaluated, int stage) {
  pp_plan_view_v1 view = evaluated.composed.plan->view();
  std::vector<pp_schedule_step> steps;
  for (uint64_t i = 0; i < view.step_count; ++i)
    if (view.steps[i].stage == stage) steps.push_back(view.steps[i]);
  return steps;
}

// ---------------------------------------------------------------------------------------------
// Bubble fractions

TEST(PipelineParallel, BubbleFractionsFollowNarayanan) {
  // p = 8, m = 32: GPipe and 1F1B idle (p-1)/m = 7/32; interleaving with v = 2 halves it.
  EXPECT_DOUBLE_EQ(test::evaluate_recipe(pipeline(8, 32, "1f1b")).number("pipeline.bubble_fraction"), 7.0 / 32);
  EXPECT_DOUBLE_EQ(test::evaluate_recipe(pipeline(8, 32, "gpipe")).number("pipeline.bubble_fraction"), 7.0 / 32);
  test::Evaluated interleaved = test::evaluate_recipe(pipeline(8, 32, "interleaved-1f1b", 2));
  EXPECT_DOUBLE_EQ(interleaved.number("pipeline.bubble_fraction"), 7.0 / 64);
  EXPECT_EQ(interleaved.number("pipeline.virtual_stages"), 2);
  // ZB-H1: (p-1)(T_F + T_B - T_W) against 1F1B's (p-1)(T_F + T_B + T_W): a third with equal times.
  double zero_bubble = test::evaluate_recipe(pipeline(8, 32, "zero-bubble")).number("pipeline.bubble_fraction");
  EXPECT_LT(zero_bubble, 7.0 / 32);
  EXPECT_DOUBLE_EQ(zero_bubble, 7.0 / 96);
}

TEST(PipelineParallel, BubbleTimeIsTheFractionOfTheSteadyState) {
  test::Evaluated evaluated = test::evaluate_recipe(pipeline(8, 32, "1f1b"));
  EXPECT_EQ(evaluated.number("plan.mesh.pp"), 8);
  EXPECT_EQ(evaluated.number("pipeline.stages"), 8);
  // No data parallelism (dp = 1), so the slowest stage's micro-batch takes its compute plus its
  // point-to-point sends, both on the critical path, and the GPU's wait for the host issuing its
  // ops (host_issue.hpp): bubble = (p-1)/m x m x that time.
  const double compute = evaluated.number("time.compute_s"), sends = evaluated.number("time.exposed_comm_s.pp");
  const double host_wait = evaluated.number("time.host_wait_s");
  EXPECT_GT(sends, 0.0);
  EXPECT_NEAR(evaluated.number("time.bubble_s"), 7.0 / 32 * (compute + host_wait + sends), 1e-12);
  EXPECT_NEAR(evaluated.number("time.step_s"),
              compute + host_wait + sends + evaluated.number("time.bubble_s") + evaluated.number("time.optimizer_s"),
              1e-12);
}

// ---------------------------------------------------------------------------------------------
// Stage layouts

TEST(PipelineParallel, EvenLayoutGivesEveryStageItsShare) {
  test::Evaluated evaluated = test::evaluate_recipe(pipeline(8, 8, "1f1b", 1, 80));
  EXPECT_EQ(stage_layers(evaluated), std::vector<int64_t>(8, 10));
  const std::vector<pp_stage>& stages = evaluated.composed.plan->stages();
  for (size_t i = 0; i < stages.size(); ++i) {
    EXPECT_EQ(stages[i].has_embedding, i == 0) << "stage " << i;
    EXPECT_EQ(stages[i].has_head, i == 7) << "stage " << i;
  }
}

TEST(PipelineParallel, UnevenLayoutLightensTheEndStages) {
  // 80 layers, first and last stage 4 each: 72 left for 6 stages, 12 each.
  test::Evaluated both =
      test::evaluate_recipe(small_recipe(8, 8, "degree = 8\nfirst_stage_layers = 4\nlast_stage_layers = 4\n", 80));
  EXPECT_EQ(stage_layers(both), (std::vector<int64_t>{4, 12, 12, 12, 12, 12, 12, 4}));
  // Only the first stage set: 77 left for the 7 others, 11 each.
  test::Evaluated first = test::evaluate_recipe(small_recipe(8, 8, "degree = 8\nfirst_stage_layers = 3\n", 80));
  EXPECT_EQ(stage_layers(first), (std::vector<int64_t>{3, 11, 11, 11, 11, 11, 11, 11}));
  // Two stages: the requests must cover the model.
  test::Evaluated two =
      test::evaluate_recipe(small_recipe(2, 2, "degree = 2\nfirst_stage_layers = 30\nlast_stage_layers = 50\n", 80));
  EXPECT_EQ(stage_layers(two), (std::vector<int64_t>{30, 50}));
}

TEST(PipelineParallel, InterleavingLetsALightenedEndStageHoldUnequalChunks) {
  // Llama 3 405B's layout: 126 layers on 16 stages, the ends trimmed to 7, the middle 8. With two
  // chunks per rank the middle stages hold 4 + 4 and the ends 4 + 3, as Llama 3 interleaves.
  test::Evaluated llama3 = test::evaluate_recipe(small_recipe(
      16, 16, "degree = 16\nschedule = \"interleaved-1f1b\"\nvirtual_stages = 2\ntrim_ends = true\n", 126));
  std::vector<int64_t> expected(16, 8);
  expected.front() = expected.back() = 7;
  EXPECT_EQ(stage_layers(llama3), expected);
  EXPECT_DOUBLE_EQ(llama3.number("pipeline.bubble_fraction"), 15.0 / (2 * 16));
  // The full stages still need equal chunks: 3 do not divide 8.
  expect_error<PlanError>(
      [] {
        test::evaluate_recipe(small_recipe(
            16, 16, "degree = 16\nschedule = \"interleaved-1f1b\"\nvirtual_stages = 3\ntrim_ends = true\n", 126));
      },
      {"virtual_stages = 3 must divide the layers of every stage", "stage 1 has 8"});
  // Megatron-Bridge's Llama 3.1 405B on 16 x 8 virtual stages: (126 + 2) / 128 = 1 slot each, the
  // embedding and the loss taking one on the first and the last (7 layers over 8 chunks).
  test::Evaluated bridge = test::evaluate_recipe(small_recipe(
      16, 16, "degree = 16\nschedule = \"interleaved-1f1b\"\nvirtual_stages = 8\ntrim_ends = true\n", 126));
  EXPECT_EQ(stage_layers(bridge), expected);
  EXPECT_DOUBLE_EQ(bridge.number("pipeline.bubble_fraction"), 15.0 / (8 * 16));
  // And otherwise a lightened end stage at least one layer per chunk: 1 layer cannot make 2 chunks.
  expect_error<PlanError>(
      [] {
        test::evaluate_recipe(small_recipe(
            4, 8, "degree = 4\nschedule = \"interleaved-1f1b\"\nvirtual_stages = 2\nfirst_stage_layers = 1\n", 31));
      },
      {"a lightened end stage needs at least one layer per chunk", "stage 0 has 1"});
}

// ---------------------------------------------------------------------------------------------
// Activation memory in flight

TEST(PipelineParallel, OneForwardOneBackwardKeepsPMicroBatchesOnTheFirstStage) {
  // 18 layers on p = 4 with last_stage_layers = 3: 15 left for 3 stages, so stage 0 holds 5
  // layers and the embedding (the fullest stage). m = 16 > p, so 1F1B keeps p = 4 in flight.
  test::Evaluated evaluated = test::evaluate_recipe(small_recipe(4, 16, "degree = 4\nlast_stage_layers = 3\n", 18));
  EXPECT_EQ(stage_layers(evaluated), (std::vector<int64_t>{5, 5, 5, 3}));
  EXPECT_EQ(evaluated.number("memory.micro_batches_in_flight"), 4);
  // Korthikanti et al. 2022 with flash attention and a 4h GELU MLP: 34·s·b·h bytes per layer
  // (2-byte layer input, QKV input, Q, K, V, attention-output input, norm and MLP inputs = 8·2,
  // GELU input and output 2·(4h)·2 = 16, two 1-byte dropout masks = 2). The first stage also
  // keeps the embedding's 1-byte dropout mask.
  const double sbh = 1024.0 * 1 * 1024;
  const double per_layer = 34 * sbh, embedding_mask = sbh;
  EXPECT_NEAR(evaluated.number("memory.activations_bytes"), 4 * (5 * per_layer + embedding_mask), 1.0);
}

TEST(PipelineParallel, GPipeKeepsEveryMicroBatchInFlight) {
  test::Evaluated evaluated = test::evaluate_recipe(pipeline(4, 16, "gpipe"));
  EXPECT_EQ(evaluated.number("memory.micro_batches_in_flight"), 16);
  test::Evaluated few = test::evaluate_recipe(pipeline(4, 2, "1f1b"));  // m < p: all of them
  EXPECT_EQ(few.number("memory.micro_batches_in_flight"), 2);
}

TEST(PipelineParallel, InterleavingKeepsMoreInFlight) {
  // Korthikanti et al. 2022: the first stage keeps p·(1 + (p-1)/(p·v)) = 4·(1 + 3/8) = 5.5
  // stage-sets of activations (11 chunk sets of half a stage).
  test::Evaluated evaluated = test::evaluate_recipe(pipeline(4, 16, "interleaved-1f1b", 2));
  EXPECT_DOUBLE_EQ(evaluated.number("memory.micro_batches_in_flight"), 5.5);
  // With m = p = 4 there are only m·v = 8 chunk forwards, all of them warm-up: 8 halves = 4.
  test::Evaluated few = test::evaluate_recipe(pipeline(4, 4, "interleaved-1f1b", 2));
  EXPECT_DOUBLE_EQ(few.number("memory.micro_batches_in_flight"), 4.0);
  // Zero-bubble (ZB-H1) keeps what 1F1B keeps.
  EXPECT_EQ(test::evaluate_recipe(pipeline(4, 16, "zero-bubble")).number("memory.micro_batches_in_flight"), 4);
}

// ---------------------------------------------------------------------------------------------
// Schedule steps

using StepKey = std::tuple<int, int, int, int>;  // stage, micro-batch, chunk, phase

// Replays every stage's steps in order under the pipeline's data dependencies, one step at a
// time per stage, with unit-free durations, and returns the time the last stage finishes.
// Model chunk c of stage s is the virtual stage paraplan::virtual_stage_of names (c·p + s, or a
// V under DualPipe-V); a forward needs the previous virtual
// stage's forward, a backward needs its own forward and the next virtual stage's backward,
// a weight-gradient pass needs its own backward. Fails the test on a deadlock or a repeat.
double replay(const pp_plan_view_v1& view, double forward_s, double backward_s, double weight_gradient_s) {
  const int p = static_cast<int>(view.pipeline->stages), v = static_cast<int>(view.pipeline->virtual_stages);
  const pp_pipeline& pipeline = *view.pipeline;
  auto key = [&](int virtual_stage, int mb, pp_phase phase) {
    const paraplan::StageChunk runs = paraplan::stage_chunk_of(pipeline, virtual_stage);
    return StepKey{static_cast<int>(runs.stage), mb, static_cast<int>(runs.chunk), phase};
  };
  std::vector<std::vector<pp_schedule_step>> orders(static_cast<size_t>(p));
  for (uint64_t i = 0; i < view.step_count; ++i)
    orders[static_cast<size_t>(view.steps[i].stage)].push_back(view.steps[i]);
  std::map<StepKey, double> finished;
  std::vector<size_t> next(static_cast<size_t>(p), 0);
  std::vector<double> clock(static_cast<size_t>(p), 0.0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < p; ++s) {
      for (size_t& index = next[static_cast<size_t>(s)]; index < orders[static_cast<size_t>(s)].size(); ++index) {
        const pp_schedule_step& step = orders[static_cast<size_t>(s)][index];
        const int mb = step.micro_batch, c = step.chunk;
        const int virtual_stage = static_cast<int>(paraplan::virtual_stage_of(pipeline, s, c));
        std::vector<StepKey> needs;
        if (step.phase == PP_PHASE_FORWARD && virtual_stage > 0) {
          needs.push_back(key(virtual_stage - 1, mb, PP_PHASE_FORWARD));
        } else if (step.phase == PP_PHASE_BACKWARD) {
          needs.emplace_back(s, mb, c, PP_PHASE_FORWARD);
          if (virtual_stage + 1 < p * v) needs.push_back(key(virtual_stage + 1, mb, PP_PHASE_BACKWARD));
        } else if (step.phase == PP_PHASE_WEIGHT_GRADIENT) {
          needs.emplace_back(s, mb, c, PP_PHASE_BACKWARD);
        }
        double start = clock[static_cast<size_t>(s)];
        bool ready = true;
        for (const StepKey& need : needs) {
          auto done = finished.find(need);
          if (done == finished.end()) {
            ready = false;
            break;
          }
          start = std::max(start, done->second);
        }
        if (!ready) break;
        const double duration = step.phase == PP_PHASE_FORWARD    ? forward_s
                                : step.phase == PP_PHASE_BACKWARD ? backward_s
                                                                  : weight_gradient_s;
        clock[static_cast<size_t>(s)] = start + duration;
        bool fresh = finished.emplace(StepKey{s, mb, c, step.phase}, start + duration).second;
        EXPECT_TRUE(fresh) << "stage " << s << " repeats micro-batch " << mb << " chunk " << c << " phase "
                           << step.phase;
        progress = true;
      }
    }
  }
  for (int s = 0; s < p; ++s)
    EXPECT_EQ(next[static_cast<size_t>(s)], orders[static_cast<size_t>(s)].size()) << "stage " << s << " deadlocks";
  return *std::max_element(clock.begin(), clock.end());
}

// Every (micro-batch, chunk) runs each phase exactly once on every stage, a backward never
// precedes its forward, and a weight-gradient pass never precedes its backward.
void expect_complete(const test::Evaluated& evaluated, bool weight_gradients) {
  const pp_pipeline& pipeline = evaluated.composed.plan->pipeline();
  for (int s = 0; s < pipeline.stages; ++s) {
    SCOPED_TRACE("stage " + std::to_string(s));
    std::set<StepKey> seen;
    for (const pp_schedule_step& step : steps_of(evaluated, s)) {
      StepKey key{s, step.micro_batch, step.chunk, step.phase};
      EXPECT_TRUE(seen.insert(key).second);
      if (step.phase == PP_PHASE_BACKWARD) {
        EXPECT_TRUE(seen.count({s, step.micro_batch, step.chunk, PP_PHASE_FORWARD}));
      }
      if (step.phase == PP_PHASE_WEIGHT_GRADIENT) {
        EXPECT_TRUE(seen.count({s, step.micro_batch, step.chunk, PP_PHASE_BACKWARD}));
      }
    }
    const size_t passes = static_cast<size_t>(pipeline.micro_batches * pipeline.virtual_stages);
    EXPECT_EQ(seen.size(), passes * (weight_gradients ? 3 : 2));
    for (const StepKey& key : seen) {
      EXPECT_LT(std::get<1>(key), pipeline.micro_batches);
      EXPECT_LT(std::get<2>(key), pipeline.virtual_stages);
    }
  }
}

// Forwards a stage runs before its first backward.
int forwards_before_first_backward(const std::vector<pp_schedule_step>& steps) {
  int forwards = 0;
  for (const pp_schedule_step& step : steps) {
    if (step.phase != PP_PHASE_FORWARD) break;
    ++forwards;
  }
  return forwards;
}

// Megatron-LM's warm-up count: the steady state opens with one more forward before its first
// backward, so the warm-up is one less than the forwards before the first backward.
int warmup(const std::vector<pp_schedule_step>& steps) { return forwards_before_first_backward(steps) - 1; }

std::string spell(const std::vector<pp_schedule_step>& steps) {
  std::string text;
  for (const pp_schedule_step& step : steps) {
    const char* phase = step.phase == PP_PHASE_FORWARD ? "F" : step.phase == PP_PHASE_BACKWARD ? "B" : "W";
    text += (text.empty() ? "" : " ") + std::string(phase) + std::to_string(step.micro_batch) +
            (step.chunk > 0 ? "." + std::to_string(step.chunk) : "");
  }
  return text;
}

TEST(PipelineSchedule, OneForwardOneBackwardWarmsUpThenAlternates) {
  test::Evaluated evaluated = test::evaluate_recipe(pipeline(4, 8, "1f1b"), "analytic", /*list_steps=*/true);
  expect_complete(evaluated, false);
  for (int s = 0; s < 4; ++s) EXPECT_EQ(warmup(steps_of(evaluated, s)), 3 - s) << "stage " << s;
  // The last stage alternates from the start; stage 0 after p - 1 = 3 warm-up forwards.
  EXPECT_EQ(spell(steps_of(evaluated, 3)), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
  EXPECT_EQ(spell(steps_of(evaluated, 0)), "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  // Replayed with T_F = 1, T_B = 2: m·3 of work plus (p-1)·3 of bubble: (p-1)/m of 24.
  EXPECT_DOUBLE_EQ(replay(evaluated.composed.plan->view(), 1, 2, 0), 8 * 3 + 3 * 3);
}

TEST(PipelineSchedule, GPipeRunsAllForwardsFirst) {
  test::Evaluated evaluated = test::evaluate_recipe(pipeline(4, 8, "gpipe"), "analytic", /*list_steps=*/true);
  expect_complete(evaluated, false);
  for (int s = 0; s < 4; ++s) EXPECT_EQ(forwards_before_first_backward(steps_of(evaluated, s)), 8);
  EXPECT_EQ(spell(steps_of(evaluated, 2)), "F0 F1 F2 F3 F4 F5 F6 F7 B0 B1 B2 B3 B4 B5 B6 B7");
  EXPECT_DOUBLE_EQ(replay(evaluated.composed.plan->view(), 1, 2, 0), 8 * 3 + 3 * 3);
}

TEST(PipelineSchedule, InterleavedFollowsMegatronsOrder) {
  // p = 4, m = 8, v = 2: 16 chunk passes per stage; warm-up 2(p-s-1) + (v-1)p = 10, 8, 6, 4.
  test::Evaluated evaluated = test::evaluate_recipe(pipeline(4, 8, "interleaved-1f1b", 2), "analytic",
                                                    /*list_steps=*/true);
  expect_complete(evaluated, false);
  for (int s = 0; s < 4; ++s) EXPECT_EQ(warmup(steps_of(evaluated, s)), 10 - 2 * s) << "stage " << s;
  // Groups of p micro-batches per chunk: forwards 0-3 on chunk 0, 0-3 on chunk 1, 4-7 on chunk 0...;
  // backwards start from the last chunk.
  EXPECT_EQ(spell(steps_of(evaluated, 3)),
            "F0 F1 F2 F3 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 F4 B0 F5 B1 F6 B2 F7 B3 "
            "F4.1 B4.1 F5.1 B5.1 F6.1 B6.1 F7.1 B7.1 B4 B5 B6 B7");
  // Chunks take 1/v of a stage's time: bubble (p-1)/(v·m) of m·3, i.e. (p-1)·3/v.
  EXPECT_DOUBLE_EQ(replay(evaluated.composed.plan->view(), 0.5, 1.0, 0), 8 * 3 + 3 * 3 / 2.0);

  // The smallest case by hand, p = 2, m = 2, v = 2: stage 0 warms up with all 4 chunk forwards.
  test::Evaluated tiny = test::evaluate_recipe(pipeline(2, 2, "interleaved-1f1b", 2, 4), "analytic",
                                               /*list_steps=*/true);
  EXPECT_EQ(spell(steps_of(tiny, 0)), "F0 F1 F0.1 F1.1 B0.1 B1.1 B0 B1");
  EXPECT_EQ(spell(steps_of(tiny, 1)), "F0 F1 F0.1 B0.1 F1.1 B1.1 B0 B1");
}

TEST(PipelineSchedule, ZeroBubbleDefersWeightGradients) {
  test::Evaluated evaluated = test::evaluate_recipe(pipeline(4, 8, "zero-bubble"), "analytic", /*list_steps=*/true);
  expect_complete(evaluated, true);
  for (int s = 0; s < 4; ++s) EXPECT_EQ(warmup(steps_of(evaluated, s)), 3 - s) << "stage " << s;
  // ZB-H1: stage s keeps p-s-1 warm-up forwards and owes up to s weight gradients, so every
  // stage holds p micro-batches' worth; the deferred W passes run last.
  EXPECT_EQ(spell(steps_of(evaluated, 0)), "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7");
  EXPECT_EQ(spell(steps_of(evaluated, 3)), "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7");
  // With T_F = T_B = T_W = 1 the bubble is (p-1)(T_F + T_B - T_W) = 3 against 1F1B's 9.
  EXPECT_DOUBLE_EQ(replay(evaluated.composed.plan->view(), 1, 1, 1), 8 * 3 + 3);
}

TEST(PipelineSchedule, DualPipeVRunsDualPipesEightLoops) {
  // dualpipev.py by hand on p = 2, m = 4 (chunk 1 written .1). Rank 0: 2 F0, 1 x F0 F1, 1 x
  // B1 W F1 (its W queued, then run), 1 x F0 B1 F1 B0 (paired, full backwards), 1 x B1 F1 B0,
  // 1 x B1 B0 (the B0 with zero bubble), 1 x W B0, 1 x W.
  test::Evaluated evaluated = test::evaluate_recipe(small_recipe(2, 4, "degree = 2\nschedule = \"dualpipe-v\"\n", 8),
                                                    "analytic", /*list_steps=*/true);
  expect_complete(evaluated, true);
  EXPECT_EQ(spell(steps_of(evaluated, 0)),
            "F0 F1 F2 F0.1 B0.1 W0.1 F1.1 F3 B1.1 W1.1 F2.1 B0 W0 B2.1 W2.1 F3.1 B1 W1 B3.1 W3.1 B2 W2 B3 W3");
  // Rank 1 (the V's turn, virtual stages 1 and 2): 2 x F0 F1, 2 x F0 B1 F1 B0, 2 x B1 B0 (the
  // second pair with zero bubble), 2 x W.
  EXPECT_EQ(spell(steps_of(evaluated, 1)),
            "F0 F0.1 F1 F1.1 F2 B0.1 W0.1 F2.1 B0 W0 F3 B1.1 W1.1 F3.1 B1 W1 B2.1 W2.1 B2 W2 B3.1 B3 W3.1 W3");
  // Replayed under the V's dependencies with a chunk's F = B = W = 1, the order idles p - 1 = 1
  // chunk unit beyond the m x 2 chunks x 3 = 24 of work: half the README's (PP/2 - 1)(F&B + B -
  // 3W) = 2 for PP = 4 chunk stages (F&B = 3, a full B = 2), which the analytic bubble charges
  // (docs/cost-model.md). The same holds for p = 4: 3 against 6.
  EXPECT_DOUBLE_EQ(replay(evaluated.composed.plan->view(), 1, 1, 1), 24 + 1);
  test::Evaluated four = test::evaluate_recipe(small_recipe(4, 16, "degree = 4\nschedule = \"dualpipe-v\"\n", 32),
                                               "analytic", /*list_steps=*/true);
  expect_complete(four, true);
  EXPECT_DOUBLE_EQ(replay(four.composed.plan->view(), 1, 1, 1), 16 * 2 * 3 + 3);
}

// ---------------------------------------------------------------------------------------------
// Point-to-point volume

std::string llama70b(const std::string& pp_keys, const std::string& strategies = "", int gpus = 8) {
  return "[model]\npreset = \"llama2-70b\"\n[training]\nglobal_batch = 32\nmicro_batch = 1\n"
         "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = " +
         std::to_string(gpus) + "\n[[strategy]]\nname = \"pp\"\ndegree = 8\n" + pp_keys + strategies;
}

TEST(PipelineParallel, PointToPointVolumeOfLlama2_70B) {
  // PP = 8 on Llama 2 70B (80 layers, h = 8192, s = 4096), micro-batch 1, 32 micro-batches: a
  // middle stage receives and sends one s·b·h bf16 tensor each way per micro-batch:
  // 2 directions x 32 x 4096·8192·2 bytes = 4.295 GB (4 GiB).
  const double tensor = 4096.0 * 1 * 8192 * 2;
  test::Evaluated evaluated = test::evaluate_recipe(llama70b(""));
  EXPECT_EQ(evaluated.number("plan.num_micro_batches"), 32);
  EXPECT_DOUBLE_EQ(evaluated.number("comm.pp.bytes_per_gpu_per_step"), 2 * 32 * tensor);
  EXPECT_NEAR(evaluated.number("comm.pp.bytes_per_gpu_per_step") / 1e9, 4.295, 0.001);
  // Interleaving sends at every chunk boundary: v times the volume (Narayanan et al. 2021).
  test::Evaluated interleaved =
      test::evaluate_recipe(llama70b("schedule = \"interleaved-1f1b\"\nvirtual_stages = 2\n"));
  EXPECT_DOUBLE_EQ(interleaved.number("comm.pp.bytes_per_gpu_per_step"), 2 * 2 * 32 * tensor);
  // Full recompute keeps only the layer input, the same tensor.
  test::Evaluated recomputed = test::evaluate_recipe(
      "[model]\npreset = \"llama2-70b\"\n[training]\nglobal_batch = 32\nmicro_batch = 1\nrecompute = \"full\"\n"
      "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 8\n[[strategy]]\nname = \"pp\"\ndegree = 8\n");
  EXPECT_DOUBLE_EQ(recomputed.number("comm.pp.bytes_per_gpu_per_step"), 2 * 32 * tensor);
  // Sequence parallelism shards the tensor over the tp ranks before it crosses the boundary.
  test::Evaluated sharded = test::evaluate_recipe(
      llama70b("", "[[strategy]]\nname = \"tp\"\ndegree = 8\n[[strategy]]\nname = \"sp\"\nmode = \"megatron\"\n", 64));
  EXPECT_DOUBLE_EQ(sharded.number("comm.pp.bytes_per_gpu_per_step"), 2 * 32 * tensor / 8);
}

TEST(PipelineParallel, TensorParallelRanksScatterTheBoundaryAndGatherIt) {
  // tp = 8 without SP: every tp rank holds the whole tensor, so Megatron-LM's scatter-gather
  // sends 1/8 of it from each rank and the receivers all-gather it over the tp axis: per micro-
  // batch and direction tensor/8 on the pipeline link plus an all-gather moving 7/8 of the tensor.
  const double tensor = 4096.0 * 1 * 8192 * 2;
  test::Evaluated evaluated =
      test::evaluate_recipe(llama70b("", "[[strategy]]\nname = \"tp\"\ndegree = 8\n", 64));
  EXPECT_DOUBLE_EQ(evaluated.number("comm.pp.bytes_per_gpu_per_step"), 2 * 32 * (tensor / 8 + 7.0 / 8 * tensor));
  int sends = 0, gathers = 0;
  for (const pp_op& op : evaluated.composed.plan->op_list()) {
    const std::string_view name = op.name;
    if (name == "send_activations" || name == "send_gradients") {
      ++sends;
      EXPECT_DOUBLE_EQ(op.bytes, tensor / 8);
    }
    if (name == "pp_gather_received") {
      ++gathers;
      EXPECT_EQ(op.collective, PP_COLLECTIVE_ALL_GATHER);
      EXPECT_EQ(evaluated.composed.plan->axes()[static_cast<size_t>(op.axis)].name, std::string("tp"));
      EXPECT_DOUBLE_EQ(op.bytes, tensor);
    }
  }
  EXPECT_EQ(sends, 2);
  EXPECT_EQ(gathers, 2);
}

TEST(PipelineParallel, NoPointToPointWithOneStage) {
  test::Evaluated evaluated = test::evaluate_recipe(pipeline(1, 4, "1f1b", 1, 4));
  EXPECT_EQ(evaluated.number("pipeline.bubble_fraction"), 0);
  EXPECT_EQ(evaluated.number("comm.pp.bytes_per_gpu_per_step"), 0);  // the key is there, nothing is sent
}

// ---------------------------------------------------------------------------------------------
// DualPipe-V

TEST(PipelineParallel, DualPipeVHasZeroBubblesBubble) {
  // The DualPipe README's (PP/2 - 1)(F&B + B - 3W) for PP = 2p = 8 chunk
  // stages, a chunk's F = 1, full backward B = 2, W = 1 and F&B = F + B = 3: 3
  // x 2 = 6 chunk units, against the ideal m x 2 chunks x (F + B) = 16 x 2 x 3
  // = 96 of a rank: 1/16, ZB-H1's (p-1)/(3m).
  test::Evaluated evaluated = test::evaluate_recipe(pipeline(4, 16, "dualpipe-v"));
  EXPECT_DOUBLE_EQ(evaluated.number("pipeline.bubble_fraction"), 6.0 / 96);
  EXPECT_DOUBLE_EQ(evaluated.number("pipeline.bubble_fraction"),
                   test::evaluate_recipe(pipeline(4, 16, "zero-bubble")).number("pipeline.bubble_fraction"));
  EXPECT_EQ(evaluated.number("pipeline.virtual_stages"), 2);
}

TEST(PipelineParallel, DualPipeVFoldsTheStagesIntoAV) {
  // 32 layers over 2p = 8 virtual stages of 4; rank s runs virtual stages s and
  // 7 - s, so rank 0 holds the first 4 layers with the embedding and the last 4
  // with the head.
  test::Evaluated evaluated = test::evaluate_recipe(pipeline(4, 16, "dualpipe-v"));
  EXPECT_EQ(stage_layers(evaluated), std::vector<int64_t>(4, 8));
  const paraplan::PlanView view(evaluated.composed.plan->view());
  for (size_t stage = 0; stage < 4; ++stage) {
    EXPECT_EQ(view.stages()[stage].has_embedding, stage == 0) << stage;
    EXPECT_EQ(view.stages()[stage].has_head, stage == 0) << stage;
    EXPECT_EQ(view.layers_on_chunk(stage, 0, PP_EVERY_LAYER_KIND), 4);
    EXPECT_EQ(view.layers_on_chunk(stage, 1, PP_EVERY_LAYER_KIND), 4);
    EXPECT_EQ(paraplan::virtual_stage_of(view.pipeline(), static_cast<int64_t>(stage), 1),
              7 - static_cast<int64_t>(stage));
  }
  // 30 layers with trim_ends: the embedding and the loss weigh a layer each, 32
  // over 8 = 4, both ends on rank 0 lose theirs: 3 + 3 there.
  test::Evaluated trimmed =
      test::evaluate_recipe(small_recipe(4, 16, "degree = 4\nschedule = \"dualpipe-v\"\ntrim_ends = true\n", 30));
  EXPECT_EQ(stage_layers(trimmed), (std::vector<int64_t>{6, 8, 8, 8}));
}

// DualPipe-V's ranks, not its chunks, are balanced: rank s holds chunks s and 2p - 1 - s, rank 0
// the output head. The small GPT's layer is 24h^2 + 4sh = 28 x 1024^2 FLOPs per token; with a
// vocabulary of 56 x 1024 the head's 2hV is 4 layers, 8 under FP8 (the head stays bf16 where the
// layers run at twice the rate). p = 4, bf16: 32 + 4 = 36 units, 9 a rank; rank 0 takes 5 layers
// beside the head (4 + 1, the most even pair), ranks 1 and 2 take 9 (4 + 5), the middle rank
// the 9 left (5 + 4). FP8: 40 units, 10 a rank; rank 0 takes 2 layers (1 + 1), the rest 10 each.
TEST(PipelineParallel, DualPipeVBalancesTheRanksPairs) {
  auto recipe = [](const std::string& precision) {
    return "[model]\nlayers = 32\nhidden = 1024\nheads = 16\nvocab = 57344\nseq_len = 1024\n"
           "[training]\nglobal_batch = 16\nmicro_batch = 1\nprecision = \"" + precision + "\"\n"
           "[cluster]\nhardware = \"h100-sxm\"\nnum_gpus = 4\n"
           "[[strategy]]\nname = \"pp\"\ndegree = 4\nschedule = \"dualpipe-v\"\n";
  };
  const test::Evaluated bf16 = test::evaluate_recipe(recipe("bf16"));
  EXPECT_EQ(stage_layers(bf16), (std::vector<int64_t>{5, 9, 9, 9}));
  const paraplan::PlanView view(bf16.composed.plan->view());
  const std::vector<std::pair<int64_t, int64_t>> chunks{{4, 1}, {4, 5}, {4, 5}, {5, 4}};
  for (size_t stage = 0; stage < 4; ++stage) {
    EXPECT_EQ(view.layers_on_chunk(stage, 0, PP_EVERY_LAYER_KIND), chunks[stage].first) << stage;
    EXPECT_EQ(view.layers_on_chunk(stage, 1, PP_EVERY_LAYER_KIND), chunks[stage].second) << stage;
  }
  EXPECT_EQ(stage_layers(test::evaluate_recipe(recipe("fp8"))), (std::vector<int64_t>{2, 10, 10, 10}));
}

TEST(PipelineParallel, DualPipeVKeepsMostSetsOnTheChunkFarFromTheLoss) {
  // dualpipev.py on p = 4: rank s holds 2p - s = 8 - s sets of chunk 0 and s +
  // 1 of chunk 1. Rank 1's chunks are 4 layers each: (7 + 2) / 2 = 4.5
  // whole-stage sets.
  test::Evaluated evaluated = test::evaluate_recipe(pipeline(4, 16, "dualpipe-v"));
  EXPECT_DOUBLE_EQ(evaluated.composed.plan->stages()[1].in_flight_micro_batches, 4.5);
  // Rank 0: chunk 0 is 4 layers of 34·sbh and the embedding's 1-byte mask sbh,
  // 8 sets; chunk 1 is 4 layers and the fp32 logits 4·s·b·vocab = 32·sbh, 1 set
  // (Korthikanti et al. 2022 as above).
  const double sbh = 1024.0 * 1 * 1024;
  const double chunk0 = 4 * 34 * sbh + sbh, chunk1 = 4 * 34 * sbh + 32 * sbh;
  EXPECT_NEAR(evaluated.number("memory.activations_bytes"), 8 * chunk0 + 1 * chunk1, 1.0);
  EXPECT_NEAR(evaluated.number("memory.micro_batches_in_flight"), (8 * chunk0 + chunk1) / (chunk0 + chunk1), 1e-9);
}

TEST(PipelineParallel, DualPipeVRefusesWhatItCannotRun) {
  // dualpipev.py asserts at least 2 x pp micro-batches.
  expect_error<PlanError>([] { test::evaluate_recipe(pipeline(4, 6, "dualpipe-v")); },
                          {"\"dualpipe-v\" needs at least 2 x pp = 8 micro-batches", "= 6"});
  expect_error<PlanError>(
      [] {
        test::evaluate_recipe(small_recipe(4, 16, "degree = 4\nschedule = \"dualpipe-v\"\nfirst_stage_layers = 4\n"));
      },
      {"places its two chunks per rank itself"});
  expect_error<PlanError>([] { test::evaluate_recipe(pipeline(4, 16, "dualpipe-v", 3)); },
                          {"runs 2 model chunks per rank, but virtual_stages = 3"});
}

// The simulator walks the V's steps: the activation sets it counts at each stage's peak are
// the per-chunk figures pp charges (2p - s and s + 1, weighed by bytes), and its compute is
// the analytic executor's.
TEST(PipelineParallel, DualPipeVSimulatesTheSetsItCharges) {
  const std::string recipe = pipeline(4, 16, "dualpipe-v");
  test::Evaluated analytic = test::evaluate_recipe(recipe);
  test::Evaluated simulated = test::evaluate_recipe(recipe, "simulate");
  for (int stage = 0; stage < 4; ++stage)
    EXPECT_NEAR(simulated.number("memory.in_flight_micro_batches.stage_" + std::to_string(stage)),
                analytic.composed.plan->stages()[static_cast<size_t>(stage)].in_flight_micro_batches, 1e-9)
        << "stage " << stage;
  EXPECT_NEAR(simulated.number("memory.per_gpu_bytes") / analytic.number("memory.per_gpu_bytes"), 1.0, 1e-9);
  EXPECT_NEAR(simulated.number("time.compute_s") / analytic.number("time.compute_s"), 1.0, 1e-9);
}

// ---------------------------------------------------------------------------------------------
// Constraints

TEST(PipelineParallel, ImpossiblePlansAreConstraintErrors) {
  expect_error<PlanError>([] { test::evaluate_recipe(pipeline(8, 8, "1f1b", 1, 4)); },
                          {"strategy[0] 'pp'", "pp = 8 is more than the model's 4 layers"});
  expect_error<PlanError>([] { test::evaluate_recipe(pipeline(3, 3, "1f1b", 1, 32)); },
                          {"pp = 3 does not divide the model's 32 layers evenly"});
  expect_error<PlanError>([] { test::evaluate_recipe(pipeline(4, 8, "interleaved-1f1b", 1)); },
                          {"needs virtual_stages >= 2", "virtual_stages = 1"});
  expect_error<PlanError>([] { test::evaluate_recipe(pipeline(4, 8, "1f1b", 2)); },
                          {"virtual_stages = 2 needs schedule \"interleaved-1f1b\"", "schedule = \"1f1b\""});
  // 32 layers on 4 stages is 8 each: 3 chunks do not divide them.
  expect_error<PlanError>([] { test::evaluate_recipe(pipeline(4, 8, "interleaved-1f1b", 3)); },
                          {"virtual_stages = 3 must divide the layers of every stage", "stage 0 has 8"});
  // Megatron-LM's interleaved schedule needs m to be a multiple of p: 6 micro-batches, p = 4.
  expect_error<PlanError>([] { test::evaluate_recipe(pipeline(4, 6, "interleaved-1f1b", 2)); },
                          {"multiple of pp = 4", "= 6"});
  // 80 layers, 8 + 8 on the end stages: 64 do not split over 6.
  expect_error<PlanError>(
      [] {
        test::evaluate_recipe(small_recipe(8, 8, "degree = 8\nfirst_stage_layers = 8\nlast_stage_layers = 8\n", 80));
      },
      {"first_stage_layers = 8 and last_stage_layers = 8", "remaining 64", "other 6 stages"});
  expect_error<PlanError>(
      [] { test::evaluate_recipe(small_recipe(8, 8, "degree = 8\nfirst_stage_layers = 76\n", 80)); },
      {"only 4 of the model's 80 layers are left for the other 7 stages"});
  expect_error<PlanError>(
      [] {
        test::evaluate_recipe(small_recipe(2, 2, "degree = 2\nfirst_stage_layers = 30\nlast_stage_layers = 30\n", 80));
      },
      {"must add up to the model's 80 layers"});
}

}  // namespace
}  // namespace paraplan::host
