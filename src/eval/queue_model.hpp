// The CUDA worker's queue as a schedule on a simulated clock (replay, docs/architecture.md,
// "The pipeline"): each submitted kernel compiles on the first free of `threads` NVRTC
// threads, the highest priority first (ties: submission order), and is then verified and
// timed on the one GPU as soon as its compile is done and the GPU is free: of the kernels
// compiled by then the highest priority, ties in the order the compiles end (then submission
// order). A measurement that needs no GPU (a compile error, an unrecorded setting) is done
// when its compile is. A kernel submitted later with a higher priority passes those still
// waiting for a compile thread, never one whose compile has begun. With threads 0
// (recordings that do not say) each measurement's costs run one after another, nothing
// overlapping, in submission order. With one priority throughout it is the first-come
// schedule. The schedule depends only on what is submitted when, so a replayed search is
// reproducible, and save()/restore() carry it across a resume. Pure.
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

  // Queues `ticket` at time `now` (never earlier than the last add or measurement returned):
  // `compile_s` on a compile thread, then `gpu_s` on the GPU (0: none).
  void add(Ticket ticket, double now, double compile_s, double gpu_s, int priority = 0);
  // The next measurement to be done, with its timeline; nullopt when none is queued.
  std::optional<std::pair<Ticket, Timeline>> next();
  [[nodiscard]] bool empty() const { return jobs_.empty() && !running_; }
  [[nodiscard]] int threads() const { return threads_; }

  [[nodiscard]] std::vector<std::uint8_t> save() const;
  // Throws std::invalid_argument for bytes save() did not write.
  void restore(std::span<const std::uint8_t> bytes);

 private:
  struct Job {
    Ticket ticket = -1;
    double submit = 0, compiled = 0, gpu_s = 0;
    double start = 0, finish = 0;  // on the GPU (fixed: known when its compile is)
    bool fixed = false;            // needs no GPU, or threads 0: its finish is its own
    double compile_s = 0;
    double compile_start = 0;  // planned until `begun`
    int thread = -1;           // its compile thread (-1: none, or threads 0)
    int priority = 0;
    bool begun = true;  // its compile has begun (its times no longer change)
  };
  // Every job whose compile began by `now` keeps its thread; the others are planned again,
  // the highest priority first, on the threads as they come free from `now`.
  void plan(double now);
  // A job leaving the queue: its compile thread is busy until its compile ends.
  void release(Job& j);

  int threads_ = 0;
  std::vector<double> free_at_;  // per compile thread, after the compiles that have begun
  double gpu_free_ = 0;
  double serial_free_ = 0;      // threads 0: when the last queued measurement ends
  std::vector<Job> jobs_;       // queued, not on the GPU
  std::optional<Job> running_;  // on the GPU (its finish is fixed)
};

}  // namespace isletune
