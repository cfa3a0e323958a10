// How the online model chooses what to measure (GaSettings::model_policy): the posterior
// draws behind thompson, the choices of greedy, thompson and local at a restart (whose
// first cells after the kept best are the model's choices), the config keys, and the
// blocking in-memory ring that runs the islands on threads with lag 0 (ga.migration.lag).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <thread>

#include "common/error.hpp"
#include "config/config.hpp"
#include "ga/island.hpp"
#include "ga/memory_ring.hpp"
#include "ga/search.hpp"
#include "run/recording.hpp"
#include "sample/online_model.hpp"
#include "test_ga_fakes.hpp"

namespace isletune {
namespace {

// Not additive in the parameters (tbx and tby interact), so a fit has residuals.
double bumpy_ms(const Setting& s) {
  return std::exp(0.2 * std::abs(s[Param::tbx] - 5) + 0.15 * std::abs(s[Param::tby] - 2) +
                  0.1 * s[Param::mfx] - 0.05 * s[Param::ufx] +
                  0.08 * ((s[Param::tbx] * s[Param::tby]) % 5));
}

int differing(const Setting& a, const Setting& b) {
  int d = 0;
  for (std::size_t p = 0; p < kParamCount; ++p)
    d += a.values[p] != b.values[p] ? 1 : 0;
  return d;
}

TEST(OnlineModel, DrawsAreSeededAndSpreadMostWhereTheMeasurementsAreThin) {
  const SampledSet set = testing::landscape_set();
  std::vector<std::pair<Setting, double>> data;
  // tbx 7 measured once, tbx 0 often.
  for (const Setting& s : set.settings) {
    const bool often =
        s[Param::tbx] == 0 && (s[Param::tby] + s[Param::mfx] + s[Param::ufx]) % 2 == 0;
    const bool once = data.size() % 7 == 3 && s[Param::tbx] != 7;
    if (often || once)
      data.emplace_back(s, bumpy_ms(s));
  }
  Setting rare = set.settings[0];
  rare[Param::tbx] = 7;
  data.emplace_back(rare, bumpy_ms(rare));
  OnlineModel model(set.settings, 1.0);
  EXPECT_TRUE(model.draw(*std::make_unique<Rng>(1)).empty()) << "no draw while unfit";
  model.fit(data);
  ASSERT_TRUE(model.fitted());
  EXPECT_GT(model.residual_sd(), 0.0);
  Rng a(5, 1), b(5, 1), c(6, 1);
  const std::vector<double> da = model.draw(a), db = model.draw(b), dc = model.draw(c);
  ASSERT_EQ(da.size(), model.features());
  EXPECT_EQ(da, db) << "the same engine state draws the same";
  EXPECT_NE(da, dc);
  // Scale 0: the fitted model itself.
  Rng z(7);
  const std::vector<double> none = model.draw(z, 0.0);
  for (const Setting& s : {set.settings[10], rare})
    EXPECT_DOUBLE_EQ(model.predict_ms(s, none), model.predict_ms(s));
  // The spread of log predictions over draws: larger for a setting like the rarely
  // measured one than for one like the often measured ones.
  Setting thin = set.settings[5];
  thin[Param::tbx] = 7;
  Setting thick = set.settings[5];
  thick[Param::tbx] = 0;
  double var_thin = 0, var_thick = 0;
  Rng r(11);
  for (int i = 0; i < 400; ++i) {
    const std::vector<double> d = model.draw(r);
    const double u = std::log(model.predict_ms(thin, d) / model.predict_ms(thin));
    const double v = std::log(model.predict_ms(thick, d) / model.predict_ms(thick));
    var_thin += u * u;
    var_thick += v * v;
  }
  EXPECT_GT(var_thin, 2 * var_thick);
}

// An island of 4x4 with the model on, run a few generations on bumpy_ms, then copied in
// that state with `policy`.
struct Grown {
  SampledSet set = testing::landscape_set();
  Reindex alphabet{set.settings, Encoding::parameters};
  Torus torus{4, 4};
  GaOperators ops;
  IslandState state;
  explicit Grown(std::uint64_t seed) {
    ops.model_picks = 8;
    testing::SyntheticEvaluator eval(bumpy_ms, 0.1);
    testing::MemorySink sink;
    Island island(alphabet, torus, ops, seed, 0);
    island.initialize(eval, sink);
    for (int g = 0; g < 3; ++g)
      island.step(eval, sink);
    state = island.state();
  }
  // A state whose best measured setting is a lone needle far from where the other
  // measurements put the fast region (which a model of main effects extrapolates to).
  static Grown needle() {
    Grown g(3);
    // The ridge's main effects alone: the forest correction would lift the needle's
    // neighbours, which is what local is measured against here.
    g.ops.model.forest.trees = 0;
    const auto time = [](const Setting& s) {
      if (s[Param::tbx] == 0 && s[Param::tby] == 0 && s[Param::mfx] == 0 && s[Param::ufx] == 0)
        return 0.5;
      return testing::separable_ms(s);
    };
    g.state.cache.clear();
    g.state.population.clear();
    for (int id = 0; id < g.alphabet.size(); id += 23) {
      const Setting& s = g.alphabet.setting(id);
      Measurement m;
      m.status = Status::ok;
      m.median_ms = time(s);
      g.state.cache.emplace_back(s, m);
    }
    // Id 0 (the first, all-zero setting) is the needle: measured, the best.
    g.state.best = g.state.cache.front();
    for (int c = 0; c < g.torus.cells(); ++c) {
      const auto& [s, meas] = g.state.cache[static_cast<std::size_t>(c)];
      Individual ind;
      ind.id = *g.alphabet.id_of(s);
      ind.genome = g.alphabet.encode(ind.id);
      ind.measurement = meas;
      g.state.population.push_back(ind);
    }
    return g;
  }
  // The restart's model choices (cells 1 .. 8) under `policy` (local: around the
  // `centres` best, at most `radius` parameters away).
  std::vector<Setting> restart_choices(ModelPolicy policy, double explore = 1.0, int centres = 8,
                                       int radius = 2) const {
    GaOperators o = ops;
    o.model_policy = policy;
    o.model.explore = explore;
    o.model.local_centres = centres;
    o.model.local_radius = radius;
    Island island(alphabet, torus, o, state);
    testing::SyntheticEvaluator eval(bumpy_ms, 0.1);
    testing::MemorySink sink;
    const int keep = *alphabet.id_of(state.best->first);
    EXPECT_GT(island.restart(keep, eval, sink), 0);
    std::vector<Setting> out;
    for (const auto& r : sink.evaluations) {
      if (r.cell >= 1 && r.cell <= 8)
        out.push_back(r.setting);
    }
    return out;
  }
  // The unmeasured settings by the island's model (refit as the island does), fastest first.
  std::vector<Setting> greedy_ranking() const {
    OnlineModel model(set.settings, ops.model.lambda, nullptr, ops.interact);
    model.set_forest(ops.model.forest);
    std::vector<std::pair<Setting, double>> data;
    for (const auto& [s, m] : state.cache)
      data.emplace_back(s, m.model_ms());
    model.fit(data);
    EXPECT_TRUE(model.fitted());
    std::vector<std::pair<double, int>> ranked;
    for (int id = 0; id < alphabet.size(); ++id) {
      const Setting& s = alphabet.setting(id);
      const bool measured = std::any_of(state.cache.begin(), state.cache.end(),
                                        [&](const auto& e) { return e.first == s; });
      if (!measured)
        ranked.emplace_back(model.predict_ms(s), id);
    }
    std::sort(ranked.begin(), ranked.end());
    std::vector<Setting> out;
    for (const auto& [p, id] : ranked)
      out.push_back(alphabet.setting(id));
    return out;
  }
};

std::size_t rank_of(const std::vector<Setting>& ranking, const Setting& s) {
  return static_cast<std::size_t>(std::find(ranking.begin(), ranking.end(), s) - ranking.begin());
}

TEST(ModelPolicy, GreedyMeasuresTheModelsFastestUnmeasuredSettings) {
  const Grown grown(3);
  const std::vector<Setting> ranking = grown.greedy_ranking();
  const std::vector<Setting> picks = grown.restart_choices(ModelPolicy::greedy);
  ASSERT_EQ(picks.size(), 8u);
  const std::set<Setting> top(ranking.begin(), ranking.begin() + 8);
  EXPECT_EQ(std::set<Setting>(picks.begin(), picks.end()), top);
}

TEST(ModelPolicy, ThompsonMeasuresUnmeasuredSettingsTheModelRanksLowAndIsSeeded) {
  const Grown grown(3);
  const std::vector<Setting> ranking = grown.greedy_ranking();
  const std::vector<Setting> picks = grown.restart_choices(ModelPolicy::thompson, 3.0);
  ASSERT_EQ(picks.size(), 8u);
  EXPECT_EQ(picks, grown.restart_choices(ModelPolicy::thompson, 3.0)) << "same state, same picks";
  std::size_t low_and_far = 0;
  for (const Setting& s : picks) {
    ASSERT_LT(rank_of(ranking, s), ranking.size()) << "a pick was measured already";
    // Below twice the greedy picks, and at least 2 parameters from the best measured.
    low_and_far += rank_of(ranking, s) >= 16 && differing(s, grown.state.best->first) >= 2;
  }
  EXPECT_GE(low_and_far, 1u)
      << "thompson took only the greedy top 16 or the incumbent's neighbours";
  EXPECT_EQ(std::set<Setting>(picks.begin(), picks.end()).size(), 8u);
  // With no spread the draws are the fit itself: the greedy choice.
  const std::vector<Setting> flat = grown.restart_choices(ModelPolicy::thompson, 0.0);
  const std::set<Setting> top(ranking.begin(), ranking.begin() + 8);
  EXPECT_EQ(std::set<Setting>(flat.begin(), flat.end()), top);
}

TEST(ModelPolicy, LocalMeasuresTheBestPredictedNeighboursOfTheIncumbents) {
  const Grown grown = Grown::needle();
  ASSERT_EQ(grown.alphabet.setting(0)[Param::tbx], 0);
  const std::vector<Setting> ranking = grown.greedy_ranking();
  // Around the 2 best measured settings, at most 1 parameter away.
  const std::vector<Setting> picks = grown.restart_choices(ModelPolicy::local, 1.0, 2, 1);
  ASSERT_EQ(picks.size(), 8u);
  std::vector<std::pair<double, Setting>> known;
  for (const auto& [s, m] : grown.state.cache)
    known.emplace_back(m.median_ms, s);
  std::sort(known.begin(), known.end());
  known.resize(2);
  std::vector<Setting> near;
  for (const Setting& s : ranking) {
    if (std::any_of(known.begin(), known.end(),
                    [&](const auto& k) { return differing(s, k.second) <= 1; }))
      near.push_back(s);
  }
  ASSERT_GE(near.size(), 2u);
  // A quarter of 8 choices: the model's 2 best of the neighbourhood, then greedy.
  EXPECT_EQ(std::set<Setting>(picks.begin(), picks.begin() + 2),
            std::set<Setting>(near.begin(), near.begin() + 2));
  std::set<Setting> rest(ranking.begin(), ranking.end());
  std::size_t outside_greedy = 0;
  for (std::size_t i = 0; i < 2; ++i)
    outside_greedy += rank_of(ranking, picks[i]) >= 8 ? 1 : 0;
  EXPECT_GE(outside_greedy, 1u) << "the neighbourhood's best were the greedy picks anyway";
  for (std::size_t i = 2; i < picks.size(); ++i)
    EXPECT_LT(rank_of(ranking, picks[i]), 10u) << "the other choices are greedy";
}

// skill_gate: a restart's model cells are the model's greedy choices while its
// leave-one-out error is below the spread of the measured times (bumpy_ms, which a ridge
// fit predicts), and random share cells when the times are noise the model cannot predict.
TEST(ModelPolicy, SkillGateLeavesTheChoiceToTheModelOnlyWhileItPredicts) {
  const auto restart_cells = [](const Grown& g, bool gate) {
    GaOperators o = g.ops;
    o.model.skill_gate = gate;
    Island island(g.alphabet, g.torus, o, g.state);
    testing::SyntheticEvaluator eval(bumpy_ms, 0.1);
    testing::MemorySink sink;
    EXPECT_GT(island.restart(*g.alphabet.id_of(g.state.best->first), eval, sink), 0);
    std::set<Setting> out;
    for (const auto& r : sink.evaluations) {
      if (r.cell >= 1 && r.cell <= 8)
        out.insert(r.setting);
    }
    return out;
  };
  const Grown grown(3);
  const std::vector<Setting> ranking = grown.greedy_ranking();
  const std::set<Setting> top(ranking.begin(), ranking.begin() + 8);
  EXPECT_EQ(restart_cells(grown, true), top);
  // The same measured settings with times drawn at random (log-uniform over a factor 10).
  Grown noise(3);
  Rng rng(17, 3);
  for (auto& [s, m] : noise.state.cache) {
    if (m.ok())
      m.median_ms = std::exp(2.3 * rng.uniform());
  }
  for (Individual& ind : noise.state.population) {
    for (const auto& [s, m] : noise.state.cache) {
      if (s == noise.alphabet.setting(ind.id))
        ind.measurement = m;
    }
  }
  noise.state.best = *std::min_element(
      noise.state.cache.begin(), noise.state.cache.end(),
      [](const auto& a, const auto& b) { return a.second.fitness() > b.second.fitness(); });
  const std::vector<Setting> noise_ranking = noise.greedy_ranking();
  const std::set<Setting> noise_top(noise_ranking.begin(), noise_ranking.begin() + 8);
  EXPECT_EQ(restart_cells(noise, false), noise_top) << "without the gate: the model's choice";
  const std::set<Setting> gated = restart_cells(noise, true);
  EXPECT_EQ(gated.size(), 8u);
  EXPECT_NE(gated, noise_top) << "the gate left the choice to a model without skill";
}

TEST(Config, ModelPolicyAndMigrationLagAreReadAndChecked) {
  const std::string base = "stencil: star2d1r\ngrid: [64, 64]\n";
  const Config d = parse_config(base, "run.yaml", "/");
  EXPECT_EQ(d.ga.model_policy, ModelPolicy::greedy);
  EXPECT_EQ(d.ga.migration_lag, 0);
  const Config c =
      parse_config(base + "ga: {model_policy: local, migration: {lag: 1}}\n", "run.yaml", "/");
  EXPECT_EQ(c.ga.model_policy, ModelPolicy::local);
  EXPECT_EQ(c.ga.migration_lag, 1);
  EXPECT_TRUE(c == parse_config(to_yaml(c), "again.yaml", "/"));
  const auto error_of = [&](const std::string& ga) {
    try {
      (void)parse_config(base + ga, "run.yaml", "/");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of("ga: {model_policy: bayes}\n").find("ga.model_policy"), std::string::npos);
  EXPECT_NE(error_of("ga: {migration: {lag: 2}}\n").find("ga.migration.lag"), std::string::npos);
  // drift: auto unless given (unresolved: off); resolved to async on the CUDA backend, off in
  // replay and with lag 1; read, written back, bounded, and not with lag 1.
  EXPECT_EQ(d.ga.migration_drift, GaSettings::kDriftAuto);
  EXPECT_EQ(d.ga.ring_lag(), 0);
  EXPECT_EQ(d.ga.vote_depth(), 1);
  Config on_gpu = d;
  on_gpu.evaluator.backend = Backend::cuda;
  resolve_drift(on_gpu);
  EXPECT_EQ(on_gpu.ga.migration_drift, GaSettings::kDriftAsync);
  EXPECT_TRUE(on_gpu.ga.async_islands());
  EXPECT_EQ(on_gpu.ga.vote_depth(), 1);
  EXPECT_GT(on_gpu.ga.ring_lag(), 1000000) << "async islands never wait for a batch";
  EXPECT_TRUE(on_gpu == parse_config(to_yaml(on_gpu), "again.yaml", "/"));
  const Config async = parse_config(base + "ga: {migration: {drift: async}}\n", "run.yaml", "/");
  EXPECT_TRUE(async.ga.async_islands());
  EXPECT_NE(to_yaml(async).find("drift: async"), std::string::npos) << to_yaml(async);
  EXPECT_TRUE(async == parse_config(to_yaml(async), "again.yaml", "/"));
  const std::string wrong = error_of("ga: {migration: {drift: sometimes}}\n");
  EXPECT_NE(wrong.find("run.yaml: ga.migration.drift"), std::string::npos) << wrong;
  EXPECT_NE(wrong.find("async"), std::string::npos) << wrong;
  EXPECT_NE(error_of("ga: {migration: {lag: 1, drift: async}}\n").find("excludes ga.migration.lag"),
            std::string::npos);
  Config replayed = d;
  replayed.evaluator.backend = Backend::replay;
  replayed.evaluator.dataset = std::string(ISLETUNE_TEST_DATA) + "/synthetic-star2d1r.h5";
  resolve_drift(replayed);
  EXPECT_EQ(replayed.ga.migration_drift, -1);
  EXPECT_TRUE(replayed == parse_config(to_yaml(replayed), "again.yaml", "/"));
  Config lagged = c;  // lag 1
  lagged.evaluator.backend = Backend::cuda;
  resolve_drift(lagged);
  EXPECT_EQ(lagged.ga.migration_drift, -1);
  EXPECT_EQ(lagged.ga.ring_lag(), 1);
  Config given = parse_config(base + "ga: {migration: {drift: 3}}\n", "run.yaml", "/");
  given.evaluator.backend = Backend::cuda;
  resolve_drift(given);
  EXPECT_EQ(given.ga.migration_drift, 3);
  const Config a = parse_config(base + "ga: {migration: {drift: 2}}\n", "run.yaml", "/");
  EXPECT_EQ(a.ga.migration_drift, 2);
  EXPECT_EQ(a.ga.ring_lag(), 2);
  EXPECT_EQ(a.ga.vote_depth(), 3);
  const Config back = parse_config(to_yaml(a), "again.yaml", "/");
  EXPECT_EQ(back.ga.migration_drift, 2);
  EXPECT_TRUE(a == back);
  EXPECT_FALSE(a == d);
  EXPECT_NE(error_of("ga: {migration: {drift: 4}}\n").find("ga.migration.drift"),
            std::string::npos);
  const std::string both = error_of("ga: {migration: {lag: 1, drift: 1}}\n");
  EXPECT_NE(both.find("run.yaml: ga.migration.drift"), std::string::npos) << both;
  EXPECT_NE(both.find("excludes ga.migration.lag 1"), std::string::npos) << both;
  // fill: the model's picks a waiting island measures per fill; read, written back, bounded,
  // and in effect only with drift.
  EXPECT_EQ(d.ga.fill_picks, GaSettings{}.fill_picks);
  EXPECT_FALSE(d.ga.fills_waits()) << "drift unresolved: off";
  EXPECT_FALSE(replayed.ga.fills_waits()) << "replay: drift off, so no fills";
  const Config filled =
      parse_config(base + "ga: {migration: {drift: 1, fill: 5}}\n", "run.yaml", "/");
  EXPECT_EQ(filled.ga.fill_picks, 5);
  EXPECT_TRUE(filled.ga.fills_waits());
  const Config filled_back = parse_config(to_yaml(filled), "again.yaml", "/");
  EXPECT_EQ(filled_back.ga.fill_picks, 5);
  EXPECT_TRUE(filled == filled_back);
  const Config no_fill =
      parse_config(base + "ga: {migration: {drift: 1, fill: 0}}\n", "run.yaml", "/");
  EXPECT_FALSE(no_fill.ga.fills_waits());
  EXPECT_FALSE(no_fill == filled);
  const Config lag_fill =
      parse_config(base + "ga: {migration: {lag: 1, fill: 5}}\n", "run.yaml", "/");
  EXPECT_FALSE(lag_fill.ga.fills_waits()) << "the deterministic ring never fills";
  const std::string negative = error_of("ga: {migration: {fill: -1}}\n");
  EXPECT_NE(negative.find("run.yaml: ga.migration.fill"), std::string::npos) << negative;
  EXPECT_NE(error_of("ga: {migration: {fill: 65}}\n").find("ga.migration.fill"), std::string::npos);
}

TEST(MemoryRing, BlockingWithLagZeroHandsOutTheNeighboursCurrentGeneration) {
  MemoryRing ring(2, 0, true);
  std::vector<std::vector<int>> got(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      for (int g = 0; g < 5; ++g) {
        Migrant m;
        m.generation = g;
        m.source_rank = r;
        ring.migrator(r).send({m});
        for (const Migrant& in : ring.migrator(r).receive())
          got[r].push_back(in.generation);
      }
    });
  }
  for (std::thread& t : threads)
    t.join();
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(got[r], (std::vector<int>{0, 1, 2, 3, 4})) << "island " << r;
}

// Islands on threads over the blocking ring (the sweep's lag 0) with lag 1 have exactly the
// trajectories of islands stepped in turn: the threads change nothing but the waiting.
TEST(MemoryRing, IslandsOnThreadsMatchIslandsSteppedInTurn) {
  for (const int islands : {2, 4}) {
    const SampledSet set = testing::landscape_set();
    GaSettings ga = GaSettings{}.for_islands(islands);
    ga.max_generations = 0;
    ga.max_evaluations = 80;
    const Reindex alphabet(set.settings, ga.encoding);
    const auto run = [&](bool threaded, int lag) {
      MemoryRing ring(islands, lag, threaded);
      MemoryStopVote votes(islands, threaded);
      std::vector<std::unique_ptr<testing::SyntheticEvaluator>> evals;
      std::vector<testing::MemorySink> sinks(static_cast<std::size_t>(islands));
      std::vector<std::unique_ptr<IslandSearch>> isl;
      for (int r = 0; r < islands; ++r) {
        evals.push_back(std::make_unique<testing::SyntheticEvaluator>(bumpy_ms, 0.1));
        IslandExtras extras;
        extras.islands = islands;
        isl.push_back(std::make_unique<IslandSearch>(ga, alphabet, *evals[r], ring.migrator(r),
                                                     votes.vote(r), sinks[r], 9, r, SearchHooks{},
                                                     std::nullopt, extras));
      }
      testing::run_islands(isl, threaded);
      std::vector<std::vector<std::string>> keys(static_cast<std::size_t>(islands));
      for (int r = 0; r < islands; ++r)
        for (const auto& e : sinks[r].evaluations)
          keys[r].push_back(canonical_key(e.setting) + (e.migrant ? "m" : ""));
      return keys;
    };
    const auto turn = run(false, 1);
    EXPECT_EQ(run(true, 1), turn) << islands << " islands";
    const auto lag0 = run(true, 0);
    EXPECT_EQ(run(true, 0), lag0) << islands << " islands: lag 0 on threads is deterministic";
    EXPECT_NE(lag0, turn) << islands << " islands: lag 0 changes what the islands learn when";
  }
}

// Resumed with lag 0, the neighbours integrated the last batch before the checkpoint: it
// is not sent again (a re-sent batch would arrive twice), only remembered as the first
// batch for gather_first when resumed from generation 0.
TEST(RecordingMigrator, ResumeWithLagZeroRemembersTheFirstBatchWithoutResendingIt) {
  for (const int sends : {1, 3}) {
    MemoryRing ring(2, 0);
    run::RecordingMigrator recording(ring.migrator(0));
    Migrant m;
    m.generation = 0;
    recording.restore(sends, {m}, 0);
    EXPECT_EQ(ring.sent(), 0u) << "resumed after " << sends << " sends";
    EXPECT_EQ(ring.migrator(1).gather_first().size(), sends == 1 ? 1u : 0u);
  }
  MemoryRing ring(2, 1);
  run::RecordingMigrator recording(ring.migrator(0));
  recording.restore(3, {Migrant{}}, 1);
  EXPECT_EQ(ring.sent(), 1u) << "lag 1: the batch the neighbour had not integrated, again";
}

}  // namespace
}  // namespace isletune
