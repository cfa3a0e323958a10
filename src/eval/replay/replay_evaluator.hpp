// The replay evaluator (docs/architecture.md, "Evaluators"): answers from recorded measurements (an
// isletune dataset or trace) instead of a GPU, with a simulated clock, so searches are
// reproducible on a machine without a GPU.
//
// - Settings are canonicalised for the recorded stencil (kernel/registry.hpp) on load and on
//   lookup: a setting
//   returns the first measured record of its kernel (datasets recorded before canonical
//   settings existed may hold one kernel under several settings; cached and migrant rows are
//   not measurements). Unrecorded kernels come back `invalid` with a message and cost
//   nothing.
// - Its queue (Evaluator::submit / next) runs on a simulated clock as the CUDA worker runs
//   it (QueueModel, from the recorded costs): with the recording's compile threads known
//   (T > 0, /environment's `compile_threads`), kernels compile on T threads in submission
//   order and each is verified and timed on the GPU as soon as its compile is done and the
//   GPU is free, in the order the compiles end; otherwise (older datasets) the costs add up
//   one after another. clock_s() is the time of the last measurement returned. With racing
//   (set_race_factor) a kernel that loses the race costs the share of its timing the worker
//   would spend, and with settling (set_settle_spread) one whose first recorded runs settle.
//   A batch
//   (evaluate) is the same schedule submitted at once (batch_span_s). The reference run the
//   worker starts with is not recorded.
// - candidates() lists the recorded kernels by canonical setting, so the sampler draws only
//   settings with an answer; limits() are the recording device's.
// - It takes (setting, measurement) pairs: the trace layer reads a dataset or trace into them
//   (trace/replay_dataset.hpp, load_replay), so this layer imports nothing above it.
#pragma once

#include <algorithm>
#include <filesystem>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "eval/evaluator.hpp"
#include "eval/queue_model.hpp"
#include "kernel/family.hpp"

namespace isletune {

// Seconds a batch of measurements takes when its kernels compile on `threads` NVRTC threads in
// batch order and each then runs on the GPU (verify + run) as soon as its compile is done and
// the GPU is free, in the order the compiles end (the CUDA worker's); threads <= 0: the sum
// of every cost.
[[nodiscard]] double batch_span_s(std::span<const Measurement> batch, int threads);

// What every report, JSON document and export of a replayed run says about its times: they
// are the dataset's measurements, and its clock (time budgets, compile seconds) simulated.
inline std::string replayed_label(const std::string& dataset) {
  return "replayed from " + dataset + ", clock simulated";
}

class ReplayEvaluator final : public AsyncEvaluator {
 public:
  // Answers from the given measurements of a problem of this shape (whose canonical settings
  // key them; invalid ones skipped, the first of a kernel answers); `origin` names where they
  // came from (for messages). Throws InputError when none is usable.
  ReplayEvaluator(const ProblemShape& shape, std::span<const RecordedMeasurement> measured,
                  DeviceLimits limits, std::string origin);

  [[nodiscard]] DeviceLimits limits() const override { return limits_; }
  [[nodiscard]] double clock_s() const override { return clock_s_; }
  [[nodiscard]] std::string name() const override { return "replay"; }
  // "replayed from DATASET, clock simulated; recorded on GPU (copy GB/s, L2 MiB)".
  [[nodiscard]] std::string detail() const override;
  [[nodiscard]] std::string source(const Setting& s) const override;
  [[nodiscard]] const Recording* recording() const override { return &recording_; }
  // Resume continues the simulated clock of the interrupted run.
  void resume_clock_s(double s) override { clock_s_ = s; }

  // The recorded settings (invalid records excluded), in recording order.
  [[nodiscard]] const std::vector<Setting>& candidates() const { return recording_.candidates; }
  // Number of settings measured so far (each costs its recorded time).
  [[nodiscard]] long long measured() const { return measured_; }
  // NVRTC threads of the simulated batch compile (0: every cost in series). load_replay takes
  // the recording's.
  // Only while nothing is queued.
  void set_compile_threads(int threads) { queue_ = QueueModel(threads); }
  // Racing (eval/race.hpp) as the CUDA worker races: a recorded kernel whose first timed runs
  // lose against the fastest measurement returned so far (known when it is queued) costs
  // kRacedRunShare of its recorded timing if another kernel's compile has ended when the race
  // is decided (the QueueModel's schedule; never with compile threads 0, where nothing
  // waits); its answer keeps the recorded times and says it raced. 0: off (the default).
  void set_race_factor(double factor) { race_factor_ = factor; }
  // Settling (eval/race.hpp) as the CUDA worker settles: a recorded kernel that does not race
  // and whose first kSettleRuns recorded runs settle costs kSettledRunShare of its recorded
  // timing if another kernel's compile has ended when they are timed (QueueModel); its answer
  // is then theirs: those runs and their median. 0: off (the default).
  void set_settle_spread(double spread) { settle_spread_ = spread; }
  // Every recorded compile time times `scale`, in the simulated queue and in the answers (so
  // a run's compile seconds and its clock agree): a host that compiles faster or slower than
  // the recording's. 1: as recorded (the default).
  void set_compile_scale(double scale) { compile_scale_ = scale; }
  [[nodiscard]] int compile_threads() const override { return queue_.threads(); }
  [[nodiscard]] std::vector<std::uint8_t> save_queue() const override;
  bool restore_queue(const std::vector<std::uint8_t>& bytes) override;
  // Real seconds to sleep per kDelayEvery measurements: slows a replay run down to a GPU-like pace
  // (the Slurm time-limit test uses it); 0 = as fast as possible.
  void set_delay_s(double s) { delay_s_ = s; }
  [[nodiscard]] const std::string& origin() const { return recording_.origin; }
  // The recorded problem's shape (its canonical settings key the records).
  [[nodiscard]] const ProblemShape& shape() const { return shape_; }
  // 16 hex digits summing up every recorded setting and measurement this evaluator answers
  // with (FNV-1a): a run records it, and resume refuses a dataset whose answers changed.
  [[nodiscard]] const std::string& fingerprint() const { return recording_.fingerprint; }

 protected:
  void enqueue(Ticket ticket, const Setting& s) override;
  Completion wait_one() override;

 private:
  static constexpr int kDelayEvery = 10;  // about a generation's new measurements
  ProblemShape shape_;
  std::unordered_map<Setting, Measurement, SettingHash> table_;
  DeviceLimits limits_;
  Recording recording_;  // candidates, fingerprint, origin
  double clock_s_ = 0;
  double delay_s_ = 0;
  long long measured_ = 0;
  int since_delay_ = 0;
  QueueModel queue_;
  std::unordered_map<Ticket, Measurement> answers_;  // queued, by ticket
  double race_factor_ = 0;
  double settle_spread_ = 0;
  double compile_scale_ = 1;
  double best_ms_ = 0;  // the fastest median returned (racing's reference; 0: none yet)
  // Queued kernels that lose the race, with best_ms_ when they were queued: raced if another
  // kernel waits for the GPU when the race is decided (QueueModel).
  std::unordered_map<Ticket, double> losers_;
};

}  // namespace isletune
