// The CUDA worker's queue as a schedule on a simulated clock (replay, docs/architecture.md,
// "The pipeline"): each submitted kernel compiles on the first free of `threads` NVRTC
// threads, in submission order, and is then verified and timed on the one GPU as soon as its
// compile is done and the GPU is free, in the order the compiles end (ties: submission
// order). A measurement that needs no GPU (a compile error, an unrecorded setting) is done
// when its compile is. With threads 0 (recordings that do not say) each measurement's costs
// run one after another, nothing overlapping. A kernel that would lose the race (eval/race.hpp)
// takes its raced GPU time instead when, at the moment the race is decided (its start plus that
// time), another queued kernel's compile has ended: the worker's condition; one that does not
// race but would settle takes its settled GPU time by the same rule at its own moment. The schedule
// depends only on what is submitted when, so a replayed search is reproducible, and
// save()/restore() carry it across a resume. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "eval/evaluator.hpp"

namespace isletune {

class QueueModel {
 public:
  explicit QueueModel(int threads = 0);

  // Queues `ticket` at time `now`: `compile_s` on a compile thread, then `gpu_s` on the GPU
  // (0: none), or `raced_gpu_s` (>= 0: the kernel loses the race) if another kernel waits
  // for the GPU when the race is decided, else `settled_gpu_s` (>= 0: its first runs settle)
  // if another waits when they are timed.
  void add(Ticket ticket, double now, double compile_s, double gpu_s, double raced_gpu_s = -1,
           double settled_gpu_s = -1);
  struct Done {
    Ticket ticket = -1;
    Timeline timeline;
    bool raced = false;    // it took its raced GPU time
    bool settled = false;  // it took its settled GPU time
  };
  // The next measurement to be done; nullopt when none is queued.
  std::optional<Done> next();
  [[nodiscard]] bool empty() const { return jobs_.empty() && !running_; }
  [[nodiscard]] int threads() const { return threads_; }

  [[nodiscard]] std::vector<std::uint8_t> save() const;
  // Throws std::invalid_argument for bytes save() did not write.
  void restore(std::span<const std::uint8_t> bytes);

 private:
  struct Job {
    Ticket ticket = -1;
    double submit = 0, compiled = 0, gpu_s = 0;
    double start = 0, finish = 0;  // on the GPU (fixed: known when queued)
    bool fixed = false;            // its finish is known (no GPU, or threads 0)
    double raced_s = -1;           // GPU time if raced (< 0: it does not lose the race)
    bool raced = false;            // it took raced_s
    double settled_s = -1;         // GPU time if settled (< 0: its runs do not settle)
    bool settled = false;          // it took settled_s
  };
  int threads_ = 0;
  std::vector<double> free_at_;  // per compile thread
  double gpu_free_ = 0;
  double serial_free_ = 0;      // threads 0: when the last queued measurement ends
  std::vector<Job> jobs_;       // queued, not on the GPU
  std::optional<Job> running_;  // on the GPU (its finish is fixed)
};

}  // namespace isletune
