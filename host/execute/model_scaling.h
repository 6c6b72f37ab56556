// paraplan/host/execute/model_scaling.h: `paraplan execute --scale F`: the recipe's model with
// its dimensions scaled, so a 70B plan runs on a laptop with the same structure.
//
// Every width and length is multiplied by F; the counts that give the plan its structure are
// kept: layers, attention heads and KV heads, experts and their top-k, the batch and the
// parallel degrees. Rounding keeps the shapes valid for the strategies:
//   head_dim   round(F·head_dim), at least 1; hidden = heads · head_dim when it was so before,
//              else round(F·hidden) to a multiple of heads
//   ffn_hidden, moe_ffn_hidden   round(F·x) to a multiple of 64 (at least 64)
//   vocab      round(F·vocab) to a multiple of 128 (at least 128)
//   seq_len    round(F·seq_len) to a multiple of 64 (at least 64)
// A layered model's kinds scale alike: MLA's ranks and head dims, Mamba's head dim and state,
// sliding windows (like seq_len), shared-expert widths.
// GEMM work then shrinks by about F³ (attention's s²·h too), every tensor and so every message
// by about F²: communication and compute shrink differently, as they would on a narrower
// model; the predictions beside the measurement are for the same scaled plan.
#pragma once

#include <string>

#include "host/recipe/recipe.h"
#include "paraplan/model.h"

namespace paraplan::host {

// Throws UsageError unless 0 < factor <= 1.
void scale_model(pp_model& model, double factor);
// The shape and its layer stack (the recipe's model).
void scale_model(ModelSpec& model, double factor);

// "hidden 128, heads 64 x 2, ffn 448, vocab 512, seq 64" for reports.
std::string describe_model_shape(const pp_model& model);

}  // namespace paraplan::host
