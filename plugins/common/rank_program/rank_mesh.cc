#include "rank_mesh.h"

#include <algorithm>
#include <limits>
#include <string>

#include "paraplan/sdk.hpp"

namespace rank_program {

RankMesh::RankMesh(std::span<const pp_mesh_axis> axes, int64_t num_gpus, int64_t stages, int32_t pipeline_axis,
                   bool every_rank)
    : axes_(axes.begin(), axes.end()),
      num_gpus_(num_gpus),
      stages_(std::max<int64_t>(stages, 1)),
      pipeline_axis_(pipeline_axis),
      every_rank_(every_rank) {
  const int64_t count = every_rank ? num_gpus : stages_;
  if (count < 1 || count > std::numeric_limits<int32_t>::max())
    throw paraplan::Error(PP_ERROR_UNSUPPORTED, "cannot simulate " + std::to_string(count) + " ranks");
  for (const pp_mesh_axis& axis : axes_)
    if (axis.degree < 1 || axis.stride < 1)
      throw paraplan::Error(PP_ERROR_INVALID_ARGUMENT,
                            std::string("mesh axis '") + axis.name + "' has no layout (degree or stride below 1)");
  size_ = static_cast<int32_t>(count);
}

int64_t RankMesh::global_rank(int32_t rank) const {
  if (every_rank_) return rank;
  return pipeline_axis_ >= 0 ? rank * axes_[static_cast<size_t>(pipeline_axis_)].stride : rank;
}

int64_t RankMesh::coordinate(int32_t rank, int32_t axis) const {
  const pp_mesh_axis& mesh_axis = axes_[static_cast<size_t>(axis)];
  return (global_rank(rank) / mesh_axis.stride) % mesh_axis.degree;
}

int32_t RankMesh::stage(int32_t rank) const {
  if (!every_rank_) return rank;
  return pipeline_axis_ >= 0 ? static_cast<int32_t>(coordinate(rank, pipeline_axis_)) : 0;
}

int32_t RankMesh::groups(int32_t axis) const {
  if (every_rank_) return static_cast<int32_t>(num_gpus_ / degree(axis));
  return axis == pipeline_axis_ ? 1 : size_;
}

int32_t RankMesh::group(int32_t rank, int32_t axis) const {
  if (!every_rank_) return axis == pipeline_axis_ ? 0 : rank;
  const pp_mesh_axis& mesh_axis = axes_[static_cast<size_t>(axis)];
  const int64_t r = rank;
  return static_cast<int32_t>((r / (mesh_axis.stride * mesh_axis.degree)) * mesh_axis.stride + r % mesh_axis.stride);
}

void RankMesh::members(int32_t rank, int32_t axis, std::vector<int32_t>& out) const {
  out.clear();
  if (!every_rank_) {
    if (axis != pipeline_axis_) {
      out.push_back(rank);
      return;
    }
    for (int32_t stage = 0; stage < size_; ++stage) out.push_back(stage);
    return;
  }
  const pp_mesh_axis& mesh_axis = axes_[static_cast<size_t>(axis)];
  const int64_t base = rank - coordinate(rank, axis) * mesh_axis.stride;
  for (int64_t member = 0; member < mesh_axis.degree; ++member)
    out.push_back(static_cast<int32_t>(base + member * mesh_axis.stride));
}

int32_t RankMesh::at_stage(int32_t rank, int64_t stage) const {
  if (!every_rank_) return static_cast<int32_t>(stage);
  if (pipeline_axis_ < 0) return rank;
  const int64_t stride = axes_[static_cast<size_t>(pipeline_axis_)].stride;
  return static_cast<int32_t>(rank + (stage - coordinate(rank, pipeline_axis_)) * stride);
}

}  // namespace rank_program
