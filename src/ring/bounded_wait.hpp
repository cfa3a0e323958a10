// Bounded MPI waits: every place a rank waits for another (collectives, the stop vote, the
// progress gather, migrants, the final drain) completes like MPI_Wait / MPI_Probe, but a
// rank that stops answering (frozen, stopped, on a dead node) ends the job after a
// configurable time with one sentence instead of hanging it forever.
#pragma once

#include <mpi.h>

#include <functional>

namespace isletune::ring {

// Seconds a rank waits for the others before it ends the job: ISLETUNE_RANK_TIMEOUT_S
// (a finite number of seconds above 0), default 3600 (set it above the longest
// generation). Throws InputError (one sentence) for anything else: empty text aside,
// "abc", "nan", "inf", 0 and negative values are refused, not read as "no bound".
[[nodiscard]] double rank_timeout_s();

// Calls `done` (which polls MPI, e.g. MPI_Test or MPI_Iprobe) until it returns true;
// after rank_timeout_s() without success prints "isletune: rank R: no answer from the
// other ranks for T s in WHAT ..." and calls MPI_Abort (exit code 4): the committed
// generations stay in the trace, resumable.
void poll_or_abort(const std::function<bool()>& done, const char* what);

// Waits for `request` like MPI_Wait, bounded as poll_or_abort.
void wait_or_abort(MPI_Request* request, const char* what);

}  // namespace isletune::ring
