// paraplan/host/core/edit_distance.h: "did you mean" suggestions for misspelled keys and names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace paraplan::host {

// Levenshtein distance (insertions, deletions, substitutions each cost 1).
size_t edit_distance(std::string_view a, std::string_view b);

// `text` in lower case (ASCII): names compared without regard to case.
std::string lowercase(std::string_view text);

// The candidate closest to `word` (case aside), or "" when none is close enough to be a plausible typo.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "" — ready to append to an error message.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace paraplan::host
