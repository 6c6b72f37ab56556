#include "layer_placement.h"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <numeric>

#include "paraplan/sdk.hpp"

namespace pp_strategy {
namespace {

using paraplan::ConstraintError;

std::string text(int64_t value) { return std::to_string(value); }

// "(...)*N" groups first, then "x*N" letters, as Megatron-LM expands them.
std::string expand(const std::string& layout) {
  std::string flat;
  for (char c : layout)
    if (c != ',' && !std::isspace(static_cast<unsigned char>(c))) flat += c;
  auto count_after = [&](const std::string& source, size_t& at) {
    if (at >= source.size() || source[at] != '*') return int64_t{1};
    size_t end = ++at;
    while (end < source.size() && std::isdigit(static_cast<unsigned char>(source[end]))) ++end;
    if (end == at || end - at > 6) throw ConstraintError("layout \"" + layout + "\": '*' must be followed by a count (1-999999)");
    const int64_t count = std::stoll(source.substr(at, end - at));
    at = end;
    return count;
  };
  std::string grouped;
  for (size_t at = 0; at < flat.size();) {
    if (flat[at] == ')') throw ConstraintError("layout \"" + layout + "\": ')' without '('");
    if (flat[at] != '(') {
      grouped += flat[at++];
      continue;
    }
    const size_t close = flat.find(')', at);
    if (close == std::string::npos) throw ConstraintError("layout \"" + layout + "\": '(' without ')'");
    const std::string group = flat.substr(at + 1, close - at - 1);
    if (group.find('(') != std::string::npos) throw ConstraintError("layout \"" + layout + "\": groups do not nest");
    at = close + 1;
    const int64_t times = count_after(flat, at);
    for (int64_t i = 0; i < times && grouped.size() < (1u << 22); ++i) grouped += group;
  }
  std::string letters;
  for (size_t at = 0; at < grouped.size();) {
    const char letter = grouped[at++];
    const int64_t times = count_after(grouped, at);
    if (letter == '*') throw ConstraintError("layout \"" + layout + "\": '*' must follow a letter or a group");
    letters.append(static_cast<size_t>(std::min<int64_t>(times, 1 << 22)), letter);
  }
  return letters;
}

}  // namespace

LayerPlacement parse_megatron_layout(const std::string& layout, int64_t stages, int64_t decoder_layers,
                                     int64_t mtp_layers) {
  const std::string letters = expand(layout);
  struct Entry {
    int64_t decoder = 0, mtp = 0;
  };
  std::vector<Entry> entries(1);
  int64_t embeddings = 0, losses = 0, decoders = 0, mtps = 0;
  size_t mtp_entry = SIZE_MAX;
  for (size_t i = 0; i < letters.size(); ++i) {
    const char letter = letters[i];
    switch (letter) {
      case '|': entries.emplace_back(); break;
      case 'E':
        if (i != 0) throw ConstraintError("layout \"" + layout + "\": 'E' (the embedding) must come first");
        ++embeddings;
        break;
      case 'L':
        if (i + 1 != letters.size()) throw ConstraintError("layout \"" + layout + "\": 'L' (the loss) must come last");
        ++losses;
        break;
      case 't':
        if (mtps > 0) throw ConstraintError("layout \"" + layout + "\": a decoder layer 't' after an MTP module 'm'");
        ++decoders, ++entries.back().decoder;
        break;
      case 'm':
        if (mtp_entry != SIZE_MAX && mtp_entry != entries.size() - 1)
          throw ConstraintError("layout \"" + layout + "\": the MTP modules 'm' must share one stage");
        mtp_entry = entries.size() - 1;
        ++mtps, ++entries.back().mtp;
        break;
      default:
        throw ConstraintError("layout \"" + layout + "\": '" + std::string(1, letter) +
                              "' is not E (embedding), t (decoder layer), m (MTP module), L (loss), '|' or a repeat");
    }
  }
  if (embeddings != 1 || losses != 1)
    throw ConstraintError("layout \"" + layout + "\": needs one 'E' first and one 'L' last");
  if (decoders != decoder_layers)
    throw ConstraintError("layout \"" + layout + "\" places " + text(decoders) + " decoder layers 't', the model has " +
                          text(decoder_layers));
  if (mtps != mtp_layers)
    throw ConstraintError("layout \"" + layout + "\" places " + text(mtps) + " MTP modules 'm', the model has " +
                          text(mtp_layers));
  const int64_t count = static_cast<int64_t>(entries.size());
  if (count % stages != 0)
    throw ConstraintError("layout \"" + layout + "\" has " + text(count) + " virtual stages, not a multiple of pp = " +
                          text(stages));
  LayerPlacement placed;
  placed.virtual_stages = count / stages;
  // Megatron-LM puts the MTP modules in a rank's last chunk.
  if (mtp_entry != SIZE_MAX && static_cast<int64_t>(mtp_entry) / stages != placed.virtual_stages - 1)
    throw ConstraintError("layout \"" + layout + "\": the MTP modules must be in a rank's last model chunk");
  for (const Entry& entry : entries) placed.layers.push_back(entry.decoder + entry.mtp);
  return placed;
}

std::vector<int64_t> balance_by_cost(const std::vector<double>& costs, int64_t parts) {
  const int64_t n = static_cast<int64_t>(costs.size());
  if (parts < 1 || parts > n)
    throw ConstraintError(text(parts) + " virtual stages for " + text(n) + " layers: each needs at least one");
  // Greedy fill under a bound: the fewest stages it takes; feasible when <= parts.
  auto split_under = [&](double bound, std::vector<int64_t>* out) {
    int64_t used = 1, here = 0;
    double sum = 0;
    std::vector<int64_t> sizes;
    for (int64_t i = 0; i < n; ++i) {
      const double cost = costs[static_cast<size_t>(i)];
      // Close the stage when this layer would break the bound, or when the layers left are only
      // just enough for the stages left.
      const bool must_leave = n - i <= parts - used;
      if (here > 0 && (sum + cost > bound || must_leave)) {
        sizes.push_back(here);
        ++used, here = 0, sum = 0;
      }
      sum += cost, ++here;
    }
    sizes.push_back(here);
    if (out) *out = sizes;
    return used <= parts && *std::max_element(costs.begin(), costs.end()) <= bound;
  };
  double low = *std::max_element(costs.begin(), costs.end());
  double high = std::accumulate(costs.begin(), costs.end(), 0.0);
  for (int iteration = 0; iteration < 100 && high - low > 1e-9 * high; ++iteration) {
    const double middle = 0.5 * (low + high);
    (split_under(middle, nullptr) ? high : low) = middle;
  }
  std::vector<int64_t> sizes;
  split_under(high, &sizes);
  // Fewer stages than asked only when layers ran out of cost; split the largest ones.
  while (static_cast<int64_t>(sizes.size()) < parts) {
    auto largest = std::max_element(sizes.begin(), sizes.end());
    const int64_t half = *largest / 2;
    *largest -= half;
    sizes.insert(largest + 1, half);
  }
  return sizes;
}

std::vector<int64_t> balance_pairs_by_cost(const std::vector<double>& costs, int64_t stages) {
  const int64_t n = static_cast<int64_t>(costs.size());
  if (stages < 1 || 2 * stages > n)
    throw ConstraintError(text(2 * stages) + " chunks in a V of " + text(stages) + " stages for " + text(n) +
                          " layers: each needs at least one");
  std::vector<double> prefix(static_cast<size_t>(n) + 1, 0.0);
  for (size_t i = 0; i < costs.size(); ++i) prefix[i + 1] = prefix[i] + costs[i];
  const auto sum = [&](int64_t from, int64_t to) { return prefix[static_cast<size_t>(to)] - prefix[static_cast<size_t>(from)]; };
  // Stages 0 .. p-2 peel a front and a back piece off the layers left, [front, back), each pair
  // as near the mean of what is left per stage as whole layers allow; the middle stage takes the
  // rest as its two chunks. A stage whose least pair is above the mean (stage 0 with the head)
  // takes that least, and the stages after it share the rest.
  int64_t front = 0, back = n;
  std::vector<int64_t> fronts, backs;
  for (int64_t stage = 0; stage + 1 < stages; ++stage) {
    const int64_t spare = back - front - 2 * (stages - 1 - stage);  // layers this stage may take
    const double target = sum(front, back) / static_cast<double>(stages - stage);
    // Nearest the target first; among pairs as near (the same layers split differently), the
    // most even chunks, which DualPipe's bubble assumes.
    const double tolerance = 1e-9 * target;
    int64_t best_front = 0, best_back = 0;
    double best_miss = 0, best_uneven = 0;
    auto consider = [&](int64_t take_front, int64_t take_back) {
      const double front_cost = sum(front, front + take_front), back_cost = sum(back - take_back, back);
      const double miss = std::abs(front_cost + back_cost - target), uneven = std::abs(front_cost - back_cost);
      if (best_front == 0 || miss < best_miss - tolerance || (miss <= best_miss + tolerance && uneven < best_uneven))
        best_front = take_front, best_back = take_back, best_miss = miss, best_uneven = uneven;
    };
    // For each front piece, the back pieces either side of the target; the back pointer only
    // moves inward as the front grows.
    int64_t take_back = spare - 1;
    for (int64_t take_front = 1; take_front < spare; ++take_front) {
      take_back = std::min(take_back, spare - take_front);
      const double front_cost = sum(front, front + take_front);
      while (take_back > 1 && front_cost + sum(back - take_back, back) > target) --take_back;
      consider(take_front, take_back);
      if (take_back + 1 <= spare - take_front) consider(take_front, take_back + 1);
      if (front_cost + sum(back - 1, back) > target) break;  // a larger front only misses by more
    }
    fronts.push_back(best_front), backs.push_back(best_back);
    front += best_front, back -= best_back;
  }
  // The middle stage's two chunks, adjacent in the model: split by cost.
  const std::vector<int64_t> middle =
      balance_by_cost(std::vector<double>(costs.begin() + front, costs.begin() + back), 2);
  std::vector<int64_t> sizes(fronts);
  sizes.insert(sizes.end(), middle.begin(), middle.end());
  sizes.insert(sizes.end(), backs.rbegin(), backs.rend());
  return sizes;
}

}  // namespace pp_strategy
