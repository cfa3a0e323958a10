// Timing in isletune-worker: warm-up, then `repeats` timed runs of K back-to-back steps each
// (K a multiple of the steps per main launch, so each run is whole main launches, chosen so a
// run lasts at least min_rep_ms and at most about T steps), CUDA events around each run; the
// time per step of every run and their median. While another kernel waits for the GPU, a kernel
// whose first kRaceRuns runs lose the race, or whose first kSettleRuns runs settle
// (eval/race.hpp), is timed by those alone.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "eval/cuda/worker_device.hpp"

namespace isletune::cuda {

struct TimingPlan {
  int warmup = 2;    // untimed runs of one main launch
  int repeats = 10;  // timed runs
  double min_rep_ms = 2.0;
  long long max_steps = 48;  // K's upper bound (rounded up to whole main launches)
  // Racing (eval/race.hpp): the fastest median per step timed before and the factor over it
  // that stops the timing after kRaceRuns runs (either 0: every run is timed).
  double best_ms = 0;
  double race_factor = 0;
  // Settling (eval/race.hpp): the spread within which the first kSettleRuns runs stop the
  // timing (0: off).
  double settle_spread = 0;
  // Whether another compiled kernel waits for the GPU, asked once the race is lost or the runs
  // settle (null: as if one always did). Either stops a timing only then: with none waiting the
  // GPU would idle, so the kernel is timed in full.
  std::function<bool()> others_waiting;
};

struct Timing {
  double median_ms = 0;          // median time per step
  std::vector<double> times_ms;  // every run, per step
  long long steps_per_rep = 1;   // K
  bool raced = false;            // stopped after kRaceRuns runs (races_out)
  bool settled = false;          // stopped after kSettleRuns runs (settles)
  // The per-step times as "t0 t1 ..." (the protocol's field).
  [[nodiscard]] std::string times_text() const;
};

// Times the schedule in the ping-pong buffers (their contents are overwritten); throws
// CudaError when a launch fails.
[[nodiscard]] Timing time_schedule(cudaStream_t stream, const Schedule& s, PingPong buffers,
                                   const TimingPlan& plan);

}  // namespace isletune::cuda
