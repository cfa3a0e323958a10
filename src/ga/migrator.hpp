// Migration transport (docs/architecture.md, "The island GA"): individuals travel with their
// measurements, so immigrants are never re-measured. The MPI ring (src/ring) implements Migrator
// and StopVote; src/ga has in-memory fakes for tests.
#pragma once

#include <vector>

#include "eval/evaluator.hpp"
#include "setting/setting.hpp"

namespace isletune {

// An individual on the move: its setting (receivers re-encode it in their own alphabet;
// every island shares the same sampled set) and the measurement that came with it.
struct Migrant {
  Setting setting;
  Measurement measurement;
  int source_rank = 0;
  int generation = 0;  // sender's generation when it left
  // A measurement shared so no island measures it again (docs/architecture.md, "The island GA"): it
  // enters the receiver's cache, never its population. Otherwise an individual (an immigrant).
  bool measurement_only = false;
};

class Migrator {
 public:
  virtual ~Migrator() = default;
  // Number of ring neighbours (0 for a single island, 1 or 2 otherwise).
  [[nodiscard]] virtual int neighbours() const = 0;
  // Sends the migrants to every neighbour without blocking.
  virtual void send(const std::vector<Migrant>& migrants) = 0;
  // Everything that has arrived so far (may be empty); never blocks.
  virtual std::vector<Migrant> receive() = 0;
  // Whether receive() would return now, without waiting for a neighbour (the MPI ring
  // waits for batches older than its lag); never blocks.
  [[nodiscard]] virtual bool ready() { return true; }
  // Collective over every island of the run, ring neighbours or not: every other
  // island's first batch (the migrants of its first send(); none when it has not sent),
  // in rank order. Every island calls it once, in the same generation, after its first
  // send() (the island GA: before generation 1, so every island's model starts from
  // every island's generation 0). Blocks until every island has called it (the MPI
  // ring); a lone island gets nothing.
  virtual std::vector<Migrant> gather_first() { return {}; }
  // A resumed island's first batch, sent before the interruption and integrated by the
  // neighbours already (lag 0): gather_first() answers with it, the ring does not carry
  // it again.
  virtual void remember_first(const std::vector<Migrant>& /*batch*/) {}
};

// Why a search stopped.
enum class StopReason : int {
  none = 0,
  mcr = 1,  // an island's MCR reached the threshold
  max_generations = 2,
  max_evaluations = 3,
  time_budget = 4,
  signal = 5,  // SIGTERM/SIGINT on some rank
  error = 6,
};

[[nodiscard]] inline const char* stop_reason_name(StopReason r) {
  constexpr const char* names[] = {
      "none", "mcr", "max_generations", "max_evaluations", "time_budget", "signal", "error"};
  return names[static_cast<int>(r)];
}

// The collective stop rule (docs/architecture.md, "Stopping"; chosen by the replay sweep). Two
// kinds of wish: a generation limit, time budget, signal or error of any island stops all (the
// smallest such reason); an island that is done (MCR reached, or its evaluation budget
// spent or nothing left to measure: max_evaluations) stops the run only once every
// island is done, since one converged or spent island stopping the others cut their
// search short (and left the others' budgets unspent). A done island keeps stepping,
// measuring nothing. The tally of one generation's wishes:
[[nodiscard]] inline bool needs_every_island(StopReason r) {
  return r == StopReason::mcr || r == StopReason::max_evaluations;
}
struct StopTally {
  StopReason other = StopReason::none;  // smallest wish that stops all
  StopReason done = StopReason::none;   // smallest wish that needs every island
  int done_votes = 0;                   // islands that are done
  int votes = 0;
  void add(StopReason wish) {
    needs_every_island(wish) ? add(StopReason::none, wish) : add(wish, StopReason::none);
  }
  // One island's wish already split into the reason that stops all and the one it is done for
  // (either may be none; the async vote counts an island's own limits as done).
  void add(StopReason stops_all, StopReason done_for) {
    ++votes;
    if (done_for != StopReason::none) {
      ++done_votes;
      if (done == StopReason::none || done_for < done)
        done = done_for;
    }
    if (stops_all != StopReason::none && (other == StopReason::none || stops_all < other))
      other = stops_all;
  }
  // The decision once all `islands` have voted.
  [[nodiscard]] StopReason decision(int islands) const {
    if (other != StopReason::none)
      return other;
    return done_votes == islands ? done : StopReason::none;
  }
};

// Collective stop vote: every island calls it once per generation with its own wish;
// all islands get the same answer for the same generation, so no island stops alone.
class StopVote {
 public:
  virtual ~StopVote() = default;
  // Returns StopReason::none to go on, otherwise the agreed reason (StopTally).
  virtual StopReason vote(int generation, StopReason local) = 0;
  // Whether the next vote() would answer now, without waiting for another island; never
  // blocks.
  [[nodiscard]] virtual bool ready() { return true; }
};

// A single island: no neighbours, its own wish is the decision.
class LocalStopVote final : public StopVote {
 public:
  StopReason vote(int, StopReason local) override { return local; }
};

}  // namespace isletune
