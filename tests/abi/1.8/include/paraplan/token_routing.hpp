// paraplan/token_routing.hpp: where a routed token's experts lie, header-only (SDK 1.6).
//
// A mixture-of-experts router sends each token to top_k of E experts. Expert parallelism lays
// the experts contiguously over its ranks (rank r holds experts [r E/e, (r+1) E/e)), and the
// ranks over nodes, so the same question decides two volumes: over how many distinct ranks, and
// over how many distinct nodes, do a token's top_k experts fall. A dispatcher that sends a token
// once per rank holding any of its experts (DeepEP, HybridEP: Megatron's flex dispatcher) moves
// one copy per distinct rank, and once per distinct node across the network (it sends to one
// rank of each node, which forwards over NVLink).
//
// Group-limited routing (Megatron-Core's --moe-router-num-groups G, --moe-router-group-topk g;
// DeepSeek-V2's device-limited and DeepSeek-V3's node-limited routing, arXiv 2412.19437 sec.
// 2.1.2: 8 groups, a token's experts in at most 4) splits the experts into G equal contiguous
// groups, keeps the g groups with the best scores and picks top_k among their experts only.
//
// Expectation under uniform routing (what forced balancing runs, and a balanced router
// approaches). Without groups the top_k are a uniform choice of the E experts. With groups,
// Megatron-Core scores a group by the sum of its best top_k/g experts and keeps the best g, so a
// kept group supplies those top_k/g: the g groups are a uniform choice of the G, each supplying
// top_k/g experts chosen uniformly among its own (E/G). A holder of experts [a, b) is missed when
// no pick falls in it:
//   no groups: P(miss) = C(E - (b - a), k) / C(E, k);
//   groups:    P(miss) = sum over the subset J of the r groups it overlaps that are kept
//              C(G - r, g - |J|) / C(G, g) x prod over i in J of C(s - o_i, k/g) / C(s, k/g),
// s = E/G, o_i its experts in group i. The expected distinct holders is the sum of 1 - P(miss)
// over holders: e(1 - C(E - E/e, k) / C(E, k)) ranks without groups. Checked against Megatron's
// rule run on random logits (1,000s of tokens, DeepSeek-V3's 256 experts, 8 groups, 4 kept): 3.97
// distinct ranks of 8 against 4.00 here, 3.11 nodes of 4 against 3.14, 6.86 ranks of 32 against
// 7.10 (uniform picks inside the kept groups would give 3.63, 2.93 and 6.60).
//
//   paraplan::routing::Routing routing = paraplan::routing::of(layer_kind);
//   double ranks = paraplan::routing::expected_holders(routing, ep);        // copies a token sends
//   double nodes = paraplan::routing::expected_holders(routing, ep / local); // copies across nodes
#ifndef PARAPLAN_TOKEN_ROUTING_HPP
#define PARAPLAN_TOKEN_ROUTING_HPP

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "paraplan/model.h"

namespace paraplan::routing {

struct Routing {
  int64_t experts = 0;
  int64_t top_k = 0;
  int64_t groups = 0;      // router groups; 0 or 1: every expert is a candidate
  int64_t group_topk = 0;  // groups a token's experts may come from
};

// A layer kind's routing; a kind from before its router groups (a shorter struct) has none.
inline Routing of(const pp_layer_kind& kind) {
  Routing routing{kind.experts, kind.top_k, 0, 0};
  if (kind.struct_size >= offsetof(pp_layer_kind, router_group_topk) + sizeof(kind.router_group_topk) &&
      kind.router_groups > 1 && kind.router_group_topk > 0 && kind.router_group_topk < kind.router_groups) {
    routing.groups = kind.router_groups;
    routing.group_topk = kind.router_group_topk;
  }
  return routing;
}

namespace detail {

// C(n - c, k) / C(n, k): no pick among c of n items when k of the n are chosen uniformly.
inline double none_among(double n, double c, int64_t k) {
  double ratio = 1.0;
  for (int64_t i = 0; i < k && ratio > 0; ++i) ratio *= std::max(0.0, (n - c - static_cast<double>(i)) / (n - static_cast<double>(i)));
  return ratio;
}

// log n!, as lgamma(n + 1) gives it; looked up below 1024 (routers have at most a few hundred
// groups, and a search asks for the same few for every plan).
inline double log_factorial(int64_t n) {
  static const std::array<double, 1024> table = [] {
    std::array<double, 1024> values{};
    for (size_t i = 0; i < values.size(); ++i) values[i] = std::lgamma(static_cast<double>(i) + 1.0);
    return values;
  }();
  return n < static_cast<int64_t>(table.size()) ? table[static_cast<size_t>(n)] : std::lgamma(static_cast<double>(n) + 1.0);
}

// log C(n, k); -infinity when there is no way (k < 0 or k > n).
inline double log_choose(int64_t n, int64_t k) {
  if (k < 0 || k > n) return -std::numeric_limits<double>::infinity();
  return log_factorial(n) - log_factorial(k) - log_factorial(n - k);
}

// P(no pick among `overlap` of a kept group's experts): the group supplies top_k / g picks,
// mixed between the two integers around it when g does not divide top_k.
inline double miss_in_group(const Routing& routing, int64_t overlap) {
  const double size = static_cast<double>(routing.experts / routing.groups), c = static_cast<double>(overlap);
  const int64_t low = routing.top_k / routing.group_topk;
  const double high_share = static_cast<double>(routing.top_k % routing.group_topk) / static_cast<double>(routing.group_topk);
  return (1.0 - high_share) * none_among(size, c, low) + high_share * none_among(size, c, low + 1);
}

// P(no pick in the holder of experts [first, last)).
inline double miss(const Routing& routing, int64_t first, int64_t last) {
  if (routing.groups <= 1)
    return none_among(static_cast<double>(routing.experts), static_cast<double>(last - first), routing.top_k);
  const int64_t size = routing.experts / routing.groups, G = routing.groups, g = routing.group_topk;
  // The holder overlaps groups [head, tail]: whole ones, and partly the ones at either end.
  const int64_t head = first / size, tail = (last - 1) / size, r = tail - head + 1;
  int64_t partial[2] = {0, 0}, partials = 0;
  const int64_t head_overlap = std::min(last, (head + 1) * size) - first;
  if (head_overlap < size) partial[partials++] = head_overlap;
  if (r > 1 && last - tail * size < size) partial[partials++] = last - tail * size;
  const int64_t whole = r - partials;
  const double whole_miss = miss_in_group(routing, size);  // 0: a kept group supplies a pick
  double total = 0.0;
  // Kept: j of the whole groups, and each partial one (bit i of `ends`) or not.
  for (int64_t ends = 0; ends < (int64_t{1} << partials); ++ends)
    for (int64_t j = 0; j <= whole; ++j) {
      int64_t kept = j;
      double missed = std::pow(whole_miss, static_cast<double>(j));
      for (int64_t i = 0; i < partials; ++i)
        if (ends >> i & 1) ++kept, missed *= miss_in_group(routing, partial[i]);
      if (missed == 0.0) continue;
      // P(exactly these of its r groups kept, among the g of G), times the C(whole, j) ways.
      total += std::exp(log_choose(whole, j) + log_choose(G - r, g - kept) - log_choose(G, g)) * missed;
    }
  return total;
}

}  // namespace detail

// Expected distinct holders among a token's top_k experts when `holders` hold E/holders
// contiguous experts each (holders divides E; clamped to 1..E).
inline double expected_holders(const Routing& routing, int64_t holders) {
  if (routing.experts <= 0 || routing.top_k <= 0) return 0.0;
  holders = std::clamp<int64_t>(holders, 1, routing.experts);
  const int64_t per = routing.experts / holders;
  // Holders are alike when they tile the groups evenly (one divides the other); else sum them.
  const bool alike = routing.groups <= 1 || routing.groups % holders == 0 || holders % routing.groups == 0;
  if (alike) return static_cast<double>(holders) * (1.0 - detail::miss(routing, 0, per));
  double total = 0.0;
  for (int64_t h = 0; h < holders; ++h) total += 1.0 - detail::miss(routing, h * per, (h + 1) * per);
  return total;
}

}  // namespace paraplan::routing

#endif  // PARAPLAN_TOKEN_ROUTING_HPP
