// The bounded MPI waits (see bounded_wait.hpp).
#include "ring/bounded_wait.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>

#include "common/error.hpp"
#include "common/text.hpp"

namespace isletune::ring {
namespace {

constexpr double kDefaultTimeout = 3600;

// ISLETUNE_RANK_TIMEOUT_S, or NaN when it is not a finite number of seconds above 0.
double parse_rank_timeout() {
  const char* text = std::getenv("ISLETUNE_RANK_TIMEOUT_S");
  if (text == nullptr || *text == '\0')
    return kDefaultTimeout;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(value) || value <= 0)
    return std::nan("");
  return value;
}

// The bound every wait uses: never throws (the waits run inside the collectives that agree
// on errors); a refused value was already reported by rank_timeout_s() at the start.
double wait_bound_s() {
  static const double value = parse_rank_timeout();
  return std::isnan(value) ? kDefaultTimeout : value;
}

}  // namespace

double rank_timeout_s() {
  const double value = parse_rank_timeout();
  if (std::isnan(value)) {
    throw InputError("ISLETUNE_RANK_TIMEOUT_S must be a finite number of seconds above 0 (the " +
                     std::string("longest a rank waits for the others), not ") +
                     quote_value(std::getenv("ISLETUNE_RANK_TIMEOUT_S")) +
                     "; unset it for the default of 3600 s.");
  }
  return value;
}

// set_wait_advice's function (the process's one; empty until the run directory is known).
static std::function<std::string()>& wait_advice() {
  static std::function<std::string()> advice;
  return advice;
}

void set_wait_advice(std::function<std::string()> advice) {
  wait_advice() = std::move(advice);
}

// The one sentence of a wait past its bound, then MPI_Abort (exit code 4).
[[noreturn]] static void abort_no_answer(double limit, const char* what) {
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::string advice = "the trace keeps every committed generation for `isletune resume`";
  if (wait_advice()) {
    try {
      advice = wait_advice()();
    } catch (...) {
      // Keep the default: the job ends either way.
    }
  }
  std::fprintf(stderr,
               "isletune: rank %d: no answer from the other ranks for %.0f s in %s (a rank "
               "stopped responding; the limit is ISLETUNE_RANK_TIMEOUT_S); ending the job: %s.\n",
               rank, limit, what, printable(advice, 200).c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 4);
  std::abort();  // MPI_Abort does not return
}

void poll_or_abort(const std::function<bool()>& done, const char* what) {
  poll_or_abort(done, what, MPI_Wtime());
}

void poll_or_abort(const std::function<bool()>& done, const char* what, double since) {
  const double limit = wait_bound_s();
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    if (done())
      return;
    if (MPI_Wtime() - since > limit)
      break;
    // Back off to at most 1 ms between polls: an answer costs at most that much latency.
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
  abort_no_answer(limit, what);
}

void WaitClock::not_yet(const char* what) {
  const double now = MPI_Wtime();
  if (since_ < 0)
    since_ = now;
  else if (now - since_ > wait_bound_s())
    abort_no_answer(wait_bound_s(), what);
}

double WaitClock::since() const {
  return since_ < 0 ? MPI_Wtime() : since_;
}

void wait_or_abort(MPI_Request* request, const char* what) {
  wait_or_abort(request, what, MPI_Wtime());
}

void wait_or_abort(MPI_Request* request, const char* what, double since) {
  poll_or_abort(
      [request] {
        int done = 0;
        MPI_Test(request, &done, MPI_STATUS_IGNORE);
        return done != 0;
      },
      what, since);
}

}  // namespace isletune::ring
