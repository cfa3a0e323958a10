// Rank 0's progress line (see progress.hpp).
#include "run/progress.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>

#include <fmt/format.h>

#include "eval/evaluator.hpp"
#include "trace/run_directory.hpp"

namespace isletune::run {

std::string printf_text(const char* fmt, ...) {
  char buf[2048];
  va_list args;
  va_start(args, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return std::string(buf, static_cast<std::size_t>(std::clamp(n, 0, int{sizeof buf} - 1)));
}

double now_s() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

Progress::Progress(const ring::World& world, const Config& config, const RunPrinter& printer,
                   double start_s, std::int64_t evaluations, double copy_bandwidth_gbs, bool async)
    : world_(world),
      gather_(world.comm(), kFields),
      config_(config),
      printer_(printer),
      start_s_(start_s),
      evaluations_(evaluations),
      roof_ms_(copy_roofline_ms(config.grid, copy_bandwidth_gbs)) {
  if (!async || world.size() < 2)
    return;
  std::vector<int> peers;
  for (int r = 0; r < world.size(); ++r) {
    if ((world.rank() == 0) != (r == 0))
      peers.push_back(r);
  }
  mail_.emplace(world.comm(), kFields, std::move(peers), "the progress rows");
  newest_.assign(static_cast<std::size_t>(world.size()) * kFields, 0.0);
  for (int r = 0; r < world.size(); ++r)
    newest_[static_cast<std::size_t>(r) * kFields + 2] = std::nan("");
}

std::string Progress::budget_share(int generation, double min_evals_left, double elapsed) {
  const GaSettings& ga = config_.ga;
  double share = -1;
  if (ga.max_generations > 0)
    share = std::max(share, static_cast<double>(generation) / ga.max_generations);
  if (ga.max_evaluations > 0) {
    share = std::max(share, 1.0 - min_evals_left / static_cast<double>(ga.max_evaluations));
  }
  if (ga.time_budget_s > 0)
    share = std::max(share, elapsed / ga.time_budget_s);
  if (share < 0)
    return "";
  share = std::clamp(share, 0.0, 1.0);
  const double wall = now_s();
  if (!first_) {
    first_ = {wall, share};
    return fmt::format(" ({:.0f}% of budget)", 100 * share);
  }
  const double done = share - first_->second;
  if (done <= 0)
    return fmt::format(" ({:.0f}% of budget)", 100 * share);
  const auto eta =
      static_cast<long long>(std::lround((wall - first_->first) / done * (1.0 - share)));
  return eta >= 60
             ? fmt::format(" ({:.0f}% of budget, ETA {}m{:02d}s)", 100 * share, eta / 60, eta % 60)
             : fmt::format(" ({:.0f}% of budget, ETA {}s)", 100 * share, eta);
}

void Progress::generation(const GenerationRecord& g, double compile_s, const NaiveTime& naive) {
  evaluations_ += g.evaluations;
  const std::vector<double> row = {static_cast<double>(g.generation),
                                   static_cast<double>(evaluations_),
                                   g.best_ms,
                                   g.mcr,
                                   g.wall_s,
                                   compile_s};
  if (mail_) {
    if (world_.rank() != 0) {
      mail_->send(0, row);
      return;
    }
    keep(0, row);
    mail_->poll([this](int r, const std::vector<double>& v) { keep(r, v); });
    print(newest_, naive);
    return;
  }
  gather_.start(row);
  poll(naive);
}

void Progress::poll(const NaiveTime& naive) {
  if (mail_) {
    mail_->poll([this](int r, const std::vector<double>& v) { keep(r, v); });
    return;
  }
  for (const std::vector<double>& all : gather_.ready())
    print(all, naive);
}

void Progress::finish(const NaiveTime& naive) {
  if (mail_) {
    mail_->drain([this](int r, const std::vector<double>& v) { keep(r, v); });
    return;
  }
  for (const std::vector<double>& all : gather_.drain())
    print(all, naive);
}

void Progress::keep(int r, const std::vector<double>& v) {
  if (r < 0 || r >= world_.size() || static_cast<int>(v.size()) != kFields)
    return;
  double* row = &newest_[static_cast<std::size_t>(r) * kFields];
  if (r != 0 && v[0] < row[0])
    return;
  for (int k = 0; k < kFields; ++k) {
    if (std::isfinite(v[static_cast<std::size_t>(k)]) || k == 2)
      row[k] = v[static_cast<std::size_t>(k)];
  }
}

void Progress::print(const std::vector<double>& all, const NaiveTime& naive) {
  const int generation = static_cast<int>(all[0]);
  double best_all = std::numeric_limits<double>::infinity();
  double compile_all = 0;  // summed over the ranks
  double evals = 0, min_evals_left = std::numeric_limits<double>::infinity(), elapsed = 0;
  std::string mcrs;
  for (int r = 0; r < world_.size(); ++r) {
    const double* v = &all[static_cast<std::size_t>(r) * kFields];
    compile_all += v[5];
    if (!std::isnan(v[2]))
      best_all = std::min(best_all, v[2]);
    evals += v[1];
    if (config_.ga.max_evaluations > 0) {
      min_evals_left = std::min(
          min_evals_left,
          static_cast<double>(config_.ga.evaluations_left(static_cast<std::int64_t>(v[1]))));
    }
    elapsed = std::max(elapsed, v[4]);
    char buf[16];
    std::snprintf(buf, sizeof buf, "%s%.2f", r ? " " : "", v[3]);
    mcrs += buf;
  }
  std::string left;
  const GaSettings& ga = config_.ga;
  if (ga.max_generations > 0)
    left += " " + std::to_string(std::max(0, ga.max_generations - generation)) + " gen";
  if (ga.max_evaluations > 0)
    left += " " + std::to_string(static_cast<long long>(min_evals_left)) + " evals";
  if (ga.time_budget_s > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " %.0f s", std::max(0.0, ga.time_budget_s - elapsed));
    left += buf;
  }
  if (left.empty())
    left = " MCR stop only";
  left += budget_share(generation, min_evals_left, elapsed);
  std::string line;
  if (std::isinf(best_all)) {
    line = (printf_text(
        "gen %4d | evals %6.0f | best      none           | MCR %s | %.1f s (wall %.3f s) | "
        "compile %.1f s | left:%s",
        generation, evals, mcrs.c_str(), elapsed, now_s() - start_s_, compile_all, left.c_str()));
  } else {
    // Speed-up over the naive kernel and share of the copy roofline; a field that
    // cannot be computed says why instead of disappearing.
    std::string versus = std::isnan(naive.ms) ? " " + naive.missing
                                              : printf_text(" %.2fx naive", naive.ms / best_all);
    versus += roof_ms_ > 0 ? printf_text(", %.0f%% copy", 100 * roof_ms_ / best_all)
                           : std::string(", copy bandwidth unknown");
    line = (printf_text(
        "gen %4d | evals %6.0f | best %.5f ms %7.2f GCells/s%s | MCR %s | %.1f s (wall %.3f s) | "
        "compile %.1f s | left:%s",
        generation, evals, best_all, gcells_per_s(config_.grid, best_all),
        versus.empty() ? "" : (" (" + versus.substr(1) + ")").c_str(), mcrs.c_str(), elapsed,
        now_s() - start_s_, compile_all, left.c_str()));
  }
  if (printer_.line)
    printer_.line(line);
  // The same line for monitoring a live run (the trace itself is open for writing).
  write_status_file(config_.output, line + "\n");
}

}  // namespace isletune::run
