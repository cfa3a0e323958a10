// Random-kill durability of the trace's per-generation commit (docs/trace.md "Crash
// safety"): a child process commits generations (rows + checkpoint, as `isletune run`
// does) as fast as it can and is SIGKILLed at a random moment, often inside a commit.
// Every generation whose commit returned must read back whole, the checkpoint must be
// one of the last committed generations with its exact bytes, and the file must take
// a resume (reopen, more generations) afterwards. ISLETUNE_KILL_ROUNDS sets the number
// of kills (default 12; the 600-kill check of
// docs/studies/2026-11-21-host-overhead-per-generation.md sets 600).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "trace/rank_writer.hpp"
#include "trace/reader.hpp"
#include "trace/run_writer.hpp"

namespace isletune {
namespace {

namespace fs = std::filesystem;

constexpr int kEvaluationsPerGeneration = 16;

// Evaluation `k` of generation `g`, with variable-length fields of varying length.
EvaluationRecord evaluation(int g, int k) {
  EvaluationRecord r;
  r.eval_id = static_cast<std::int64_t>(g) * kEvaluationsPerGeneration + k;
  r.generation = g;
  r.cell = k;
  r.genes = std::vector<int>(static_cast<std::size_t>(1 + (g + k) % 7), g);
  r.setting.values.fill(k % 4);
  r.measurement.status = Status::ok;
  r.measurement.median_ms = 0.5 + g + 0.001 * k;
  r.measurement.times_ms = std::vector<double>(static_cast<std::size_t>(1 + k % 5), 1.0 * g);
  r.measurement.message = std::string(static_cast<std::size_t>(k % 3) * 11, 'm');
  return r;
}

// The checkpoint blob of generation g (its size grows like an island's cache).
std::vector<std::uint8_t> blob(int g) {
  return std::vector<std::uint8_t>(static_cast<std::size_t>(3000 + 97 * g),
                                   static_cast<std::uint8_t>(g * 31 + 7));
}

// Writes generation g's rows into the writer and commits them with its checkpoint.
void commit_generation(RankTraceWriter& w, int g) {
  for (int k = 0; k < kEvaluationsPerGeneration; ++k)
    w.evaluation(evaluation(g, k));
  w.generation({g, 1.0 * g, 0.0, 0.5, 2.0, 0.25, 8, kEvaluationsPerGeneration});
  w.migration({g, 1, 0, "key-" + std::to_string(g), 0.5 + g});
  w.write_checkpoint(g, blob(g));
}

// Checks that the rank's tables hold whole generations 0..n-1 exactly; returns n.
int check_whole_generations(const TraceReader& reader) {
  const auto gens = reader.generations(0);
  const auto evals = reader.evaluations(0);
  const auto migs = reader.migrations(0);
  const int n = static_cast<int>(gens.size());
  EXPECT_EQ(evals.size(), static_cast<std::size_t>(n) * kEvaluationsPerGeneration);
  EXPECT_EQ(migs.size(), static_cast<std::size_t>(n));
  for (int g = 0; g < n; ++g) {
    EXPECT_EQ(gens[static_cast<std::size_t>(g)].generation, g);
    EXPECT_EQ(migs[static_cast<std::size_t>(g)].key, "key-" + std::to_string(g));
  }
  for (std::size_t i = 0; i < evals.size(); ++i) {
    const int g = static_cast<int>(i) / kEvaluationsPerGeneration;
    const EvaluationRecord want = evaluation(g, static_cast<int>(i) % kEvaluationsPerGeneration);
    EXPECT_EQ(evals[i].eval_id, want.eval_id);
    EXPECT_EQ(evals[i].genes, want.genes);
    EXPECT_EQ(evals[i].measurement.times_ms, want.measurement.times_ms);
    EXPECT_EQ(evals[i].measurement.message, want.measurement.message);
  }
  return n;
}

// One round: start a writer, kill it after `delay`, check, resume, check again.
void kill_round(const fs::path& dir, std::chrono::microseconds delay) {
  fs::remove_all(dir);
  RunTraceWriter::create_trace(dir, RunInfo{}).link_ranks(1);
  int progress[2];
  ASSERT_EQ(::pipe(progress), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(progress[0]);
    RankTraceWriter w = RankTraceWriter::create(dir, 0);
    const int created = -1;
    if (::write(progress[1], &created, sizeof created) != sizeof created)
      ::_exit(2);
    for (int g = 0;; ++g) {
      commit_generation(w, g);
      // Reported only once the commit returned: this generation must survive the kill.
      if (::write(progress[1], &g, sizeof g) != sizeof g)
        ::_exit(2);
    }
  }
  ::close(progress[1]);
  std::this_thread::sleep_for(delay);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  bool created = false;
  int last_returned = -1;
  for (int g = 0; ::read(progress[0], &g, sizeof g) == sizeof g;) {
    created = true;
    last_returned = g;
  }
  ::close(progress[0]);
  if (!created)
    return;  // killed while creating the rank file: nothing was committed

  int committed = 0;
  std::optional<Checkpoint> checkpoint;
  {
    const TraceReader reader(dir);
    committed = check_whole_generations(reader);
    checkpoint = reader.checkpoint(0);
  }
  // Every generation whose commit returned is there; at most the one being committed
  // when the kill came is there in addition.
  EXPECT_GE(committed, last_returned + 1);
  EXPECT_LE(committed, last_returned + 2);
  if (last_returned >= 0) {
    ASSERT_TRUE(checkpoint.has_value());
    EXPECT_GE(checkpoint->generation, last_returned);
  }
  if (checkpoint) {
    EXPECT_LT(checkpoint->generation, committed);  // never ahead of its rows
    EXPECT_EQ(checkpoint->bytes, blob(checkpoint->generation));
  }

  // Resume as `isletune resume` does: keep rows through the checkpoint, continue.
  const int keep = checkpoint ? checkpoint->generation : -1;
  {
    RankTraceWriter w = RankTraceWriter::reopen(dir, 0, keep);
    for (int g = keep + 1; g <= keep + 2; ++g)
      commit_generation(w, g);
  }
  const TraceReader reader(dir);
  EXPECT_EQ(check_whole_generations(reader), keep + 3);
  ASSERT_TRUE(reader.checkpoint(0).has_value());
  EXPECT_EQ(reader.checkpoint(0)->generation, keep + 2);
}

TEST(TraceKill, RandomSigkillsNeverLoseACommittedGeneration) {
  const char* env = std::getenv("ISLETUNE_KILL_ROUNDS");
  const int rounds = env != nullptr ? std::atoi(env) : 12;
  const fs::path dir =
      fs::temp_directory_path() / ("isletune-test-trace-kill-" + std::to_string(::getpid()));
  std::mt19937 rng(20261121);
  // Kills from before the first commit to a few dozen generations in.
  std::uniform_int_distribution<int> delay_us(0, 30000);
  for (int round = 0; round < rounds && !::testing::Test::HasFailure(); ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    kill_round(dir, std::chrono::microseconds(delay_us(rng)));
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace isletune
