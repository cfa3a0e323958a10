// MPI tests of the ring (run under mpirun -np 1, 2, 4): every migrant sent is delivered
// or drained exactly once with its full measurement, all ranks stop in the same
// generation whichever rank asks, and a slow rank delays but never deadlocks the others.
// The progress line's background gather never holds rank 0 up for a slow rank, and hands
// rank 0 every gather, in order, with every rank's row. The migrator and the vote say when
// they would wait (ready) without waiting.
// Async islands (ga.migration.drift async) never wait for each other, yet every island
// stops and the run agrees on one reason.
// Usage: ring_test delivery|drift|stop|slow|mapping|progress|ready|async. Exit code 0 on every
// rank iff all checks pass on every rank.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "mpi_check.hpp"
#include "ring/async_stop_vote.hpp"
#include "ring/mailbox.hpp"
#include "ring/ring_migrator.hpp"
#include "ring/ring_stop_vote.hpp"
#include "ring/world.hpp"

namespace {

using isletune::Migrant;
using isletune::StopReason;
using isletune::ring::RingMigrator;
using isletune::ring::RingStopVote;

// How many migrants rank r sends in generation g (0..2: empty batches included).
int emigrant_count(int rank, int generation) {
  return (rank * 7 + generation * 3) % 3;
}

// The i-th migrant rank r sends in generation g; its fields identify it.
Migrant make_migrant(int rank, int generation, int i) {
  Migrant m;
  m.setting.values[0] = rank;
  m.setting.values[1] = generation;
  m.setting.values[2] = i;
  m.generation = generation;
  m.measurement.status = isletune::Status::ok;
  m.measurement.median_ms = 1.0 + rank + generation * 0.01 + i * 1e-4;
  m.measurement.times_ms =
      std::vector<double>(static_cast<std::size_t>(i + 1), m.measurement.median_ms);
  m.measurement.compile_ms = 3.5;
  m.measurement.registers = 40 + i;
  m.measurement.message = "r" + std::to_string(rank) + "g" + std::to_string(generation);
  return m;
}

// Every migrant sent is received exactly once, intact, in order, from a neighbour.
// With `early` (ga.migration.drift) a batch may come before its lag is up, but never after:
// by the receive of generation g every neighbour batch of generation <= g - lag has come, and a
// neighbour's batches come in its send order.
void test_delivery(MPI_Comm comm, int lag, bool early = false) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  RingMigrator migrator(comm, lag, early);
  std::map<int, int> newest;  // per neighbour: the newest generation received
  const int expected_neighbours = size == 1 ? 0 : size == 2 ? 1 : 2;
  CHECK(migrator.neighbours() == expected_neighbours, "neighbours %d", migrator.neighbours());
  const int generations = 25;
  std::multiset<std::tuple<int, int, int>> received;
  for (int g = 0; g < generations; ++g) {
    std::vector<Migrant> out;
    for (int i = 0; i < emigrant_count(rank, g); ++i)
      out.push_back(make_migrant(rank, g, i));
    migrator.send(out);
    if ((g + rank) % 4 == 0)
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    // Early: rank 0 lets its neighbours run ahead (lag sends), then must get their later batches.
    const bool ahead = early && rank == 0 && size > 1 && g == 0;
    if (ahead)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    int later = 0;  // migrants of a generation whose lag is not up
    for (const Migrant& m : migrator.receive()) {
      const int src = m.setting.values[0], gen = m.setting.values[1], i = m.setting.values[2];
      const Migrant want = make_migrant(src, gen, i);
      CHECK(m.source_rank == src, "source_rank %d vs %d", m.source_rank, src);
      CHECK(early || gen <= g - lag, "generation %d delivered at %d with lag %d", gen, g, lag);
      CHECK(gen <= g + lag + 1, "generation %d delivered at %d: not sent yet", gen, g);
      CHECK(!newest.count(src) || gen >= newest[src], "from %d: generation %d after %d", src, gen,
            newest[src]);
      newest[src] = gen;
      later += gen > g - lag ? 1 : 0;
      CHECK(m.measurement.times_ms == want.measurement.times_ms, "times_ms of %d/%d/%d", src, gen,
            i);
      CHECK(m.measurement.message == want.measurement.message, "message");
      CHECK(m.measurement.registers == want.measurement.registers, "registers");
      received.insert({src, gen, i});
    }
    CHECK(!ahead || later > 0, "early delivery: nothing later than lag %d at generation 0", lag);
    // Every batch whose lag is up has come (a batch with no migrants leaves no trace).
    for (int peer : migrator.peers()) {
      for (int old = 0; old <= g - lag; ++old) {
        CHECK(emigrant_count(peer, old) == 0 || received.count({peer, old, 0}) == 1,
              "generation %d of rank %d missing at %d with lag %d", old, peer, g, lag);
      }
    }
  }
  const auto stats = migrator.drain();
  // Exactly the migrants of the neighbours' first generations - lag rounds, each once (early:
  // those at least, and any later ones that came in time).
  std::multiset<std::tuple<int, int, int>> expected;
  for (int peer : migrator.peers()) {
    for (int g = 0; g < generations; ++g) {
      for (int i = 0; i < emigrant_count(peer, g); ++i) {
        if (g < generations - lag || (early && received.count({peer, g, i}) == 1))
          expected.insert({peer, g, i});
      }
    }
  }
  CHECK(received == expected, "received %zu migrants, expected %zu", received.size(),
        expected.size());
  long long local[4] = {stats.sent_messages, stats.delivered_messages + stats.drained_messages,
                        stats.sent_migrants, stats.delivered_migrants + stats.drained_migrants};
  long long total[4] = {};
  MPI_Allreduce(local, total, 4, MPI_LONG_LONG, MPI_SUM, comm);
  CHECK(total[0] == total[1], "messages sent %lld, received %lld", total[0], total[1]);
  CHECK(total[2] == total[3], "migrants sent %lld, received %lld", total[2], total[3]);
  const long long per_round = expected_neighbours;
  CHECK(total[0] == per_round * generations * size, "sent %lld messages", total[0]);
}

// Runs islands that vote every generation; `wish` says what rank r wants in generation g.
// Returns the generation at which this rank stopped and the agreed reason.
// `drift` >= 0: the ring and vote of ga.migration.drift (lag drift, early delivery, the vote
// drift + 1 deep). `slow_until`: the slow rank sleeps only in generations before it.
template <typename Wish>
std::pair<int, StopReason> run_vote(MPI_Comm comm, Wish wish, int slow_rank = -1, int drift = -1,
                                    int slow_ms = 15, int slow_until = 1 << 30,
                                    double* through = nullptr, int through_generation = 0) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  RingStopVote vote(comm, drift < 0 ? 1 : drift + 1);
  RingMigrator migrator(comm, drift < 0 ? 1 : drift, drift >= 0);
  int g = 0;
  StopReason agreed = StopReason::none;
  const double start = MPI_Wtime();
  for (;; ++g) {
    if (through && g == through_generation + 1)
      *through = MPI_Wtime() - start;  // when this rank started the generation after it
    if (rank == slow_rank && g < slow_until)
      std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms));
    migrator.send({make_migrant(rank, g, 0)});
    (void)migrator.receive();
    agreed = vote.vote(g, wish(rank, g));
    if (agreed != StopReason::none)
      break;
    if (g > 1000)
      break;
  }
  vote.drain();
  migrator.drain();
  return {g, agreed};
}

// All ranks stop in the same generation, one after the wish, whichever rank makes it.
void test_stop(MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  for (int trigger = 0; trigger < size; ++trigger) {
    const int at = 3 + 2 * trigger;
    auto [g, reason] = run_vote(comm, [&](int r, int gen) {
      return r == trigger && gen >= at ? StopReason::time_budget : StopReason::none;
    });
    int lo = 0, hi = 0;
    MPI_Allreduce(&g, &lo, 1, MPI_INT, MPI_MIN, comm);
    MPI_Allreduce(&g, &hi, 1, MPI_INT, MPI_MAX, comm);
    CHECK(lo == hi, "trigger %d: ranks stopped in generations %d..%d", trigger, lo, hi);
    CHECK(g == at + 1, "trigger %d: stopped at %d, wish at %d", trigger, g, at);
    CHECK(reason == StopReason::time_budget, "reason %d", static_cast<int>(reason));
  }
  // The MCR stop needs every island: rank r converges at generation 3 + 2 r, so all stop
  // one generation after the last one converged.
  {
    auto [g, reason] = run_vote(comm, [&](int r, int gen) {
      return gen >= 3 + 2 * r ? StopReason::mcr : StopReason::none;
    });
    CHECK(g == 3 + 2 * (size - 1) + 1, "MCR: stopped at %d with %d ranks", g, size);
    CHECK(reason == StopReason::mcr, "MCR reason %d", static_cast<int>(reason));
  }
  // So does a spent evaluation budget (an island that is done waits for the others).
  {
    auto [g, reason] = run_vote(comm, [&](int r, int gen) {
      return gen >= 3 + 2 * r ? StopReason::max_evaluations : StopReason::none;
    });
    CHECK(g == 3 + 2 * (size - 1) + 1, "spent: stopped at %d with %d ranks", g, size);
    CHECK(reason == StopReason::max_evaluations, "spent reason %d", static_cast<int>(reason));
  }
  // Two wishes in the same generation: the smallest reason wins everywhere.
  auto [g, reason] = run_vote(comm, [&](int r, int gen) {
    if (gen < 4)
      return StopReason::none;
    return r == size - 1 ? StopReason::signal : StopReason::time_budget;
  });
  CHECK(g == 5, "stopped at %d", g);
  CHECK(reason == (size == 1 ? StopReason::signal : StopReason::time_budget), "reason %d",
        static_cast<int>(reason));
}

// ga.migration.drift: every rank stops in the same generation, depth = drift + 1 after the
// wish; a rank slowed for its first generations holds the others only once they are drift
// generations ahead of it, where the deterministic ring (lag 0) holds them at once.
void test_drift(MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  for (const int drift : {0, 2, 3}) {
    const int at = 4 + rank % 2;  // ranks wish in different generations: the first wish wins
    auto [g, reason] = run_vote(
        comm, [&](int, int gen) { return gen >= at ? StopReason::time_budget : StopReason::none; },
        -1, drift);
    int lo = 0, hi = 0;
    MPI_Allreduce(&g, &lo, 1, MPI_INT, MPI_MIN, comm);
    MPI_Allreduce(&g, &hi, 1, MPI_INT, MPI_MAX, comm);
    CHECK(lo == hi, "drift %d: ranks stopped in generations %d..%d", drift, lo, hi);
    CHECK(g == 4 + drift + 1, "drift %d: stopped at %d, first wish at 4", drift, g);
    CHECK(reason == StopReason::time_budget, "drift %d: reason %d", drift,
          static_cast<int>(reason));
  }
  if (size < 2)
    return;
  // The last rank sleeps 150 ms before each of its generations 0-2. Through generation 1 the
  // others need nothing of it with drift 2 (its generation 0 only from generation 2 on), but
  // its generation 0 (150 ms) with the deterministic ring of lag 1 and its one-deep vote.
  const int slow = size - 1;
  const auto stop_at_8 = [](int, int gen) {
    return gen >= 8 ? StopReason::max_generations : StopReason::none;
  };
  double drift_s = 0, lag1_s = 0;
  run_vote(comm, stop_at_8, slow, 2, 150, 3, &drift_s, 1);
  run_vote(comm, stop_at_8, slow, -1, 150, 3, &lag1_s, 1);
  if (rank != slow) {
    CHECK(drift_s < 0.1, "drift 2: rank %d was held %.3f s through generation 1", rank, drift_s);
    CHECK(lag1_s >= 0.14, "lag 1: rank %d was held only %.3f s through generation 1", rank, lag1_s);
  }
}

// Async islands: the last rank sleeps `slow_ms` per generation (`slow_first`: in its first
// only); each rank votes every
// generation with wish(rank, g, seconds since the start) on the asynchronous vote and sends
// to the ring that never waits. Returns this rank's last generation, its decision, the
// agreed reason after the drain.
struct AsyncOutcome {
  int generation = 0;
  StopReason decided = StopReason::none;
  StopReason agreed = StopReason::none;
  double stopped_s = 0;  // when this rank decided to stop, since the start
};
template <typename Wish>
AsyncOutcome run_async(MPI_Comm comm, Wish wish, int slow_ms, bool slow_first = false) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  isletune::ring::AsyncStopVote vote(comm);
  RingMigrator migrator(comm, 1 << 20, true);
  AsyncOutcome out;
  const double start = MPI_Wtime();
  for (int g = 0; g <= 100000; ++g) {
    // The fast ranks sleep 1 ms a generation too: spinning, four ranks on CI's two cores
    // would starve one another and count the scheduler, not the vote.
    const bool slow = rank == size - 1 && (!slow_first || g == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(slow ? slow_ms : 1));
    migrator.send({make_migrant(rank, g, 0)});
    (void)migrator.receive();
    out.decided = vote.vote(g, wish(rank, g, MPI_Wtime() - start));
    out.generation = g;
    if (out.decided != StopReason::none)
      break;
  }
  out.stopped_s = MPI_Wtime() - start;
  out.agreed = vote.drain();
  const isletune::ring::DrainStats stats = migrator.drain();
  long long sent = stats.sent_messages, got = stats.delivered_messages + stats.drained_messages;
  long long total[2] = {0, 0}, mine[2] = {sent, got};
  MPI_Allreduce(mine, total, 2, MPI_LONG_LONG, MPI_SUM, comm);
  CHECK(total[0] == total[1], "async ring: %lld sent, %lld received", total[0], total[1]);
  return out;
}

// Agreed on every rank (collective).
bool same_everywhere(MPI_Comm comm, int value) {
  int lo = 0, hi = 0;
  MPI_Allreduce(&value, &lo, 1, MPI_INT, MPI_MIN, comm);
  MPI_Allreduce(&value, &hi, 1, MPI_INT, MPI_MAX, comm);
  return lo == hi;
}

void test_async(MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // A time budget of 0.3 s on every island's clock, the last rank 20 ms per generation, and
  // then a last rank frozen 3 s in its first generation: every rank stops on its own time
  // budget, all agree, and the others are never held by the slow or frozen one (they stop
  // long before it wakes: a wide margin, since CI runs 4 ranks on 2 cores).
  for (const auto& [slow_ms, first_only] : {std::pair{20, false}, std::pair{3000, true}}) {
    const AsyncOutcome o = run_async(
        comm,
        [](int, int, double t) { return t >= 0.3 ? StopReason::time_budget : StopReason::none; },
        slow_ms, first_only);
    CHECK(o.decided == StopReason::time_budget, "time budget: decided %d",
          static_cast<int>(o.decided));
    CHECK(o.agreed == StopReason::time_budget, "time budget: agreed %d",
          static_cast<int>(o.agreed));
    if (first_only && size > 1 && rank != size - 1) {
      CHECK(o.stopped_s < 2.0, "rank %d stopped only after %.2f s: held by the frozen rank", rank,
            o.stopped_s);
    }
  }
  // One island wishes a signal after 0.1 s: every island stops (it reaches them as a
  // message), none keeps running to a later stop, and the reason is agreed.
  {
    const AsyncOutcome o = run_async(
        comm,
        [](int r, int, double t) {
          return r == 0 && t >= 0.1 ? StopReason::signal : StopReason::none;
        },
        10);
    CHECK(o.decided == StopReason::signal, "signal: decided %d", static_cast<int>(o.decided));
    CHECK(o.agreed == StopReason::signal, "signal: agreed %d", static_cast<int>(o.agreed));
  }
  // Done islands (the MCR stop) wait for every island: rank r is done from generation
  // 5 + 3 r on and stays done (the vote is sticky even when the wish comes and goes); every
  // island stops with the MCR reason only after the last one is done.
  {
    const AsyncOutcome o = run_async(
        comm,
        [](int r, int g, double) {
          return g >= 5 + 3 * r && g % 2 == 0 ? StopReason::mcr : StopReason::none;
        },
        5);
    CHECK(o.decided == StopReason::mcr, "mcr: decided %d", static_cast<int>(o.decided));
    CHECK(o.agreed == StopReason::mcr, "mcr: agreed %d", static_cast<int>(o.agreed));
    if (rank == size - 1)
      CHECK(o.generation >= 5 + 3 * rank, "mcr: the last rank stopped at %d before it was done",
            o.generation);
  }
  // Two reasons: every island but the last at its time budget (its own limit: it stops, done),
  // the last one signalled (which stops all): the run's reason is the signal, on every rank,
  // whichever each rank saw first.
  {
    const AsyncOutcome o = run_async(
        comm,
        [size](int r, int, double t) {
          if (t < 0.05)
            return StopReason::none;
          return r == size - 1 ? StopReason::signal : StopReason::time_budget;
        },
        10);
    CHECK(same_everywhere(comm, static_cast<int>(o.agreed)), "two reasons: not agreed");
    CHECK(o.agreed == StopReason::signal, "two reasons: agreed %d", static_cast<int>(o.agreed));
  }
}

// A rank 15 ms slower per generation delays the others (they record waiting) but
// nobody deadlocks and all stop together.
void test_slow(MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int slow = size - 1;
  const double start = MPI_Wtime();
  auto [g, reason] = run_vote(
      comm,
      [&](int, int gen) { return gen >= 12 ? StopReason::max_generations : StopReason::none; },
      slow);
  int lo = 0, hi = 0;
  MPI_Allreduce(&g, &lo, 1, MPI_INT, MPI_MIN, comm);
  MPI_Allreduce(&g, &hi, 1, MPI_INT, MPI_MAX, comm);
  CHECK(lo == hi && g == 13, "stopped in %d..%d", lo, hi);
  CHECK(reason == StopReason::max_generations, "reason");
  // The fast ranks cannot be more than about one generation ahead of the slow one.
  const double elapsed = MPI_Wtime() - start;
  CHECK(elapsed >= 0.015 * 12, "elapsed %.3f s", elapsed);
}

// ready() (ga.migration.fill): the last rank sleeps 200 ms before its first send and its
// first vote. Its ring neighbours' migrator is not ready until its batch has come, the others'
// at once; every rank's vote is not ready until it has voted. Once ready, receive() and vote()
// return without waiting.
void test_ready(MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int slow = size - 1;
  RingMigrator ring(comm, 0, true);
  RingStopVote vote(comm, 1);
  const auto sleep_if_slow = [&] {
    if (rank == slow && size > 1)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
  };
  const auto until_ready = [](auto&& ready) {
    const double start = MPI_Wtime();
    int no = 0;
    while (!ready())
      ++no;
    return std::make_pair(MPI_Wtime() - start, no);
  };
  const bool next_to_slow =
      size > 1 && rank != slow && (rank == (slow + 1) % size || rank == (slow + size - 1) % size);
  // The migrator.
  MPI_Barrier(comm);
  sleep_if_slow();
  ring.send({make_migrant(rank, 0, 0)});
  const auto [ring_s, ring_no] = until_ready([&] { return ring.ready(); });
  if (next_to_slow) {
    CHECK(ring_s >= 0.1 && ring_no > 0, "next to the slow rank: ready after %.3f s, %d no's",
          ring_s, ring_no);
  } else if (rank != slow) {
    CHECK(ring_s < 0.1, "not next to the slow rank: ready only after %.3f s", ring_s);
  }
  const std::vector<Migrant> in = ring.receive();
  CHECK(ring.last_wait_s() < 0.01, "receive() waited %.3f s once ready", ring.last_wait_s());
  CHECK(static_cast<int>(in.size()) == static_cast<int>(ring.peers().size()),
        "received %zu batches' migrants from %zu neighbours", in.size(), ring.peers().size());
  // The vote: the first answers at once; the second waits for every rank's first.
  MPI_Barrier(comm);
  CHECK(vote.ready(), "the first vote is not ready");
  sleep_if_slow();
  CHECK(vote.vote(0, StopReason::none) == StopReason::none, "first vote");
  const auto [vote_s, vote_no] = until_ready([&] { return vote.ready(); });
  if (rank != slow && size > 1) {
    CHECK(vote_s >= 0.1 && vote_no > 0, "vote ready after %.3f s, %d no's", vote_s, vote_no);
  }
  CHECK(vote.vote(1, StopReason::none) == StopReason::none, "second vote");
  CHECK(vote.last_wait_s() < 0.01, "vote() waited %.3f s once ready", vote.last_wait_s());
  vote.drain();
  ring.drain();
}

// The last rank sleeps 50 ms before each of its 20 gathers; rank 0 starts its 20 at once. A
// blocking gather would hold rank 0 for the last rank's 1 s; the background gather returns
// at once, and drain() then hands rank 0 all 20 in order, rank r's row being (g, r, r + g).
void test_progress(MPI_Comm comm) {
  using isletune::ring::BackgroundGather;
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  constexpr int kGenerations = 20;
  BackgroundGather gather(comm, 3);
  std::vector<std::vector<double>> got;
  const double start = MPI_Wtime();
  for (int g = 0; g < kGenerations; ++g) {
    if (size > 1 && rank == size - 1)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gather.start(
        {static_cast<double>(g), static_cast<double>(rank), static_cast<double>(rank + g)});
    for (auto& all : gather.ready())
      got.push_back(std::move(all));
  }
  const double started = MPI_Wtime() - start;
  if (rank == 0 && size > 1) {
    CHECK(started < 0.5, "rank 0 was held %.3f s by the slow rank's gathers", started);
    CHECK(gather.pending() > 0, "every gather completed before the slow rank joined");
  }
  for (auto& all : gather.drain())
    got.push_back(std::move(all));
  CHECK(gather.pending() == 0, "%zu gathers left after drain", gather.pending());
  if (rank != 0) {
    CHECK(got.empty(), "rank %d got %zu gathers", rank, got.size());
    return;
  }
  CHECK(static_cast<int>(got.size()) == kGenerations, "%zu gathers", got.size());
  for (std::size_t g = 0; g < got.size(); ++g) {
    CHECK(static_cast<int>(got[g].size()) == 3 * size, "gather %zu: %zu values", g, got[g].size());
    for (int r = 0; r < size && got[g].size() == static_cast<std::size_t>(3 * size); ++r) {
      const double* row = &got[g][static_cast<std::size_t>(3 * r)];
      CHECK(row[0] == static_cast<double>(g) && row[1] == r && row[2] == r + static_cast<double>(g),
            "gather %zu, rank %d: (%g, %g, %g)", g, r, row[0], row[1], row[2]);
    }
  }
}

// GPU mapping from CUDA_VISIBLE_DEVICES and the node-local rank.
void test_mapping(const isletune::ring::World& world) {
  using isletune::ring::gpu_ordinal;
  using isletune::ring::visible_gpu_count;
  CHECK(visible_gpu_count(nullptr) == -1, "unset");
  CHECK(visible_gpu_count("") == 0, "empty");
  CHECK(visible_gpu_count("3") == 1, "one");
  CHECK(visible_gpu_count("0,1,GPU-abc") == 3, "three");
  CHECK(gpu_ordinal(5, 1) == 0, "one GPU per task");
  CHECK(gpu_ordinal(5, 4) == 1, "round robin");
  CHECK(gpu_ordinal(3, -1) == 3, "all visible");
  // Under one mpirun on one host every rank is node-local.
  CHECK(world.local_size() == world.size(), "local size %d", world.local_size());
  CHECK(world.local_rank() == world.rank(), "local rank %d", world.local_rank());
  const auto hosts = world.gather(world.host());
  if (world.rank() == 0)
    CHECK(static_cast<int>(hosts.size()) == world.size(), "hosts");
  const std::string err = world.first_error(world.rank() == world.size() - 1 ? "bad" : "");
  const std::string want =
      world.size() == 1 ? "bad" : "rank " + std::to_string(world.size() - 1) + ": bad";
  CHECK(err == want, "first_error '%s'", err.c_str());
  CHECK(world.first_error("").empty(), "no error");
}

}  // namespace

int main(int argc, char** argv) {
  isletune::ring::World world(&argc, &argv);
  isletune::mpi_test::rank = world.rank();
  const std::string what = argc > 1 ? argv[1] : "";
  if (what == "delivery") {
    test_delivery(world.comm(), 1);
    test_delivery(world.comm(), 0);
    test_delivery(world.comm(), 3);
    test_delivery(world.comm(), 0, true);
    test_delivery(world.comm(), 2, true);
  } else if (what == "drift") {
    test_drift(world.comm());
  } else if (what == "stop") {
    test_stop(world.comm());
  } else if (what == "slow") {
    test_slow(world.comm());
  } else if (what == "mapping") {
    test_mapping(world);
  } else if (what == "progress") {
    test_progress(world.comm());
  } else if (what == "ready") {
    test_ready(world.comm());
  } else if (what == "async") {
    test_async(world.comm());
  } else {
    std::fprintf(stderr,
                 "usage: ring_test delivery|drift|stop|slow|mapping|progress|ready|async\n");
    return 2;
  }
  const int failures = isletune::mpi_test::total_failures(world.comm());
  if (world.rank() == 0) {
    std::printf("ring_test %s on %d ranks: %s (%d failed checks)\n", what.c_str(), world.size(),
                failures == 0 ? "PASS" : "FAIL", failures);
  }
  return failures == 0 ? 0 : 1;
}
