// The replay sweep's wall clock (bench/wall_clock.hpp): generation ends from busy times and
// the search loop's waits, hand-timed.
#include <gtest/gtest.h>

#include <vector>

#include "../../bench/wall_clock.hpp"

namespace isletune {
namespace {

using Busy = std::vector<std::vector<double>>;

TEST(WallClock, OneIslandAddsItsBusyTimes) {
  const auto ends = wall_ends(Busy{{1, 2, 0.5}}, 0, true);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0], (std::vector<double>{1, 3, 3.5}));
}

// Island 1's generation 1 takes 3 s. At lag 0 island 0 waits for it before its generation 2
// (its ring neighbour's migrants); at lag 1 it goes on with generation 0's and runs ahead.
TEST(WallClock, LagZeroWaitsForTheNeighboursPreviousGeneration) {
  const Busy busy{{1, 1, 1}, {1, 3, 1}};
  const auto lag0 = wall_ends(busy, 0, true);
  EXPECT_EQ(lag0[0], (std::vector<double>{1, 2, 5}));
  EXPECT_EQ(lag0[1], (std::vector<double>{1, 4, 5}));
  const auto lag1 = wall_ends(busy, 1, true);
  EXPECT_EQ(lag1[0], (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(lag1[1], (std::vector<double>{1, 4, 5}));
}

// Generation 1 waits for every island's generation 0 (the gather) when it is on; and the
// pipelined stop vote holds an island at generation g until every island has ended g - 2,
// however large the lag.
TEST(WallClock, TheGatherAndTheVoteWaitForEveryIsland) {
  const Busy first{{1, 1}, {1, 1}, {4, 1}};
  EXPECT_EQ(wall_ends(first, 5, true)[0], (std::vector<double>{1, 5}));
  EXPECT_EQ(wall_ends(first, 5, false)[0], (std::vector<double>{1, 2}));
  const Busy vote{{1, 1, 1, 1}, {1, 3, 1, 1}};
  EXPECT_EQ(wall_ends(vote, 5, true)[0], (std::vector<double>{1, 2, 3, 5}));
}

// An island that stopped early holds its last end for the others' later generations.
TEST(WallClock, AnIslandThatStoppedKeepsItsLastEnd) {
  const auto ends = wall_ends(Busy{{1, 1, 1, 1}, {2}}, 0, true);
  EXPECT_EQ(ends[1], (std::vector<double>{2}));
  EXPECT_EQ(ends[0], (std::vector<double>{1, 3, 4, 5}));
}

}  // namespace
}  // namespace isletune
