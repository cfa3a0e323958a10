// A bounded MPI wait: completes a request like MPI_Wait, but a rank that stops answering
// (frozen, stopped, on a dead node) ends the job after a configurable time with one
// sentence instead of hanging it forever. Used by the stop vote and the progress gather,
// the two places where every rank waits for every other once per generation.
#pragma once

#include <mpi.h>

namespace isletune::ring {

// Seconds a rank waits for the others before it ends the job: ISLETUNE_RANK_TIMEOUT_S,
// default 3600 (set it above the longest generation); 0 or negative waits forever.
[[nodiscard]] double rank_timeout_s();

// Waits for `request`; after rank_timeout_s() without completion prints
// "isletune: rank R: no answer from the other ranks for T s in WHAT ..." and calls
// MPI_Abort (exit code 4): the committed generations stay in the trace, resumable.
void wait_or_abort(MPI_Request* request, const char* what);

}  // namespace isletune::ring
