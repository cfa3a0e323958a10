// Search drivers: determinism, snapshot/resume, stop reasons, validation, and search
// quality against random search on equal budgets over synthetic landscapes.
#include <gtest/gtest.h>

#include <cstdio>

#include "common/error.hpp"
#include "ga/memory_ring.hpp"
#include "ga/search.hpp"
#include "test_ga_fakes.hpp"

namespace isletune {
namespace {

using testing::MemorySink;
using testing::SyntheticEvaluator;

// Record fields that make up a trajectory.
struct Row {
  std::int64_t eval_id;
  int generation;
  int cell;
  std::string key;
  bool cached;
  bool migrant;
  double wall_s;
  auto operator<=>(const Row&) const = default;
};

std::vector<Row> rows_of(const MemorySink& sink, int from_generation = 0) {
  std::vector<Row> out;
  for (const auto& r : sink.evaluations) {
    if (r.generation >= from_generation) {
      out.push_back({r.eval_id, r.generation, r.cell, canonical_key(r.setting), r.cached, r.migrant,
                     r.wall_s});
    }
  }
  return out;
}

GaSettings small_ga(Encoding enc) {
  GaSettings ga;
  ga.encoding = enc;
  ga.mutation_rate = 0.05;
  ga.mcr_threshold = 0.8;
  ga.max_generations = 40;
  return ga;
}

TEST(Search, SameSeedSameTrajectoryOtherSeedDiffers) {
  const SampledSet set = testing::landscape_set();
  for (const Encoding enc : {Encoding::index, Encoding::parameters}) {
    const GaSettings ga = small_ga(enc);
    MemorySink a, b, c;
    for (auto [sink, seed] : {std::pair{&a, 5}, std::pair{&b, 5}, std::pair{&c, 6}}) {
      SyntheticEvaluator eval(testing::random_landscape(9));
      NoMigrator alone;
      LocalStopVote vote;
      (void)run_island(ga, set, eval, alone, vote, *sink, seed, 0);
    }
    EXPECT_EQ(rows_of(a), rows_of(b));
    EXPECT_NE(rows_of(a), rows_of(c));
  }
}

TEST(Search, ResumingFromAnySnapshotGivesTheSameTrajectory) {
  const SampledSet set = testing::landscape_set();
  for (const Encoding enc : {Encoding::index, Encoding::parameters}) {
    GaSettings ga = small_ga(enc);
    ga.time_budget_s = 60;  // the clock must continue across the resume too
    MemorySink full;
    std::vector<IslandState> snapshots;
    SearchHooks hooks;
    hooks.on_snapshot = [&](const IslandState& s) { snapshots.push_back(s); };
    SyntheticEvaluator eval(testing::random_landscape(4));
    NoMigrator alone;
    LocalStopVote vote;
    const SearchResult whole = run_island(ga, set, eval, alone, vote, full, 11, 0, hooks);
    ASSERT_GE(snapshots.size(), 4u);
    for (const std::size_t k : {std::size_t{0}, snapshots.size() / 2, snapshots.size() - 2}) {
      MemorySink rest;
      SyntheticEvaluator fresh(testing::random_landscape(4));
      const SearchResult resumed =
          run_island(ga, set, fresh, alone, vote, rest, 11, 0, {}, snapshots[k]);
      const int next = snapshots[k].generation + 1;
      EXPECT_EQ(rows_of(rest), rows_of(full, next)) << "resumed after generation " << k;
      EXPECT_EQ(resumed.reason, whole.reason);
      EXPECT_EQ(resumed.generations, whole.generations);
      EXPECT_EQ(resumed.evaluations, whole.evaluations);
      EXPECT_EQ(resumed.best, whole.best);
      for (const auto& [s, n] : fresh.measured)
        EXPECT_EQ(eval.measured.at(s), 1);
    }
    // A finished search resumes as finished.
    MemorySink none;
    SyntheticEvaluator idle(testing::random_landscape(4));
    (void)run_island(ga, set, idle, alone, vote, none, 11, 0, {}, snapshots.back());
    EXPECT_TRUE(none.evaluations.empty());
  }
}

TEST(Search, BudgetsAndSignalStopWithTheirReason) {
  const SampledSet set = testing::landscape_set();
  GaSettings ga = small_ga(Encoding::parameters);
  ga.mcr_threshold = 1.0;
  ga.mutation_rate = 0.3;  // keeps the population from converging before the budgets
  ga.max_generations = 1000;
  NoMigrator alone;
  LocalStopVote vote;
  {
    ga.max_evaluations = 100;
    SyntheticEvaluator eval(testing::random_landscape(2));
    MemorySink sink;
    const SearchResult r = run_island(ga, set, eval, alone, vote, sink, 1, 0);
    EXPECT_EQ(r.reason, StopReason::max_evaluations);
    EXPECT_GE(r.evaluations, 100);
    EXPECT_LT(r.evaluations, 100 + ga.population);
    ga.max_evaluations = 0;
  }
  {
    ga.time_budget_s = 20;  // 0.5 s per measurement
    SyntheticEvaluator eval(testing::random_landscape(2));
    MemorySink sink;
    const SearchResult r = run_island(ga, set, eval, alone, vote, sink, 1, 0);
    EXPECT_EQ(r.reason, StopReason::time_budget);
    EXPECT_GE(eval.clock_s(), 20);
    EXPECT_LT(sink.generations[sink.generations.size() - 2].wall_s, 20);
    ga.time_budget_s = 0;
  }
  {
    int polls = 0;
    SearchHooks hooks;
    hooks.interrupted = [&] { return ++polls == 3; };
    double t = 0;
    hooks.wall_clock = [&] { return t += 0.25; };
    SyntheticEvaluator eval(testing::random_landscape(2));
    MemorySink sink;
    const SearchResult r = run_island(ga, set, eval, alone, vote, sink, 1, 0, hooks);
    EXPECT_EQ(r.reason, StopReason::signal);
    EXPECT_EQ(r.generations, 2);
    EXPECT_EQ(sink.generations.back().wait_s, 0.25);  // around the vote only (no neighbours)
  }
}

TEST(Search, McrThresholdZeroTurnsTheMcrStopOff) {
  // With no mutation and elitist per-cell replacement the population collapses onto one
  // genome; only the generation budget may end the run when the MCR stop is off.
  const SampledSet set = testing::landscape_set();
  GaSettings ga = small_ga(Encoding::index);
  ga.mutation_rate = 0;
  ga.max_generations = 60;
  NoMigrator alone;
  LocalStopVote vote;
  ga.mcr_threshold = 1.0;
  {
    SyntheticEvaluator eval(testing::random_landscape(3));
    MemorySink sink;
    const SearchResult r = run_island(ga, set, eval, alone, vote, sink, 5, 0);
    ASSERT_EQ(r.reason, StopReason::mcr);  // the landscape does converge
    ASSERT_LT(r.generations, 60);
  }
  ga.mcr_threshold = 0;
  SyntheticEvaluator eval(testing::random_landscape(3));
  MemorySink sink;
  const SearchResult r = run_island(ga, set, eval, alone, vote, sink, 5, 0);
  EXPECT_EQ(r.reason, StopReason::max_generations);
  EXPECT_GE(sink.generations.back().mcr, 0.9);  // MCR on offspring: nearly all repeats
}

TEST(Search, GaSettingsValidationNamesTheKey) {
  const auto message = [](GaSettings ga) {
    try {
      ga.validate();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(message(GaSettings{}), "");
  GaSettings ga;
  ga.population = 12;
  EXPECT_NE(message(ga).find("ga.population"), std::string::npos);
  ga = {};
  ga.crossover_rate = 1.5;
  EXPECT_NE(message(ga).find("ga.crossover_rate"), std::string::npos);
  ga = {};
  ga.migration_count = 17;
  EXPECT_NE(message(ga).find("ga.migration.count"), std::string::npos);
  ga = {};
  ga.mcr_threshold = -0.1;
  EXPECT_NE(message(ga).find("ga.mcr_threshold"), std::string::npos);
  ga = {};
  ga.mcr_threshold = 1.01;
  EXPECT_NE(message(ga).find("ga.mcr_threshold"), std::string::npos);
  ga = {};
  ga.max_generations = 0;
  EXPECT_NE(message(ga).find("budget"), std::string::npos);
  ga = {};
  ga.rows = 1;
  ga.cols = 1;
  ga.population = 1;
  EXPECT_NE(message(ga).find("ga.population"), std::string::npos);
}

TEST(Search, RandomBaselinesRecordEveryDrawAndHonourBudgets) {
  const SampledSet set = testing::landscape_set();
  GaSettings ga;
  ga.max_evaluations = 200;
  LocalStopVote vote;
  {
    SyntheticEvaluator eval(testing::separable_ms);
    MemorySink sink;
    const SearchResult r = run_sampled_random(ga, set, eval, vote, sink, 3, 0);
    EXPECT_EQ(r.reason, StopReason::max_evaluations);
    EXPECT_EQ(r.evaluations, 208);  // 13 generations of 16
    for (const auto& [s, n] : eval.measured)
      EXPECT_EQ(n, 1);
    EXPECT_EQ(sink.evaluations.size(), 208u);
  }
  {
    // Drawing from 4 settings only: repeats come from the cache, then the draws run dry.
    int left = 40;
    const auto draw = [&](Rng& rng) -> std::optional<Setting> {
      if (left-- <= 0)
        return std::nullopt;
      return set.settings[rng.below(4)];
    };
    SyntheticEvaluator eval(testing::separable_ms);
    MemorySink sink;
    const SearchResult r = run_random(ga, draw, eval, vote, sink, 3, 0);
    EXPECT_EQ(r.reason, StopReason::max_evaluations);
    EXPECT_LE(eval.log.size(), 4u);
    EXPECT_EQ(sink.evaluations.size(), 40u);
    EXPECT_EQ(std::count_if(sink.evaluations.begin(), sink.evaluations.end(),
                            [](const EvaluationRecord& e) { return !e.cached; }),
              static_cast<long>(eval.log.size()));
  }
  {
    // A draw that never runs dry over 4 settings: the evaluation budget can never be
    // spent, so the loop must stop by itself once every draw is a repeat.
    SyntheticEvaluator eval(testing::separable_ms);
    MemorySink sink;
    const auto draw = [&](Rng& rng) -> std::optional<Setting> {
      return set.settings[rng.below(4)];
    };
    const SearchResult r = run_random(ga, draw, eval, vote, sink, 3, 0);
    EXPECT_EQ(r.reason, StopReason::max_evaluations);
    EXPECT_EQ(eval.log.size(), 4u);
    EXPECT_LT(r.generations, 200);
  }
}

TEST(Search, IslandGaWithoutMcrStopNeedsAGenerationLimit) {
  const SampledSet set = testing::landscape_set();
  GaSettings ga = small_ga(Encoding::index);
  ga.mcr_threshold = 0;
  ga.max_generations = 0;
  ga.max_evaluations = 100000;
  NoMigrator alone;
  LocalStopVote vote;
  SyntheticEvaluator eval(testing::random_landscape(3));
  MemorySink sink;
  try {
    (void)run_island(ga, set, eval, alone, vote, sink, 5, 0);
    FAIL() << "a run that could never stop was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("ga.mcr_threshold"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("max_generations"), std::string::npos);
  }
  EXPECT_TRUE(eval.log.empty());
}

// How often each strategy finds the optimum (1.0 ms) over `seeds` runs on equal budgets.
struct Hits {
  int ga = 0;
  int random = 0;
};

Hits compare(const SyntheticEvaluator::TimeFn& landscape, Encoding enc, int budget, int seeds,
             int islands) {
  const SampledSet set = testing::landscape_set();
  Hits hits;
  for (int seed = 0; seed < seeds; ++seed) {
    GaSettings ga;
    ga.encoding = enc;
    ga.mutation_rate = 0.02;
    ga.mcr_threshold = 0;  // the budget alone ends the run (MCR on offspring may stop first)
    ga.max_generations = 200;
    ga.max_evaluations = budget / islands;
    MemoryRing ring(islands);
    MemoryStopVote vote(islands);
    const Reindex alphabet(set.settings, ga.encoding);
    std::vector<std::unique_ptr<SyntheticEvaluator>> evals;
    std::vector<std::unique_ptr<MemorySink>> sinks;
    std::vector<std::unique_ptr<IslandSearch>> searches;
    for (int r = 0; r < islands; ++r) {
      evals.push_back(std::make_unique<SyntheticEvaluator>(landscape));
      sinks.push_back(std::make_unique<MemorySink>());
      searches.push_back(std::make_unique<IslandSearch>(ga, alphabet, *evals[r], ring.migrator(r),
                                                        vote.vote(r), *sinks[r], seed, r));
    }
    for (bool any = true; any;) {
      any = false;
      for (auto& s : searches)
        any = s->step() || any;
    }
    std::int64_t used = 0;
    double best = 1e9;
    for (int r = 0; r < islands; ++r) {
      used += searches[r]->result().evaluations;
      if (searches[r]->result().best)
        best = std::min(best, searches[r]->result().best_measurement.median_ms);
    }
    hits.ga += best == 1.0;
    // Random search over the sampled set with as many measurements as the GA used.
    GaSettings rnd;
    rnd.max_evaluations = used;
    rnd.population = 1;
    rnd.rows = 1;
    rnd.cols = 1;
    rnd.population = 2;
    rnd.cols = 2;
    SyntheticEvaluator eval(landscape);
    MemorySink sink;
    LocalStopVote local;
    const SearchResult r = run_sampled_random(rnd, set, eval, local, sink, 1000 + seed, 0);
    hits.random += r.best && r.best_measurement.median_ms == 1.0;
  }
  return hits;
}

TEST(SearchQuality, GaFindsTheOptimumFarMoreOftenThanRandomSearch) {
  const int seeds = 30;
  for (const Encoding enc : {Encoding::index, Encoding::parameters}) {
    for (const int islands : {1, 4}) {
      const Hits sep = compare(testing::separable_ms, enc, 160, seeds, islands);
      const Hits dec = compare(testing::deceptive_ms, enc, 160, seeds, islands);
      std::printf(
          "encoding %s islands %d: separable GA %d/%d random %d/%d; deceptive GA %d/%d random "
          "%d/%d\n",
          std::string(encoding_name(enc)).c_str(), islands, sep.ga, seeds, sep.random, seeds,
          dec.ga, seeds, dec.random, seeds);
      EXPECT_GE(sep.ga, 2 * sep.random + 5) << encoding_name(enc) << " separable";
      EXPECT_GE(dec.ga, 2 * dec.random + 5) << encoding_name(enc) << " deceptive";
    }
  }
}

}  // namespace
}  // namespace isletune
