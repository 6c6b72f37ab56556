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

}  // namespace
}  // namespace paraplan::host
