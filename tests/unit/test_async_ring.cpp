// The replay sweep's asynchronous ring (bench/async_ring.hpp): migrants arrive by their
// sender's wall clock, never before the receiver's clock has reached it; the gather of
// generation 0 answers every other island's first batch; ring neighbours as the MPI ring's.
#include <gtest/gtest.h>

#include <vector>

#include "../../bench/async_ring.hpp"

namespace isletune {
namespace {

Migrant from(int rank, int generation) {
  Migrant m;
  m.source_rank = rank;
  m.generation = generation;
  m.setting.values[0] = rank;
  m.setting.values[1] = generation;
  return m;
}

TEST(AsyncRing, MigrantsArriveByTheSendersClock) {
  std::vector<double> clock = {0, 0, 0, 0};
  AsyncRing ring(4, [&](int r) { return clock[static_cast<std::size_t>(r)]; });
  EXPECT_EQ(ring.migrator(0).neighbours(), 2);
  clock[1] = 5.0;
  ring.migrator(1).send({from(1, 3)});  // stamped 5 s, to islands 0 and 2
  clock[0] = 4.9;
  EXPECT_TRUE(ring.migrator(0).receive().empty());  // island 0 is not at 5 s yet
  EXPECT_TRUE(ring.migrator(3).receive().empty());  // not a neighbour of island 1
  clock[0] = 5.0;
  const auto got = ring.migrator(0).receive();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].source_rank, 1);
  EXPECT_EQ(got[0].generation, 3);
  EXPECT_TRUE(ring.migrator(0).receive().empty());  // handed out once
  clock[2] = 7.0;
  EXPECT_EQ(ring.migrator(2).receive().size(), 1u);
}

TEST(AsyncRing, TheGatherAnswersEveryOtherIslandsFirstBatch) {
  std::vector<double> clock = {1, 2, 3};
  AsyncRing ring(3, [&](int r) { return clock[static_cast<std::size_t>(r)]; });
  ring.migrator(0).send({from(0, 0), from(0, 0)});
  ring.migrator(1).send({from(1, 0)});
  ring.migrator(2).send({from(2, 0)});
  ring.migrator(1).send({from(1, 1)});  // not a first batch
  const auto all = ring.migrator(1).gather_first();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].source_rank, 0);
  EXPECT_EQ(all[2].source_rank, 2);
}

TEST(AsyncRing, NeighboursAsTheMpiRing) {
  const auto none = [](int) { return 0.0; };
  EXPECT_EQ(AsyncRing(1, none).migrator(0).neighbours(), 0);
  AsyncRing two(2, none);
  EXPECT_EQ(two.migrator(0).neighbours(), 1);
  two.migrator(0).send({from(0, 0)});
  EXPECT_EQ(two.migrator(1).receive().size(), 1u);  // to the one peer, once
}

// drift=D: an island D generations ahead of a neighbour waits for it; its start is the end of
// the generation it waits for. 5 islands, so island 0's ring neighbours are 4 and 1, and 2 and 3
// matter only through the stop vote (every island's generation g - 1 - D).
TEST(AsyncRing, DriftWaitsOnlyWhenDGenerationsAhead) {
  std::vector<std::vector<double>> ends = {
      {1, 2, 3, 4}, {1, 5}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3, 4}};
  const std::vector<bool> going(5, true);
  // Island 0 has ended 4: with D = 3 it needs 1 of island 1's (ended at 1 s): no wait.
  EXPECT_DOUBLE_EQ(*drift_start(ends, going, 0, 3, 4.0), 4.0);
  // D = 2 needs island 1's 2nd generation, which ended at 5 s: island 0 waits until then.
  EXPECT_DOUBLE_EQ(*drift_start(ends, going, 0, 2, 4.0), 5.0);
  // D = 1 needs 3 of island 1's: not ended yet.
  EXPECT_FALSE(drift_start(ends, going, 0, 1, 4.0));
  // Island 1 is behind everyone: it never waits.
  EXPECT_DOUBLE_EQ(*drift_start(ends, going, 1, 0, 5.0), 5.0);
  // Island 2 (neighbours 1 and 3) at D = 0 needs 3 generations of each: island 1 has ended 2.
  EXPECT_FALSE(drift_start(ends, going, 2, 0, 3.0));
  // With D = 1 island 2 needs 2 of island 1's (5 s) and 1 of everyone's.
  EXPECT_DOUBLE_EQ(*drift_start(ends, going, 2, 1, 3.0), 5.0);
  // Island 3 at D = 1 (neighbours 2 and 4) needs 2 of theirs and 1 of island 1's: no wait.
  EXPECT_DOUBLE_EQ(*drift_start(ends, going, 3, 1, 3.0), 3.0);
  // ... and at D = 0, 3 of its neighbours' and 2 of everyone's: island 1's 2nd ended at 5 s.
  EXPECT_DOUBLE_EQ(*drift_start(ends, going, 3, 0, 3.0), 5.0);
  // An island that has stopped holds no one.
  std::vector<bool> one_stopped = going;
  one_stopped[1] = false;
  EXPECT_DOUBLE_EQ(*drift_start(ends, one_stopped, 0, 0, 4.0), 4.0);  // else 1 never ends 4
}

}  // namespace
}  // namespace isletune
