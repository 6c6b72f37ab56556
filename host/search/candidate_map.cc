#include "host/search/candidate_map.h"

#include <algorithm>
#include <cmath>

namespace paraplan::host {
namespace {

// Whether `a` is at least as good as `b` on both figures and better on one, or ties and came first.
bool dominates(const pp_plan_figures& a, uint64_t a_index, const pp_plan_figures& b, uint64_t b_index) {
  if (a.memory_per_gpu_bytes > b.memory_per_gpu_bytes || a.step_s > b.step_s) return false;
  return a.memory_per_gpu_bytes < b.memory_per_gpu_bytes || a.step_s < b.step_s || a_index < b_index;
}

// The front's first plan with at least `memory` bytes.
std::vector<RankedPlan>::const_iterator first_with_memory(const std::vector<RankedPlan>& front, double memory) {
  return std::lower_bound(front.begin(), front.end(), memory,
                          [](const RankedPlan& plan, double value) { return plan.figures.memory_per_gpu_bytes < value; });
}

}  // namespace

uint64_t CandidateMap::cell_of(const pp_plan_figures& figures) {
  // Offsets keep both rows positive for any step from a nanosecond and any memory from a byte.
  const auto row = [](double value, double ratio) {
    return static_cast<uint64_t>(std::max(0.0, std::floor(std::log(std::max(value, 1e-9)) / std::log(ratio)) + 2000.0));
  };
  return (row(figures.step_s, 1.03) << 32) | row(figures.memory_per_gpu_bytes, 1.02);
}

bool CandidateMap::enters_front(const pp_plan_figures& figures, uint64_t index) const {
  auto at = first_with_memory(front_, figures.memory_per_gpu_bytes);
  // The plan just below in memory is the fastest of all that use less; those of equal memory follow.
  if (at != front_.begin() && dominates(std::prev(at)->figures, std::prev(at)->index, figures, index)) return false;
  for (; at != front_.end() && at->figures.memory_per_gpu_bytes == figures.memory_per_gpu_bytes; ++at)
    if (dominates(at->figures, at->index, figures, index)) return false;
  return true;
}

void CandidateMap::add_to_front(const RankedPlan& plan) {
  auto at = first_with_memory(front_, plan.figures.memory_per_gpu_bytes);
  // What the new plan dominates starts here: more memory and, the front being sorted, a step
  // time that falls as memory grows, so they form one run.
  auto end = at;
  while (end != front_.end() && dominates(plan.figures, plan.index, end->figures, end->index)) ++end;
  at = front_.erase(at, end);
  front_.insert(at, plan);
}

void CandidateMap::merge(const CandidateMap& other) {
  for (const RankedPlan& plan : other.front_)
    if (enters_front(plan.figures, plan.index)) add_to_front(plan);
  for (const auto& [key, cell] : other.cells_) {
    MappedCell& mine = cells_[key];
    if (mine.plans == 0 || cell.plan.index < mine.plan.index) mine.plan = cell.plan;
    mine.plans += cell.plans;
  }
}

std::vector<MappedCell> CandidateMap::cells() const {
  std::vector<MappedCell> cells;
  cells.reserve(cells_.size());
  for (const auto& [key, cell] : cells_) cells.push_back(cell);
  return cells;
}

}  // namespace paraplan::host
