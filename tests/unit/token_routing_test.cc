// Where a routed token's experts lie (paraplan/token_routing.hpp), against hand counts and an
// exhaustive enumeration of Megatron-Core's group-limited rule: every choice of the kept groups,
// and in each kept group every choice of its top_k / g experts, weighed alike.
#include "paraplan/token_routing.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <set>
#include <vector>

namespace paraplan::routing {
namespace {

// Every k-subset of [first, first + n), passed to `visit`.
void subsets(int64_t first, int64_t n, int64_t k, std::vector<int64_t>& chosen,
             const std::function<void(const std::vector<int64_t>&)>& visit, int64_t from = 0) {
  if (static_cast<int64_t>(chosen.size()) == k) return visit(chosen);
  for (int64_t i = from; i < n; ++i) {
    chosen.push_back(first + i);
    subsets(first, n, k, chosen, visit, i + 1);
    chosen.pop_back();
  }
}

// The mean number of distinct holders (E/holders experts each) over every outcome of the rule.
double enumerated(const Routing& routing, int64_t holders) {
  const int64_t per_holder = routing.experts / holders;
  double total = 0, outcomes = 0;
  auto count = [&](const std::vector<int64_t>& experts) {
    std::set<int64_t> hit;
    for (int64_t expert : experts) hit.insert(expert / per_holder);
    total += static_cast<double>(hit.size());
    outcomes += 1;
  };
  if (routing.groups <= 1) {
    std::vector<int64_t> chosen;
    subsets(0, routing.experts, routing.top_k, chosen, count);
    return total / outcomes;
  }
  const int64_t size = routing.experts / routing.groups, each = routing.top_k / routing.group_topk;
  std::vector<int64_t> groups;
  subsets(0, routing.groups, routing.group_topk, groups, [&](const std::vector<int64_t>& kept) {
    // The product of each kept group's choices, built group by group.
    std::function<void(size_t, std::vector<int64_t>&)> pick = [&](size_t at, std::vector<int64_t>& experts) {
      if (at == kept.size()) return count(experts);
      std::vector<int64_t> inside;
      subsets(kept[at] * size, size, each, inside, [&](const std::vector<int64_t>& some) {
        std::vector<int64_t> more = experts;
        more.insert(more.end(), some.begin(), some.end());
        pick(at + 1, more);
      });
    };
    std::vector<int64_t> none;
    pick(0, none);
  });
  return total / outcomes;
}

TEST(TokenRouting, WithoutGroupsItIsTheChanceOfMissingEachHolder) {
  // Mixtral on 4 ranks: top-2 of 8, 2 experts a rank; a rank is missed with C(6,2)/C(8,2) = 15/28.
  const Routing mixtral{8, 2, 0, 0};
  EXPECT_NEAR(expected_holders(mixtral, 4), 4 * 13.0 / 28, 1e-12);
  EXPECT_NEAR(expected_holders(mixtral, 8), 2.0, 1e-12);  // one expert a rank: both copies travel
  EXPECT_NEAR(expected_holders(mixtral, 1), 1.0, 1e-12);
  for (int64_t holders : {1, 2, 4, 8, 16}) EXPECT_NEAR(expected_holders({16, 3, 0, 0}, holders), enumerated({16, 3, 0, 0}, holders), 1e-12);
}

TEST(TokenRouting, DeepSeekV3NodeLimitedRoutingByHand) {
  // 256 experts in 8 groups, a token's 8 from 4 of them (2 each). On 8 nodes a node is a group:
  // exactly 4 nodes. On 4 nodes (2 groups each) a node is missed when neither of its groups is
  // kept, C(6,4)/C(8,4) = 15/70: 4 x 55/70 = 22/7. On 8 ranks of one node: 4 ranks, one a group.
  const Routing deepseek{256, 8, 8, 4};
  EXPECT_NEAR(expected_holders(deepseek, 8), 4.0, 1e-12);
  EXPECT_NEAR(expected_holders(deepseek, 4), 22.0 / 7.0, 1e-12);
  EXPECT_NEAR(expected_holders(deepseek, 2), 2 * (1 - 1.0 / 70), 1e-12);  // none of its 4 groups kept: C(4,4)/C(8,4)
  // 32 ranks of 8 experts, 4 in each group: hit when its group is kept (1/2) and the group's 2
  // picks do not both miss its 8, C(24,2)/C(32,2).
  EXPECT_NEAR(expected_holders(deepseek, 32), 32 * 0.5 * (1 - 276.0 / 496), 1e-12);
  // Without the limit, 8 of 256 uniformly: more nodes.
  EXPECT_GT(expected_holders({256, 8, 0, 0}, 8), 5.2);
}

TEST(TokenRouting, GroupsMatchTheRuleEnumerated) {
  // Holders that tile the groups (a group of 4 experts spans 2 holders, or a holder 2 groups) and
  // holders that cut across them (groups of 6 experts, holders of 8 or 4).
  const Routing tiled{16, 4, 4, 2};
  for (int64_t holders : {1, 2, 4, 8, 16}) EXPECT_NEAR(expected_holders(tiled, holders), enumerated(tiled, holders), 1e-12) << holders;
  const Routing across{24, 4, 4, 2};
  for (int64_t holders : {2, 3, 6, 8, 12}) EXPECT_NEAR(expected_holders(across, holders), enumerated(across, holders), 1e-12) << holders;
}

TEST(TokenRouting, AKindFromBeforeTheGroupsHasNone) {
  pp_layer_kind kind{};
  kind.struct_size = sizeof(kind);
  kind.experts = 256, kind.top_k = 8, kind.router_groups = 8, kind.router_group_topk = 4;
  EXPECT_EQ(of(kind).groups, 8);
  kind.struct_size = static_cast<uint32_t>(offsetof(pp_layer_kind, router_groups));
  EXPECT_EQ(of(kind).groups, 0);
  kind.struct_size = sizeof(kind);
  kind.router_group_topk = 8;  // every group kept: no limit
  EXPECT_EQ(of(kind).groups, 0);
}

}  // namespace
}  // namespace paraplan::routing
