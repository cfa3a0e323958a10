// Selection on the torus, crossover, mutation, stop rules and migration policies.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "ga/island.hpp"
#include "ga/memory_ring.hpp"
#include "ga/selection.hpp"
#include "ga/stop.hpp"
#include "ga/variation.hpp"

namespace isletune {
namespace {

TEST(Torus, NeighboursWrapAndAreDistinctOnEveryShape) {
  const Torus t(4, 4);
  const auto c = t.candidates(0);
  EXPECT_EQ(std::vector<int>(c.begin(), c.end()), (std::vector<int>{12, 4, 3, 1}));
  for (const auto& [rows, cols] :
       std::vector<std::pair<int, int>>{{1, 2}, {2, 1}, {2, 2}, {1, 3}, {3, 5}, {1, 7}}) {
    const Torus s(rows, cols);
    for (int cell = 0; cell < s.cells(); ++cell) {
      const auto cand = s.candidates(cell);
      const std::set<int> distinct(cand.begin(), cand.end());
      EXPECT_EQ(distinct.size(), cand.size());
      EXPECT_GE(cand.size(), 2u);
      EXPECT_LE(cand.size(), 4u);
      for (const int n : cand)
        EXPECT_TRUE(n >= 0 && n < s.cells());
    }
  }
  const Torus pair(1, 2);
  const auto c1 = pair.candidates(0);
  EXPECT_EQ(std::vector<int>(c1.begin(), c1.end()), (std::vector<int>{1, 0}));
}

// |observed - expected| within 5 binomial sigma.
void expect_frequency(int hits, int draws, double p, const char* what) {
  const double sigma = std::sqrt(draws * p * (1 - p));
  EXPECT_NEAR(hits, draws * p, 5 * sigma + 1) << what;
}

TEST(Selection, ParentsFollowFitnessProportionsAndAreDistinct) {
  const Torus t(4, 4);
  std::vector<double> fitness(16, 100.0);  // non-neighbours must never matter
  const int cell = 5;                      // neighbours 1, 9, 4, 6
  fitness[1] = 1;
  fitness[9] = 2;
  fitness[4] = 3;
  fitness[6] = 4;
  const std::vector<int> cand = {1, 9, 4, 6};
  const int draws = 200000;
  std::map<int, int> first, second;
  Rng rng(17);
  for (int i = 0; i < draws; ++i) {
    const auto [a, b] = select_parents(t, cell, fitness, rng);
    ASSERT_NE(a, b);
    ++first[a];
    ++second[b];
  }
  const double total = 10;
  for (const int c : cand) {
    expect_frequency(first[c], draws, fitness[c] / total, "first parent");
    double p2 = 0;  // P(second = c) = sum over first = i != c of p_i * f_c / (total - f_i)
    for (const int i : cand) {
      if (i != c)
        p2 += fitness[i] / total * fitness[c] / (total - fitness[i]);
    }
    expect_frequency(second[c], draws, p2, "second parent");
  }
  EXPECT_EQ(first.size(), 4u);
}

TEST(Selection, AllZeroFitnessIsUniform) {
  const Torus t(3, 5);
  const std::vector<double> fitness(15, 0.0);
  std::map<int, int> first;
  Rng rng(3);
  const int draws = 40000;
  for (int i = 0; i < draws; ++i) {
    const auto [a, b] = select_parents(t, 7, fitness, rng);
    ASSERT_NE(a, b);
    ++first[a];
  }
  for (const int c : t.candidates(7))
    expect_frequency(first[c], draws, 0.25, "uniform");
}

TEST(Selection, ZeroFitnessNeighbourIsNeverPickedWhileOthersArePositive) {
  const Torus t(4, 4);
  std::vector<double> fitness(16, 1.0);
  fitness[1] = 0;
  Rng rng(8);
  for (int i = 0; i < 10000; ++i) {
    const auto [a, b] = select_parents(t, 5, fitness, rng);
    EXPECT_NE(a, 1);
    EXPECT_NE(b, 1);
  }
}

TEST(Variation, CrossoverMixesGenesOnlyFromParents) {
  const Genome a(64, 0), b(64, 1);
  Rng rng(4);
  EXPECT_EQ(crossover(a, b, 0.0, rng), a);
  int ones = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    for (const int g : crossover(a, b, 1.0, rng))
      ones += g;
  }
  expect_frequency(ones, trials * 64, 0.5, "uniform crossover");
}

// A parameter a kernel family appends (issue 46) is a gene after the base parameters; held at
// one value it takes no crossover draw, so the GA breeds what it bred before the parameter
// existed (tests/axis/axis_replay.sh: recorded datasets replay the same in a build with two
// appended parameters). A base gene at one value draws as it always did.
TEST(Variation, CrossoverDrawsNothingForAnAppendedGeneAtOneValue) {
  int streams_differ = 0;
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    Rng pick(seed, 1);
    Genome a(kBaseParamCount), b(kBaseParamCount);
    for (std::size_t g = 0; g < kBaseParamCount; ++g) {
      a[g] = static_cast<int>(pick.below(2));
      b[g] = static_cast<int>(pick.below(2));
    }
    std::vector<int> base(kBaseParamCount, 2);
    base[9] = 1;  // a base gene at one value (tbz of a 2-D space) still draws
    Genome a2 = a, b2 = b;
    a2.insert(a2.end(), {1, 0});
    b2.insert(b2.end(), {1, 0});
    std::vector<int> appended = base;
    appended.insert(appended.end(), {1, 1});
    Rng r1(seed, 0), r2(seed, 0), r3(seed, 0), r4(seed, 0);
    const Genome c1 = crossover(a, b, 0.9, r1);
    const Genome c2 = crossover(a2, b2, 0.9, r2, appended);
    EXPECT_EQ(Genome(c2.begin(), c2.begin() + kBaseParamCount), c1);
    EXPECT_EQ(Genome(c2.begin() + kBaseParamCount, c2.end()), (Genome{1, 0}));
    EXPECT_EQ(r1(), r2()) << "the same draws";
    EXPECT_EQ(crossover(a, b, 0.9, r3, base), c1);
    // With a choice the appended genes draw like any other.
    std::vector<int> choice = base;
    choice.insert(choice.end(), {2, 2});
    (void)crossover(a2, b2, 0.9, r4, choice);
    Rng r5(seed, 0);
    (void)crossover(a, b, 0.9, r5);
    streams_differ += r4() != r5() ? 1 : 0;
  }
  EXPECT_GT(streams_differ, 20);
}

TEST(Variation, MutationAlwaysChangesToAnotherAllele) {
  const std::vector<int> alleles = {2, 3, 1, 8};
  Rng rng(6);
  int changed = 0;
  std::map<int, int> landed;
  for (int t = 0; t < 20000; ++t) {
    Genome g = {1, 2, 0, 5};
    const Genome before = g;
    const int n = mutate(g, alleles, 1.0, rng);
    EXPECT_EQ(n, 3);  // the single-allele gene cannot change
    for (std::size_t i = 0; i < g.size(); ++i) {
      EXPECT_GE(g[i], 0);
      EXPECT_LT(g[i], alleles[i]);
      if (alleles[i] > 1) {
        EXPECT_NE(g[i], before[i]);
      }
    }
    ++landed[g[3]];
    Genome h = before;
    changed += mutate(h, alleles, 0.1, rng);
  }
  expect_frequency(changed, 20000 * 3, 0.1, "mutation rate");
  for (int v = 0; v < 8; ++v) {
    if (v != 5)
      expect_frequency(landed[v], 20000, 1.0 / 7, "other alleles uniform");
  }
}

TEST(StopRules, EachFiresAtItsThresholdAndAnyOfTakesTheSmallestReason) {
  IslandProgress p{3, 100, 0.4, 10.0};
  EXPECT_EQ(McrStop(0.5).check(p), StopReason::none);
  p.mcr = 0.5;
  EXPECT_EQ(McrStop(0.5).check(p), StopReason::mcr);
  EXPECT_EQ(MaxGenerations(4).check(p), StopReason::none);
  EXPECT_EQ(MaxGenerations(3).check(p), StopReason::max_generations);
  EXPECT_EQ(MaxEvaluations(101).check(p), StopReason::none);
  EXPECT_EQ(MaxEvaluations(100).check(p), StopReason::max_evaluations);
  EXPECT_EQ(TimeBudget(10.5).check(p), StopReason::none);
  EXPECT_EQ(TimeBudget(10.0).check(p), StopReason::time_budget);
  AnyOf any;
  any.add(std::make_unique<TimeBudget>(1.0)).add(std::make_unique<MaxEvaluations>(50));
  EXPECT_EQ(any.check(p), StopReason::max_evaluations);
  EXPECT_EQ(AnyOf().check(p), StopReason::none);
}

Individual with_fitness(int id, double ms) {
  Individual ind;
  ind.id = id;
  ind.measurement.status = ms > 0 ? Status::ok : Status::crashed;
  ind.measurement.median_ms = ms;
  return ind;
}

TEST(MigrationPolicy, SelectBestAndReplaceWorstIfBetter) {
  std::vector<Individual> pop = {with_fitness(0, 4), with_fitness(1, 1), with_fitness(2, -1),
                                 with_fitness(3, 2), with_fitness(4, 1)};
  EXPECT_EQ(select_best(pop, 3), (std::vector<int>{1, 4, 3}));
  EXPECT_EQ(select_best(pop, 9).size(), 5u);
  const std::vector<Individual> in = {with_fitness(10, 5), with_fitness(11, 0.5),
                                      with_fitness(12, 3)};
  const std::vector<int> taken = replace_worst_if_better(pop, in);
  EXPECT_EQ(taken, (std::vector<int>{-1, 2, 0}));  // 0.5 ms takes the failure, 3 ms the 4 ms
  EXPECT_EQ(pop[2].id, 11);
  EXPECT_EQ(pop[0].id, 12);
  EXPECT_TRUE(MigrationPolicy({3, 1}).due(6));
  EXPECT_FALSE(MigrationPolicy({3, 1}).due(7));
  EXPECT_FALSE(MigrationPolicy({0, 1}).due(0));
  EXPECT_FALSE(MigrationPolicy({1, 0}).due(1));
}

TEST(MemoryRing, DeliversToBothNeighboursAndVoteIsPipelined) {
  MemoryRing ring(4);
  EXPECT_EQ(ring.migrator(0).neighbours(), 2);
  Migrant m;
  m.source_rank = 0;
  ring.migrator(0).send({m});
  EXPECT_EQ(ring.migrator(1).receive().size(), 1u);
  EXPECT_EQ(ring.migrator(3).receive().size(), 1u);
  EXPECT_TRUE(ring.migrator(2).receive().empty());
  EXPECT_TRUE(ring.migrator(1).receive().empty());
  EXPECT_EQ(MemoryRing(1).migrator(0).neighbours(), 0);
  EXPECT_EQ(MemoryRing(2).migrator(1).neighbours(), 1);

  MemoryStopVote vote(3);
  EXPECT_EQ(vote.vote(0).vote(0, StopReason::none), StopReason::none);
  EXPECT_EQ(vote.vote(1).vote(0, StopReason::time_budget), StopReason::none);
  EXPECT_EQ(vote.vote(2).vote(0, StopReason::mcr), StopReason::none);
  for (int r = 0; r < 3; ++r)
    EXPECT_EQ(vote.vote(r).vote(1, StopReason::none), StopReason::time_budget);
}

}  // namespace
}  // namespace isletune
