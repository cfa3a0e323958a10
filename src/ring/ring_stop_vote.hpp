// The collective stop vote (docs/architecture.md, "Stopping"): one small non-blocking
// MPI_Iallreduce per generation, pipelined `depth` generations behind (1 by default; D + 1
// with ga.migration.drift D). vote(g, wish) starts the reduction of every island's wish for
// generation g and returns the agreed answer of generation g - depth (waiting for it if a
// slower rank has not voted yet), so every island gets the same answer in the same generation
// and no island ever stops alone. The agreed reason is the decision of StopTally
// (ga/migrator.hpp). A wish therefore takes effect `depth` generations after it is made; the
// first `depth` votes always answer none.
#pragma once

#include <mpi.h>

#include <array>
#include <vector>

#include "ga/migrator.hpp"
#include "ring/bounded_wait.hpp"

namespace isletune::ring {

class RingStopVote final : public StopVote {
 public:
  // Vote over `comm` (duplicated), `depth` >= 1 generations behind.
  explicit RingStopVote(MPI_Comm comm, int depth = 1);
  ~RingStopVote() override;
  RingStopVote(const RingStopVote&) = delete;
  RingStopVote& operator=(const RingStopVote&) = delete;

  StopReason vote(int generation, StopReason local) override;
  // Whether the reduction the next vote() completes (the one `depth` votes back) has ended;
  // tests it, never blocks. The wait it reports counts towards ISLETUNE_RANK_TIMEOUT_S
  // (bounded_wait.hpp, WaitClock): past it, it ends the job.
  [[nodiscard]] bool ready() override;

  // Completes the votes still in flight (every rank has started them). Call once, on every
  // rank, after the last vote(); returns the answer of that last vote.
  StopReason drain();

  // Seconds spent waiting for the other ranks, in the last vote() and in total.
  [[nodiscard]] double last_wait_s() const { return last_wait_s_; }
  [[nodiscard]] double total_wait_s() const { return total_wait_s_; }
  [[nodiscard]] int votes() const { return votes_; }
  [[nodiscard]] int depth() const { return depth_; }

 private:
  // Waits for the reduction of vote `index` (0-based) and decodes its answer.
  StopReason complete(int index);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int depth_ = 1;
  // Per pipeline slot (depth + 1 of them): {smallest non-MCR reason (none = INT_MAX), 0 if
  // MCR else -1}, reduced with MPI_MIN: the second is 0 only when every island wished the MCR
  // stop.
  std::vector<std::array<int, 2>> wish_;
  std::vector<std::array<int, 2>> agreed_;
  std::vector<MPI_Request> request_;
  int votes_ = 0;
  double last_wait_s_ = 0;
  double total_wait_s_ = 0;
  WaitClock waiting_;  // since the first ready() that found the vote unfinished
};

}  // namespace isletune::ring
