// The collective, pipelined stop vote (see ring_stop_vote.hpp).
#include "ring/ring_stop_vote.hpp"

#include <algorithm>
#include <array>
#include <climits>

#include "ring/bounded_wait.hpp"

namespace isletune::ring {
namespace {

// A wish as the two MPI_MIN operands of StopTally: the reason that stops all (none =
// INT_MAX, so the minimum is the smallest real reason), and the reason that needs every
// island (-1 when this island is not done, so the minimum is -1 unless all are done).
std::array<int, 2> encode(StopReason r) {
  const bool done = needs_every_island(r);
  return {r == StopReason::none || done ? INT_MAX : static_cast<int>(r),
          done ? static_cast<int>(r) : -1};
}
StopReason decode(const std::array<int, 2>& v) {
  if (v[0] != INT_MAX)
    return static_cast<StopReason>(v[0]);
  return v[1] > 0 ? static_cast<StopReason>(v[1]) : StopReason::none;
}

}  // namespace

RingStopVote::RingStopVote(MPI_Comm comm, int depth)
    : depth_(std::max(1, depth)),
      wish_(static_cast<std::size_t>(depth_ + 1)),
      agreed_(wish_.size()),
      request_(wish_.size(), MPI_REQUEST_NULL) {
  MPI_Request dup = MPI_REQUEST_NULL;
  MPI_Comm_idup(comm, &comm_, &dup);
  wait_or_abort(&dup, "setting up the stop vote");
}

RingStopVote::~RingStopVote() {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (finalised)
    return;
  for (MPI_Request& r : request_) {
    if (r != MPI_REQUEST_NULL)
      MPI_Request_free(&r);
  }
  MPI_Comm_free(&comm_);
}

StopReason RingStopVote::complete(int index) {
  const auto slot = static_cast<std::size_t>(index % (depth_ + 1));
  const double start = MPI_Wtime();
  wait_or_abort(&request_[slot], "the stop vote", waiting_.since());
  waiting_.answered();
  const double waited = MPI_Wtime() - start;
  last_wait_s_ += waited;
  total_wait_s_ += waited;
  return decode(agreed_[slot]);
}

StopReason RingStopVote::vote(int /*generation*/, StopReason local) {
  last_wait_s_ = 0;
  const auto slot = static_cast<std::size_t>(votes_ % (depth_ + 1));
  wish_[slot] = encode(local);
  MPI_Iallreduce(wish_[slot].data(), agreed_[slot].data(), 2, MPI_INT, MPI_MIN, comm_,
                 &request_[slot]);
  ++votes_;
  if (votes_ <= depth_)
    return StopReason::none;
  return complete(votes_ - 1 - depth_);
}

bool RingStopVote::ready() {
  const int index = votes_ - depth_;  // the vote the next vote() completes
  if (index < 0)
    return true;
  MPI_Request& request = request_[static_cast<std::size_t>(index % (depth_ + 1))];
  if (request == MPI_REQUEST_NULL)
    return true;
  int done = 0;
  MPI_Test(&request, &done, MPI_STATUS_IGNORE);  // a completed request becomes NULL
  if (done == 0)
    waiting_.not_yet("the stop vote");  // ends the job once the wait is past its bound
  return done != 0;
}

StopReason RingStopVote::drain() {
  last_wait_s_ = 0;
  StopReason last = StopReason::none;
  for (int index = std::max(0, votes_ - depth_); index < votes_; ++index) {
    if (request_[static_cast<std::size_t>(index % (depth_ + 1))] != MPI_REQUEST_NULL)
      last = complete(index);
  }
  return last;
}

}  // namespace isletune::ring
