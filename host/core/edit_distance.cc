#include "host/core/edit_distance.h"

#include <algorithm>
#include <cctype>
#include <numeric>

namespace paraplan::host {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> previous(b.size() + 1), current(b.size() + 1);
  std::iota(previous.begin(), previous.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::string lowercase(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

std::string closest_match(std::string_view typed, const std::vector<std::string>& candidates) {
  // Case is no evidence either way: "H100" is compared as "h100".
  const std::string word = lowercase(typed);
  // "h100" means "h100-sxm" more often than the equally distant "b200": a unique prefix wins.
  std::string prefixed;
  int prefix_matches = 0;
  for (const std::string& candidate : candidates)
    if (word.size() >= 2 && candidate.size() > word.size() && lowercase(candidate).compare(0, word.size(), word) == 0) {
      prefixed = candidate;
      ++prefix_matches;
    }
  if (prefix_matches == 1) return prefixed;
  // A typo changes a few characters; allow about a third of the word, at least 2.
  size_t limit = std::max<size_t>(2, word.size() / 3);
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& candidate : candidates) {
    size_t distance = edit_distance(word, lowercase(candidate));
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  std::string match = closest_match(word, candidates);
  return match.empty() ? "" : " (did you mean '" + match + "'?)";
}

}  // namespace paraplan::host
