// In-memory stand-ins for the MPI ring (src/ring), for tests and single-process runs:
// a bidirectional ring of N islands sharing mailboxes, and a collective stop vote.
// Islands are stepped in turn on one thread (IslandSearch::step), so both are
// deterministic. gather_first() answers from the first batches sent so far: islands
// stepped in turn have all sent generation 0's before any asks, before generation 1.
// Blocking (one thread per island): receive(), gather_first() and the vote wait, as
// the MPI ring and vote do, until what they hand out has been sent, so lag 0 (every
// island waits for its neighbours' current generation) is deterministic too.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "ga/migrator.hpp"

namespace isletune {

class MemoryRing {
 public:
  // `lag` < 0: receive() hands out everything sent to the island so far. `lag` >= 0:
  // as the MPI ring (ring/ring_migrator.hpp): receive() after an island's k-th send hands
  // out its neighbours' batches of their sends 0 .. k-1-lag, left neighbour first, then
  // right, in order; with lag 1 every island of a ring stepped in turn then gets what it
  // would get over MPI, however the islands are ordered.
  explicit MemoryRing(int islands, int lag = -1, bool blocking = false);
  ~MemoryRing();
  [[nodiscard]] int size() const { return static_cast<int>(inboxes_.size()); }
  // The Migrator of island `rank` (valid while the ring lives).
  [[nodiscard]] Migrator& migrator(int rank);
  // Ring neighbours of `rank`: none for 1 island, the other for 2, rank-1 and rank+1 else.
  [[nodiscard]] std::vector<int> neighbours_of(int rank) const;
  // Migrants sent in total (for tests).
  [[nodiscard]] std::size_t sent() const { return sent_; }

 private:
  class Port;
  std::vector<std::vector<Migrant>> inboxes_;
  int lag_ = -1;
  // lag >= 0: per island, per sender, its batches by send number.
  std::vector<std::map<int, std::map<std::int64_t, std::vector<Migrant>>>> held_;
  std::vector<std::optional<std::vector<Migrant>>> first_;  // per island: its first batch
  std::vector<std::unique_ptr<Port>> migrators_;
  std::size_t sent_ = 0;
  bool blocking_ = false;
  std::mutex mutex_;
  std::condition_variable arrived_;
};

// A collective vote over N islands stepped in turn, pipelined one generation behind as
// the MPI vote is: vote(g, wish) records the wish and answers the combined wishes of
// generation g-1 (StopTally::decision), which every island has cast by then. So all
// islands get the same answer for the same generation and stop together.
class MemoryStopVote {
 public:
  explicit MemoryStopVote(int islands, bool blocking = false);
  ~MemoryStopVote();
  [[nodiscard]] StopVote& vote(int rank);

 private:
  class Voter;
  StopReason cast(int generation, StopReason wish);
  int islands_;
  std::map<int, StopTally> wishes_;  // generation -> tally
  std::vector<std::unique_ptr<Voter>> voters_;
  bool blocking_ = false;
  std::mutex mutex_;
  std::condition_variable cast_;
};

}  // namespace isletune
