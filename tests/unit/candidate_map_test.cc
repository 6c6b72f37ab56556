// The search page's map of timed plans (host/search/candidate_map.h) against a brute-force Pareto
// front and plain counting, on random figures with ties; and split over two maps (two search
// threads) then merged, the same map.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <utility>

#include "host/search/candidate_map.h"

namespace paraplan::host {
namespace {

struct Point {
  double memory, step;
  uint64_t index;
};

std::vector<Point> random_points(size_t count, unsigned seed) {
  std::mt19937 random(seed);
  // Few distinct values, so equal memory, equal step and equal both all occur.
  std::uniform_int_distribution<int> memory(1, 40), step(1, 40);
  std::vector<Point> points;
  for (size_t i = 0; i < count; ++i) points.push_back({memory(random) * 1e9, step(random) * 0.5, i});
  return points;
}

void offer(CandidateMap& map, const Point& point) {
  pp_plan_figures figures{};
  figures.memory_per_gpu_bytes = point.memory;
  figures.step_s = point.step;
  map.offer(figures, point.index, [&] {
    RankedPlan plan;
    plan.figures = figures;
    plan.index = point.index;
    return plan;
  });
}

// The front by definition: no other point at most as large on both and smaller on one; of equal
// points, the first.
std::set<uint64_t> brute_force_front(const std::vector<Point>& points) {
  std::set<uint64_t> front;
  for (const Point& p : points) {
    bool beaten = false;
    for (const Point& q : points)
      if (q.memory <= p.memory && q.step <= p.step && (q.memory < p.memory || q.step < p.step || q.index < p.index))
        beaten = true;
    if (!beaten) front.insert(p.index);
  }
  return front;
}

std::set<uint64_t> indices(const std::vector<RankedPlan>& plans) {
  std::set<uint64_t> out;
  for (const RankedPlan& plan : plans) out.insert(plan.index);
  return out;
}

TEST(CandidateMap, TheFrontIsEveryPlanNoOtherBeats) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::vector<Point> points = random_points(300, seed);
    std::shuffle(points.begin(), points.end(), std::mt19937(seed + 100));  // offered out of index order
    CandidateMap map;
    for (const Point& point : points) offer(map, point);
    EXPECT_EQ(indices(map.front()), brute_force_front(points)) << "seed " << seed;
    // Least memory first, and so slowest first.
    for (size_t i = 1; i < map.front().size(); ++i) {
      EXPECT_LT(map.front()[i - 1].figures.memory_per_gpu_bytes, map.front()[i].figures.memory_per_gpu_bytes);
      EXPECT_GT(map.front()[i - 1].figures.step_s, map.front()[i].figures.step_s);
    }
    uint64_t counted = 0;
    for (const MappedCell& cell : map.cells()) counted += cell.plans;
    EXPECT_EQ(counted, points.size());
  }
}

TEST(CandidateMap, CellsGroupPlansWithinThreeAndTwoPercent) {
  CandidateMap map;
  // Cells start at powers of 1.03 (seconds) and 1.02 (bytes): 1.00 s and 1.01 s both lie in
  // [1.03^0, 1.03^1), 10.00 GB and 9.99 GB in [1.02^1162, 1.02^1163) (ln 1e10 / ln 1.02 = 1162.77,
  // ln 9.99e9 / ln 1.02 = 1162.72); 1.10 s is in the fourth row (ln 1.1 / ln 1.03 = 3.22).
  offer(map, {10.0e9, 1.00, 7});
  offer(map, {9.99e9, 1.01, 3});
  offer(map, {10.0e9, 1.10, 5});
  const std::vector<MappedCell> cells = map.cells();
  ASSERT_EQ(cells.size(), 2u);
  std::vector<std::pair<uint64_t, uint64_t>> seen;  // (plans, first index)
  for (const MappedCell& cell : cells) seen.push_back({cell.plans, cell.plan.index});
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::pair<uint64_t, uint64_t>>{{1, 5}, {2, 3}}));  // the cell's first plan stands for it
}

TEST(CandidateMap, SplitOverThreadsThenMergedIsTheSameMap) {
  const std::vector<Point> points = random_points(500, 7);
  CandidateMap whole, first, second;
  for (const Point& point : points) {
    offer(whole, point);
    offer(point.index % 3 == 0 ? first : second, point);
  }
  first.merge(second);
  EXPECT_EQ(indices(first.front()), indices(whole.front()));
  ASSERT_EQ(first.cells().size(), whole.cells().size());
  for (size_t i = 0; i < whole.cells().size(); ++i) {
    EXPECT_EQ(first.cells()[i].plans, whole.cells()[i].plans);
    EXPECT_EQ(first.cells()[i].plan.index, whole.cells()[i].plan.index);
  }
}

}  // namespace
}  // namespace paraplan::host
