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

// The collective stop rule (docs/architecture.md, "Stopping"; chosen by the replay sweep): a
// budget, signal or error wish of any island stops all (the smallest such reason); the MCR stop
// needs every island converged, since one converged island stopping the others cut their
// search short in most 2-island runs. The tally of one generation's wishes:
struct StopTally {
  StopReason other = StopReason::none;  // smallest non-MCR wish so far
  int mcr = 0;                          // islands wishing the MCR stop
  int votes = 0;
  void add(StopReason wish) {
    ++votes;
    if (wish == StopReason::mcr)
      ++mcr;
    else if (wish != StopReason::none && (other == StopReason::none || wish < other))
      other = wish;
  }
  // The decision once all `islands` have voted.
  [[nodiscard]] StopReason decision(int islands) const {
    if (other != StopReason::none)
      return other;
    return mcr == islands ? StopReason::mcr : StopReason::none;
  }
};

// Collective stop vote: every island calls it once per generation with its own wish;
// all islands get the same answer for the same generation, so no island stops alone.
class StopVote {
 public:
  virtual ~StopVote() = default;
  // Returns StopReason::none to go on, otherwise the agreed reason (StopTally).
  virtual StopReason vote(int generation, StopReason local) = 0;
};

// A single island: no neighbours, its own wish is the decision.
class LocalStopVote final : public StopVote {
 public:
  StopReason vote(int, StopReason local) override { return local; }
};

}  // namespace isletune
