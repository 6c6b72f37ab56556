// schedule.h: pipeline schedules: their bubble, the activations they keep, the exact step order.
//
// Notation: p stages, m micro-batches per step, v model chunks per rank (interleaving only).
//
//   schedule           bubble fraction   in flight on stage 0 (whole-stage sets)   source
//   gpipe              (p-1)/m           m                                         Huang et al. 2019
//   1f1b               (p-1)/m           min(p, m)                                 Narayanan et al. 2021
//   interleaved-1f1b   (p-1)/(v·m)       min(p·v + p - 1, m·v) / v                 Narayanan et al. 2021;
//                                        = p·(1 + (p-1)/(p·v)) when m > p          Korthikanti et al. 2022
//   zero-bubble        (p-1)/(3m)        min(p, m)                                 Qi et al. 2023 (ZB-H1)
//   dualpipe-v         (p-1)/(3m)        min(2p + 1, 2m) / 2 (below)               DeepSeek-AI 2024 (sec. 3.2.1);
//                                                                                  deepseek-ai/DualPipe README
//
// The bubble fraction is idle time over ideal compute time. ZB-H1 splits each backward pass into
// B (input gradient) and W (weight gradient); its bubble is (p-1)(T_F + T_B - T_W) against
// 1F1B's (p-1)(T_F + T_B + T_W). We assume T_F = T_B = T_W (the paper's own assumption for its
// handcrafted schedules), which makes it a third of 1F1B's; the formula holds for m >= p.
//
// DualPipe-V (DualPipe "cut in half", Sea AI Lab 2025) runs 2p virtual stages on p ranks, chunk 0
// of rank s being virtual stage s and chunk 1 virtual stage 2p-1-s. The DualPipe README gives its
// bubble as (PP/2 - 1)(F&B + B - 3W) for PP = 2p chunk stages, F, B (full backward) and W the
// times of one chunk and F&B a forward and a backward run together. With a chunk half a rank's
// layers and F : B : W = 1 : 2 : 1 (F = 1, B = 2, W = 1 per chunk), F&B is F + B = 3 (the pair
// hides communication, not compute): (p - 1)(3 + 2 - 3) = 2(p - 1) chunk units against the rank's
// ideal m·2·3, (p-1)/(3m): ZB-H1's. What it buys over ZB-H1 is the F&B pairing, which hides one
// micro-batch's expert all-to-all behind the other's compute (priced by ep's `overlap`), at the
// cost of PP + 1 = 2p + 1 chunk activation sets on every rank (the README's table) instead of p.
//
// In flight: a stage keeps a micro-batch's activations from its forward to its backward. Stage 0
// waits longest, so it holds the most. Interleaved stage 0 runs w = 2(p-1) + (v-1)·p warm-up
// chunk forwards, then one more before its first backward: w + 1 = p·v + p - 1 chunk sets, each
// 1/v of the stage's layers (capped by the m·v chunk forwards there are). ZB-H1 defers W passes
// only on later stages, so stage 0 holds what 1F1B holds.
//
// Step order (every stage runs every (micro-batch, chunk) forward once, backward once and, for
// zero-bubble, W once, never a backward before its forward):
//   gpipe             all m forwards, then all m backwards, both in micro-batch order.
//   1f1b              warm-up min(p - s - 1, m) forwards on stage s, then pairs (forward, backward)
//                     while forwards remain, then the remaining backwards (Megatron-LM's
//                     forward_backward_pipelining_without_interleaving).
//   interleaved-1f1b  the same shape over m·v chunk passes with min(2(p-s-1) + (v-1)·p, m·v)
//                     warm-up forwards. Chunk pass k runs micro-batch (k div p·v)·p + k mod p
//                     on chunk (k mod p·v) div p, mirrored (v-1-chunk) for backwards: groups of p
//                     micro-batches per chunk (Megatron-LM's forward_backward_pipelining_with_
//                     interleaving, which needs m to be a multiple of p).
//   dualpipe-v        dualpipev.py's eight loops on rank s: 2(p-s-1) chunk-0 forwards; s+1 pairs
//                     F0 F1; p-s-1 of B1 W F1; m-2p+s+1 of F0 B1 F1 B0; p-s-1 of B1 F1 B0; s+1
//                     of B1 B0; p-s-1 of W B0; s+1 of W. Its zero-bubble backwards queue their W
//                     for a later W step (first in, first out), the others run W at once.
//   zero-bubble       1F1B's order with each backward split into B then W; stage s defers up to s
//                     W passes (the ones its p-1-s warm-up forwards leave room for, keeping
//                     p activation sets on every stage) and runs them after its last B, where
//                     1F1B would wait for the next stage's gradients (ZB-H1, Qi et al. 2023, Fig. 3).
#pragma once

#include <cstdint>
#include <vector>

#include "paraplan/plan.h"

namespace pp_strategy {

struct ScheduleShape {
  pp_schedule_kind kind = PP_SCHEDULE_1F1B;
  int64_t stages = 1;          // p
  int64_t micro_batches = 1;   // m
  int64_t virtual_stages = 1;  // v
};

double bubble_fraction(const ScheduleShape& shape);

// Activation sets of a whole stage held at peak on `stage` (fractional under interleaving);
// stage 0 holds the most.
double in_flight_micro_batches(const ScheduleShape& shape, int64_t stage = 0);

// DualPipe-V: the activation sets of chunk `chunk` alone that stage `stage` holds at its peak.
// dualpipev.py's rank s runs 2p - s - 1 chunk-0 forwards before its first chunk-0 backward and one
// more beside it, while its chunk 1 (virtual stage 2p - 1 - s, nearer the loss) holds s + 1: the
// 2p + 1 of the README's table, but most of them on the chunk far from the loss. Stage 0's chunk 1
// (the output head) holds one.
int64_t dualpipe_v_chunk_in_flight(const ScheduleShape& shape, int64_t stage, int64_t chunk);

// Forward passes (chunk passes under interleaving) stage `stage` runs before its first backward.
int64_t warmup_forwards(const ScheduleShape& shape, int64_t stage);

// Steps one stage runs: m·v forwards and as many backwards (and weight-gradient passes).
int64_t steps_per_stage(const ScheduleShape& shape);

// Every stage's steps, stage 0 first, each stage's in execution order.
std::vector<pp_schedule_step> schedule_steps(const ScheduleShape& shape);

}  // namespace pp_strategy
