// stage_layout.cc: the even split, the uneven first/last split and their checks (stage_layout.h).
#include "stage_layout.h"

#include <algorithm>
#include <string>

#include "paraplan/sdk.hpp"

namespace pp_strategy {
namespace {

using paraplan::ConstraintError;

std::string text(int64_t value) { return std::to_string(value); }

// "first_stage_layers = 8 and last_stage_layers = 8", naming only the keys the recipe set.
std::string requested(const StageLayoutRequest& request) {
  std::string first = "first_stage_layers = " + text(request.first_stage_layers);
  std::string last = "last_stage_layers = " + text(request.last_stage_layers);
  if (request.first_stage_layers > 0 && request.last_stage_layers > 0) return first + " and " + last;
  return request.first_stage_layers > 0 ? first : last;
}

std::vector<int64_t> even_split(const StageLayoutRequest& request) {
  if (request.layers % request.stages != 0)
    throw ConstraintError("pp = " + text(request.stages) + " does not divide the model's " + text(request.layers) +
                          " layers evenly; set first_stage_layers and/or last_stage_layers to split them unevenly");
  return std::vector<int64_t>(static_cast<size_t>(request.stages), request.layers / request.stages);
}

std::vector<int64_t> uneven_split(const StageLayoutRequest& request) {
  const int64_t p = request.stages, first = request.first_stage_layers, last = request.last_stage_layers;
  if (p == 1)
    throw ConstraintError("with pp = 1 the single stage holds all " + text(request.layers) + " layers, so " +
                          requested(request) + " cannot apply");
  // The stages whose size was not requested share the rest evenly.
  const int64_t fixed_layers = first + last;
  const int64_t free_stages = p - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  const int64_t free_layers = request.layers - fixed_layers;
  if (free_stages == 0) {
    if (free_layers != 0)
      throw ConstraintError("with pp = 2, " + requested(request) + " must add up to the model's " +
                            text(request.layers) + " layers");
  } else if (free_layers < free_stages) {
    throw ConstraintError("after " + requested(request) + " only " + text(free_layers < 0 ? 0 : free_layers) +
                          " of the model's " + text(request.layers) + " layers are left for the other " +
                          text(free_stages) + " stages, and every stage needs at least one layer");
  } else if (free_layers % free_stages != 0) {
    throw ConstraintError("after " + requested(request) + " the remaining " + text(free_layers) + " of the model's " +
                          text(request.layers) + " layers do not split evenly over the other " + text(free_stages) +
                          " stages");
  }
  const int64_t share = free_stages > 0 ? free_layers / free_stages : 0;
  std::vector<int64_t> layers(static_cast<size_t>(p), share);
  if (first > 0) layers.front() = first;
  if (last > 0) layers.back() = last;
  return layers;
}

// The middle stages full, the ends sharing what is left: (L - (p-2)·ceil(L/p)) / 2 each.
std::vector<int64_t> trimmed_ends_split(const StageLayoutRequest& request) {
  const int64_t p = request.stages, middle = (request.layers + p - 1) / p;
  const int64_t ends = request.layers - (p - 2) * middle;
  if (p < 3 || ends < 2)
    throw ConstraintError("pp = " + text(p) + " does not divide the model's " + text(request.layers) +
                          " layers, and trimming the end stages leaves them " + text(ends < 0 ? 0 : ends) +
                          " layers to share");
  std::vector<int64_t> layers(static_cast<size_t>(p), middle);
  layers.front() = ends / 2;
  layers.back() = ends - ends / 2;
  return layers;
}

}  // namespace

std::vector<int64_t> split_layers(const StageLayoutRequest& request) {
  if (request.stages > request.layers)
    throw ConstraintError("pp = " + text(request.stages) + " is more than the model's " + text(request.layers) +
                          " layers; every pipeline stage needs at least one layer");
  const bool uneven = request.first_stage_layers > 0 || request.last_stage_layers > 0;
  const bool trimmed = !uneven && request.trim_ends && request.layers % request.stages != 0;
  std::vector<int64_t> layers = uneven ? uneven_split(request) : trimmed ? trimmed_ends_split(request) : even_split(request);
  if (request.virtual_stages > 1) {
    // A lightened end stage (fewer layers than the largest) may hold chunks one layer apart, as
    // Llama 3 405B interleaves 7, 8 x 14, 7 layers. Trimmed ends may keep one chunk with none:
    // Megatron-LM's account_for_embedding/loss_in_pipeline_split counts the embedding and the
    // loss as a layer each, so 126 layers on 16 x 8 virtual stages hold one layer each, but the
    // embedding's and the loss's. Every other stage's chunks are equal.
    const int64_t largest = *std::max_element(layers.begin(), layers.end());
    for (size_t stage = 0; stage < layers.size(); ++stage) {
      const bool lightened_end = (stage == 0 || stage + 1 == layers.size()) && layers[stage] < largest;
      const int64_t fewest = request.trim_ends ? request.virtual_stages - 1 : request.virtual_stages;
      if (lightened_end && layers[stage] >= fewest) continue;
      if (layers[stage] % request.virtual_stages != 0)
        throw ConstraintError("virtual_stages = " + text(request.virtual_stages) +
                              " must divide the layers of every stage (a lightened end stage needs at least one layer "
                              "per chunk, or per chunk but one with trim_ends), but stage " + text(static_cast<int64_t>(stage)) + " has " +
                              text(layers[stage]));
    }
  }
  return layers;
}

}  // namespace pp_strategy
