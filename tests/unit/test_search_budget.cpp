// Spending an explicit budget (restarts of converged islands), sample epochs that keep every
// setting reachable, the naive-equivalent setting in generation 0, and the settings that
// switch them on; in replay on the shipped synthetic dataset.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "config/config.hpp"
#include "eval/replay/replay_evaluator.hpp"
#include "ga/memory_ring.hpp"
#include "ga/search.hpp"
#include "sample/predictor.hpp"
#include "sample/sampler.hpp"
#include "sample/setting_source.hpp"
#include "test_ga_fakes.hpp"
#include "trace/reader.hpp"
#include "trace/replay_dataset.hpp"

namespace isletune {
namespace {

using testing::MemorySink;

const std::filesystem::path kDataset =
    std::filesystem::path(ISLETUNE_TEST_DATA) / "synthetic-star2d1r.h5";

// The synthetic dataset as a problem: its space, its recorded valid settings, the optimum.
struct Recorded {
  Stencil stencil;
  Config config;
  std::optional<Space> space;
  ReplayEvaluator replay;
  std::vector<Setting> settings;  // recorded and valid
  Setting optimum;
  double optimum_ms = std::numeric_limits<double>::infinity();
};

const Recorded& recorded() {
  static const Recorded r = [] {
    Config c = parse_config(TraceReader(kDataset).config_yaml(), kDataset.string(),
                            kDataset.parent_path());
    Recorded out{resolve_stencil(c), c, std::nullopt, load_replay(kDataset), {}, {}};
    out.space.emplace(out.stencil, c.grid, out.replay.limits(), space_values(c));
    for (const Setting& s : out.replay.candidates()) {
      if (out.space->valid(s))
        out.settings.push_back(s);
    }
    const std::vector<Measurement> m = out.replay.evaluate(out.settings);
    for (std::size_t i = 0; i < m.size(); ++i) {
      if (m[i].ok() && m[i].median_ms < out.optimum_ms) {
        out.optimum_ms = m[i].median_ms;
        out.optimum = out.settings[i];
      }
    }
    return out;
  }();
  return r;
}

SampledSet whole_set() {
  SampledSet set;
  set.settings = recorded().settings;
  return set;
}

TEST(SearchBudget, ConvergedIslandsRestartAndSpendTheBudget) {
  ASSERT_GT(recorded().settings.size(), 1000u);
  GaSettings ga;  // offspring MCR 0.9, unique cells, migration of the best
  ga.max_generations = 0;
  ga.max_evaluations = 300;
  for (const int islands : {1, 2}) {
    MemoryRing ring(islands);
    MemoryStopVote votes(islands);
    std::vector<ReplayEvaluator> evals(static_cast<std::size_t>(islands), recorded().replay);
    std::vector<MemorySink> sinks(static_cast<std::size_t>(islands));
    const Reindex alphabet(recorded().settings, ga.encoding);
    std::vector<std::unique_ptr<IslandSearch>> isl;
    for (int r = 0; r < islands; ++r) {
      isl.push_back(std::make_unique<IslandSearch>(ga, alphabet, evals[r], ring.migrator(r),
                                                   votes.vote(r), sinks[r], 3, r));
    }
    for (bool going = true; going;) {
      going = false;
      for (auto& island : isl)
        going = island->step() || going;
    }
    std::int64_t spent = 0;
    int restarts = 0;
    for (const auto& island : isl) {
      spent += island->result().evaluations;
      restarts += island->restarts();
      EXPECT_EQ(island->result().reason, StopReason::max_evaluations);
    }
    // Every island spends its whole cap: the run never ends with budget left while
    // thousands of recorded settings are unmeasured.
    EXPECT_EQ(spent, 300 * islands) << islands << " islands";
    EXPECT_GT(restarts, 0) << "the islands converged and restarted";
  }
  // Without an explicit budget the MCR stop keeps its meaning: the run ends converged.
  GaSettings mcr_only;
  mcr_only.max_generations = 1000;
  ReplayEvaluator eval = recorded().replay;
  NoMigrator alone;
  LocalStopVote vote;
  MemorySink sink;
  const SearchResult r = run_island(mcr_only, whole_set(), eval, alone, vote, sink, 3, 0);
  EXPECT_EQ(r.reason, StopReason::mcr);
  EXPECT_LT(r.evaluations, 1000);
}

TEST(SearchBudget, RunEndsEarlyOnlyWhenEverySettingIsMeasured) {
  // 40 settings, a budget of 1000: the island measures all 40, then stops.
  SampledSet few;
  few.settings.assign(recorded().settings.begin(), recorded().settings.begin() + 40);
  GaSettings ga;
  ga.max_generations = 0;
  ga.max_evaluations = 1000;
  ReplayEvaluator eval = recorded().replay;
  NoMigrator alone;
  LocalStopVote vote;
  MemorySink sink;
  const SearchResult r = run_island(ga, few, eval, alone, vote, sink, 5, 0);
  EXPECT_EQ(r.reason, StopReason::max_evaluations);
  EXPECT_EQ(r.evaluations, 40);
}

TEST(SearchBudget, SampleEpochsReachAnOptimumTheFirstSampleLeftOut) {
  // 400 recorded settings (the optimum among them), samples of at most 100.
  std::vector<Setting> pool(recorded().settings.begin(), recorded().settings.begin() + 399);
  if (std::find(pool.begin(), pool.end(), recorded().optimum) == pool.end())
    pool.push_back(recorded().optimum);
  SamplerSettings ss;
  ss.max_samples = 100;
  std::shared_ptr<const Predictor> uniform = std::make_shared<UniformPredictor>();
  // A seed whose first sample excludes the optimum.
  std::uint64_t seed = 0;
  SampledSet first;
  for (std::uint64_t s = 1; s < 50 && seed == 0; ++s) {
    ListSource source(recorded().replay.shape(), pool);
    first = sample(source, *uniform, ss, s).set;
    if (std::find(first.settings.begin(), first.settings.end(), recorded().optimum) ==
        first.settings.end())
      seed = s;
  }
  ASSERT_NE(seed, 0u);
  GaSettings ga;
  ga.max_generations = 0;
  ga.max_evaluations = 350;
  const auto run = [&](bool epochs) {
    IslandExtras extras;
    if (epochs) {
      extras.refill = epoch_sampler(
          [&] { return std::make_unique<ListSource>(recorded().replay.shape(), pool); }, uniform,
          ss, seed, 0);
    }
    ReplayEvaluator eval = recorded().replay;
    NoMigrator alone;
    LocalStopVote vote;
    MemorySink sink;
    return run_island(ga, first, eval, alone, vote, sink, seed, 0, {}, std::nullopt,
                      std::move(extras));
  };
  // The first sample alone can never measure the optimum ...
  const SearchResult locked = run(false);
  ASSERT_TRUE(locked.best);
  EXPECT_NE(*locked.best, recorded().optimum);
  EXPECT_EQ(locked.evaluations, 100);  // ... and ends when its 100 settings are measured.
  // With fresh samples per restart epoch every setting stays reachable.
  const SearchResult open = run(true);
  ASSERT_TRUE(open.best);
  EXPECT_EQ(*open.best, recorded().optimum);
  EXPECT_EQ(open.evaluations, 350);
}

// 600 recorded settings sampled 120 at a time (seed 7): a run of 260 measurements opens
// several restart epochs.
struct EpochProblem {
  std::vector<Setting> pool{recorded().settings.begin(), recorded().settings.begin() + 600};
  SamplerSettings ss;
  std::shared_ptr<const Predictor> uniform = std::make_shared<UniformPredictor>();
  SampledSet first;
  GaSettings ga;
  EpochProblem() {
    ss.max_samples = 120;
    ListSource source(recorded().replay.shape(), pool);
    first = sample(source, *uniform, ss, 7).set;
    ga.max_generations = 0;
    ga.max_evaluations = 260;
  }
  [[nodiscard]] EpochSampler sampler() const {
    return epoch_sampler(
        [this] { return std::make_unique<ListSource>(recorded().replay.shape(), pool); }, uniform,
        ss, 7, 0);
  }
};

TEST(SearchBudget, ResumeAcrossRestartEpochsGivesTheSameTrajectory) {
  const EpochProblem p;
  const SampledSet& first = p.first;
  GaSettings ga = p.ga;
  ga.model_picks = 4;
  const auto extras = [&] {
    IslandExtras e;
    e.refill = p.sampler();
    e.prior = p.uniform;
    return e;
  };
  std::vector<SearchState> snapshots;
  SearchHooks hooks;
  hooks.on_snapshot = [&](const SearchState& s) { snapshots.push_back(s); };
  ReplayEvaluator eval = recorded().replay;
  NoMigrator alone;
  LocalStopVote vote;
  MemorySink full;
  const SearchResult whole =
      run_island(ga, first, eval, alone, vote, full, 7, 0, hooks, std::nullopt, extras());
  ASSERT_GE(snapshots.size(), 6u);
  EXPECT_GT(whole.evaluations, 121) << "more than one epoch's alphabet (120 + the kept best)";
  int epochs_seen = 0;
  for (std::size_t k = 1; k + 1 < snapshots.size(); k += 2) {
    ReplayEvaluator fresh = recorded().replay;
    MemorySink rest;
    const SearchResult resumed =
        run_island(ga, first, fresh, alone, vote, rest, 7, 0, {}, snapshots[k], extras());
    EXPECT_EQ(resumed.evaluations, whole.evaluations) << "resumed after snapshot " << k;
    EXPECT_EQ(resumed.best, whole.best);
    std::vector<std::string> a, b;
    for (const auto& r : rest.evaluations)
      a.push_back(canonical_key(r.setting));
    for (const auto& r : full.evaluations) {
      if (r.generation > snapshots[k].generation)
        b.push_back(canonical_key(r.setting));
    }
    EXPECT_EQ(a, b) << "resumed after snapshot " << k;
    ++epochs_seen;
  }
  EXPECT_GT(epochs_seen, 0);
}

TEST(SearchBudget, RestartEpochsAreDrawnAheadOnAThreadOfTheirOwn) {
  // The next epoch's sample is drawn on another thread while the island breeds; each epoch
  // once, and the trajectory does not depend on how long a draw takes.
  const EpochProblem p;
  const EpochSampler draw = p.sampler();
  std::mutex mutex;
  const auto run = [&](std::chrono::milliseconds delay, std::vector<int>& epochs,
                       std::vector<std::thread::id>& threads) {
    IslandExtras extras;
    extras.refill = [&, delay](int epoch) {
      std::this_thread::sleep_for(delay);
      const std::lock_guard lock(mutex);
      epochs.push_back(epoch);
      threads.push_back(std::this_thread::get_id());
      return draw(epoch);
    };
    ReplayEvaluator eval = recorded().replay;
    NoMigrator alone;
    LocalStopVote vote;
    MemorySink sink;
    run_island(p.ga, p.first, eval, alone, vote, sink, 7, 0, {}, std::nullopt, std::move(extras));
    std::vector<std::string> keys;
    for (const auto& r : sink.evaluations)
      keys.push_back(canonical_key(r.setting));
    return keys;
  };
  std::vector<int> fast_epochs, slow_epochs;
  std::vector<std::thread::id> fast_threads, slow_threads;
  const auto fast = run(std::chrono::milliseconds(0), fast_epochs, fast_threads);
  const auto slow = run(std::chrono::milliseconds(40), slow_epochs, slow_threads);
  EXPECT_EQ(fast, slow) << "the trajectory depends on how long an epoch's draw takes";
  ASSERT_GE(fast_epochs.size(), 2u) << "the run opened fewer than two restart epochs";
  for (const std::vector<int>* epochs : {&fast_epochs, &slow_epochs}) {
    std::vector<int> expected(epochs->size());
    std::iota(expected.begin(), expected.end(), 1);
    EXPECT_EQ(*epochs, expected) << "each epoch drawn once, in order";
  }
  for (const std::thread::id id : fast_threads)
    EXPECT_NE(id, std::this_thread::get_id()) << "an epoch drawn on the island's thread";
}

TEST(SearchBudget, ARunThatDependsOnTimingBreedsOnWhileItsRestartsSampleIsDrawn) {
  // With drift or async islands (GPUs) a due restart waits, the island breeding on, until the
  // next epoch's sample is drawn: no generation holds the island for the draw. The
  // deterministic ring (replay) waits for it inside the restart, so its trajectory does not
  // depend on the draw's time.
  const EpochProblem p;
  const EpochSampler draw = p.sampler();
  constexpr auto kDraw = std::chrono::milliseconds(400);
  const auto longest_step = [&](int drift, int& restarts) {
    GaSettings ga = p.ga;
    ga.migration_drift = drift;
    IslandExtras extras;
    extras.refill = [&](int epoch) {
      std::this_thread::sleep_for(kDraw);
      return draw(epoch);
    };
    ReplayEvaluator eval = recorded().replay;
    NoMigrator alone;
    LocalStopVote vote;
    MemorySink sink;
    const Reindex alphabet(p.first.settings, ga.encoding, ga.gray);
    IslandSearch search(ga, alphabet, eval, alone, vote, sink, 7, 0, {}, std::nullopt,
                        std::move(extras));
    double longest = 0;
    for (;;) {
      const auto t0 = std::chrono::steady_clock::now();
      const bool more = search.step();
      longest = std::max(
          longest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (!more)
        break;
    }
    restarts = search.restarts();
    return longest;
  };
  int deferred_restarts = 0, blocking_restarts = 0;
  const double deferred = longest_step(1, deferred_restarts);
  const double blocking = longest_step(-1, blocking_restarts);
  ASSERT_GE(blocking_restarts, 1) << "the run made no restart";
  ASSERT_GE(deferred_restarts, 1) << "the deferred run made no restart";
  EXPECT_GE(blocking, 0.35) << "the deterministic run's restart did not wait for its sample";
  EXPECT_LT(deferred, 0.2) << "a generation held the island for the restart's sample";
}

TEST(SearchBudget, GenerationZeroHoldsTheNaiveSetting) {
  const auto naive = naive_seed(*recorded().space, &recorded().settings);
  ASSERT_TRUE(naive) << "the synthetic dataset records the naive-equivalent setting";
  GaSettings ga;
  ga.max_generations = 3;
  IslandExtras extras;
  extras.seeds.push_back(*naive);
  ReplayEvaluator eval = recorded().replay;
  NoMigrator alone;
  LocalStopVote vote;
  MemorySink sink;
  const SearchResult r =
      run_island(ga, whole_set(), eval, alone, vote, sink, 9, 0, {}, std::nullopt, extras);
  ASSERT_FALSE(sink.evaluations.empty());
  EXPECT_EQ(sink.evaluations.front().generation, 0);
  EXPECT_EQ(sink.evaluations.front().cell, 0);
  EXPECT_EQ(sink.evaluations.front().setting, *naive);
  // So the result is never slower than the naive kernel.
  ASSERT_TRUE(r.best);
  EXPECT_LE(r.best_measurement.median_ms, sink.evaluations.front().measurement.median_ms);
}

// Logs every new measurement of an island with the round (generation) it was made in.
class RoundLog final : public Evaluator {
 public:
  RoundLog(Evaluator& inner, const int& round, std::vector<std::pair<int, Setting>>& log)
      : inner_(inner), round_(round), log_(log) {}
  std::vector<Measurement> evaluate(std::span<const Setting> batch) override {
    for (const Setting& s : batch)
      log_.emplace_back(round_, s);
    return inner_.evaluate(batch);
  }
  [[nodiscard]] DeviceLimits limits() const override { return inner_.limits(); }
  [[nodiscard]] double clock_s() const override { return inner_.clock_s(); }
  [[nodiscard]] std::string name() const override { return "round-log"; }

 private:
  Evaluator& inner_;
  const int& round_;
  std::vector<std::pair<int, Setting>>& log_;
};

// A ring of `islands` over the whole synthetic dataset, as a run: the default GA split over
// the islands, the surrogate on, a budget of 300 in all. Returns, per island, its
// measurements with their generation, and the islands (for their caches).
struct RingRun {
  std::unique_ptr<Reindex> alphabet;  // outlive the islands (declared first)
  std::unique_ptr<MemoryRing> ring;
  std::unique_ptr<MemoryStopVote> votes;
  std::vector<ReplayEvaluator> replays;
  std::vector<std::vector<std::pair<int, Setting>>> logs;
  std::vector<std::unique_ptr<RoundLog>> evals;
  std::vector<MemorySink> sinks;
  std::vector<std::unique_ptr<IslandSearch>> islands;
  int rounds = 0;
};

// `share`: hash shares and forwarding on (the default) or off (the previous behaviour).
// `window`: IslandExtras::restart_window (0: the default, the number of islands).
std::unique_ptr<RingRun> run_ring(int islands, bool share, std::uint64_t seed, int window = 0) {
  auto run = std::make_unique<RingRun>();
  GaSettings ga = GaSettings{}.for_islands(islands);
  ga.max_generations = 0;
  ga.max_evaluations = 300 / islands;
  run->alphabet = std::make_unique<Reindex>(recorded().settings, ga.encoding);
  run->ring = std::make_unique<MemoryRing>(islands);
  run->votes = std::make_unique<MemoryStopVote>(islands);
  run->logs.resize(static_cast<std::size_t>(islands));
  run->replays.assign(static_cast<std::size_t>(islands), recorded().replay);
  run->sinks.resize(static_cast<std::size_t>(islands));
  for (int r = 0; r < islands; ++r) {
    run->evals.push_back(std::make_unique<RoundLog>(run->replays[r], run->rounds, run->logs[r]));
    IslandExtras extras;
    extras.islands = islands;
    extras.hash_shares = share;
    extras.forward = share;
    extras.restart_window = window;
    // The ring's mechanics with the model's picks in every generation: on this synthetic
    // landscape the skill gate (test_model_policy) would leave every cell to breeding.
    extras.model.skill_gate = false;
    run->islands.push_back(std::make_unique<IslandSearch>(
        ga, *run->alphabet, *run->evals[r], run->ring->migrator(r), run->votes->vote(r),
        run->sinks[r], seed, r, SearchHooks{}, std::nullopt, std::move(extras)));
  }
  for (bool going = true; going; ++run->rounds) {
    going = false;
    for (auto& island : run->islands)
      going = island->step() || going;
  }
  return run;
}

TEST(SearchIslands, NoIslandMeasuresWhatAnotherMeasuredAndEveryCacheHoldsTheRun) {
  for (const int islands : {2, 4}) {
    for (const bool share : {true, false}) {
      const auto run = run_ring(islands, share, 11);
      // First measurement of every setting: (round, island).
      std::map<Setting, std::pair<int, int>> first;
      int measured = 0, repeats = 0, late_repeats = 0;
      for (int round = 0; round < run->rounds; ++round) {
        for (int r = 0; r < islands; ++r) {
          for (const auto& [g, s] : run->logs[r]) {
            if (g != round)
              continue;
            ++measured;
            const auto [it, inserted] = first.emplace(s, std::make_pair(g, r));
            if (inserted)
              continue;
            ++repeats;
            // Known to every island by then: two generations per ring hop at most.
            late_repeats += g - it->second.first > 2 * (islands / 2) ? 1 : 0;
          }
        }
      }
      ASSERT_EQ(measured, 300 / islands * islands);
      std::printf("%d islands, shares %d: %d of %d measurements repeat, %d late\n", islands,
                  share ? 1 : 0, repeats, measured, late_repeats);
      // Every island's cache (its model's data) holds every measurement of the run made
      // more than two generations per ring hop before its end, whoever made it.
      int missing = 0;
      for (const auto& [s, at] : first) {
        if (at.first >= run->rounds - 1 - 2 * (islands / 2))
          continue;
        for (int r = 0; r < islands; ++r)
          missing += run->islands[r]->island().cached(s) ? 0 : 1;
      }
      if (share) {
        EXPECT_EQ(late_repeats, 0) << islands << " islands";
        EXPECT_LE(repeats, measured / 25) << islands << " islands: " << repeats << " repeats";
        EXPECT_EQ(missing, 0) << islands << " islands";
      } else {
        // Without shares and forwarding (the previous behaviour) islands measure each
        // other's settings, and at 4 islands a non-neighbour's measurements never arrive.
        EXPECT_GT(repeats, measured / 25) << islands << " islands";
        if (islands == 4) {
          EXPECT_GT(missing, 0);
        }
      }
    }
  }
}

TEST(SearchIslands, EveryIslandFitsGenerationOneOnEveryIslandsGenerationZero) {
  // Islands stepped in turn as the sweep does: without the exchange of generation 0, the
  // island stepped first fits its generation-1 model on its own generation 0 only (the
  // ring delivers a neighbour's measurements after the generation that made them); with
  // it, every island's cache holds every island's generation 0 when generation 1 starts.
  std::map<int, long long> rows_zero;  // islands -> rows of generation 0 with the exchange
  for (const int islands : {2, 4}) {
    for (const bool gather : {true, false}) {
      GaSettings ga = GaSettings{}.for_islands(islands);
      ga.max_generations = 0;
      ga.max_evaluations = 300 / islands;
      const Reindex alphabet(recorded().settings, ga.encoding);
      MemoryRing ring(islands);
      MemoryStopVote votes(islands);
      int round = 0;
      std::vector<ReplayEvaluator> replays(static_cast<std::size_t>(islands), recorded().replay);
      std::vector<std::vector<std::pair<int, Setting>>> logs(static_cast<std::size_t>(islands));
      std::vector<std::unique_ptr<RoundLog>> evals;
      std::vector<testing::HookSink> sinks(static_cast<std::size_t>(islands));
      std::vector<std::unique_ptr<IslandSearch>> search;
      for (int r = 0; r < islands; ++r) {
        evals.push_back(std::make_unique<RoundLog>(replays[r], round, logs[r]));
        IslandExtras extras;
        extras.islands = islands;
        extras.gather_first = gather;
        search.push_back(std::make_unique<IslandSearch>(
            ga, alphabet, *evals[r], ring.migrator(r), votes.vote(r), sinks[r], 3, r, SearchHooks{},
            std::nullopt, std::move(extras)));
      }
      for (auto& island : search)
        ASSERT_TRUE(island->step());
      // Generation 0 of every island, 16 measurements in all.
      std::vector<std::pair<int, Setting>> zero;
      for (int r = 0; r < islands; ++r) {
        for (const auto& [g, s] : logs[r])
          zero.emplace_back(r, s);
      }
      ASSERT_EQ(zero.size(), 16u);
      std::vector<int> missing(static_cast<std::size_t>(islands), -1);
      for (int r = 0; r < islands; ++r) {
        sinks[r].before = [&, r](int g) {
          if (g != 1)
            return;
          missing[r] = 0;
          for (const auto& [owner, s] : zero)
            missing[r] += owner != r && !search[r]->island().cached(s) ? 1 : 0;
        };
      }
      round = 1;
      for (auto& island : search)
        ASSERT_TRUE(island->step());
      int repeats = 0;  // generation-1 measurements of a setting of generation 0
      for (int r = 0; r < islands; ++r) {
        for (const auto& [g, s] : logs[r]) {
          repeats += g == 1 && std::any_of(zero.begin(), zero.end(),
                                           [&](const auto& z) { return z.second == s; })
                         ? 1
                         : 0;
        }
      }
      // Learned measurements write no rows: generation 0's rows (cells and immigrants)
      // are the same with and without the exchange.
      long long rows0 = 0;
      for (int r = 0; r < islands; ++r) {
        for (const EvaluationRecord& e : sinks[r].rows.evaluations)
          rows0 += e.generation == 0 ? 1 : 0;
      }
      if (gather)
        rows_zero[islands] = rows0;
      else
        EXPECT_EQ(rows0, rows_zero[islands]) << islands << " islands";
      std::printf("%d islands, gather %d: missing at generation 1 (island 0) %d, repeats %d\n",
                  islands, gather ? 1 : 0, missing[0], repeats);
      for (int r = 0; r < islands; ++r) {
        ASSERT_GE(missing[r], 0) << "island " << r << " recorded no generation 1";
        if (gather) {
          EXPECT_EQ(missing[r], 0) << islands << " islands, island " << r;
        }
      }
      if (gather) {
        EXPECT_EQ(repeats, 0) << islands << " islands";
      } else {
        EXPECT_GT(missing[0], 0) << "without the exchange the first island lacks the others'";
      }
    }
  }
}

TEST(SearchIslands, SmallIslandsDecideRestartsOnAsManyChildrenAsOneIslandOfTheRun) {
  // 4 islands of 2x2 breed 2 children each per generation: deciding on one generation's
  // 2 children (window 1) restarts them far more often than the lone island of 4x4, which
  // decides on 8. Pooled over 4 generations (the default) they restart about as rarely.
  const auto restarts = [](int islands, int window) {
    const auto run = run_ring(islands, true, 7, window);
    int n = 0;
    for (const auto& island : run->islands)
      n += island->restarts();
    return n;
  };
  const int alone = restarts(1, 0);
  const int pooled = restarts(4, 0);
  const int single = restarts(4, 1);
  std::printf("restarts: 1 island %d, 4 islands pooled %d, 4 islands window 1 %d\n", alone, pooled,
              single);
  EXPECT_GE(single, 3 * pooled + 3);
  EXPECT_LE(pooled, alone + 4);
}

TEST(SearchIslands, ResumeKeepsTheMeasurementsToPassOn) {
  // 4 islands: the measurements an island learned in generation g are passed on in
  // generation g + 1, so they are part of the state a checkpoint holds.
  const auto run = run_ring(4, true, 5);
  ASSERT_GT(run->rounds, 4);
  // An island that learned something in the last generation (which one depends on the run).
  int r = 0;
  while (r < 4 && run->islands[r]->island().state().forward.empty())
    ++r;
  ASSERT_LT(r, 4) << "no island learned anything in the last generation";
  const IslandSearch& island = *run->islands[r];
  const SearchState state = island.snapshot();
  // Rebuild island r from its snapshot: the same bytes, forwards included.
  GaSettings ga = GaSettings{}.for_islands(4);
  ga.max_generations = 0;
  ga.max_evaluations = 75;
  const Reindex alphabet(recorded().settings, ga.encoding);
  MemoryRing ring(4);
  MemoryStopVote votes(4);
  ReplayEvaluator eval = recorded().replay;
  MemorySink sink;
  IslandExtras extras;
  extras.islands = 4;
  extras.model.skill_gate = false;  // as run_ring
  const IslandSearch again(ga, alphabet, eval, ring.migrator(r), votes.vote(r), sink, 5, r, {},
                           state, extras);
  EXPECT_EQ(again.snapshot().strategy, state.strategy);
  EXPECT_EQ(again.island().state().forward, island.island().state().forward);
}

TEST(SearchBudget, ConfigKeysAndTheirDefaults) {
  const Config c = parse_config(
      "stencil: star2d1r\ngrid: [64, 64]\nga: {candidates: 4, model_picks: 6, predicted_seeds: "
      "2}\nbudget: {max_evaluations: 100}\n",
      "t.yaml", ".");
  EXPECT_EQ(c.ga.candidates, 4);
  EXPECT_EQ(c.ga.model_picks, 6);
  EXPECT_EQ(c.ga.predicted_seeds, 2);
  EXPECT_EQ(c.ga.max_generations, 0) << "an explicit budget drops the default generation limit";
  EXPECT_TRUE(c.ga.explicit_budget());
  EXPECT_TRUE(c.ga.auto_population);
  EXPECT_EQ(parse_config(to_yaml(c), "t.yaml", "."), c);
  // The population is split over the islands unless configured; picks and seeds follow it.
  const GaSettings d;
  EXPECT_EQ(d.for_islands(1).population, 16);
  EXPECT_EQ(d.for_islands(1).model_picks, 8);
  EXPECT_EQ(d.for_islands(1).predicted_seeds, 4);
  EXPECT_EQ(d.for_islands(2).population, 8);
  EXPECT_EQ(d.for_islands(4).population, 4);
  EXPECT_EQ(d.for_islands(2).model_picks, 5);  // five eighths, rounded up, with several islands
  EXPECT_EQ(d.for_islands(3).model_picks, 3);
  EXPECT_EQ(d.for_islands(4).model_picks, 3);
  const Config fixed =
      parse_config("stencil: star2d1r\ngrid: [64, 64]\nga: {rows: 4, cols: 4}\n", "t.yaml", ".");
  EXPECT_FALSE(fixed.ga.auto_population);
  EXPECT_EQ(fixed.ga.for_islands(4).population, 16);
  EXPECT_EQ(fixed.ga.max_generations, 100) << "without a budget the generation limit stays";
  EXPECT_THROW(
      (void)parse_config("stencil: star2d1r\ngrid: [64, 64]\nga: {candidates: 0}\n", "t.yaml", "."),
      InputError);
}

}  // namespace
}  // namespace isletune
