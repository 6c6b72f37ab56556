// paraplan/host/search/candidate_map.h: what a search's HTML page draws of every plan it timed:
// the Pareto front of step time against memory per GPU (no other timed plan is both faster and
// smaller), and one plan for each cell of a log grid over the two (3 % of step time by 2 % of
// memory) with the number of plans in the cell, so a cloud of a million plans is drawn as a few
// thousand points, each standing for its neighbours.
//
// Ties go to the plan first in enumeration order, so the map does not depend on how the search's
// work was split over threads.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "host/search/search_engine.h"

namespace paraplan::host {

class CandidateMap {
 public:
  // Counts a timed plan; `make` builds its RankedPlan only when the front or its cell keeps it.
  template <typename MakePlan>
  void offer(const pp_plan_figures& figures, uint64_t index, MakePlan&& make) {
    MappedCell& cell = cells_[cell_of(figures)];
    ++cell.plans;
    const bool first_in_cell = cell.plans == 1 || index < cell.plan.index;
    const bool on_front = enters_front(figures, index);
    if (!first_in_cell && !on_front) return;
    RankedPlan plan = make();
    if (on_front) add_to_front(plan);
    if (first_in_cell) cell.plan = std::move(plan);
  }

  // Another worker's map, as if its plans had been offered here.
  void merge(const CandidateMap& other);

  // The front, least memory first (and so slowest first).
  const std::vector<RankedPlan>& front() const { return front_; }
  std::vector<MappedCell> cells() const;

 private:
  static uint64_t cell_of(const pp_plan_figures& figures);
  bool enters_front(const pp_plan_figures& figures, uint64_t index) const;
  void add_to_front(const RankedPlan& plan);

  std::map<uint64_t, MappedCell> cells_;
  std::vector<RankedPlan> front_;  // memory ascending, step time descending
};

}  // namespace paraplan::host
