#include "host/core/edit_distance.h"

#include <gtest/gtest.h>

namespace paraplan::host {
namespace {

TEST(EditDistance, CountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("degree", "degree"), 0u);
  EXPECT_EQ(edit_distance("degre", "degree"), 1u);     // one insertion
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);   // the textbook example
  EXPECT_EQ(edit_distance("", "abc"), 3u);
}

TEST(EditDistance, SuggestsOnlyPlausibleTypos) {
  std::vector<std::string> keys = {"degree", "stage", "overlap"};
  EXPECT_EQ(closest_match("degre", keys), "degree");
  EXPECT_EQ(closest_match("stgae", keys), "stage");
  EXPECT_EQ(closest_match("completely_different", keys), "");
  EXPECT_EQ(did_you_mean("overlpa", keys), " (did you mean 'overlap'?)");
  EXPECT_EQ(did_you_mean("zzz", keys), "");
}

TEST(EditDistance, AUniquePrefixWins) {
  // "h100" is 4 edits from "h100-sxm" but only 2 from "b200".
  EXPECT_EQ(closest_match("h100", {"a100-sxm-80g", "h100-sxm", "b200"}), "h100-sxm");
  EXPECT_EQ(closest_match("h1", {"h100-sxm", "h100-pcie"}), "");  // ambiguous prefix, too far otherwise
}

}  // namespace
}  // namespace paraplan::host
