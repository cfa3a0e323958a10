// The replay evaluator: recorded answers, invalid for unrecorded settings, a simulated
// clock that advances by recorded costs, candidates, and loading the shipped dataset.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <type_traits>
#include <unordered_set>

#include "common/error.hpp"
#include "eval/race.hpp"
#include "eval/replay/replay_evaluator.hpp"
#include "sample/predictor.hpp"
#include "sample/sampler.hpp"
#include "sample/setting_source.hpp"
#include "stencil/typical.hpp"
#include "test_replay_records.hpp"
#include "trace/reader.hpp"
#include "trace/replay_dataset.hpp"

namespace isletune {
namespace {

using testing::setting_with;
using testing::small_shape;

EvaluationRecord record(int tbx, Status status, double median, double cost_ms) {
  EvaluationRecord r;
  r.setting = setting_with(tbx);
  r.measurement.status = status;
  r.measurement.median_ms = median;
  r.measurement.times_ms = {median, median * 1.01};
  r.measurement.compile_ms = cost_ms;
  r.measurement.verify_ms = cost_ms / 2;
  r.measurement.run_ms = cost_ms / 4;
  return r;
}

TEST(Replay, AnswersRecordedSettingsAndAdvancesClockByTheirCost) {
  const std::vector<EvaluationRecord> rows = {record(32, Status::ok, 0.5, 100),
                                              record(64, Status::wrong_result, NAN, 40)};
  ReplayEvaluator replay(small_shape(), measured_pairs(rows), DeviceLimits{}, "test");
  EXPECT_EQ(replay.name(), "replay");
  EXPECT_EQ(replay.clock_s(), 0.0);
  const std::vector<Setting> batch = {setting_with(64), setting_with(32), setting_with(128)};
  const auto out = replay.evaluate(batch);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].status, Status::wrong_result);
  EXPECT_EQ(out[1].status, Status::ok);
  EXPECT_DOUBLE_EQ(out[1].median_ms, 0.5);
  EXPECT_EQ(out[1].times_ms, rows[0].measurement.times_ms);
  EXPECT_EQ(out[2].status, Status::invalid);
  EXPECT_NE(out[2].message.find("no record"), std::string::npos);
  // (100 + 50 + 25) ms + (40 + 20 + 10) ms; the unrecorded setting costs nothing.
  EXPECT_NEAR(replay.clock_s(), 0.245, 1e-12);
  EXPECT_EQ(replay.measured(), 2);
  // Asking again is measuring again: the clock advances again.
  (void)replay.evaluate(std::vector<Setting>{setting_with(32)});
  EXPECT_NEAR(replay.clock_s(), 0.245 + 0.175, 1e-12);
}

// With the recording's compile threads known, a batch costs what the CUDA worker spends on it:
// its kernels compile on T threads in batch order, and each runs on the GPU (verify + run) once
// its compile is done and the kernel before it has run.
TEST(Replay, BatchClockSimulatesParallelCompilesAndRunsKernelsAsTheirCompilesEnd) {
  const auto m = [](double compile_ms, double gpu_ms) {
    Measurement x;
    x.compile_ms = compile_ms;
    x.verify_ms = gpu_ms;
    return x;
  };
  const std::vector<Measurement> batch = {m(1000, 100), m(500, 100), m(800, 100), m(300, 100)};
  // In series: 2.6 s of compiles and 0.4 s of GPU time.
  EXPECT_NEAR(batch_span_s(batch, 0), 3.0, 1e-12);
  // Two threads: compiles end at 1.0, 0.5, 1.3 (second thread, after 0.5) and 1.3 (first,
  // after 1.0); the GPU runs them as they end: 0.5-0.6, 1.0-1.1, 1.3-1.4, 1.4-1.5.
  EXPECT_NEAR(batch_span_s(batch, 2), 1.5, 1e-12);
  // Four threads: every compile at once, ending at 0.3, 0.5, 0.8 and 1.0; each kernel runs
  // while the slower ones still compile, so the span is the slowest compile and its kernel,
  // 1.1 (in batch order it would be 1.0 + 0.4: the slowest compile is the first kernel).
  EXPECT_NEAR(batch_span_s(batch, 4), 1.1, 1e-12);
  EXPECT_NEAR(batch_span_s(batch, 16), 1.1, 1e-12);
  // Half the batch takes as long: the slowest compile sets the span.
  const std::vector<Measurement> half(batch.begin(), batch.begin() + 2);
  EXPECT_NEAR(batch_span_s(half, 16), 1.1, 1e-12);
  // The GPU still runs one kernel at a time: with compiles shorter than the runs the runs add.
  const std::vector<Measurement> gpu_bound = {m(100, 500), m(100, 500), m(50, 500)};
  EXPECT_NEAR(batch_span_s(gpu_bound, 16), 0.05 + 1.5, 1e-12);

  const std::vector<EvaluationRecord> rows = {record(32, Status::ok, 0.5, 100),
                                              record(64, Status::ok, 0.4, 40)};
  ReplayEvaluator replay(small_shape(), measured_pairs(rows), DeviceLimits{}, "test");
  replay.set_compile_threads(16);
  (void)replay.evaluate(std::vector<Setting>{setting_with(32), setting_with(64)});
  // Compiles 100 and 40 ms at once: the second kernel first, 40 + (20 + 10), then the first
  // from 100 ms: + (50 + 25) (in batch order: 100 + 75 + 30 = 205 ms).
  EXPECT_NEAR(replay.clock_s(), 0.175, 1e-12);
}

// evaluator.compile_scale: every recorded compile time scaled, in the queue and the answers.
TEST(Replay, CompileScaleScalesTheRecordedCompilesInTheClockAndTheAnswers) {
  const std::vector<EvaluationRecord> rows = {record(32, Status::ok, 0.5, 100),
                                              record(64, Status::ok, 0.4, 40)};
  ReplayEvaluator replay(small_shape(), measured_pairs(rows), DeviceLimits{}, "test");
  replay.set_compile_scale(0.5);
  const auto out = replay.evaluate(std::vector<Setting>{setting_with(32), setting_with(64)});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_DOUBLE_EQ(out[0].compile_ms, 50.0);
  EXPECT_DOUBLE_EQ(out[1].compile_ms, 20.0);
  EXPECT_DOUBLE_EQ(out[0].verify_ms, 50.0);  // GPU costs and timings as recorded
  EXPECT_DOUBLE_EQ(out[0].median_ms, 0.5);
  // In series: (50 + 50 + 25) + (20 + 20 + 10) ms.
  EXPECT_NEAR(replay.clock_s(), 0.175, 1e-12);

  ReplayEvaluator parallel(small_shape(), measured_pairs(rows), DeviceLimits{}, "test");
  parallel.set_compile_threads(16);
  parallel.set_compile_scale(2);
  (void)parallel.evaluate(std::vector<Setting>{setting_with(32), setting_with(64)});
  // Compiles of 200 and 80 ms: the second runs 80-110, the first 200-275.
  EXPECT_NEAR(parallel.clock_s(), 0.275, 1e-12);
}

// Racing (eval/race.hpp): the median of the first kRaceRuns runs against factor x the best.
TEST(Race, AKernelLosesOnTheMedianOfItsFirstRunsOverTheFactor) {
  const std::vector<double> slow = {1.6, 1.7, 1.55, 0.1};
  EXPECT_TRUE(races_out(slow, 1.0, 1.5));
  EXPECT_FALSE(races_out(slow, 1.2, 1.5));  // 1.6 < 1.8
  // One slow run of three (a clock hiccup) is not a lost race; nor are runs after the third.
  EXPECT_FALSE(races_out(std::vector<double>{1.0, 9.0, 1.1, 9.0}, 1.0, 1.5));
  EXPECT_FALSE(races_out(slow, 1.0, 0));                             // racing off
  EXPECT_FALSE(races_out(slow, 0, 1.5));                             // nothing timed before
  EXPECT_FALSE(races_out(std::vector<double>{9.0, 9.0}, 1.0, 1.5));  // too few runs yet
}

// Settling (eval/race.hpp): the first kSettleRuns runs within the spread of their median.
TEST(Settle, TheFirstRunsSettleWithinTheSpreadOfTheirMedian) {
  const std::vector<double> calm = {1.0, 1.004, 0.998, 1.002, 1.0, 3.0};
  EXPECT_TRUE(settles(calm, 0.01));  // 0.6 % of 1.0; the sixth run is not looked at
  EXPECT_FALSE(settles(calm, 0.005));
  EXPECT_FALSE(settles(std::vector<double>{1.0, 1.0, 1.0, 1.0, 1.02}, 0.01));  // one outlier
  EXPECT_FALSE(settles(calm, 0));                                              // settling off
  EXPECT_FALSE(settles(std::vector<double>{1.0, 1.0, 1.0, 1.0}, 0.01));        // too few runs yet
  EXPECT_FALSE(settles(std::vector<double>{0, 0, 0, 0, 0}, 0.01));             // no time
  EXPECT_DOUBLE_EQ(median_of_first(calm, 5), 1.0);
  EXPECT_NEAR(median_of_first(calm, 4), 1.001, 1e-12);  // (0.998, 1.0, 1.002, 1.004)
}

// The replay clock settles as the worker does: a kernel whose first recorded runs settle costs
// kSettledRunShare of its recorded timing and answers with those runs and their median when
// another kernel's compile has ended by the time they are timed; alone on the queue it is timed
// in full; a kernel whose runs spread is always timed in full.
TEST(Replay, AKernelWhoseRunsSettleCostsASettledTimingWhileAnotherWaits) {
  EvaluationRecord calm = record(32, Status::ok, 1.0, 100);  // costs 100 + 50 + 25 ms
  calm.measurement.times_ms = {1.002, 0.999, 1.0, 1.001, 0.998, 1.0, 1.0, 1.0, 1.0, 1.0};
  EvaluationRecord noisy = record(64, Status::ok, 1.0, 100);
  noisy.measurement.times_ms = {1.0, 1.1, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
  const std::vector<EvaluationRecord> rows = {calm, noisy};
  const auto make = [&](double spread) {
    auto r = std::make_unique<ReplayEvaluator>(small_shape(), measured_pairs(rows), DeviceLimits{},
                                               "test");
    r->set_compile_threads(2);
    r->set_settle_spread(spread);
    return r;
  };
  const auto evaluate = [](ReplayEvaluator& r, std::vector<int> tbx) {
    std::vector<Setting> batch;
    for (const int t : tbx)
      batch.push_back(setting_with(t));
    return r.evaluate(batch);
  };
  const auto settling = make(0.01);
  // Both compile by 0.1 s; the GPU takes the calm one first (submission order) while the
  // other waits: settled; the noisy one is timed in full.
  const auto two = evaluate(*settling, {32, 64});
  EXPECT_EQ(two[0].times_ms.size(), static_cast<std::size_t>(kSettleRuns));
  EXPECT_DOUBLE_EQ(two[0].median_ms, 1.0);  // the median of its first five runs
  EXPECT_NEAR(two[0].run_ms, 25 * kSettledRunShare, 1e-12);
  EXPECT_EQ(two[1].times_ms.size(), 10u);
  EXPECT_NEAR(two[1].run_ms, 25, 1e-12);
  EXPECT_NEAR(settling->clock_s(), 0.100 + 0.050 + 0.025 * kSettledRunShare + 0.075, 1e-12);
  // Alone on the queue the calm kernel is timed in full: the GPU would idle otherwise.
  const Measurement alone = evaluate(*settling, {32}).at(0);
  EXPECT_EQ(alone.times_ms.size(), 10u);
  EXPECT_NEAR(alone.run_ms, 25, 1e-12);
  // Off: every kernel in full, as recorded.
  const auto plain = make(0);
  for (const Measurement& m : evaluate(*plain, {32, 64}))
    EXPECT_EQ(m.times_ms.size(), 10u);
  EXPECT_NEAR(plain->clock_s(), 0.100 + 2 * 0.075, 1e-12);
  // A queue saved with the calm kernel queued behind another settles it after a resume.
  const auto queued = make(0.01);
  (void)queued->submit(setting_with(32));
  (void)queued->submit(setting_with(64));
  const auto later = make(0.01);
  ASSERT_TRUE(later->restore_queue(queued->save_queue()));
  const std::optional<Completion> first = later->next();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->measurement.times_ms.size(), static_cast<std::size_t>(kSettleRuns));
}

// The replay clock races as the worker does: once a kernel has come back, one whose first
// runs lose the race costs kRacedRunShare of its recorded timing and says so when another
// kernel's compile has ended by the time the race is decided; alone on the queue it is timed in
// full; one within the factor costs all of it; the fastest so far and the queued losers travel
// with a saved queue.
TEST(Replay, AKernelThatLosesTheRaceCostsARacedTimingWhileAnotherWaits) {
  EvaluationRecord fast = record(32, Status::ok, 0.5, 100);  // costs 100 + 50 + 25 ms
  EvaluationRecord slow = record(64, Status::ok, 1.0, 100);
  slow.measurement.times_ms = {1.0, 0.9, 1.1, 0.4};
  EvaluationRecord close = record(128, Status::ok, 0.7, 100);
  close.measurement.times_ms = {0.7, 0.7, 0.7};
  const std::vector<EvaluationRecord> rows = {fast, slow, close};
  const auto evaluate = [](ReplayEvaluator& r, std::vector<int> tbx) {
    std::vector<Setting> batch;
    for (const int t : tbx)
      batch.push_back(setting_with(t));
    return r.evaluate(batch);
  };
  const auto make = [&](double factor) {
    auto r = std::make_unique<ReplayEvaluator>(small_shape(), measured_pairs(rows), DeviceLimits{},
                                               "test");
    r->set_compile_threads(2);
    r->set_race_factor(factor);
    return r;
  };
  const double raced_gpu = 0.050 + 0.025 * kRacedRunShare;

  const auto plain = make(0);
  (void)evaluate(*plain, {32});
  for (const Measurement& m : evaluate(*plain, {64, 128}))
    EXPECT_TRUE(m.message.empty()) << m.message;
  EXPECT_NEAR(plain->clock_s(), 0.175 + 0.100 + 2 * 0.075, 1e-12);

  const auto racing = make(1.5);
  // The first kernel has nothing to race against: timed in full, however slow.
  EXPECT_TRUE(evaluate(*racing, {32}).at(0).message.empty());
  EXPECT_NEAR(racing->clock_s(), 0.175, 1e-12);
  const std::vector<std::uint8_t> saved = racing->save_queue();
  // Both compile by 0.275 s on two threads; the GPU takes the slow one first (1.0 > 1.5 x 0.5)
  // with the other compiled and waiting: raced; the other (0.7 < 0.75) is timed in full.
  const auto two = evaluate(*racing, {64, 128});
  EXPECT_EQ(two[0].status, Status::ok);
  EXPECT_DOUBLE_EQ(two[0].median_ms, 1.0);  // the recorded answer, its cost raced
  EXPECT_NE(two[0].message.find("raced"), std::string::npos) << two[0].message;
  EXPECT_NEAR(two[0].run_ms, 25 * kRacedRunShare, 1e-12);
  EXPECT_TRUE(two[1].message.empty()) << two[1].message;
  EXPECT_NEAR(racing->clock_s(), 0.275 + raced_gpu + 0.075, 1e-12);
  // Alone on the queue the loser is timed in full: the GPU would idle otherwise.
  const double before = racing->clock_s();
  const Measurement alone = evaluate(*racing, {64}).at(0);
  EXPECT_TRUE(alone.message.empty()) << alone.message;
  EXPECT_NEAR(alone.run_ms, 25, 1e-12);
  EXPECT_NEAR(racing->clock_s(), before + 0.175, 1e-12);

  // Resumed from the queue saved after the first kernel: the race goes on against it.
  const auto resumed = make(1.5);
  ASSERT_TRUE(resumed->restore_queue(saved));
  EXPECT_NE(evaluate(*resumed, {64, 128}).at(0).message.find("raced"), std::string::npos);
  // A queue saved with a loser queued keeps it a loser.
  const auto queued = make(1.5);
  ASSERT_TRUE(queued->restore_queue(saved));
  const Ticket t64 = queued->submit(setting_with(64));
  (void)queued->submit(setting_with(128));
  const auto later = make(1.5);
  ASSERT_TRUE(later->restore_queue(queued->save_queue()));
  const std::optional<Completion> first = later->next();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->ticket, t64);
  EXPECT_NE(first->measurement.message.find("raced"), std::string::npos);
  // A queue saved without racing restores as before, and nothing came back in it to race.
  const auto after_plain = make(1.5);
  ASSERT_TRUE(after_plain->restore_queue(make(0)->save_queue()));
  for (const Measurement& m : evaluate(*after_plain, {64, 128}))
    EXPECT_TRUE(m.message.empty()) << m.message;
}

TEST(Replay, CandidatesSkipCachedMigrantAndInvalidRowsAndDuplicates) {
  auto cached = record(16, Status::ok, 0.1, 1);
  cached.cached = true;
  auto migrant = record(8, Status::ok, 0.1, 1);
  migrant.migrant = true;
  const std::vector<EvaluationRecord> rows = {
      record(32, Status::ok, 0.5, 1),       record(32, Status::ok, 0.9, 1),     cached, migrant,
      record(256, Status::invalid, NAN, 0), record(64, Status::crashed, NAN, 3)};
  ReplayEvaluator replay(small_shape(), measured_pairs(rows), DeviceLimits{}, "test");
  ASSERT_EQ(replay.candidates().size(), 2u);
  EXPECT_EQ(replay.candidates()[0], setting_with(32));
  EXPECT_EQ(replay.candidates()[1], setting_with(64));
  // The first measured record of a key is the answer.
  EXPECT_DOUBLE_EQ(replay.evaluate(std::vector<Setting>{setting_with(32)})[0].median_ms, 0.5);
  EXPECT_EQ(replay.evaluate(std::vector<Setting>{setting_with(16)})[0].status, Status::invalid);
}

TEST(Replay, NoUsableRecordsIsAnInputError) {
  EXPECT_THROW(
      ReplayEvaluator(
          small_shape(),
          measured_pairs(std::vector<EvaluationRecord>{record(32, Status::invalid, NAN, 0)}),
          DeviceLimits{}, "x"),
      InputError);
}

TEST(Replay, MissingFileIsOneSentenceNamingIt) {
  try {
    (void)load_replay("/nonexistent/data.h5");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/data.h5"), std::string::npos);
  }
}

TEST(Replay, LoadsTheShippedSyntheticDataset) {
  const auto path = std::filesystem::path(ISLETUNE_TEST_DATA) / "synthetic-star2d1r.h5";
  ReplayEvaluator replay = load_replay(path);
  EXPECT_GT(replay.candidates().size(), 3000u);
  std::array<int, kStatusCount> seen{};
  double best = INFINITY;
  const auto out = replay.evaluate(replay.candidates());
  for (const auto& m : out) {
    ++seen[static_cast<int>(m.status)];
    if (m.ok())
      best = std::min(best, m.median_ms);
  }
  // Some failures of every measured kind, and a plausible best time for 4096^2 doubles.
  for (Status s : {Status::ok, Status::compile_error, Status::launch_error, Status::wrong_result,
                   Status::crashed, Status::timeout}) {
    EXPECT_GT(seen[static_cast<int>(s)], 0) << status_name(s);
  }
  EXPECT_GT(best, 0.05);
  EXPECT_LT(best, 0.2);
  EXPECT_GT(replay.clock_s(), 0.0);
  EXPECT_EQ(replay.limits().sm_count, 132);
}

// Replay answers on the recording GPU: every limit the dataset records (the H200's copy
// bandwidth and 60 MiB L2, not the H100 defaults of DeviceLimits), and it says so.
TEST(Replay, AnswersWithTheRecordingGpusLimits) {
  const auto path = std::filesystem::path(ISLETUNE_TEST_DATA) / "h200-star2d1r.h5";
  const ReplayEvaluator replay = load_replay(path);
  const DeviceLimits h100;
  const DeviceLimits recorded = *TraceReader(path).environment().front().limits;
  const DeviceLimits answered = replay.limits();
  EXPECT_EQ(replay.limits().name, "NVIDIA H200");
  EXPECT_NEAR(replay.limits().memory_bandwidth_gbs, 4214.06, 0.01);
  EXPECT_NE(replay.limits().memory_bandwidth_gbs, h100.memory_bandwidth_gbs);
  EXPECT_EQ(replay.limits().l2_bytes, 60 * 1024 * 1024);
  for_each_field(recorded, [&](const char* name, const auto& value) {
    bool same = false;
    for_each_field(answered, [&](const char* other, const auto& mine) {
      if constexpr (std::is_same_v<std::decay_t<decltype(value)>, std::decay_t<decltype(mine)>>) {
        if (std::string(name) == other)
          same = value == mine;
      }
    });
    EXPECT_TRUE(same) << name;
  });
  EXPECT_EQ(replay.detail(), "replayed from " + path.string() +
                                 ", clock simulated; recorded on NVIDIA H200 (4214 GB/s copy, 60 "
                                 "MiB L2)");
}

// A trace that records only the GPU's name and SM count (written before device_limits was):
// the H100 defaults for the rest, its name and SM count (without older replay marks).
TEST(Replay, RecordedLimitsOfAnOlderTraceKeepItsNameAndSmCount) {
  EnvironmentInfo old;
  old.gpu_name = "replay: NVIDIA A100-SXM4-80GB";
  old.sm_count = 108;
  const DeviceLimits limits = recorded_limits({old});
  EXPECT_EQ(limits.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(limits.sm_count, 108);
  EXPECT_EQ(limits.memory_bandwidth_gbs, DeviceLimits{}.memory_bandwidth_gbs);
  EXPECT_EQ(recorded_limits({}).name, DeviceLimits{}.name);
}

TEST(Replay, SamplerDrawsOnlyRecordedSettingsAndAllOfThemAnswer) {
  const auto path = std::filesystem::path(ISLETUNE_TEST_DATA) / "synthetic-star2d1r.h5";
  ReplayEvaluator replay = load_replay(path);
  ListSource source(replay.shape(), replay.candidates());
  SamplerSettings settings;
  settings.max_samples = 300;
  const SampledSet sampled = sample(source, UniformPredictor{}, settings, 3).set;
  ASSERT_FALSE(sampled.empty());
  std::unordered_set<Setting, SettingHash> recorded(replay.candidates().begin(),
                                                    replay.candidates().end());
  for (const Setting& s : sampled.settings)
    EXPECT_TRUE(recorded.contains(s));
  for (const Measurement& m : replay.evaluate(sampled.settings)) {
    EXPECT_NE(m.status, Status::invalid) << m.message;
  }
}

}  // namespace
}  // namespace isletune
