// Waits turned into measurements (GaSettings::fill_picks, SearchLoop::fill): with drift, an
// island whose neighbours' batches or stop vote are not ready measures its model's next picks
// instead; without drift nothing changes.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "ga/search.hpp"
#include "test_ga_fakes.hpp"

namespace isletune {
namespace {

using testing::MemorySink;
using testing::SyntheticEvaluator;

// Answers "not ready" `busy` times after each rearm(), then "ready"; counts the questions.
struct Busy {
  explicit Busy(int n) : busy(n) {}
  void rearm() { left = busy; }
  bool ready() {
    ++asked;
    if (left == 0)
      return true;
    --left;
    return false;
  }
  int busy;
  int left = 0;
  int asked = 0;
};

// One neighbour that is slow: not ready `busy` times after each send. Every batch sent is
// kept; nothing ever arrives.
class SlowNeighbour final : public Migrator {
 public:
  explicit SlowNeighbour(int busy) : busy_(busy) {}
  [[nodiscard]] int neighbours() const override { return 1; }
  void send(const std::vector<Migrant>& migrants) override {
    sent.push_back(migrants);
    busy_.rearm();
  }
  std::vector<Migrant> receive() override { return {}; }
  [[nodiscard]] bool ready() override { return busy_.ready(); }
  [[nodiscard]] int asked() const { return busy_.asked; }
  std::vector<std::vector<Migrant>> sent;

 private:
  Busy busy_;
};

// A vote that is not ready `busy` times after each vote, then answers with the wish.
class SlowVote final : public StopVote {
 public:
  explicit SlowVote(int busy) : busy_(busy) {}
  StopReason vote(int, StopReason local) override {
    busy_.rearm();
    return local;
  }
  [[nodiscard]] bool ready() override { return busy_.ready(); }
  [[nodiscard]] int asked() const { return busy_.asked; }

 private:
  Busy busy_;
};

GaSettings fill_ga(int drift, int fill_picks) {
  GaSettings ga;
  ga.rows = ga.cols = 2;
  ga.population = 4;
  ga.auto_population = false;
  ga.model_picks = 2;
  ga.predicted_seeds = 0;
  ga.mcr_threshold = 0;
  ga.max_generations = 12;
  ga.migration_drift = drift;
  ga.fill_picks = fill_picks;
  return ga;
}

struct FillRun {
  MemorySink sink;
  std::unique_ptr<SyntheticEvaluator> eval;
  SearchResult result;
  std::vector<std::vector<Migrant>> sent;
  int migrator_asked = 0;
  int vote_asked = 0;
};

std::unique_ptr<FillRun> run_fill(const GaSettings& ga, int busy, std::uint64_t seed = 5) {
  static const SampledSet set = testing::landscape_set();
  static const Reindex alphabet(set.settings, Encoding::parameters);
  auto run = std::make_unique<FillRun>();
  run->eval = std::make_unique<SyntheticEvaluator>(testing::separable_ms);
  SlowNeighbour neighbour(busy);
  SlowVote vote(busy);
  IslandStrategy strategy(ga, alphabet, seed, 0);
  run->result = run_search(ga, strategy, *run->eval, neighbour, vote, run->sink);
  run->sent = neighbour.sent;
  run->migrator_asked = neighbour.asked();
  run->vote_asked = vote.asked();
  return run;
}

// New measurements: rows neither cached nor immigrants.
bool is_new(const EvaluationRecord& r) {
  return !r.cached && !r.migrant;
}

TEST(SearchFill, AnIslandThatWouldWaitMeasuresItsModelsNextPicks) {
  const auto waits = run_fill(fill_ga(1, 0), 2);
  const auto fills = run_fill(fill_ga(1, 3), 2);
  // Without fill_picks nobody asks whether the neighbours are ready.
  EXPECT_EQ(waits->migrator_asked, 0);
  EXPECT_EQ(waits->vote_asked, 0);
  EXPECT_GT(fills->migrator_asked, 0);
  EXPECT_GT(fills->vote_asked, 0);
  // Two not-ready answers per wait, two waits per generation (ring, vote), 3 picks each: up
  // to 12 more measurements per generation from generation 1 on (generation 0's waits come
  // before the model is fit: it measures nothing then).
  const std::int64_t extra = fills->result.evaluations - waits->result.evaluations;
  EXPECT_GT(extra, 3 * 10) << "fills: " << fills->result.evaluations
                           << ", waits: " << waits->result.evaluations;
  EXPECT_LE(extra, 12 * 12);
  EXPECT_EQ(fills->result.generations, waits->result.generations);

  // Every new measurement is a row, each setting measured once, and each generation record
  // counts its generation's new rows, the fills' included.
  std::map<int, std::int64_t> new_rows;
  std::set<Setting> seen;
  for (const EvaluationRecord& r : fills->sink.evaluations) {
    if (!is_new(r))
      continue;
    ++new_rows[r.generation];
    EXPECT_TRUE(seen.insert(r.setting).second) << "measured twice";
  }
  std::int64_t recorded = 0;
  for (const GenerationRecord& g : fills->sink.generations) {
    EXPECT_EQ(g.evaluations, new_rows[g.generation]) << "generation " << g.generation;
    recorded += g.evaluations;
  }
  EXPECT_EQ(recorded, fills->result.evaluations);
  EXPECT_EQ(static_cast<std::int64_t>(fills->eval->log.size()), fills->result.evaluations);

  // The fills are the model's picks: the landscape is separable, so once fit the model sends
  // the island to the optimum (1.0 ms) no later than waiting does.
  ASSERT_TRUE(fills->result.best && waits->result.best);
  EXPECT_LE(fills->result.best_measurement.median_ms, waits->result.best_measurement.median_ms);

  // What a fill measured goes to the neighbour with the next emigrants, as a measurement.
  std::set<Setting> passed;
  for (const auto& batch : fills->sent) {
    for (const Migrant& m : batch)
      passed.insert(m.setting);
  }
  int filled = 0, not_passed = 0;
  const int last = fills->result.generations;
  for (const EvaluationRecord& r : fills->sink.evaluations) {
    if (!is_new(r) || r.generation == last)
      continue;
    ++filled;
    not_passed += passed.count(r.setting) ? 0 : 1;
  }
  EXPECT_GT(filled, 0);
  EXPECT_EQ(not_passed, 0) << "of " << filled << " measurements before the last generation";
}

TEST(SearchFill, FillsStayWithinTheEvaluationBudget) {
  GaSettings ga = fill_ga(1, 5);
  ga.max_generations = 0;
  ga.max_evaluations = 37;
  const auto run = run_fill(ga, 50);  // neighbours that keep the island waiting long
  EXPECT_EQ(run->result.evaluations, 37);
  EXPECT_EQ(static_cast<std::int64_t>(run->eval->log.size()), 37);
}

TEST(SearchFill, TheDeterministicRingNeverFills) {
  // fill_picks without drift: the run is the run without it, measurement for measurement.
  const auto plain = run_fill(fill_ga(-1, 0), 2, 9);
  const auto asked = run_fill(fill_ga(-1, 4), 2, 9);
  EXPECT_EQ(asked->migrator_asked, 0);
  EXPECT_EQ(asked->vote_asked, 0);
  EXPECT_EQ(asked->eval->log, plain->eval->log);
}

}  // namespace
}  // namespace isletune
