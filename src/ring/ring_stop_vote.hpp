// The collective stop vote (docs/architecture.md, "Stopping"): one small non-blocking
// MPI_Iallreduce per generation, pipelined one generation behind. vote(g, wish) starts the
// reduction of every island's wish for generation g and returns the agreed answer of generation g-1
// (waiting for it if a slower rank has not voted yet), so every island gets the same
// answer in the same generation and no island ever stops alone. The agreed reason is the
// decision of StopTally (ga/migrator.hpp). A wish therefore takes effect one
// generation after it is made; the first vote always answers none.
#pragma once

#include <mpi.h>

#include <array>

#include "ga/migrator.hpp"

namespace isletune::ring {

class RingStopVote final : public StopVote {
 public:
  // Vote over `comm` (duplicated).
  explicit RingStopVote(MPI_Comm comm);
  ~RingStopVote() override;
  RingStopVote(const RingStopVote&) = delete;
  RingStopVote& operator=(const RingStopVote&) = delete;

  StopReason vote(int generation, StopReason local) override;

  // Completes the vote still in flight (every rank has started it). Call once, on every
  // rank, after the last vote(); returns the answer of that last vote.
  StopReason drain();

  // Seconds spent waiting for the other ranks, in the last vote() and in total.
  [[nodiscard]] double last_wait_s() const { return last_wait_s_; }
  [[nodiscard]] double total_wait_s() const { return total_wait_s_; }
  [[nodiscard]] int votes() const { return votes_; }

 private:
  // Waits for the reduction in flight and decodes its answer.
  StopReason complete();

  MPI_Comm comm_ = MPI_COMM_NULL;
  // Per pipeline slot: {smallest non-MCR reason (none = INT_MAX), 0 if MCR else -1},
  // reduced with MPI_MIN: the second is 0 only when every island wished the MCR stop.
  std::array<std::array<int, 2>, 2> wish_{};
  std::array<std::array<int, 2>, 2> agreed_{};
  std::array<MPI_Request, 2> request_{MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  int votes_ = 0;
  double last_wait_s_ = 0;
  double total_wait_s_ = 0;
};

}  // namespace isletune::ring
