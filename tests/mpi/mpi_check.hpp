// Checks for the MPI test programs: a failed CHECK prints the rank and the condition and
// counts; total_failures() sums the counts over all ranks, so every rank exits alike.
#pragma once

#include <mpi.h>

#include <cstdio>

namespace isletune::mpi_test {

inline int failures = 0;
inline int rank = 0;

// Failed checks over all ranks of `comm` (collective).
inline int total_failures(MPI_Comm comm) {
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, comm);
  return total;
}

}  // namespace isletune::mpi_test

#define CHECK(cond, ...)                                                                    \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      ++isletune::mpi_test::failures;                                                       \
      std::fprintf(stderr, "rank %d: check failed: %s: ", isletune::mpi_test::rank, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                                    \
      std::fprintf(stderr, "\n");                                                           \
    }                                                                                       \
  } while (0)
