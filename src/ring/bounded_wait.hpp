// Bounded MPI waits: every place a rank waits for another (collectives, the stop vote, the
// progress gather, migrants, the final drain) completes like MPI_Wait / MPI_Probe, but a
// rank that stops answering (frozen, stopped, on a dead node) ends the job after a
// configurable time with one sentence instead of hanging it forever.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>

namespace isletune::ring {

// Seconds a rank waits for the others before it ends the job: ISLETUNE_RANK_TIMEOUT_S
// (a finite number of seconds above 0), default 3600 (set it above the longest
// generation). Throws InputError (one sentence) for anything else: empty text aside,
// "abc", "nan", "inf", 0 and negative values are refused, not read as "no bound".
[[nodiscard]] double rank_timeout_s();

// What the message of a wait past its bound tells the user to do next (set once the run
// directory is known; read only when the job ends). Without it the message points to
// `isletune resume`.
void set_wait_advice(std::function<std::string()> advice);

// Calls `done` (which polls MPI, e.g. MPI_Test or MPI_Iprobe) until it returns true;
// after rank_timeout_s() without success prints "isletune: rank R: no answer from the
// other ranks for T s in WHAT ..." and calls MPI_Abort (exit code 4): the committed
// generations stay in the trace, resumable.
void poll_or_abort(const std::function<bool()>& done, const char* what);
// The same for a wait that began at `since` (an MPI_Wtime()) before this call: the bound
// counts from there.
void poll_or_abort(const std::function<bool()>& done, const char* what, double since);

// Waits for `request` like MPI_Wait, bounded as poll_or_abort (from `since` when given).
void wait_or_abort(MPI_Request* request, const char* what);
void wait_or_abort(MPI_Request* request, const char* what, double since);

// The clock of a wait that other work interleaves with: with ga.migration.fill a rank
// measures while a neighbour's batch or the stop vote has not arrived, asking ready()
// between measurements, so no single poll_or_abort sees the whole wait. not_yet() starts
// the clock at the first answer "not yet" and, once the wait has lasted rank_timeout_s()
// however much was measured meanwhile, ends the job as poll_or_abort does; answered()
// stops it. A frozen rank is thus caught within the bound (plus one batch of measurements)
// with fills as without.
class WaitClock {
 public:
  void not_yet(const char* what);
  void answered() { since_ = -1; }
  // When the wait began (MPI_Wtime()), or now when no wait is running.
  [[nodiscard]] double since() const;

 private:
  double since_ = -1;
};

}  // namespace isletune::ring
