// Torture test of the island GA over the real MPI ring (run under mpirun -np 1, 2, 4):
// every combination of population shape, migration interval and count, and encoding
// must end on every rank in the same generation without deadlock, account for every
// migration message, never re-measure an immigrant, keep the best-ever individual, and
// give the same trajectory when run again with the same seed. With the surrogate on and a
// budget, every island's cache (the data of its model) ends up holding every measurement
// of every other island, non-neighbours included (measurements are passed on around the
// ring), and no island measures a setting another island measured long enough before;
// every island evaluates generation 1 knowing every island's generation 0.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "../unit/test_ga_fakes.hpp"
#include "ga/memory_ring.hpp"
#include "ga/search.hpp"
#include "mpi_check.hpp"
#include "ring/ring_migrator.hpp"
#include "ring/ring_stop_vote.hpp"
#include "ring/world.hpp"

namespace {

using namespace isletune;

struct Outcome {
  SearchResult result;
  std::vector<std::string> keys;  // every evaluation row's key, in order (trajectory)
  int max_measured = 0;           // most measurements of one setting on this island
  long long migrant_rows = 0;
  ring::DrainStats drain;
};

// One island search over the ring with a random landscape.
Outcome run_once(MPI_Comm comm, const GaSettings& ga, std::uint64_t seed) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const SampledSet set = testing::landscape_set();
  testing::SyntheticEvaluator evaluator(testing::random_landscape(seed, 0.1), 0.25);
  testing::MemorySink sink;
  ring::RingMigrator migrator(comm);
  ring::RingStopVote vote(comm);
  Outcome out;
  SearchHooks hooks;
  hooks.wall_clock = [] { return MPI_Wtime(); };
  out.result = run_island(ga, set, evaluator, migrator, vote, sink, seed, rank, hooks);
  vote.drain();
  out.drain = migrator.drain();
  for (const auto& e : sink.evaluations) {
    out.keys.push_back(canonical_key(e.setting) + (e.cached ? "c" : "") + (e.migrant ? "m" : ""));
    out.migrant_rows += e.migrant ? 1 : 0;
  }
  for (const auto& [setting, n] : evaluator.measured)
    out.max_measured = std::max(out.max_measured, n);
  // The best-ever is at least as good as every measurement this island recorded.
  double best = INFINITY;
  for (const auto& e : sink.evaluations) {
    if (e.measurement.ok())
      best = std::min(best, e.measurement.median_ms);
  }
  if (std::isfinite(best)) {
    CHECK(out.result.best && out.result.best_measurement.median_ms <= best, "best-ever lost");
  }
  return out;
}

// Ring distance between ranks a and b of n.
int hops(int a, int b, int n) {
  const int d = (a - b + n) % n;
  return std::min(d, n - d);
}

// Every rank's `mine` (lines of text), in rank order, on every rank.
std::vector<std::string> gather_text(MPI_Comm comm, const std::string& mine) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    offsets[r] = total;
    total += lengths[r];
  }
  std::string all(static_cast<std::size_t>(total), ' ');
  MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                 MPI_CHAR, comm);
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r) {
    out.push_back(
        all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
  }
  return out;
}

// The island GA of this rank's share of `comm` on the synthetic landscape set: the default
// GA split over the ranks, `evaluations` measurements per island, no generation limit.
struct RankIsland {
  int rank = 0, size = 1;
  GaSettings ga;
  SampledSet set = testing::landscape_set();
  IslandExtras extras;
  RankIsland(MPI_Comm comm, int evaluations) {
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    ga = GaSettings{}.for_islands(size);
    ga.max_generations = 0;
    ga.max_evaluations = evaluations;
    extras.islands = size;
  }
};

// Over the real ring (which delivers a neighbour's generation one generation late), every
// island's cache holds every island's generation 0 when generation 1 is evaluated: the
// exchange of generation 0 (Migrator::gather_first). Without it (`gather` false) an
// island knows only its own generation 0 then. Returns the other islands' generation-0
// measurements missing from this island's cache at generation 1.
int missing_at_generation_one(MPI_Comm comm, bool gather) {
  RankIsland is(comm, 40);
  const int rank = is.rank, size = is.size;
  const GaSettings& ga = is.ga;
  const Reindex alphabet(is.set.settings, ga.encoding);
  testing::SyntheticEvaluator evaluator(testing::random_landscape(31, 0.1), 0.25);
  testing::HookSink sink;
  ring::RingMigrator migrator(comm);
  ring::RingStopVote vote(comm);
  IslandExtras extras = is.extras;
  extras.gather_first = gather;
  IslandSearch search(ga, alphabet, evaluator, migrator, vote, sink, 31, rank, {}, std::nullopt,
                      extras);
  CHECK(search.step(), "the search ended after generation 0");
  std::string mine;
  for (const auto& e : sink.rows.evaluations) {
    if (!e.cached && !e.migrant)
      mine += canonical_key(e.setting) + "\n";
  }
  const std::vector<std::string> zero = gather_text(comm, mine);
  int missing = -1, measured = 0;
  sink.before = [&](int g) {
    if (g != 1)
      return;
    missing = 0;
    for (int r = 0; r < size; ++r) {
      std::istringstream in(zero[static_cast<std::size_t>(r)]);
      std::string key;
      while (in >> key) {
        ++measured;
        const auto setting = setting_from_key(key);
        if (r != rank && setting)
          missing += search.island().cached(*setting) ? 0 : 1;
      }
    }
  };
  while (search.step()) {
  }
  vote.drain();
  (void)migrator.drain();
  CHECK(missing >= 0, "no generation 1 was evaluated");
  CHECK(measured >= size, "generation 0 measured %d settings on %d islands", measured, size);
  return missing;
}

// Every evaluation row of an island as "key[c][m]" lines (its trajectory).
std::string trajectory(const std::vector<EvaluationRecord>& rows) {
  std::string out;
  for (const auto& e : rows)
    out += canonical_key(e.setting) + (e.cached ? "c" : "") + (e.migrant ? "m" : "") + "\n";
  return out;
}

// The replay sweep's ring gives every island the trajectory it has over the real MPI ring
// with the same lag: the sweep measures the product. Lag 1: MemoryRing with islands
// stepped in turn on one thread; lag 0 (each island waits for its neighbours' current
// generation): the blocking MemoryRing with one thread per island. Returns the islands
// whose trajectories differ (checked on rank 0).
int memory_ring_differs(MPI_Comm comm, int lag) {
  RankIsland is(comm, 50);
  const int rank = is.rank, size = is.size;
  const GaSettings& ga = is.ga;
  const Reindex alphabet(is.set.settings, ga.encoding);
  const auto landscape = testing::random_landscape(41, 0.1);
  IslandExtras extras = is.extras;
  std::string mine;
  {
    testing::SyntheticEvaluator evaluator(landscape, 0.25);
    testing::MemorySink sink;
    ring::RingMigrator migrator(comm, lag);
    ring::RingStopVote vote(comm);
    IslandSearch search(ga, alphabet, evaluator, migrator, vote, sink, 41, rank, {}, std::nullopt,
                        extras);
    while (search.step()) {
    }
    vote.drain();
    (void)migrator.drain();
    mine = trajectory(sink.evaluations);
  }
  const std::vector<std::string> mpi = gather_text(comm, mine);
  if (rank != 0)
    return 0;
  const bool threaded = lag == 0 && size > 1;
  MemoryRing ring(size, lag, threaded);
  MemoryStopVote votes(size, threaded);
  std::vector<std::unique_ptr<testing::SyntheticEvaluator>> evaluators;
  std::vector<testing::MemorySink> sinks(static_cast<std::size_t>(size));
  std::vector<std::unique_ptr<IslandSearch>> islands;
  for (int r = 0; r < size; ++r) {
    evaluators.push_back(std::make_unique<testing::SyntheticEvaluator>(landscape, 0.25));
    islands.push_back(std::make_unique<IslandSearch>(ga, alphabet, *evaluators[r], ring.migrator(r),
                                                     votes.vote(r), sinks[r], 41, r, SearchHooks{},
                                                     std::nullopt, extras));
  }
  testing::run_islands(islands, threaded);
  int differ = 0;
  for (int r = 0; r < size; ++r) {
    const std::string memory = trajectory(sinks[r].evaluations);
    CHECK(std::count(memory.begin(), memory.end(), '\n') >= 50, "island %d: a short run", r);
    differ += memory == mpi[static_cast<std::size_t>(r)] ? 0 : 1;
  }
  return differ;
}

// The default GA split over the ranks, the surrogate on, 60 measurements per island, over
// the real ring: every island learns every measurement of the run.
void check_shared_measurements(MPI_Comm comm) {
  RankIsland is(comm, 60);
  const int rank = is.rank, size = is.size;
  const GaSettings& ga = is.ga;
  const Reindex alphabet(is.set.settings, ga.encoding);
  testing::SyntheticEvaluator evaluator(testing::random_landscape(21, 0.1), 0.25);
  testing::MemorySink sink;
  ring::RingMigrator migrator(comm);
  ring::RingStopVote vote(comm);
  IslandExtras extras = is.extras;
  IslandSearch search(ga, alphabet, evaluator, migrator, vote, sink, 21, rank, {}, std::nullopt,
                      extras);
  while (search.step()) {
  }
  vote.drain();
  (void)migrator.drain();
  const int last = search.result().generations;
  // This island's new measurements as "generation key" lines, gathered on every rank.
  std::string mine;
  for (const auto& e : sink.evaluations) {
    if (!e.cached && !e.migrant)
      mine += std::to_string(e.generation) + " " + canonical_key(e.setting) + "\n";
  }
  const std::vector<std::string> all = gather_text(comm, mine);
  std::map<std::string, std::pair<int, int>> first;  // key -> (generation, rank)
  int missing = 0, late = 0, measured = 0;
  for (int r = 0; r < size; ++r) {
    std::istringstream in(all[static_cast<std::size_t>(r)]);
    int g = 0;
    std::string key;
    while (in >> g >> key) {
      ++measured;
      const auto setting = setting_from_key(key);
      CHECK(setting.has_value(), "key '%s' does not read back", key.c_str());
      // A hop takes two generations (the ring delivers one generation late, the measurement
      // is passed on in the next): island `rank` knows it from generation g + 2 * hops on.
      const int known = g + 2 * hops(r, rank, size);
      if (r != rank && known < last && setting)
        missing += search.island().cached(*setting) ? 0 : 1;
      const auto [it, inserted] = first.emplace(key, std::make_pair(g, r));
      if (!inserted && it->second.second != r &&
          g >= it->second.first + 2 * hops(r, it->second.second, size))
        ++late;
    }
  }
  CHECK(measured == 60 * size, "%d measurements, expected %d", measured, 60 * size);
  CHECK(missing == 0, "%d measurements of other islands are not in this island's cache", missing);
  CHECK(late == 0, "%d measurements repeat a setting another island had measured", late);
}

}  // namespace

int main(int argc, char** argv) {
  ring::World world(&argc, &argv);
  isletune::mpi_test::rank = world.rank();
  const std::vector<std::pair<int, int>> shapes = {{1, 2}, {2, 2}, {4, 4}, {3, 5}};
  const std::vector<int> intervals = {0, 1, 3};
  const std::vector<int> counts = {1, 4};
  int combos = 0;
  for (const auto& [rows, cols] : shapes) {
    for (int interval : intervals) {
      for (int count : counts) {
        for (Encoding encoding : {Encoding::index, Encoding::parameters}) {
          GaSettings ga;
          ga.rows = rows;
          ga.cols = cols;
          ga.population = rows * cols;
          ga.migration_interval = interval;
          ga.migration_count = std::min(count, ga.population);
          ga.encoding = encoding;
          ga.mutation_rate = 0.05;
          ga.max_generations = 12;
          const std::uint64_t seed = 100 + combos;
          const Outcome a = run_once(world.comm(), ga, seed);
          const Outcome b = run_once(world.comm(), ga, seed);
          int lo = 0, hi = 0;
          MPI_Allreduce(&a.result.generations, &lo, 1, MPI_INT, MPI_MIN, world.comm());
          MPI_Allreduce(&a.result.generations, &hi, 1, MPI_INT, MPI_MAX, world.comm());
          CHECK(lo == hi, "%dx%d interval %d count %d: ranks stopped in %d..%d", rows, cols,
                interval, count, lo, hi);
          CHECK(a.keys == b.keys, "%dx%d interval %d count %d: not deterministic", rows, cols,
                interval, count);
          CHECK(a.max_measured <= 1, "a setting was measured %d times", a.max_measured);
          long long local[2] = {a.drain.sent_messages,
                                a.drain.delivered_messages + a.drain.drained_messages};
          long long total[2] = {};
          MPI_Allreduce(local, total, 2, MPI_LONG_LONG, MPI_SUM, world.comm());
          CHECK(total[0] == total[1], "messages sent %lld, received %lld", total[0], total[1]);
          if (interval == 0)
            CHECK(a.drain.sent_messages == 0, "sent without migration");
          if (world.size() == 1)
            CHECK(a.migrant_rows == 0, "immigrants without neighbours");
          ++combos;
        }
      }
    }
  }
  check_shared_measurements(world.comm());
  const int with = missing_at_generation_one(world.comm(), true);
  const int without = missing_at_generation_one(world.comm(), false);
  CHECK(with == 0, "%d of the other islands' generation 0 missing at generation 1", with);
  if (world.size() > 1) {
    CHECK(without > 0, "without the exchange, generation 1 already knew the others' generation 0");
  }
  if (world.rank() == 0) {
    std::printf(
        "generation 0 of the other islands missing at generation 1: %d with the "
        "exchange, %d without\n",
        with, without);
  }
  for (const int lag : {1, 0}) {
    const int differ = memory_ring_differs(world.comm(), lag);
    CHECK(differ == 0, "%d islands of the in-memory ring (lag %d) differ from the MPI ring", differ,
          lag);
  }
  const int failures = isletune::mpi_test::total_failures(world.comm());
  if (world.rank() == 0) {
    std::printf("island_ring_test: %d combinations on %d ranks: %s (%d failed checks)\n", combos,
                world.size(), failures == 0 ? "PASS" : "FAIL", failures);
  }
  return failures == 0 ? 0 : 1;
}
