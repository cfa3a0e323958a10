// Verification in isletune-worker: the reference module (isl_reference_step, isl_fill_random,
// isl_fill_nan, isl_compare from generate_reference), the problem's device buffers, fresh
// random inputs and reference results per batch, and the check of a kernel's schedule: runs
// from the same input into NaN-poisoned buffers, compared over the whole domain. The short run
// (7 steps) checks every kernel; the long run (T) is added where the short run does not
// exercise both the main entry and the one-step tail (launches of 7 or more steps, or of one
// that divides 7: tdeg 7, 8, 12, 16), and for every kernel with full_verification. A kernel
// passes with relative L2 error <= 1e-12, maximum relative error <= 1e-10 and no non-finite
// point.
#pragma once

#include <string>

#include "eval/cuda/worker_device.hpp"

namespace isletune::cuda {

// The problem the worker solves and how it measures.
struct ProblemSize {
  long long nx = 1, ny = 1, nz = 1;
  int steps = 48;       // T of the long verification run
  int short_steps = 7;  // the short run (catches schedules right only for T)
  int warmup = 2;
  int repeats = 10;
  double min_rep_ms = 2.0;
  double slow_factor = 0;          // probe: over this x the reference's time per step is a timeout
  double race_factor = 0;          // timing: racing (eval/race.hpp); 0: every run timed
  double settle_spread = 0;        // timing: settling (eval/race.hpp); 0: every run timed
  bool full_verification = false;  // the long run for every kernel, not only where needed
  [[nodiscard]] long long cells() const { return nx * ny * nz; }
};

// How far a kernel's output is from the reference (worst of the long and short runs).
struct VerifyResult {
  double error_l2 = 0;   // ||out - ref||2 / ||ref||2
  double error_max = 0;  // max relative error
  long long non_finite = 0;
  [[nodiscard]] bool passed() const;
  // "output differs from the reference: ..." for a failed check.
  [[nodiscard]] std::string message() const;
};

class Verifier {
 public:
  // Loads the reference cubin and allocates the buffers; throws CudaError.
  Verifier(const std::string& reference_cubin, const ProblemSize& problem, cudaStream_t stream);

  // New random input from `seed` and the reference results after the short run's steps (timed:
  // reference_step_ms) and, when `long_run`, after T steps; synchronises.
  void prepare(unsigned long long seed, bool long_run);
  // Whether a kernel advancing `launch_steps` steps per main launch needs the long run.
  [[nodiscard]] bool needs_long_run(int launch_steps) const;
  // The reference kernel's time per step in the last prepare (its event-timed short run).
  [[nodiscard]] double reference_step_ms() const { return reference_step_ms_; }
  // Runs one main launch of s from the input (the probe of a kernel's speed, no check), once
  // untimed and once timed; returns the timed launch's milliseconds per step. Throws CudaError.
  [[nodiscard]] double probe_step_ms(const Schedule& s);
  // Runs the schedule for the short run and, where needs_long_run, for T from the input,
  // compares with the reference; synchronises. Throws CudaError when a launch fails, or
  // std::logic_error when the long run is needed and prepare did not compute it.
  [[nodiscard]] VerifyResult verify(const Schedule& s);
  // The ping-pong buffers (free between verifications; timing runs in them).
  [[nodiscard]] PingPong buffers() const { return {a_.get(), b_.get()}; }

 private:
  // Runs `steps` steps of s from the input into freshly NaN-filled buffers; returns the
  // buffer with the result.
  const double* run(const Schedule& s, long long steps);
  // Reduces the difference of out and ref on the device.
  VerifyResult compare(const double* out, const double* ref);

  static constexpr int kCompareBlocks = 1024;

  ProblemSize problem_;
  cudaStream_t stream_;
  Library reference_;
  Schedule reference_schedule_;
  const void* fill_random_;
  const void* fill_nan_;
  const void* compare_;
  DeviceBuffer input_, a_, b_, ref_long_, ref_short_, partial_;
  double reference_step_ms_ = 0;
  bool long_ready_ = false;
};

}  // namespace isletune::cuda
