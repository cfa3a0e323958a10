// Search drivers: determinism, snapshot/resume, stop reasons, validation, and search
// quality against random search on equal budgets over synthetic landscapes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <vector>

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
    std::vector<SearchState> snapshots;
    SearchHooks hooks;
    hooks.on_snapshot = [&](const SearchState& s) { snapshots.push_back(s); };
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
    EXPECT_EQ(r.evaluations, 100);  // a cap: the last batch is trimmed
    EXPECT_EQ(eval.log.size(), 100u);
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
  for (const int trees : {-2, GaSettings::kMaxModelTrees + 1}) {
    ga = {};
    ga.model_trees = trees;
    EXPECT_NE(message(ga).find("ga.model_trees"), std::string::npos) << trees;
  }
  ga.model_trees = 0;
  EXPECT_EQ(message(ga), "");
}

// ga.model_trees sets the online model's forest: 0 runs the island as the ridge alone does
// (the forest's knob at 0), a tree count the same as the knob at that count, and the
// default keeps the model's own forest.
TEST(Search, ModelTreesSetTheOnlineModelsForest) {
  const SampledSet set = testing::landscape_set();
  const auto run = [&](int config_trees, int knob_trees) {
    GaSettings ga = small_ga(Encoding::parameters);
    ga.model_picks = 6;
    ga.max_generations = 12;
    ga.model_trees = config_trees;
    IslandExtras extras;
    extras.model.forest.trees = knob_trees;
    SyntheticEvaluator eval(testing::random_landscape(4));
    NoMigrator alone;
    LocalStopVote vote;
    MemorySink sink;
    (void)run_island(ga, set, eval, alone, vote, sink, 7, 0, {}, std::nullopt, std::move(extras));
    return rows_of(sink);
  };
  const int trees = ModelKnobs{}.forest.trees;
  ASSERT_GT(trees, 0);
  const auto ridge = run(0, trees);
  EXPECT_EQ(ridge, run(-1, 0));
  EXPECT_EQ(run(-1, trees), run(trees, 0));
  EXPECT_NE(ridge, run(-1, trees));
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
    EXPECT_EQ(r.evaluations, 200);  // 12 generations of 16, then 8 of the 13th
    EXPECT_EQ(r.generations, 12);
    for (const auto& [s, n] : eval.measured)
      EXPECT_EQ(n, 1);
    EXPECT_EQ(sink.evaluations.size(), 200u);
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
    // Only new measurements are rows; the repeats are counted per generation.
    EXPECT_EQ(sink.evaluations.size(), eval.log.size());
    int hits = 0;
    for (const auto& g : sink.generations)
      hits += g.cache_hits;
    EXPECT_EQ(hits + static_cast<int>(sink.evaluations.size()), 40);
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

TEST(Search, IslandGaWithoutMcrStopSpendsAnExplicitBudget) {
  const SampledSet set = testing::landscape_set();
  GaSettings ga = small_ga(Encoding::index);
  ga.mcr_threshold = 0;  // restart after a generation that measured nothing new
  ga.max_generations = 0;
  ga.max_evaluations = 150;
  ASSERT_GT(set.size(), 150u);
  NoMigrator alone;
  LocalStopVote vote;
  SyntheticEvaluator eval(testing::random_landscape(3));
  MemorySink sink;
  const SearchResult r = run_island(ga, set, eval, alone, vote, sink, 5, 0);
  EXPECT_EQ(r.reason, StopReason::max_evaluations);
  EXPECT_EQ(r.evaluations, 150);
}

// An island whose best stops improving restarts after IslandExtras::stale_restart of its
// measurements, though its offspring are all new (the MCR never calls it converged): on a
// flat landscape the first measurement is the best there will be.
TEST(Search, AnIslandWhoseBestGoesStaleRestarts) {
  const SampledSet set = testing::landscape_set();
  GaSettings ga = small_ga(Encoding::index);
  ga.mcr_threshold = 1.0;  // only a generation of nothing but repeats is converged
  ga.max_generations = 0;
  ga.max_evaluations = 200;
  ASSERT_GT(set.size(), 400u);
  for (const std::int64_t stale : {std::int64_t{0}, std::int64_t{40}}) {
    NoMigrator alone;
    LocalStopVote vote;
    SyntheticEvaluator eval([](const Setting&) { return 2.0; });
    MemorySink sink;
    IslandExtras extras;
    extras.stale_restart = stale;
    const SearchResult r =
        run_island(ga, set, eval, alone, vote, sink, 5, 0, {}, std::nullopt, std::move(extras));
    EXPECT_EQ(r.evaluations, 200);
    // Measurements made before each restart's generation.
    std::vector<std::int64_t> at;
    for (const GenerationRecord& g : sink.generations) {
      if (g.restart == 0)
        continue;
      std::int64_t before = 0;
      for (const EvaluationRecord& e : sink.evaluations)
        before += e.generation < g.generation && !e.cached && !e.migrant ? 1 : 0;
      at.push_back(before);
    }
    if (stale == 0) {
      EXPECT_TRUE(at.empty()) << "a restart without a stale best or a converged island";
      continue;
    }
    // Generation 0 holds the best; the first restart comes once 40 more are measured, each
    // later one 40 after the one before (a generation of 16 may pass the mark).
    ASSERT_GE(at.size(), 3u);
    EXPECT_GE(at[0], 16 + 40);
    EXPECT_LE(at[0], 16 + 40 + 16);
    for (std::size_t i = 1; i < at.size(); ++i) {
      EXPECT_GE(at[i] - at[i - 1], 40) << "restart " << i;
      EXPECT_LE(at[i] - at[i - 1], 40 + 2 * 16) << "restart " << i;
    }
  }
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
      // 192 = 48 per island of 4: the GA's last batch is trimmed to the budget now (it ran
      // up to one batch past the old 160 = 4 x 40), so the budget is the one it really used.
      const Hits sep = compare(testing::separable_ms, enc, 192, seeds, islands);
      const Hits dec = compare(testing::deceptive_ms, enc, 192, seeds, islands);
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

// ---- one loop for every strategy --------------------------------------------------------

enum class Kind { island, global, random, sampled };
constexpr Kind kKinds[] = {Kind::island, Kind::global, Kind::random, Kind::sampled};

const char* kind_name(Kind k) {
  constexpr const char* names[] = {"island-ga", "global-ga", "random", "sampled-random"};
  return names[static_cast<int>(k)];
}

// Runs strategy `k` over the 1024-setting landscape set on one island.
SearchResult run_kind(Kind k, const GaSettings& ga, Evaluator& eval, TraceSink& sink,
                      std::uint64_t seed, const SearchHooks& hooks = {},
                      const std::optional<SearchState>& resume = std::nullopt) {
  static const SampledSet set = testing::landscape_set();
  LocalStopVote vote;
  NoMigrator alone;
  switch (k) {
    case Kind::island:
      return run_island(ga, set, eval, alone, vote, sink, seed, 0, hooks, resume);
    case Kind::global:
      return run_global_ga(ga, set.settings, eval, vote, sink, seed, 0, hooks, resume);
    case Kind::random: {
      const auto draw = [](Rng& rng) -> std::optional<Setting> {
        return set.settings[rng.below(set.settings.size())];
      };
      return run_random(ga, draw, eval, vote, sink, seed, 0, hooks, resume);
    }
    case Kind::sampled:
      return run_sampled_random(ga, set, eval, vote, sink, seed, 0, hooks, resume);
  }
  return {};
}

struct GenRow {
  int generation;
  double wall_s;
  double best_ms;
  double mean_fitness;
  double mcr;
  int unique_genomes;
  int evaluations;
  int cache_hits;
  bool operator==(const GenRow& o) const {
    const auto same = [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); };
    return generation == o.generation && wall_s == o.wall_s && same(best_ms, o.best_ms) &&
           mean_fitness == o.mean_fitness && mcr == o.mcr && unique_genomes == o.unique_genomes &&
           evaluations == o.evaluations && cache_hits == o.cache_hits;
  }
};

std::vector<GenRow> generations_of(const MemorySink& sink, int from_generation = 0) {
  std::vector<GenRow> out;
  for (const auto& g : sink.generations) {
    if (g.generation >= from_generation) {
      out.push_back({g.generation, g.wall_s, g.best_ms, g.mean_fitness, g.mcr, g.unique_genomes,
                     g.evaluations, g.cache_hits});
    }
  }
  return out;
}

GaSettings loop_ga() {
  GaSettings ga = small_ga(Encoding::parameters);
  ga.mcr_threshold = 0.9;
  ga.max_generations = 30;
  ga.time_budget_s = 150;  // the clock continues across a resume
  return ga;
}

TEST(SearchLoop, SameSeedSameTraceOtherSeedDiffersForEveryStrategy) {
  for (const Kind k : kKinds) {
    MemorySink a, b, c;
    for (auto [sink, seed] : {std::pair{&a, 5}, std::pair{&b, 5}, std::pair{&c, 6}}) {
      SyntheticEvaluator eval(testing::random_landscape(9));
      (void)run_kind(k, loop_ga(), eval, *sink, seed);
    }
    EXPECT_EQ(rows_of(a), rows_of(b)) << kind_name(k);
    EXPECT_TRUE(generations_of(a) == generations_of(b)) << kind_name(k);
    EXPECT_NE(rows_of(a), rows_of(c)) << kind_name(k);
  }
}

TEST(SearchLoop, EveryStrategyResumesFromAnySnapshotWithTheUninterruptedTrace) {
  for (const Kind k : kKinds) {
    SCOPED_TRACE(kind_name(k));
    const GaSettings ga = loop_ga();
    MemorySink full;
    std::vector<SearchState> snapshots;
    SearchHooks hooks;
    hooks.on_snapshot = [&](const SearchState& s) { snapshots.push_back(s); };
    SyntheticEvaluator eval(testing::random_landscape(4));
    const SearchResult whole = run_kind(k, ga, eval, full, 11, hooks);
    ASSERT_GE(snapshots.size(), 4u);
    for (const std::size_t i : {std::size_t{0}, snapshots.size() / 2, snapshots.size() - 2}) {
      MemorySink rest;
      SyntheticEvaluator fresh(testing::random_landscape(4));
      // Through the checkpoint's bytes, as a real resume does.
      const SearchResult resumed = run_kind(k, ga, fresh, rest, 11, {}, snapshots[i]);
      const int next = snapshots[i].generation + 1;
      EXPECT_EQ(rows_of(rest), rows_of(full, next)) << "after snapshot " << i;
      EXPECT_TRUE(generations_of(rest) == generations_of(full, next)) << "after snapshot " << i;
      EXPECT_EQ(resumed.reason, whole.reason);
      EXPECT_EQ(resumed.generations, whole.generations);
      EXPECT_EQ(resumed.evaluations, whole.evaluations);
      EXPECT_EQ(resumed.best, whole.best);
      for (const auto& [s, n] : fresh.measured)
        EXPECT_EQ(eval.measured.at(s), 1) << "measured again after the resume";
    }
    // A finished search resumes as finished.
    MemorySink none;
    SyntheticEvaluator idle(testing::random_landscape(4));
    (void)run_kind(k, ga, idle, none, 11, {}, snapshots.back());
    EXPECT_TRUE(none.evaluations.empty());
    EXPECT_TRUE(idle.log.empty());
  }
}

TEST(SearchLoop, DamagedStrategyStateIsAnInputError) {
  SearchHooks hooks;
  std::optional<SearchState> last;
  hooks.on_snapshot = [&](const SearchState& s) { last = s; };
  for (const Kind k : kKinds) {
    SyntheticEvaluator eval(testing::random_landscape(4));
    MemorySink sink;
    GaSettings ga = loop_ga();
    ga.max_generations = 2;
    (void)run_kind(k, ga, eval, sink, 3, hooks);
    ASSERT_TRUE(last);
    SearchState bad = *last;
    bad.stopped = StopReason::none;
    bad.strategy.resize(bad.strategy.size() / 2);
    SyntheticEvaluator fresh(testing::random_landscape(4));
    EXPECT_THROW((void)run_kind(k, ga, fresh, sink, 3, {}, bad), InputError) << kind_name(k);
  }
}

TEST(SearchLoop, EvaluationBudgetIsACapForEveryStrategy) {
  for (const std::int64_t budget : {std::int64_t{7}, std::int64_t{100}, std::int64_t{250}}) {
    for (const Kind k : kKinds) {
      GaSettings ga = loop_ga();
      ga.mutation_rate = 0.5;
      ga.mcr_threshold = 0;
      ga.max_generations = 1000;
      ga.time_budget_s = 0;
      ga.max_evaluations = budget;
      SyntheticEvaluator eval(testing::random_landscape(2));
      MemorySink sink;
      const SearchResult r = run_kind(k, ga, eval, sink, 1);
      EXPECT_EQ(r.reason, StopReason::max_evaluations) << kind_name(k) << " " << budget;
      EXPECT_EQ(r.evaluations, budget) << kind_name(k);
      EXPECT_EQ(static_cast<std::int64_t>(eval.log.size()), budget) << kind_name(k);
      int recorded = 0;
      for (const auto& g : sink.generations)
        recorded += g.evaluations;
      EXPECT_EQ(recorded, budget) << kind_name(k);
    }
  }
}

TEST(SearchLoop, EvaluationBudgetIsACapOnEveryIslandOfARing) {
  // The pipelined vote stops the ring one generation after the first island spent its
  // budget; the islands measure nothing beyond it meanwhile.
  const SampledSet set = testing::landscape_set();
  GaSettings ga = small_ga(Encoding::parameters);
  ga.mutation_rate = 0.5;
  ga.mcr_threshold = 0;
  ga.max_generations = 1000;
  ga.max_evaluations = 90;
  const int islands = 3;
  MemoryRing ring(islands);
  MemoryStopVote vote(islands);
  const Reindex alphabet(set.settings, ga.encoding);
  std::vector<std::unique_ptr<SyntheticEvaluator>> evals;
  std::vector<std::unique_ptr<MemorySink>> sinks;
  std::vector<std::unique_ptr<IslandSearch>> searches;
  for (int r = 0; r < islands; ++r) {
    evals.push_back(std::make_unique<SyntheticEvaluator>(testing::random_landscape(2)));
    sinks.push_back(std::make_unique<MemorySink>());
    searches.push_back(std::make_unique<IslandSearch>(ga, alphabet, *evals[r], ring.migrator(r),
                                                      vote.vote(r), *sinks[r], 7, r));
  }
  for (bool any = true; any;) {
    any = false;
    for (auto& s : searches)
      any = s->step() || any;
  }
  for (int r = 0; r < islands; ++r) {
    EXPECT_EQ(searches[r]->result().reason, StopReason::max_evaluations);
    EXPECT_LE(evals[r]->log.size(), 90u) << "island " << r;
  }
  EXPECT_EQ(evals[0]->log.size(), 90u);
}

TEST(SearchLoop, ConvergedIslandCountsCacheHitsInsteadOfWritingRows) {
  // No mutation, no MCR stop: the island narrows down and then mostly repeats itself
  // (unique cells keep its cells distinct, so it still finds a new setting now and then).
  const SampledSet set = testing::landscape_set();
  GaSettings ga = small_ga(Encoding::index);
  ga.mutation_rate = 0;
  ga.mcr_threshold = 0;
  ga.max_generations = 300;
  SyntheticEvaluator eval(testing::random_landscape(3));
  MemorySink sink;
  NoMigrator alone;
  LocalStopVote vote;
  const SearchResult r = run_island(ga, set, eval, alone, vote, sink, 5, 0);
  EXPECT_EQ(r.generations, 300);
  EXPECT_EQ(sink.evaluations.size(), eval.log.size());  // a row per new measurement only
  EXPECT_LT(sink.evaluations.size(), 600u);             // of 301 * 16 proposals
  int hits = 0;
  for (const auto& g : sink.generations) {
    hits += g.cache_hits;
    EXPECT_EQ(g.cache_hits + g.evaluations, ga.population) << "generation " << g.generation;
  }
  EXPECT_EQ(hits + static_cast<int>(sink.evaluations.size()), 301 * ga.population);
}

TEST(SearchLoop, WaitIncludesEveryCollectiveOfTheGeneration) {
  // A fake wall clock: the vote takes 1 s, the generation hook (the progress gather of a
  // run) 10 s; both are waiting and must show in wait_s.
  double t = 0;
  struct SlowVote final : StopVote {
    double* clock;
    StopReason vote(int, StopReason wish) override {
      *clock += 1.0;
      return wish;
    }
  } vote;
  vote.clock = &t;
  SearchHooks hooks;
  hooks.wall_clock = [&] { return t; };
  hooks.on_generation = [&](const GenerationRecord&) { t += 10.0; };
  GaSettings ga = small_ga(Encoding::index);
  ga.max_generations = 3;
  SyntheticEvaluator eval(testing::random_landscape(3));
  MemorySink sink;
  NoMigrator alone;
  (void)run_island(ga, testing::landscape_set(), eval, alone, vote, sink, 5, 0, hooks);
  ASSERT_FALSE(sink.generations.empty());
  for (const auto& g : sink.generations)
    EXPECT_EQ(g.wait_s, 11.0) << "generation " << g.generation;
}

TEST(SearchLoop, SharedMeasurementsWriteNoMigrationRows) {
  // Two islands, one emigrant per generation: each generation also shares its other new
  // measurements as measurement-only migrants, which write no migration row on either
  // side (docs/trace.md), so each generation has exactly one sent and one received row.
  const SampledSet set = testing::landscape_set();
  GaSettings ga = small_ga(Encoding::index);
  ga.mcr_threshold = 0;
  ga.max_generations = 6;
  ga.migration_count = 1;
  MemoryRing ring(2);
  MemoryStopVote vote(2);
  const Reindex alphabet(set.settings, ga.encoding);
  std::vector<std::unique_ptr<SyntheticEvaluator>> evals;
  std::vector<std::unique_ptr<MemorySink>> sinks;
  std::vector<std::unique_ptr<IslandSearch>> searches;
  for (int r = 0; r < 2; ++r) {
    evals.push_back(std::make_unique<SyntheticEvaluator>(testing::random_landscape(3)));
    sinks.push_back(std::make_unique<MemorySink>());
    searches.push_back(std::make_unique<IslandSearch>(ga, alphabet, *evals[r], ring.migrator(r),
                                                      vote.vote(r), *sinks[r], 7, r));
  }
  for (bool any = true; any;) {
    any = false;
    for (auto& s : searches)
      any = s->step() || any;
  }
  for (int r = 0; r < 2; ++r) {
    const MemorySink& sink = *sinks[r];
    ASSERT_FALSE(sink.generations.empty());
    // More was measured than one emigrant per generation: there was something to share.
    EXPECT_GT(evals[r]->log.size(), sink.generations.size());
    std::map<std::pair<int, int>, int> rows;  // (generation, direction) -> rows
    for (const MigrationRecord& m : sink.migrations)
      ++rows[{m.generation, m.direction}];
    for (const auto& [at, n] : rows)
      EXPECT_EQ(n, 1) << "rank " << r << " generation " << at.first << " direction " << at.second;
    // A sent and a received row per generation (the first or last may lack the receive).
    EXPECT_GE(rows.size(), 2 * sink.generations.size() - 1) << "rank " << r;
  }
}

}  // namespace
}  // namespace isletune
