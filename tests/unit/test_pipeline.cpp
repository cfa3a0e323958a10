// The evaluators' queue and the pipeline over it: the simulated queue's schedule (the CUDA
// worker's), replay's asynchronous answers, and island searches that keep several generations
// queued: reproducible, resumable, and busier than one generation at a time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <tuple>

#include "eval/byte_codec.hpp"
#include "eval/queue_model.hpp"
#include "eval/replay/replay_evaluator.hpp"
#include "ga/search.hpp"
#include "stencil/typical.hpp"
#include "test_ga_fakes.hpp"
#include "test_replay_records.hpp"
#include "trace/replay_dataset.hpp"

namespace isletune {
namespace {

Measurement cost(double compile_ms, double gpu_ms) {
  Measurement m;
  m.status = gpu_ms > 0 ? Status::ok : Status::compile_error;
  m.median_ms = 1;
  m.compile_ms = compile_ms;
  m.verify_ms = gpu_ms / 2;
  m.run_ms = gpu_ms / 2;
  return m;
}

// Times of every measurement of `batch` submitted at once at `now` (in ticket order).
std::vector<Timeline> schedule(QueueModel& q, const std::vector<Measurement>& batch, double now,
                               Ticket first = 0) {
  for (std::size_t i = 0; i < batch.size(); ++i) {
    q.add(first + static_cast<Ticket>(i), now, batch[i].compile_ms * 1e-3,
          (batch[i].verify_ms + batch[i].run_ms) * 1e-3);
  }
  std::vector<Timeline> out(batch.size());
  while (const auto done = q.next())
    out[static_cast<std::size_t>(done->ticket - first)] = done->timeline;
  return out;
}

TEST(QueueModel, ABatchSubmittedAtOnceEndsWhenTheBatchSpanSays) {
  Rng rng(3, 0);
  for (const int threads : {0, 1, 4, 16}) {
    std::vector<Measurement> batch;
    for (int i = 0; i < 23; ++i)
      batch.push_back(cost(50 + rng.uniform() * 900, (i % 5 == 0) ? 0 : 5 + rng.uniform() * 40));
    QueueModel q(threads);
    const std::vector<Timeline> t = schedule(q, batch, 2.0);
    double last = 0;
    for (const Timeline& x : t)
      last = std::max(last, x.finish_s);
    EXPECT_NEAR(last - 2.0, batch_span_s(batch, threads), 1e-9) << threads << " threads";
    for (std::size_t i = 0; i < t.size(); ++i) {
      EXPECT_EQ(t[i].submit_s, 2.0);
      EXPECT_EQ(std::isnan(t[i].start_s), batch[i].verify_ms + batch[i].run_ms == 0);
    }
  }
}

TEST(QueueModel, TheGpuTakesKernelsInTheOrderTheirCompilesEndAndNeverRunsTwoAtOnce) {
  QueueModel q(2);
  // Compiles of 0.3, 0.1, 0.05 s on two threads: ends at 0.3, 0.1 and 0.15.
  q.add(0, 0, 0.3, 0.1);
  q.add(1, 0, 0.1, 0.1);
  q.add(2, 0, 0.05, 0.1);
  std::vector<QueueModel::Done> done;
  while (const auto d = q.next())
    done.push_back(*d);
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].ticket, 1);
  EXPECT_NEAR(done[0].timeline.start_s, 0.1, 1e-12);
  EXPECT_EQ(done[1].ticket, 2);
  EXPECT_NEAR(done[1].timeline.start_s, 0.2, 1e-12);  // waits for the GPU
  EXPECT_EQ(done[2].ticket, 0);
  EXPECT_NEAR(done[2].timeline.start_s, 0.3, 1e-12);
  EXPECT_NEAR(done[2].timeline.finish_s, 0.4, 1e-12);
}

// A kernel that loses the race takes its raced GPU time only if another kernel's compile has
// ended when the race is decided (its start plus the raced time): the worker's condition.
TEST(QueueModel, ALoserIsRacedOnlyWhileAnotherCompiledKernelWaits) {
  // Ticket 0 compiles by 0.1 s and loses (0.02 s raced of 0.1); ticket 1 compiles by
  // `second_compiled` on another thread. The first done: (raced, finish).
  const auto first = [](int threads, double second_compiled) {
    QueueModel q(threads);
    q.add(0, 0, 0.1, 0.1, 0.02);
    q.add(1, 0, second_compiled, 0.1);
    const auto d = q.next();
    EXPECT_TRUE(d && d->ticket == 0);
    return std::make_pair(d->raced, d->timeline.finish_s);
  };
  // Ticket 1 waits when the race is decided at 0.12: raced, and 1 starts at 0.12.
  const auto [raced, finish] = first(2, 0.11);
  EXPECT_TRUE(raced);
  EXPECT_NEAR(finish, 0.12, 1e-12);
  // Decided before the next compile ends (0.13): timed in full.
  const auto [full, full_finish] = first(2, 0.13);
  EXPECT_FALSE(full);
  EXPECT_NEAR(full_finish, 0.2, 1e-12);
  // With the costs in series (threads 0) nothing waits: never raced.
  const auto [serial, serial_finish] = first(0, 0.01);
  EXPECT_FALSE(serial);
  EXPECT_NEAR(serial_finish, 0.2, 1e-12);
  // The kernel that waited starts when the raced one ends.
  QueueModel q(2);
  q.add(0, 0, 0.1, 0.1, 0.02);
  q.add(1, 0, 0.11, 0.1);
  (void)q.next();
  const auto b = q.next();
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->raced);
  EXPECT_NEAR(b->timeline.start_s, 0.12, 1e-12);
}

// A kernel whose runs would settle takes its settled GPU time only if another kernel's compile
// has ended when they are timed; a loser that races takes its raced time first.
TEST(QueueModel, ASettlingKernelTakesItsSettledTimeOnlyWhileAnotherWaits) {
  // Ticket 0 compiles by 0.1 s and would settle (0.05 s of 0.1); ticket 1 compiles by
  // `second_compiled`. The first done: its settled and raced flags and its finish.
  const auto first = [](double second_compiled, double raced_s, bool settled, bool raced,
                        double finish) {
    QueueModel q(2);
    q.add(0, 0, 0.1, 0.1, raced_s, 0.05);
    q.add(1, 0, second_compiled, 0.1);
    const auto d = q.next();
    ASSERT_TRUE(d && d->ticket == 0);
    EXPECT_EQ(d->settled, settled) << second_compiled << " " << raced_s;
    EXPECT_EQ(d->raced, raced) << second_compiled << " " << raced_s;
    EXPECT_NEAR(d->timeline.finish_s, finish, 1e-12);
  };
  first(0.14, -1, true, false, 0.15);    // 1 waits when the runs settle at 0.15
  first(0.16, -1, false, false, 0.2);    // not yet: timed in full
  first(0.11, 0.02, false, true, 0.12);  // the race comes first
  first(0.14, 0.02, true, false, 0.15);  // a loser nobody waits for at 0.12 settles at 0.15
}

// A queue saved by an older isletune restores as it was: one job (ticket 7, submitted at 0.1,
// compiled by 0.3, 0.05 s on the GPU) on one thread, in the format of tag QUE1 (before racing:
// no raced time) or QUE2 (before settling: a raced time, none settled).
void expect_old_queue_restores(std::uint32_t tag, bool with_raced) {
  ByteWriter w;
  w.put(tag);
  w.put(std::int32_t{1});
  w.put(0.3);  // the thread's free time
  w.put(0.0);  // gpu free
  w.put(0.0);  // serial free
  w.put(std::uint32_t{1});
  w.put(Ticket{7});
  for (const double x : {0.1, 0.3, 0.05, 0.0, 0.0})  // submit, compiled, gpu_s, start, finish
    w.put(x);
  if (with_raced)
    w.put(-1.0);           // raced_s
  w.put(std::uint8_t{0});  // fixed
  if (with_raced)
    w.put(std::uint8_t{0});  // raced
  w.put(std::uint8_t{0});    // nothing running
  QueueModel q;
  q.restore(w.bytes);
  EXPECT_EQ(q.threads(), 1);
  const auto d = q.next();
  ASSERT_TRUE(d);
  EXPECT_EQ(d->ticket, 7);
  EXPECT_FALSE(d->raced);
  EXPECT_FALSE(d->settled);
  EXPECT_NEAR(d->timeline.finish_s, 0.35, 1e-12);
  EXPECT_THROW(q.restore(std::vector<std::uint8_t>(w.bytes.begin(), w.bytes.end() - 1)),
               std::invalid_argument);
}

TEST(QueueModel, AQueueSavedBeforeSettlingRestores) {
  expect_old_queue_restores(0x51554532U, true);  // "QUE2"
}

TEST(QueueModel, AQueueSavedBeforeRacingRestores) {
  expect_old_queue_restores(0x51554531U, false);  // "QUE1"
}

TEST(QueueModel, ARestoredScheduleContinuesExactly) {
  QueueModel a(3);
  for (Ticket t = 0; t < 10; ++t)
    a.add(t, 0.01 * static_cast<double>(t), 0.1 + 0.07 * static_cast<double>(t % 4), 0.02,
          t % 3 == 0 ? 0.005 : -1, t % 2 == 0 ? 0.01 : -1);  // every third a loser, even settle
  (void)a.next();
  (void)a.next();
  QueueModel b;
  b.restore(a.save());
  EXPECT_EQ(b.threads(), 3);
  a.add(10, 0.5, 0.2, 0.03);
  b.add(10, 0.5, 0.2, 0.03);
  for (;;) {
    const auto x = a.next();
    const auto y = b.next();
    ASSERT_EQ(x.has_value(), y.has_value());
    if (!x)
      break;
    EXPECT_EQ(x->ticket, y->ticket);
    EXPECT_EQ(x->timeline.finish_s, y->timeline.finish_s);
    EXPECT_EQ(x->raced, y->raced);
    EXPECT_EQ(x->settled, y->settled);
  }
  std::vector<std::uint8_t> bad = a.save();
  bad.pop_back();
  EXPECT_THROW(b.restore(bad), std::invalid_argument);
}

// ---- replay's queue ---------------------------------------------------------------------

using testing::setting_with;
using testing::small_shape;

ReplayEvaluator three_kernels(int threads) {
  std::vector<EvaluationRecord> rows;
  for (const auto& [tbx, compile, gpu] :
       {std::tuple{32, 300.0, 100.0}, {64, 100.0, 100.0}, {128, 50.0, 100.0}}) {
    EvaluationRecord r;
    r.setting = setting_with(tbx);
    r.measurement = cost(compile, gpu);
    rows.push_back(r);
  }
  ReplayEvaluator replay(small_shape(), measured_pairs(rows), DeviceLimits{}, "test");
  replay.set_compile_threads(threads);
  return replay;
}

TEST(ReplayQueue, MeasurementsComeBackAsTheyFinishAndTheClockFollows) {
  ReplayEvaluator replay = three_kernels(2);
  EXPECT_TRUE(replay.asynchronous());
  const Ticket a = replay.submit(setting_with(32));
  const Ticket b = replay.submit(setting_with(64));
  const Ticket c = replay.submit(setting_with(999));  // unrecorded: at once, no cost
  EXPECT_EQ(replay.outstanding(), 3);
  auto first = replay.next();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->ticket, c);
  EXPECT_EQ(first->measurement.status, Status::invalid);
  auto second = replay.next();
  EXPECT_EQ(second->ticket, b);
  EXPECT_NEAR(replay.clock_s(), 0.2, 1e-12);
  // Submitted at 0.2: compiles until 0.25 on the free thread, then waits for the GPU.
  const Ticket d = replay.submit(setting_with(128));
  auto third = replay.next();
  EXPECT_EQ(third->ticket, d);
  EXPECT_NEAR(third->timeline.submit_s, 0.2, 1e-12);
  EXPECT_NEAR(third->timeline.start_s, 0.25, 1e-12);
  auto fourth = replay.next();
  EXPECT_EQ(fourth->ticket, a);
  EXPECT_NEAR(fourth->timeline.start_s, 0.35, 1e-12);
  EXPECT_FALSE(replay.next());
  EXPECT_EQ(replay.outstanding(), 0);
}

TEST(ReplayQueue, ABatchKeepsTheQueuesOtherMeasurementsForNext) {
  ReplayEvaluator replay = three_kernels(4);
  const Ticket slow = replay.submit(setting_with(32));
  const std::vector<Setting> batch = {setting_with(64), setting_with(128)};
  const std::vector<Measurement> out = replay.evaluate(batch);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].compile_ms, 100.0);
  EXPECT_EQ(out[1].compile_ms, 50.0);
  EXPECT_EQ(replay.outstanding(), 1);
  const auto kept = replay.next();
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->ticket, slow);
  EXPECT_EQ(kept->measurement.compile_ms, 300.0);
}

// ---- the pipeline -----------------------------------------------------------------------

const std::filesystem::path kCold =
    std::filesystem::path(ISLETUNE_TEST_DATA) / "h100-full-star3d2r-512.h5";

struct Cold {
  ReplayEvaluator replay;
  std::vector<Setting> settings;
};

const Cold& cold() {
  static const Cold c = [] {
    Cold out{load_replay(kCold), {}};
    out.settings = out.replay.candidates();
    return out;
  }();
  return c;
}

GaSettings timed_ga(int pipeline) {
  GaSettings ga;
  ga.max_generations = 0;
  ga.time_budget_s = 60;
  ga.pipeline = pipeline;
  return ga;
}

struct Outcome {
  testing::MemorySink sink;
  SearchResult result;
  double gpu_s = 0;  // verify + run of every new measurement
};

Outcome run_cold(const GaSettings& ga, std::uint64_t seed, const SearchHooks& hooks = {},
                 const std::optional<SearchState>& resume = std::nullopt, IslandExtras extras = {},
                 double race_factor = 0) {
  Outcome o;
  ReplayEvaluator eval = cold().replay;
  eval.set_race_factor(race_factor);
  SampledSet set;
  set.settings = cold().settings;
  NoMigrator alone;
  LocalStopVote vote;
  o.result =
      run_island(ga, set, eval, alone, vote, o.sink, seed, 0, hooks, resume, std::move(extras));
  for (const EvaluationRecord& r : o.sink.evaluations) {
    if (!r.cached && !r.migrant)
      o.gpu_s += (r.measurement.verify_ms + r.measurement.run_ms) * 1e-3;
  }
  return o;
}

TEST(Pipeline, RecordedWithCompileThreads) {
  ASSERT_GT(cold().replay.compile_threads(), 1) << "the pipeline tests need a cold dataset";
}

TEST(Pipeline, KeepsTheGpuBusierAndMeasuresMoreInTheSameTime) {
  for (const std::uint64_t seed : {1, 2, 3}) {
    const Outcome one = run_cold(timed_ga(1), seed);
    const Outcome deep = run_cold(timed_ga(0), seed);
    const double one_busy = one.gpu_s / one.sink.generations.back().wall_s;
    const double deep_busy = deep.gpu_s / deep.sink.generations.back().wall_s;
    EXPECT_GT(deep.result.evaluations, 1.3 * static_cast<double>(one.result.evaluations))
        << "seed " << seed;
    EXPECT_GT(deep_busy, one_busy + 0.1) << "seed " << seed;
    // Every new measurement carries its way through the queue.
    for (const EvaluationRecord& r : deep.sink.evaluations) {
      if (r.cached || r.migrant)
        continue;
      EXPECT_LE(r.timeline.submit_s, r.timeline.finish_s)
          << "gen " << r.generation << " cell " << r.cell << " eval " << r.eval_id << " status "
          << status_name(r.measurement.status);
      EXPECT_LE(r.timeline.finish_s, r.wall_s + 1e-9);
      if (!std::isnan(r.timeline.start_s))
        EXPECT_LE(r.timeline.start_s, r.timeline.finish_s);
    }
  }
}

TEST(Pipeline, SameSeedSameTraceAndTheBudgetHolds) {
  const Outcome a = run_cold(timed_ga(0), 7);
  const Outcome b = run_cold(timed_ga(0), 7);
  ASSERT_EQ(a.sink.evaluations.size(), b.sink.evaluations.size());
  for (std::size_t i = 0; i < a.sink.evaluations.size(); ++i) {
    EXPECT_EQ(a.sink.evaluations[i].setting, b.sink.evaluations[i].setting);
    EXPECT_EQ(a.sink.evaluations[i].wall_s, b.sink.evaluations[i].wall_s);
  }
  EXPECT_EQ(a.result.reason, StopReason::time_budget);
  // The budget is a budget: the last generation ends within 5 % of it.
  EXPECT_LE(a.sink.generations.back().wall_s, 60 * 1.05);
}

// An island of 16 on the cold recording whose initial generation the pipeline (as deep as it
// may go) has measured and settled.
struct SettledIsland {
  Reindex alphabet{cold().settings, Encoding::parameters};
  Torus torus{4, 4};
  Island island{alphabet, torus, GaOperators{}, 3, 0};
  ReplayEvaluator eval = cold().replay;
  testing::MemorySink sink;
  std::function<void(const Setting&, const Completion&)> late = [this](const Setting& s,
                                                                       const Completion& c) {
    island.late(s, c.measurement, sink, eval.clock_s(), c.timeline);
  };
  Pipeline pipeline{GaSettings::kMaxPipeline};
  SettledIsland() {
    pipeline.push(island.propose_initial(), eval);
    const QueuedBrood first = pipeline.take(eval, nullptr, late, false);
    island.settle(first.brood, first.results, sink, eval.clock_s(), first.timelines);
  }
};

// Once the time budget is spent the oldest proposal settles with what has come back: nothing
// more is proposed or waited for (a slow compile held the stop up to 5.8 % past a 60-s budget
// on box2d2r-8192, seeds 2 and 19, before).
TEST(Pipeline, OnceTheBudgetIsSpentTheOldestProposalSettlesWithWhatCameBack) {
  SettledIsland t;
  Island& island = t.island;
  ReplayEvaluator& eval = t.eval;
  Pipeline& p = t.pipeline;
  const auto& late = t.late;
  p.push(island.propose_offspring(), eval);
  int proposed = 0;
  const auto propose = [&]() -> std::optional<Brood> {
    ++proposed;
    return island.propose_offspring();
  };
  const double before = eval.clock_s();
  const QueuedBrood last = p.take(eval, propose, late, true, [] { return true; });
  EXPECT_EQ(proposed, 0);
  ASSERT_GT(last.brood.fresh.size(), 0U);
  EXPECT_EQ(last.open(), static_cast<int>(last.brood.fresh.size()));
  EXPECT_EQ(p.stragglers(), last.open());
  EXPECT_EQ(eval.clock_s(), before);
}

TEST(Pipeline, TheLastGenerationEndsAtTheBudgetWhenCompilesAreSlow) {
  ReplayEvaluator box =
      load_replay(std::filesystem::path(ISLETUNE_TEST_DATA) / "h100-full-box2d2r-8192.h5");
  ASSERT_GT(box.compile_threads(), 1);
  SampledSet set;
  set.settings = box.candidates();
  for (const std::uint64_t seed : {2, 19}) {
    ReplayEvaluator eval = box;
    testing::MemorySink sink;
    NoMigrator alone;
    LocalStopVote vote;
    const SearchResult r = run_island(timed_ga(0), set, eval, alone, vote, sink, seed, 0);
    EXPECT_EQ(r.reason, StopReason::time_budget);
    EXPECT_LE(sink.generations.back().wall_s, 60 * 1.01) << "seed " << seed;
  }
}

// Also with racing: the kernels queued to lose the race and the fastest so far travel with the
// queue, so the raced costs (and the clock) continue exactly.
TEST(Pipeline, ResumesFromAnySnapshotWithTheUninterruptedTrace) {
  for (const double race : {0.0, 1.5}) {
    std::vector<SearchState> snapshots;
    SearchHooks hooks;
    hooks.on_snapshot = [&](const SearchState& s) { snapshots.push_back(s); };
    const Outcome whole = run_cold(timed_ga(0), 5, hooks, std::nullopt, {}, race);
    ASSERT_GE(snapshots.size(), 10u);
    const auto raced =
        std::count_if(whole.sink.evaluations.begin(), whole.sink.evaluations.end(),
                      [](const EvaluationRecord& r) {
                        return r.measurement.message.find("raced") != std::string::npos;
                      });
    EXPECT_EQ(raced > 0, race > 0) << "race " << race;
    for (std::size_t i = 1; i + 2 < snapshots.size(); i += snapshots.size() / 9) {
      ASSERT_FALSE(snapshots[i].queue.empty());
      const Outcome rest = run_cold(timed_ga(0), 5, {}, snapshots[i], {}, race);
      const int next = snapshots[i].generation + 1;
      // (setting, clock, run_ms, message): a raced answer's cost and message too
      std::vector<std::tuple<Setting, double, double, std::string>> expected, got;
      for (const EvaluationRecord& r : whole.sink.evaluations) {
        if (r.generation >= next)
          expected.emplace_back(r.setting, r.wall_s, r.measurement.run_ms, r.measurement.message);
      }
      for (const EvaluationRecord& r : rest.sink.evaluations)
        got.emplace_back(r.setting, r.wall_s, r.measurement.run_ms, r.measurement.message);
      EXPECT_EQ(got, expected) << "after snapshot " << i << ", race " << race;
      EXPECT_EQ(rest.result.evaluations, whole.result.evaluations);
      EXPECT_EQ(rest.result.best, whole.result.best);
    }
  }
}

// A restart of a run that depends on timing (GPUs: drift or async islands) leaves the settled
// generations' last settings queued, so the GPU measures them while the restart's settings
// compile; the deterministic run waits for every one of them first, as replay always has.
// Every restart is flagged in its generation's record.
TEST(Pipeline, ARestartOfARunThatDependsOnTimingLeavesItsStragglersQueued) {
  for (const int drift : {-1, GaSettings::kDriftAsync}) {
    GaSettings ga = timed_ga(0);
    ga.migration_drift = drift;
    int restarts = 0, spanned = 0;
    for (const std::uint64_t seed : {1, 2, 3}) {
      const Outcome run = run_cold(ga, seed);
      const testing::MemorySink& sink = run.sink;
      for (const GenerationRecord& g : sink.generations) {
        if (g.restart == 0)
          continue;
        ++restarts;
        // The restart's settings are submitted together, after everything else of its
        // generation's rows (the late ones).
        double submitted = -1;
        for (const EvaluationRecord& r : sink.evaluations) {
          if (r.generation == g.generation && !r.cached && !r.migrant)
            submitted = std::max(submitted, r.timeline.submit_s);
        }
        ASSERT_GE(submitted, 0) << "a restart with no new measurement";
        for (const EvaluationRecord& r : sink.evaluations) {
          if (!r.cached && !r.migrant && r.timeline.submit_s < submitted &&
              r.timeline.finish_s > submitted)
            ++spanned;
        }
      }
    }
    ASSERT_GE(restarts, 3) << "drift " << drift << ": too few restarts to tell";
    if (drift < 0)
      EXPECT_EQ(spanned, 0) << "the deterministic run's restart did not wait for its stragglers";
    else
      EXPECT_GT(spanned, 0) << "no restart left a straggler queued";
  }
}

// An island of 4 (the default split over four islands: one bred child a generation beside 3
// model picks) in a run that depends on timing: a due restart no longer stops its proposals
// while they bring new settings. Its restart window of a few children is noisy; stopping
// drained the queue, often for a restart no longer due once it had, and the replayed GPU was
// about 70 % busy, as it still is in the deterministic run. (74 % rather than 80 % since the
// queue deepens with what the island knows, DepthRamp: alone, an island of 4 knows only its
// own measurements, and its first 120 keep fewer settings queued; seed 1: 76 %, 74.6 % since
// it restarts once its best is stale, docs/studies/2026-12-06-restarts-on-a-stale-best.md.)
TEST(Pipeline, ASmallIslandOfARunThatDependsOnTimingKeepsItsQueueWhileARestartIsDue) {
  for (const std::uint64_t seed : {1, 2}) {
    double busy[2] = {0, 0};
    std::int64_t measured[2] = {0, 0};
    for (const int timing : {0, 1}) {
      GaSettings ga = timed_ga(0).for_islands(4);
      ga.migration_drift = timing ? GaSettings::kDriftAsync : -1;
      const Outcome run = run_cold(ga, seed);
      busy[timing] = run.gpu_s / run.sink.generations.back().wall_s;
      measured[timing] = run.result.evaluations;
    }
    EXPECT_GE(busy[1], 0.74) << "seed " << seed;
    EXPECT_GT(busy[1], busy[0] + 0.08) << "seed " << seed;
    EXPECT_GT(static_cast<double>(measured[1]), 1.1 * static_cast<double>(measured[0]))
        << "seed " << seed;
  }
}

// A due restart of a run that depends on timing, on a stale best or on the MCR once the
// proposals bring nothing new, settles the queued proposals at once: the GPU keeps measuring
// their last settings while the restart's compile. Draining the queue first, as it did, this
// island's replayed GPU was 66-67 % busy (seeds 1-2, 2 restarts each, the MCR's); now 79-90 %.
TEST(Pipeline, ADueRestartOfARunThatDependsOnTimingDoesNotDrainItsQueue) {
  GaSettings ga = timed_ga(0);
  ga.migration_drift = GaSettings::kDriftAsync;
  for (const std::uint64_t seed : {1, 2}) {
    for (const std::int64_t stale : {std::int64_t{0}, std::int64_t{150}}) {
      IslandExtras extras;
      extras.stale_restart = stale;
      const Outcome run = run_cold(ga, seed, {}, std::nullopt, std::move(extras));
      int restarts = 0;
      for (const GenerationRecord& g : run.sink.generations)
        restarts += g.restart;
      ASSERT_GE(restarts, 2) << "seed " << seed << ", stale " << stale;
      EXPECT_GE(run.gpu_s / run.sink.generations.back().wall_s, 0.76)
          << "seed " << seed << ", stale " << stale;
    }
  }
}

// A quorum settles a proposal once that many of its settings have come back: the rest stay
// queued as stragglers, and come back later as late measurements of the island.
TEST(Pipeline, AProposalSettlesAtItsQuorum) {
  SettledIsland t;
  Brood b = t.island.propose_offspring();
  const int fresh = static_cast<int>(b.fresh.size());
  ASSERT_GE(fresh, 4);
  t.pipeline.push(std::move(b), t.eval);
  const QueuedBrood q = t.pipeline.take(t.eval, nullptr, t.late, false, {}, 3);
  EXPECT_EQ(fresh - q.open(), 3);
  EXPECT_EQ(t.pipeline.stragglers(), fresh - 3);
  EXPECT_EQ(t.pipeline.broods(), 0);
  const std::size_t rows = t.sink.evaluations.size();
  t.island.settle(q.brood, q.results, t.sink, t.eval.clock_s(), q.timelines);
  t.pipeline.drain_late(t.eval, t.late);
  EXPECT_EQ(t.pipeline.stragglers(), 0);
  std::size_t late_rows = 0;
  for (std::size_t i = rows; i < t.sink.evaluations.size(); ++i)
    late_rows += t.sink.evaluations[i].cached ? 0 : 1;
  EXPECT_EQ(late_rows, static_cast<std::size_t>(fresh)) << "every setting has its row";
}

// A synchronous evaluator (a fake) gets one generation at a time whatever the setting.
TEST(Pipeline, ASynchronousEvaluatorRunsOneGenerationAtATime) {
  GaSettings ga;
  ga.mcr_threshold = 0.8;
  ga.max_generations = 12;
  testing::MemorySink a, b;
  for (auto [sink, pipeline] : {std::pair{&a, 0}, std::pair{&b, 1}}) {
    ga.pipeline = pipeline;
    testing::SyntheticEvaluator eval(testing::random_landscape(3));
    NoMigrator alone;
    LocalStopVote vote;
    (void)run_island(ga, testing::landscape_set(), eval, alone, vote, *sink, 3, 0);
  }
  ASSERT_EQ(a.evaluations.size(), b.evaluations.size());
  for (std::size_t i = 0; i < a.evaluations.size(); ++i)
    EXPECT_EQ(a.evaluations[i].setting, b.evaluations[i].setting);
}

}  // namespace
}  // namespace isletune

namespace isletune {
namespace {

// While an island waits for the others, pump() keeps its evaluator's queue full: it proposes
// the next generations up to the target, takes in what comes back and settles nothing; on an
// evaluator whose compiles do not overlap its measurements it does nothing.
TEST(Pipeline, APumpKeepsTheQueueFullAndSettlesNothing) {
  SettledIsland t;
  Island& island = t.island;
  ReplayEvaluator& eval = t.eval;
  testing::MemorySink& sink = t.sink;
  Pipeline& p = t.pipeline;
  const auto& late = t.late;
  p.push(island.propose_offspring(), eval);
  const std::size_t rows = sink.evaluations.size();
  int proposed = 0;
  const auto propose = [&]() -> std::optional<Brood> {
    ++proposed;
    return island.propose_offspring();
  };
  for (int k = 0; k < 30; ++k)
    ASSERT_TRUE(p.pump(eval, propose)) << k;
  EXPECT_GT(proposed, 0);
  EXPECT_GT(p.broods(), 1);
  EXPECT_LE(p.broods(), GaSettings::kMaxPipeline);
  EXPECT_EQ(island.generation(), 0);         // nothing settled
  EXPECT_EQ(sink.evaluations.size(), rows);  // no rows between generations
  EXPECT_GE(p.owed(), p.outstanding());
  // The next take() settles the oldest proposal as generation 1.
  const QueuedBrood next = p.take(eval, propose, late, true);
  island.settle(next.brood, next.results, sink, eval.clock_s(), next.timelines);
  EXPECT_EQ(island.generation(), 1);

  ReplayEvaluator serial = cold().replay;
  serial.set_compile_threads(0);
  Pipeline q(GaSettings::kMaxPipeline);
  q.push(island.propose_offspring(), serial);
  EXPECT_FALSE(q.pump(serial, propose));
}

}  // namespace
}  // namespace isletune

namespace isletune {
namespace {

// While the island knows few measurements the queue stays shallow (at least 2 settings, at
// most a sixth of what the island knows); once it knows enough, the pace alone sets it.
TEST(PipelineDepth, TheQueueDeepensWithWhatTheIslandKnows) {
  const ReplayEvaluator eval = cold().replay;
  const Pipeline paced(GaSettings::kMaxPipeline);
  const int pace = paced.target(eval);
  ASSERT_GT(pace, 4);
  std::int64_t known = 16;
  Pipeline ramped(GaSettings::kMaxPipeline);
  ramped.set_known([&] { return known; });
  EXPECT_EQ(ramped.target(eval), 2);
  known = 30;
  EXPECT_EQ(ramped.target(eval), 5);
  known = 6 * static_cast<std::int64_t>(pace) - 1;
  EXPECT_EQ(ramped.target(eval), pace - 1);
  known = 6 * static_cast<std::int64_t>(pace);
  EXPECT_EQ(ramped.target(eval), pace);
  known = 100000;
  EXPECT_EQ(ramped.target(eval), pace);
}

// The ramp counts the measurements of settled generations: those of a proposal still queued,
// though the island takes them in as they come back (its cache, the model's data), deepen the
// queue only once their generation settles.
TEST(PipelineDepth, TheQueueDeepensOnlyWithSettledGenerations) {
  const Reindex alphabet(cold().settings, Encoding::parameters);
  const Torus torus(4, 4);
  Island island(alphabet, torus, GaOperators{}, 5, 0);
  ReplayEvaluator eval = cold().replay;
  testing::MemorySink sink;
  Pipeline p(GaSettings::kMaxPipeline);
  p.set_on_result([&](const Brood& b, std::size_t slot, const Measurement& m, bool place) {
    island.take_in(b, slot, m, place);
  });
  p.set_known([&] { return static_cast<std::int64_t>(island.cache_size()); });
  p.push(island.propose_initial(), eval);
  const auto late = [&](const Setting& s, const Completion& c) {
    island.late(s, c.measurement, sink, eval.clock_s(), c.timeline);
  };
  QueuedBrood first = p.take(eval, nullptr, late, false);
  island.settle(first.brood, first.results, sink, eval.clock_s(), first.timelines);
  const std::int64_t settled = static_cast<std::int64_t>(island.cache_size());
  ASSERT_EQ(p.target(eval), DepthRamp::most(settled));
  p.push(island.propose_offspring(), eval);
  const int fresh = p.outstanding();
  ASSERT_GT(DepthRamp::most(settled + fresh), DepthRamp::most(settled));
  const auto none = []() -> std::optional<Brood> { return std::nullopt; };
  for (int k = 1; k <= fresh; ++k) {
    ASSERT_TRUE(p.pump(eval, none)) << k;
    EXPECT_EQ(static_cast<std::int64_t>(island.cache_size()), settled + k);  // taken in
    EXPECT_EQ(p.returned(), k);
    EXPECT_EQ(p.target(eval), DepthRamp::most(settled)) << k;
  }
  const QueuedBrood next = p.take(eval, nullptr, late, false);
  island.settle(next.brood, next.results, sink, eval.clock_s(), next.timelines);
  EXPECT_EQ(p.returned(), 0);
  EXPECT_EQ(p.target(eval), DepthRamp::most(settled + fresh));
  EXPECT_GT(p.target(eval), DepthRamp::most(settled));
}

// The automatic depth bounds the children in flight, not the generations: the split
// population of four islands (2x2) may queue four times the generations of one island of 16,
// and a configured depth is taken as it is.
TEST(PipelineDepth, AutomaticDepthScalesWithTheIslandsPopulation) {
  GaSettings one;
  EXPECT_EQ(one.for_islands(1).pipeline_broods(), GaSettings::kAutoPipeline);
  const GaSettings four = one.for_islands(4);
  ASSERT_EQ(four.population, 4);
  EXPECT_EQ(four.pipeline_broods(), 4 * GaSettings::kAutoPipeline);
  EXPECT_EQ(four.pipeline_broods() * four.population,
            one.for_islands(1).pipeline_broods() * one.for_islands(1).population);
  GaSettings fixed = four;
  fixed.pipeline = 3;
  EXPECT_EQ(fixed.pipeline_broods(), 3);
  GaSettings big;
  big.population = 64;
  big.rows = big.cols = 8;
  EXPECT_EQ(big.pipeline_broods(), GaSettings::kAutoPipeline) << "never shallower than 16";
  GaSettings tiny;
  tiny.population = 2;
  tiny.rows = 1;
  tiny.cols = 2;
  EXPECT_EQ(tiny.pipeline_broods(), GaSettings::kMaxPipelineBroods);
}

}  // namespace
}  // namespace isletune

namespace isletune {
namespace {

// An asynchronous queue whose order the test decides: a setting marked slow (its values[0]
// negative) comes back only once nothing else is queued, as a kernel that is slow to compile.
class ScriptedQueue final : public AsyncEvaluator {
 public:
  explicit ScriptedQueue(int threads) : threads_(threads) {}
  [[nodiscard]] int compile_threads() const override { return threads_; }
  [[nodiscard]] DeviceLimits limits() const override { return {}; }
  [[nodiscard]] double clock_s() const override { return clock_; }
  [[nodiscard]] std::string name() const override { return "replay"; }

 protected:
  void enqueue(Ticket ticket, const Setting& s) override { queued_.emplace_back(ticket, s); }
  Completion wait_one() override {
    auto it = std::find_if(queued_.begin(), queued_.end(),
                           [](const auto& q) { return q.second.values[0] >= 0; });
    if (it == queued_.end())
      it = queued_.begin();
    Completion c;
    c.ticket = it->first;
    c.measurement = cost(100, 10);
    clock_ += 0.01;
    queued_.erase(it);
    return c;
  }

 private:
  int threads_;
  double clock_ = 0;
  std::vector<std::pair<Ticket, Setting>> queued_;
};

Brood brood_of(int first, int n, bool last_slow) {
  Brood b;
  for (int i = 0; i < n; ++i) {
    Setting s;
    s.values[1] = first + i;
    s.values[0] = last_slow && i == n - 1 ? -1 : 1;
    b.fresh.push_back(s);
  }
  return b;
}

// Every proposal allowed is queued and the queue is short of its target: the oldest proposal
// settles once no more than kLateTail of its settings are out (they come back later as late
// measurements) instead of holding the next proposal up until the later proposals have all
// come back; with more of its settings out, it waits.
TEST(Pipeline, AProposalBehindASlowCompileSettlesWhenTheProposalsAllowedAreQueued) {
  for (const int slow : {1, Pipeline::kLateTail + 1}) {
    ScriptedQueue q(4);  // target 8 once paced: 1.5 x 100 / 10 + 2, capped at 4 + 4
    Pipeline p(2);
    Brood a = brood_of(0, 5, false);
    for (int i = 0; i < slow; ++i)
      a.fresh[static_cast<std::size_t>(4 - i)].values[0] = -1;
    p.push(std::move(a), q);
    int next = 100, proposed = 0;
    const auto propose = [&]() -> std::optional<Brood> {
      ++proposed;
      next += 10;
      return brood_of(next, 5, true);
    };
    std::vector<std::pair<Setting, Completion>> late;
    const auto on_late = [&](const Setting& s, const Completion& c) { late.emplace_back(s, c); };
    const QueuedBrood first = p.take(q, propose, on_late);
    EXPECT_EQ(proposed, 1) << slow;
    ASSERT_EQ(p.broods(), 1) << slow;
    // It settles the moment no more than kLateTail of its settings are out (whichever they
    // are); those come back later as late measurements.
    EXPECT_EQ(first.open(), Pipeline::kLateTail) << slow;
    EXPECT_EQ(p.stragglers(), Pipeline::kLateTail) << slow;
    if (slow <= Pipeline::kLateTail) {
      EXPECT_EQ(p.returned(), 0) << "settled before the next proposal's fast settings came back";
    } else {
      // More of its settings out (slow ones): it waited, while the next proposal's fast
      // settings came back, until one of its own did.
      EXPECT_EQ(p.returned(), 4);
    }
    // Another proposal is made at once: the queue is topped up behind it.
    p.take(q, propose, on_late);
    EXPECT_EQ(proposed, 2) << slow;
  }
}

}  // namespace
}  // namespace isletune
