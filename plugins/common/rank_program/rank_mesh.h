// rank_mesh.h: which ranks a program runs on, and who they meet in each collective (the
// simulator's ranks, the mpi executor's communicators, the chakra exporter's groups).
//
// Every rank: rank r has coordinate (r / stride) mod degree on each mesh axis (the host's
// strides; child axes such as expert parallelism inside data parallelism carry absolute strides
// too), and its group on an axis is the ranks that differ from it only there.
// One rank per stage (the default): rank s stands for every rank of stage s. Its groups on other
// axes hold only itself, priced as the whole group: the group's members run the same program, so
// they would all arrive together. On the pipeline axis its group is every stage's representative.
//
//   RankMesh mesh(plan.axes(), plan.cluster().num_gpus, pipeline_axis, /*every_rank=*/true);
//   for (int32_t member : mesh.members(rank, tp_axis)) ...
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "paraplan/plan.h"

namespace rank_program {

class RankMesh {
 public:
  RankMesh(std::span<const pp_mesh_axis> axes, int64_t num_gpus, int64_t stages, int32_t pipeline_axis,
           bool every_rank);

  bool every_rank() const { return every_rank_; }
  int32_t size() const { return size_; }  // simulated ranks
  int64_t global_rank(int32_t rank) const;
  int32_t stage(int32_t rank) const;
  int64_t coordinate(int32_t rank, int32_t axis) const;
  int64_t degree(int32_t axis) const { return axes_[static_cast<size_t>(axis)].degree; }
  size_t axis_count() const { return axes_.size(); }

  // Groups on `axis` are numbered 0 .. groups(axis) - 1.
  int32_t groups(int32_t axis) const;
  int32_t group(int32_t rank, int32_t axis) const;
  // The simulated members of `rank`'s group on `axis` (itself included), written to `out`.
  void members(int32_t rank, int32_t axis, std::vector<int32_t>& out) const;
  // The simulated rank at pipeline stage `stage` with `rank`'s other coordinates.
  int32_t at_stage(int32_t rank, int64_t stage) const;

 private:
  std::vector<pp_mesh_axis> axes_;
  int64_t num_gpus_;
  int64_t stages_;
  int32_t pipeline_axis_;
  bool every_rank_;
  int32_t size_;
};

}  // namespace rank_program
