// stage_layout.h: which transformer layers each pipeline stage holds.
//
// By default the L layers split evenly over the p stages (L/p each; p must divide L). The first
// and the last stage also run the embedding and the output head, so a user may give them fewer
// layers (Megatron-LM's --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers):
// the stages in between then split what is left evenly. With interleaving (v model chunks per
// rank) every stage's layers must also divide into v equal chunks.
//
//   StageLayoutRequest request{.layers = 80, .stages = 8, .first_stage_layers = 4, .last_stage_layers = 4};
//   split_layers(request)  ->  {4, 12, 12, 12, 12, 12, 12, 4}
//
// trim_ends asks for the Llama 3 layout when p does not divide L (see the field).
// Every impossible request throws paraplan::ConstraintError with one sentence naming the numbers.
#pragma once

#include <cstdint>
#include <vector>

namespace pp_strategy {

struct StageLayoutRequest {
  int64_t layers = 0;              // transformer layers of the model
  int64_t stages = 1;              // pipeline degree p
  int64_t first_stage_layers = 0;  // 0: no request, the stage takes its even share
  int64_t last_stage_layers = 0;   // 0: no request
  int64_t virtual_stages = 1;      // model chunks per rank; each stage's layers must divide by it
  // When p does not divide L and no end stage is requested: the middle stages take ceil(L/p)
  // layers and the first and last split the rest (Llama 3 405B: 126 layers on 16 stages are
  // 7, 8 x 14, 7: "one layer fewer on the first and the last stage", Llama Team 2024, sec. 3.3.2).
  bool trim_ends = false;
};

// The layers of each stage, first to last; they add up to request.layers.
std::vector<int64_t> split_layers(const StageLayoutRequest& request);

}  // namespace pp_strategy
