// The cellular island: best-ever kept, cache (no setting measured twice), MCR stop,
// migrants never re-measured, and a torture test over shapes, rates, migration
// policies and ring sizes with the in-memory ring.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "ga/island.hpp"
#include "ga/memory_ring.hpp"
#include "ga/search.hpp"
#include "test_ga_fakes.hpp"

namespace isletune {
namespace {

using testing::MemorySink;
using testing::SyntheticEvaluator;

// Highest fitness over the records (0 when none succeeded).
double best_fitness_in(const std::vector<EvaluationRecord>& rows) {
  double best = 0;
  for (const auto& r : rows)
    best = std::max(best, r.measurement.fitness());
  return best;
}

double population_best(const Island& island) {
  double best = 0;
  for (const Individual& ind : island.population())
    best = std::max(best, ind.fitness());
  return best;
}

TEST(Island, BestEverSurvivesEveryGenerationOnRandomLandscapes) {
  const SampledSet set = testing::landscape_set();
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    const Encoding enc = seed % 2 ? Encoding::parameters : Encoding::index;
    const Reindex alphabet(set.settings, enc);
    const Torus torus(4, 4);
    SyntheticEvaluator eval(testing::random_landscape(seed, 0.3));
    MemorySink sink;
    Island island(alphabet, torus, {0.8, 0.2}, seed, 0);
    island.initialize(eval, sink);
    double previous = population_best(island);
    for (int g = 0; g < 25; ++g) {
      island.step(eval, sink);
      const double now = population_best(island);
      ASSERT_GE(now, previous) << "the population lost its best individual";
      previous = now;
      const double seen = best_fitness_in(sink.evaluations);
      ASSERT_EQ(island.best().has_value(), seen > 0);
      if (seen > 0) {
        ASSERT_EQ(island.best()->second.fitness(), seen) << "best-ever is not the best seen";
        ASSERT_EQ(now, seen) << "the best seen is not in the population";
      }
    }
  }
}

// A measurement of a queued generation, taken in while generations overlap, takes its child's
// cell as it comes back (the pipeline breeds the next proposals from it), in any order, and
// the generation's best then settles into the same cell; one generation at a time, it leaves
// the population to settle(), which gives exactly the population of before.
TEST(Island, AMeasurementTakenInHoldsItsCellOnlyWhileGenerationsOverlap) {
  const SampledSet set = testing::landscape_set();
  const Reindex alphabet(set.settings, Encoding::parameters);
  const Torus torus(4, 4);
  int moved = 0;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    SyntheticEvaluator eval(testing::random_landscape(seed, 0.2));
    MemorySink sink;
    Island placed(alphabet, torus, {0.8, 0.2}, seed, 0);
    Island cached(alphabet, torus, {0.8, 0.2}, seed, 0);
    Island settled(alphabet, torus, {0.8, 0.2}, seed, 0);
    for (Island* island : {&placed, &cached, &settled}) {
      island->initialize(eval, sink);
      for (int g = 0; g < 3; ++g)
        island->step(eval, sink);
    }
    const Brood b = placed.propose_offspring();
    ASSERT_EQ(cached.propose_offspring().fresh, b.fresh);
    ASSERT_EQ(settled.propose_offspring().fresh, b.fresh);
    const std::vector<Measurement> got = eval.evaluate(b.fresh);
    const std::vector<std::optional<Measurement>> results(got.begin(), got.end());
    // Come back last first.
    for (std::size_t i = b.fresh.size(); i-- > 0;) {
      placed.take_in(b, i, got[i], true);
      cached.take_in(b, i, got[i], false);
    }
    for (int c = 0; c < torus.cells(); ++c) {
      const Individual& before = settled.population()[c];
      ASSERT_EQ(cached.population()[c].id, before.id) << "seed " << seed;
      ASSERT_GE(placed.population()[c].fitness(), before.fitness()) << "seed " << seed;
      moved += placed.population()[c].fitness() > before.fitness() ? 1 : 0;
    }
    for (Island* island : {&placed, &cached, &settled})
      island->settle(b, results, sink, 0);
    for (int c = 0; c < torus.cells(); ++c)
      ASSERT_EQ(cached.population()[c].id, settled.population()[c].id) << "seed " << seed;
    ASSERT_EQ(select_best(placed.population(), 1), select_best(settled.population(), 1))
        << "seed " << seed;
  }
  EXPECT_GT(moved, 0) << "no measurement took its cell before its generation settled";
}

// A straggler (a setting its generation settled without) whose measurement a neighbour sent
// while it was queued: no row when its generation settles, one measured row and one count when
// it comes back (the trace's rows match the generations' counts; mpi.run.pipeline.budget).
TEST(Island, AStragglerANeighbourMeasuredFirstIsRecordedOnceWhenItComesBack) {
  const SampledSet set = testing::landscape_set();
  const Reindex alphabet(set.settings, Encoding::parameters);
  const Torus torus(4, 4);
  SyntheticEvaluator eval(testing::random_landscape(5, 0.0));
  MemorySink sink;
  Island island(alphabet, torus, {0.8, 0.2}, 5, 0);
  island.initialize(eval, sink);
  const Brood b = island.propose_offspring();
  ASSERT_GE(b.fresh.size(), 2U);
  const std::vector<Measurement> got = eval.evaluate(b.fresh);
  std::vector<std::optional<Measurement>> results(got.begin(), got.end());
  const Setting straggler = b.fresh.back();
  results.back().reset();
  Migrant from_neighbour;
  from_neighbour.setting = straggler;
  from_neighbour.measurement = got.back();
  from_neighbour.measurement_only = true;
  island.immigrate({from_neighbour}, sink, 0);
  const auto measured_rows = [&] {
    return std::count_if(sink.evaluations.begin(), sink.evaluations.end(),
                         [&](const EvaluationRecord& r) {
                           return r.setting == straggler && !r.cached && !r.migrant;
                         });
  };
  const std::int64_t before = island.evaluations();
  EXPECT_EQ(island.settle(b, results, sink, 1), static_cast<int>(b.fresh.size()) - 1);
  EXPECT_EQ(measured_rows(), 0) << "a row for a setting still queued";
  island.late(straggler, got.back(), sink, 2);
  EXPECT_EQ(measured_rows(), 1);
  EXPECT_EQ(island.evaluations(), before + static_cast<std::int64_t>(b.fresh.size()));
}

TEST(Island, NoSettingIsMeasuredTwiceAndRepeatsAreRecordedAsCached) {
  const SampledSet set =
      testing::product_set({{Param::tbx, {0, 1, 2, 3}}, {Param::tby, {0, 1, 2}}});
  const Reindex alphabet(set.settings, Encoding::parameters);
  const Torus torus(4, 4);
  SyntheticEvaluator eval(testing::random_landscape(1));
  MemorySink sink;
  Island island(alphabet, torus, {0.9, 0.3}, 2, 0);
  island.initialize(eval, sink);
  for (int g = 0; g < 20; ++g)
    island.step(eval, sink);
  for (const auto& [s, n] : eval.measured)
    EXPECT_EQ(n, 1) << canonical_key(s);
  EXPECT_EQ(eval.measured.size(), island.cache_size());
  EXPECT_EQ(static_cast<std::int64_t>(eval.log.size()), island.evaluations());
  std::set<int> measuring_generations;  // one evaluator batch per generation that measured
  for (const auto& r : sink.evaluations) {
    if (!r.cached)
      measuring_generations.insert(r.generation);
  }
  EXPECT_EQ(eval.batches, static_cast<int>(measuring_generations.size()));
  const auto fresh = std::count_if(sink.evaluations.begin(), sink.evaluations.end(),
                                   [](const EvaluationRecord& r) { return !r.cached; });
  EXPECT_EQ(fresh, static_cast<long>(eval.log.size()));
  EXPECT_EQ(sink.evaluations.size(), 21u * 16u);  // one row per cell per generation
  for (std::size_t i = 0; i < sink.evaluations.size(); ++i)
    EXPECT_EQ(sink.evaluations[i].eval_id, static_cast<long>(i));
}

TEST(Island, McrStopsAtTheThreshold) {
  const SampledSet set = testing::landscape_set();
  for (const double threshold : {0.25, 0.5, 0.75}) {
    GaSettings ga;
    ga.mcr_threshold = threshold;
    ga.max_generations = 500;
    SyntheticEvaluator eval(testing::separable_ms);
    MemorySink sink;
    NoMigrator alone;
    LocalStopVote vote;
    const SearchResult r = run_island(ga, set, eval, alone, vote, sink, 3, 0);
    ASSERT_EQ(r.reason, StopReason::mcr) << threshold;
    ASSERT_FALSE(sink.generations.empty());
    EXPECT_GE(sink.generations.back().mcr, threshold);
    for (std::size_t i = 0; i + 1 < sink.generations.size(); ++i) {
      EXPECT_LT(sink.generations[i].mcr, threshold) << "should have stopped at generation " << i;
    }
  }
}

// Runs N islands of an in-memory ring in turn until they stop; returns their results.
struct RingRun {
  std::vector<std::unique_ptr<SyntheticEvaluator>> evals;
  std::vector<std::unique_ptr<MemorySink>> sinks;
  std::vector<SearchResult> results;
  std::vector<std::vector<Setting>> received;  // per island, migrant settings in order
  std::size_t sent = 0;
};

RingRun run_ring(const GaSettings& ga, const SampledSet& set, int islands, std::uint64_t seed,
                 const SyntheticEvaluator::TimeFn& landscape) {
  RingRun run;
  MemoryRing ring(islands);
  MemoryStopVote vote(islands);
  const Reindex alphabet(set.settings, ga.encoding, ga.gray);
  std::vector<std::unique_ptr<IslandSearch>> searches;
  for (int r = 0; r < islands; ++r) {
    run.evals.push_back(std::make_unique<SyntheticEvaluator>(landscape));
    run.sinks.push_back(std::make_unique<MemorySink>());
    searches.push_back(std::make_unique<IslandSearch>(ga, alphabet, *run.evals[r], ring.migrator(r),
                                                      vote.vote(r), *run.sinks[r], seed, r));
  }
  for (bool any = true; any;) {
    any = false;
    for (auto& s : searches)
      any = s->step() || any;
  }
  for (auto& s : searches)
    run.results.push_back(s->result());
  run.sent = ring.sent();
  return run;
}

// Island invariants after a ring run: stops agree, best-ever kept, migrants never
// re-measured, no setting measured twice on an island.
void check_ring(const RingRun& run, const std::string& label) {
  const int islands = static_cast<int>(run.results.size());
  for (int r = 0; r < islands; ++r) {
    SCOPED_TRACE(label + " island " + std::to_string(r));
    const auto& res = run.results[r];
    EXPECT_NE(res.reason, StopReason::none);
    EXPECT_EQ(res.generations, run.results[0].generations);
    EXPECT_EQ(res.reason, run.results[0].reason);
    const auto& rows = run.sinks[r]->evaluations;
    const double seen = best_fitness_in(rows);
    if (seen > 0) {
      ASSERT_TRUE(res.best.has_value());
      EXPECT_EQ(res.best_measurement.fitness(), seen);
    }
    for (const auto& [s, n] : run.evals[r]->measured)
      ASSERT_EQ(n, 1);
    // Position in the measurement log of each setting vs the first time it arrived.
    std::set<Setting> arrived;
    std::size_t measured_so_far = 0;
    for (const auto& row : rows) {
      if (row.migrant) {
        arrived.insert(row.setting);
        continue;
      }
      if (!row.cached) {
        ASSERT_FALSE(arrived.count(row.setting)) << "a migrant was measured again";
        ASSERT_LT(measured_so_far, run.evals[r]->log.size());
        ASSERT_EQ(run.evals[r]->log[measured_so_far], row.setting);
        ++measured_so_far;
      }
    }
    EXPECT_EQ(measured_so_far, run.evals[r]->log.size());
    EXPECT_EQ(static_cast<int>(run.sinks[r]->generations.size()), res.generations + 1);
    EXPECT_EQ(run.sinks[r]->flushes, res.generations + 1);
  }
}

TEST(IslandTorture, EveryShapeRatePolicyAndRingSizeKeepsInvariants) {
  const SampledSet set = testing::product_set(
      {{Param::tbx, {0, 1, 2, 3, 4, 5}}, {Param::tby, {0, 1, 2, 3}}, {Param::ufx, {1, 2, 4}}});
  const std::vector<std::pair<int, int>> shapes = {{1, 2}, {2, 1}, {2, 2}, {4, 4}, {3, 5}, {1, 7}};
  const std::vector<std::pair<double, double>> rates = {{0.0, 0.0}, {0.8, 0.005}, {1.0, 0.5}};
  int runs = 0;
  for (const auto& [rows, cols] : shapes) {
    for (const auto& [cx, mu] : rates) {
      for (const int interval : {0, 1, 3}) {
        for (const int count : {1, 2}) {
          for (const int islands : {1, 2, 3, 5}) {
            for (const Encoding enc : {Encoding::index, Encoding::parameters}) {
              GaSettings ga;
              ga.rows = rows;
              ga.cols = cols;
              ga.population = rows * cols;
              ga.crossover_rate = cx;
              ga.mutation_rate = mu;
              ga.migration_interval = interval;
              ga.migration_count = std::min(count, ga.population);
              ga.encoding = enc;
              ga.mcr_threshold = 0.9;
              ga.max_generations = 6;
              const std::uint64_t seed = static_cast<std::uint64_t>(runs);
              const RingRun run =
                  run_ring(ga, set, islands, seed, testing::random_landscape(seed, 0.2));
              check_ring(run, std::to_string(rows) + "x" + std::to_string(cols) + " cx " +
                                  std::to_string(cx) + " mu " + std::to_string(mu) + " every " +
                                  std::to_string(interval) + " x" + std::to_string(count) + " on " +
                                  std::to_string(islands) + " islands");
              if (islands > 1 && interval > 0) {
                EXPECT_GT(run.sent, 0u);
              } else {
                EXPECT_EQ(run.sent, 0u);
              }
              ++runs;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(runs, 6 * 3 * 3 * 2 * 4 * 2);
}

TEST(IslandMigration, ImmigrantsAreCachedNotMeasuredAndRecorded) {
  const SampledSet set = testing::landscape_set();
  const Reindex alphabet(set.settings, Encoding::index);
  const Torus torus(2, 2);
  SyntheticEvaluator eval(testing::separable_ms);
  MemorySink sink;
  Island island(alphabet, torus, {0.8, 0.01}, 1, 0);
  island.initialize(eval, sink);
  // The optimum arrives from a neighbour with its measurement.
  Setting optimum = set.settings.front();
  optimum[Param::tbx] = 5;
  optimum[Param::tby] = 2;
  optimum[Param::mfx] = 3;
  optimum[Param::ufx] = 1;
  Migrant m;
  m.setting = optimum;
  m.measurement.status = Status::ok;
  m.measurement.median_ms = 1.0;
  m.source_rank = 3;
  island.immigrate({m}, sink, 7.0);
  EXPECT_TRUE(island.cached(optimum));
  EXPECT_EQ(eval.measured.count(optimum), 0u);
  EXPECT_EQ(island.best()->first, optimum);
  ASSERT_TRUE(sink.evaluations.back().migrant);
  EXPECT_GE(sink.evaluations.back().cell, 0);
  EXPECT_EQ(sink.evaluations.back().wall_s, 7.0);
  for (int g = 0; g < 30; ++g)
    island.step(eval, sink);
  EXPECT_EQ(eval.measured.count(optimum), 0u) << "the immigrant was measured";
}

TEST(IslandRing, GenerationBudgetStopsAtTheSameGenerationAsALoneIsland) {
  // The ring's vote answers one generation late; the generation budget is the same on
  // every island, so it must not cost that extra generation.
  const SampledSet set = testing::landscape_set();
  GaSettings ga;
  ga.mcr_threshold = 0;
  ga.mutation_rate = 0.05;
  ga.max_generations = 7;
  for (int islands : {1, 2, 3}) {
    const RingRun run = run_ring(ga, set, islands, 9, testing::random_landscape(9, 0.1));
    for (int r = 0; r < islands; ++r) {
      EXPECT_EQ(run.results[r].reason, StopReason::max_generations) << islands;
      EXPECT_EQ(run.results[r].generations, 7) << islands;
      EXPECT_EQ(run.sinks[r]->generations.back().generation, 7) << islands;
    }
  }
}

}  // namespace
}  // namespace isletune
