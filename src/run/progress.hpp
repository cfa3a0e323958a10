// Rank 0's per-generation progress line of a run (and the live status file with the same
// line): the helpers it needs are shared with the rest of the per-rank run.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.hpp"
#include "ga/records.hpp"
#include "ring/mailbox.hpp"
#include "ring/world.hpp"
#include "run/rank_run.hpp"

namespace isletune::run {

// printf into a string (lines of the progress log: short, at most 2047 characters).
[[gnu::format(printf, 1, 2)]] std::string printf_text(const char* fmt, ...);

// Seconds on a monotonic clock (wait times, run wall time).
[[nodiscard]] double now_s();

// The naive-equivalent setting's time (NaN: not measured) and, then, why not.
struct NaiveTime {
  double ms = std::numeric_limits<double>::quiet_NaN();
  std::string missing;
};

// Rank 0's per-generation progress line (collective: every rank gathers its numbers, in
// the background: rank 0 prints a generation's line once every rank has ended it, and no
// rank waits for the line). Async islands (GaSettings::async_islands) are at different
// generations, so no gather matches them: every rank sends its numbers to rank 0 as messages
// instead (ring::Mailbox), and rank 0 prints a line after each of its own generations with
// the newest numbers it has of every rank.
class Progress {
 public:
  Progress(const ring::World& world, const Config& config, const RunPrinter& printer,
           double start_s, std::int64_t evaluations, double copy_bandwidth_gbs, bool async);

  // Every strategy records one GenerationRecord per generation on every rank, so the
  // gathers are matched on all ranks. `evaluations` counts measurements so far.
  // `compile_s`: this rank's compile time for the generation's new measurements.
  // `naive`: rank 0's time of the naive-equivalent setting (NaN: not measured, and why).
  void generation(const GenerationRecord& g, double compile_s, const NaiveTime& naive);

  // Rank 0: the lines of the generations whose gathers have completed since (e.g. after the
  // gather of generation 0, which every rank entered after starting its generation-0 gather,
  // so its line comes before generation 1 is measured, not after).
  void poll(const NaiveTime& naive);

  // After the search, on every rank: the lines of the generations still in flight.
  void finish(const NaiveTime& naive);

 private:
  static constexpr int kFields = 6;

  // " (37% of budget, ETA 2m10s)": the largest share used of the budgets that are set
  // (generations, the island with the fewest evaluations left, evaluator clock) and the
  // wall time to spend the rest at this session's pace since its first generation line (an
  // upper bound: the MCR stop may end the run earlier). Empty without a budget.
  std::string budget_share(int generation, double min_evals_left, double elapsed);

  // Rank `r`'s numbers of its newest generation (async islands; a message from another rank
  // carries nothing but numbers: an older generation's, come late, or a non-finite one is
  // not kept, but for the best, which is NaN until a kernel was measured).
  void keep(int r, const std::vector<double>& v);

  // Rank 0's line of one gathered generation (every rank's fields in rank order).
  void print(const std::vector<double>& all, const NaiveTime& naive);

  const ring::World& world_;
  ring::BackgroundGather gather_;
  std::optional<ring::Mailbox> mail_;  // async islands: rows to rank 0 as messages
  std::vector<double> newest_;         // rank 0, async islands: every rank's newest row
  const Config& config_;
  const RunPrinter& printer_;
  double start_s_;
  std::int64_t evaluations_ = 0;
  double roof_ms_ = 0;  // copy roofline time per step (0: bandwidth unknown)
  std::optional<std::pair<double, double>> first_;  // (wall, budget share) of the first line
};

}  // namespace isletune::run
