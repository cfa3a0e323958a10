// The bounded MPI wait (see bounded_wait.hpp).
#include "ring/bounded_wait.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace isletune::ring {

double rank_timeout_s() {
  constexpr double kDefault = 3600;
  const char* text = std::getenv("ISLETUNE_RANK_TIMEOUT_S");
  if (text == nullptr || *text == '\0')
    return kDefault;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  return end != text && *end == '\0' ? value : kDefault;
}

void wait_or_abort(MPI_Request* request, const char* what) {
  const double limit = rank_timeout_s();
  if (limit <= 0) {
    MPI_Wait(request, MPI_STATUS_IGNORE);
    return;
  }
  const double start = MPI_Wtime();
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    int done = 0;
    MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (done)
      return;
    if (MPI_Wtime() - start > limit)
      break;
    // Back off to at most 1 ms between polls: an answer costs at most that much latency.
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr,
               "isletune: rank %d: no answer from the other ranks for %.0f s in %s (a rank "
               "stopped responding; the limit is ISLETUNE_RANK_TIMEOUT_S); ending the job, the "
               "trace keeps every committed generation for `isletune resume`.\n",
               rank, limit, what);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 4);
}

}  // namespace isletune::ring
