// layer_placement.h: which layers of a stack of several kinds each virtual pipeline stage holds.
//
// Two ways, both pure functions of the model's layer sequence:
//   * Megatron-LM's --pipeline-model-parallel-layout string (megatron/core/transformer/
//     pipeline_parallel_layer_layout.py): 'E' the embedding, 't' a decoder layer, 'm' an MTP
//     module, 'L' the loss, '|' between virtual stages (empty ones allowed), ',' ignored;
//     "(...)*N" repeats a group (no nesting), then "x*N" a letter. Entry i is chunk i / p of
//     stage i % p; 'E' must open the first entry and 'L' close the last, every decoder layer and
//     MTP module appear once, in order, the MTP modules together in one entry after the last
//     decoder layer. DeepSeek-V3 on PP16 x VPP2: "Et*3|(tt|)*29,m|L".
//   * By cost: consecutive layers split so the busiest virtual stage's cost is as small as it can
//     be (the linear partition problem, solved exactly by bisection on the bound), for a stack
//     whose kinds cost different amounts per layer (DeepSeek-V3's dense layers, a hybrid's Mamba
//     and MoE layers), where an even count would leave one stage the slowest.
//
//   LayerPlacement placed = parse_megatron_layout("Et*3|(tt|)*29,m|L", 16, 61, 1);
//   placed.virtual_stages == 2, placed.layers[0] == 3, placed.layers[31] == 0
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pp_strategy {

struct LayerPlacement {
  int64_t virtual_stages = 1;
  // Layers (decoder layers and MTP modules, in the model's order) of virtual stage i = chunk·p + stage
  // (Megatron-LM's layout string places looped chunks only).
  std::vector<int64_t> layers;
};

// Throws paraplan::ConstraintError naming the layout's problem.
LayerPlacement parse_megatron_layout(const std::string& layout, int64_t stages, int64_t decoder_layers,
                                     int64_t mtp_layers);

// `costs` per layer in the model's order over `parts` consecutive virtual stages, each at least
// one layer, minimising the largest sum (ties: the earliest stages take more).
std::vector<int64_t> balance_by_cost(const std::vector<double>& costs, int64_t parts);

// DualPipe-V's V: `costs` per layer over 2p consecutive chunks, each at least one layer, where
// stage s holds chunk s and chunk 2p - 1 - s. Each stage from 0 inward peels the front and back
// pieces whose sum is nearest the mean of what is left per stage (of those, the most even pair of
// chunks, as DualPipe's bubble assumes); the middle stage takes the rest, split by cost. What
// DeepSeek-V3 balances: the ranks, not the chunks, since stage 0 pairs the first layers with the
// last and the output head, and a stage that cannot come down to the mean (stage 0 with a heavy
// head) leaves the others to share the rest evenly.
//   balance_pairs_by_cost({1, 1, 1, 1, 1, 3}, 2) == {1, 2, 2, 1}: each stage's pair costs 4
std::vector<int64_t> balance_pairs_by_cost(const std::vector<double>& costs, int64_t stages);

}  // namespace pp_strategy
