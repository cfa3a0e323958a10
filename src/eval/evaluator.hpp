// The Evaluator interface: measures a batch of settings on one problem. Implemented by
// the CUDA evaluator (src/eval/cuda) and the replay evaluator (src/eval/replay); the GA
// sees only this header. Pure: no CUDA, MPI, HDF5 or yaml-cpp.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "setting/device_limits.hpp"
#include "setting/setting.hpp"
#include "stencil/stencil.hpp"

namespace isletune {

enum class Status : std::uint8_t {
  ok = 0,
  invalid = 1,        // violates a constraint, or (replay) no record of this setting
  compile_error = 2,  // codegen or NVRTC failed
  launch_error = 3,   // too many registers / shared memory / threads: not a crash
  wrong_result = 4,   // verification against the reference failed
  crashed = 5,        // the worker died or the context was corrupted (sticky error)
  timeout = 6,        // the watchdog ended the worker, an NVRTC compile or a kernel ran too long
};
inline constexpr int kStatusCount = 7;

// The CUDA evaluator's probe before verification (evaluator.slow_factor, docs/kernels.md): a
// kernel over this many times the reference kernel's time per step is a timeout, neither
// verified nor timed. The naive setting runs 1-3x faster than the reference (box3d3r /
// box3d4r 512^3 on the H100: 12.5 / 31.8 ms per step against 41 / 91 ms).
inline constexpr double kDefaultSlowFactor = 2;

[[nodiscard]] inline std::string_view status_name(Status s) {
  constexpr std::string_view names[] = {"ok",           "invalid", "compile_error", "launch_error",
                                        "wrong_result", "crashed", "timeout"};
  return names[static_cast<int>(s)];
}
[[nodiscard]] inline std::optional<Status> status_from_name(std::string_view name) {
  for (int i = 0; i < kStatusCount; ++i) {
    if (status_name(static_cast<Status>(i)) == name)
      return static_cast<Status>(i);
  }
  return std::nullopt;
}

// What one evaluation of one setting produced. Times are per time step.
struct Measurement {
  Status status = Status::invalid;
  double median_ms = std::numeric_limits<double>::quiet_NaN();  // median time per step
  std::vector<double> times_ms;                                 // every repetition, per step
  double compile_ms = 0;
  double verify_ms = 0;
  double run_ms = 0;  // wall time spent timing (warm-up + repeats)
  int registers = 0;
  int shared_bytes = 0;
  double occupancy = 0;                                         // active warps / max warps per SM
  double error_l2 = std::numeric_limits<double>::quiet_NaN();   // ||out-ref||2 / ||ref||2
  double error_max = std::numeric_limits<double>::quiet_NaN();  // max relative error
  std::string message;                                          // why it failed, if it did

  [[nodiscard]] bool ok() const { return status == Status::ok; }
  // Fitness of docs/architecture.md, "The island GA": 1 / median time per step; 0 for failures.
  [[nodiscard]] double fitness() const { return ok() && median_ms > 0 ? 1.0 / median_ms : 0.0; }
  // The online model's target (OnlineModel::fit): the median ms when ok; +infinity for a
  // timeout (a kernel over the probe's slow factor, or a compile that ran too long: slower
  // than any success); -1 for any other failure, which says nothing about speed.
  [[nodiscard]] double model_ms() const {
    if (ok())
      return median_ms;
    return status == Status::timeout ? std::numeric_limits<double>::infinity() : -1.0;
  }
  // Total cost of this evaluation in seconds (what a replay clock advances by).
  [[nodiscard]] double cost_s() const { return (compile_ms + verify_ms + run_ms) * 1e-3; }
};

// The problem every evaluation of a run solves.
struct Problem {
  Stencil stencil;
  Grid grid;
  int steps = 48;    // T: steps of the verification run (a multiple of every tdeg)
  int warmup = 2;    // untimed runs of `steps` before timing
  int repeats = 10;  // timed runs; median per step reported
};

// Giga cell-updates per second for a time per step.
[[nodiscard]] inline double gcells_per_s(const Grid& g, double ms_per_step) {
  return ms_per_step > 0 ? static_cast<double>(g.cells()) / (ms_per_step * 1e-3) / 1e9 : 0.0;
}

// The copy roofline's time per step: every cell read once and written once (16 B of
// doubles) at the device's copy bandwidth (DeviceLimits::memory_bandwidth_gbs, measured by
// the CUDA worker and recorded in traces). The share of it a kernel reaches is
// copy_roofline_ms / its ms per step (above 1 with temporal blocking).
[[nodiscard]] inline double copy_roofline_ms(const Grid& g, double bandwidth_gbs) {
  return bandwidth_gbs > 0 ? static_cast<double>(g.cells()) * 16.0 / (bandwidth_gbs * 1e9) * 1e3
                           : 0.0;
}

// A setting handed to an evaluator's queue (Evaluator::submit), numbered 0, 1, 2, ... per
// evaluator.
using Ticket = std::int64_t;

// When a measurement was asked for, started on the GPU and done, on the evaluator's clock
// (clock_s(); NaN when unknown). A measurement that needed no GPU (a compile error, an
// unrecorded setting) has no start.
struct Timeline {
  double submit_s = std::numeric_limits<double>::quiet_NaN();
  double start_s = std::numeric_limits<double>::quiet_NaN();
  double finish_s = std::numeric_limits<double>::quiet_NaN();
};

// One finished measurement of the queue.
struct Completion {
  Ticket ticket = -1;
  Measurement measurement;
  Timeline timeline;
};

// One recorded measurement of a setting (what a replay dataset holds: the trace layer reads
// them, trace/replay_dataset.hpp).
struct RecordedMeasurement {
  Setting setting;
  Measurement measurement;
};

// What an evaluator that answers from a recording says about it: the recorded settings it
// answers (canonical, in recording order), a fingerprint of its answers (a run records it;
// resume refuses another) and where they came from.
struct Recording {
  std::vector<Setting> candidates;
  std::string fingerprint;
  std::string origin;
};

// The evaluators' interface, in two forms over one queue (docs/architecture.md, "The
// pipeline"):
// - asynchronous: submit() queues a setting and returns at once; next() returns the next
//   measurement to finish, whichever it is. An asynchronous evaluator (AsyncEvaluator:
//   the CUDA worker, replay) keeps compiling and measuring what is queued between calls, so
//   a search that keeps its queue full keeps the GPU busy;
// - synchronous: evaluate(batch) measures a batch and returns when all of it is done.
// A synchronous evaluator (a test's fake) implements evaluate() only; its queue is measured
// as one evaluate() batch when next() is called. An asynchronous one implements the queue,
// and evaluate() waits on it (completions of other tickets meanwhile are kept for next()).
class Evaluator {
 public:
  virtual ~Evaluator() = default;

  // Measures each setting of the batch; result i belongs to batch[i]. Never throws for a
  // bad kernel: failures come back as a status.
  virtual std::vector<Measurement> evaluate(std::span<const Setting> batch) = 0;

  // Queues `s`; its measurement comes back from next() with the returned ticket.
  virtual Ticket submit(const Setting& s);
  // The next finished measurement of a queued setting (blocking until one is done);
  // nullopt when nothing is queued.
  virtual std::optional<Completion> next();
  // Settings queued and not yet returned by next().
  [[nodiscard]] virtual int outstanding() const { return static_cast<int>(queued_.size()); }
  // Whether queued settings are measured while the caller does something else (false: only
  // inside next()).
  [[nodiscard]] virtual bool asynchronous() const { return false; }
  // NVRTC threads the queue compiles on (0: unknown); the pipeline keeps at least as many
  // settings queued.
  [[nodiscard]] virtual int compile_threads() const { return 0; }
  // The queue's simulated schedule as bytes (replay), so a resumed search continues it
  // exactly; empty for a real GPU. restore_queue() takes such bytes back and returns true
  // when the tickets it held are queued again (false: the caller submits them anew).
  [[nodiscard]] virtual std::vector<std::uint8_t> save_queue() const { return {}; }
  virtual bool restore_queue(const std::vector<std::uint8_t>& /*bytes*/) { return false; }

  // Limits of the device the measurements come from.
  [[nodiscard]] virtual DeviceLimits limits() const = 0;

  // Seconds since the evaluator started: the wall clock for real GPUs, the simulated
  // clock (sum of recorded costs) for replay. Time budgets are read off this clock.
  [[nodiscard]] virtual double clock_s() const = 0;

  // "cuda" or "replay".
  [[nodiscard]] virtual std::string name() const = 0;

  // How it measures, for the run's first line (e.g. the CPUs its compiles run on); "" if
  // nothing to say.
  [[nodiscard]] virtual std::string detail() const { return {}; }

  // The CUDA source of a setting's kernel, for /result and export; empty if unknown.
  [[nodiscard]] virtual std::string source(const Setting&) const { return {}; }

  // The recording it answers from, or nullptr (a GPU measures).
  [[nodiscard]] virtual const Recording* recording() const { return nullptr; }
  // Continues the clock of an interrupted run at `s` (a simulated clock; a wall clock
  // ignores it).
  virtual void resume_clock_s(double s) { (void)s; }

 private:
  std::vector<std::pair<Ticket, Setting>> queued_;  // the synchronous form's queue
  std::vector<Completion> measured_;                // measured, not yet returned (in order)
  Ticket next_ticket_ = 0;
};

// An evaluator whose queue runs on its own (the CUDA worker's compile pool and GPU, replay's
// simulated schedule): it implements enqueue() and wait_one(); evaluate() is submit() and
// next() until its own tickets are back, the others kept for later next() calls.
class AsyncEvaluator : public Evaluator {
 public:
  std::vector<Measurement> evaluate(std::span<const Setting> batch) final;
  Ticket submit(const Setting& s) final;
  std::optional<Completion> next() final;
  [[nodiscard]] int outstanding() const final { return outstanding_; }
  [[nodiscard]] bool asynchronous() const override { return true; }

 protected:
  // Queues `s` under `ticket` (numbered by submit()).
  virtual void enqueue(Ticket ticket, const Setting& s) = 0;
  // Blocks until a queued setting is done and returns it; called only while one is queued.
  virtual Completion wait_one() = 0;
  // The next ticket submit() hands out, for restore_queue() (tickets restored stay valid).
  [[nodiscard]] Ticket next_ticket() const { return next_ticket_; }
  void set_next_ticket(Ticket t, int outstanding) {
    next_ticket_ = t;
    outstanding_ = outstanding;
    kept_.clear();
  }

 private:
  std::vector<Completion> kept_;  // done while evaluate() waited for other tickets
  Ticket next_ticket_ = 0;
  int outstanding_ = 0;
};

}  // namespace isletune
