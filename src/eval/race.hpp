// Cutting a kernel's timing short while another kernel waits for the GPU: racing and settling.
//
// Racing a kernel's timing (evaluator.race_factor; docs/kernels.md, "Measurement of one
// setting", step 5): the CUDA worker stops timing a verified kernel after its first kRaceRuns
// timed runs when their median per step is over race_factor x the fastest kernel it has timed
// in the run (races_out) and another compiled kernel waits for the GPU. Such a kernel is far
// from the best, and its fitness needs no ten-run precision: the GA ranks it below every kernel
// within the factor either way. Timing takes 60-77 % of the GPU's time per kernel on the five
// 60-s user configs (docs/studies/2026-12-06-busy-against-482d225-same-h200.md), so a raced
// kernel frees most of it for the kernel waiting. With none waiting the GPU would idle
// instead, so the kernel is timed in full: racing every loser measured 25 % more settings in
// 60 s on an H100 but left the GPU idle where the compiles were the bound (lap3d19 89 -> 79 %
// busy; docs/studies/2026-12-06-racing-while-a-kernel-waits.md). Replay models both
// conditions from the recorded costs (kRacedRunShare; QueueModel decides when the kernel
// reaches the GPU).
//
// Settling (evaluator.settle_spread): a kernel that does not lose the race stops after its first
// kSettleRuns timed runs when they agree within settle_spread of their median (settles) and
// another compiled kernel waits; its median is theirs. GPU event times of a warm kernel agree
// closely: over 12 runs of 60-s user configs on an H100 (five stencils, 8,611 kernels timed in
// full) 81 % of the kernels settle within 1 %, the median of their first 5 runs is within 0.03 %
// of the ten runs' median at p50 and 0.5 % at p99, and no run's best kernel would be another
// (docs/studies/2026-12-07-settled-timing.md). Timing is 60-77 % of a
// kernel's GPU time, so where the GPU is the bound (star3d2r, box3d2r) settling frees about
// two fifths of it for the kernels that wait.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

namespace isletune {

// Timed runs before the race is decided (the median of 3 tolerates one outlier).
inline constexpr int kRaceRuns = 3;

// evaluator.race_factor's default. On an H100 (60-s user configs, 16 NVRTC threads, one run
// each) racing while another kernel waits measured 16-33 % more settings than no racing (lap3d19
// 916 -> 1,215 on the same machine, its GPU 77 -> 76 % busy), the bests within 0.4 %; replay to
// 5 % unchanged (docs/studies/2026-12-06-racing-while-a-kernel-waits.md).
inline constexpr double kDefaultRaceFactor = 1.5;

// The share of a recorded timing (2 warm-up launches, then 10 runs of K steps, K chosen so a run
// lasts at least 2 ms: the worker's defaults) a raced one takes, the warm-up and 3 runs, in
// steps: a 3-D 512^3 step of 0.5 ms, K = 4: (2 + 3 x 4) / (2 + 10 x 4) = 0.33; a 2-D 8192^2
// step of 0.07 ms, K = 29: (2 + 87) / (2 + 290) = 0.30.
inline constexpr double kRacedRunShare = 0.33;

// What the message of a raced kernel (the worker's and replay's) says, and how `isletune report`
// tells a raced kernel from one timed in full (replay keeps a raced kernel's recorded runs).
inline constexpr char kRacedMark[] = "(evaluator.race_factor)";
[[nodiscard]] inline bool says_raced(std::string_view message) {
  return message.find(kRacedMark) != std::string_view::npos;
}

// The median of the first n of `runs_ms` (n <= size, n > 0).
[[nodiscard]] inline double median_of_first(std::span<const double> runs_ms, std::size_t n) {
  std::vector<double> first(runs_ms.begin(), runs_ms.begin() + static_cast<std::ptrdiff_t>(n));
  std::sort(first.begin(), first.end());
  return n % 2 ? first[n / 2] : 0.5 * (first[n / 2 - 1] + first[n / 2]);
}

// Whether the runs timed so far (kRaceRuns of them) lose the race against `best_ms`, the
// fastest median per step timed before: their median over factor x best_ms. False when racing
// is off (factor <= 0), no kernel was timed before (best_ms <= 0) or fewer runs are given.
[[nodiscard]] inline bool races_out(std::span<const double> runs_ms, double best_ms,
                                    double factor) {
  if (factor <= 0 || best_ms <= 0 || static_cast<int>(runs_ms.size()) < kRaceRuns)
    return false;
  return median_of_first(runs_ms, kRaceRuns) > factor * best_ms;
}

// Timed runs before a kernel may settle.
inline constexpr int kSettleRuns = 5;

// evaluator.settle_spread's default: the first kSettleRuns runs within 1 % of their median.
inline constexpr double kDefaultSettleSpread = 0.01;

// The share of a recorded timing a settled one takes (kRacedRunShare's arithmetic with 5 runs):
// (2 + 5 x 4) / (2 + 10 x 4) = 0.52 in 3-D, (2 + 145) / (2 + 290) = 0.50 in 2-D.
inline constexpr double kSettledRunShare = 0.52;

// Whether the first kSettleRuns runs settle: (max - min) <= spread x their median. False when
// settling is off (spread <= 0), fewer runs are given, or a run is not a positive time.
[[nodiscard]] inline bool settles(std::span<const double> runs_ms, double spread) {
  if (spread <= 0 || static_cast<int>(runs_ms.size()) < kSettleRuns)
    return false;
  const auto first = runs_ms.first(kSettleRuns);
  const auto [lo, hi] = std::minmax_element(first.begin(), first.end());
  if (!(*lo > 0))
    return false;
  return *hi - *lo <= spread * median_of_first(runs_ms, kSettleRuns);
}

}  // namespace isletune
