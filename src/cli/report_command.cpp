// `isletune report DIR|FILE`: a run's (or a dataset's) best setting, its per-generation
// convergence table summed over the ranks, and its failures by status.
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "eval/evaluator.hpp"
#include "run/setup.hpp"
#include "trace/reader.hpp"

namespace isletune::cli {
namespace {

using run::make_evaluator;
using run::make_space;
using run::recorded_candidates;
using run::short_setting;

constexpr const char* kHelp =
    "usage: isletune report DIR|FILE\n"
    "\n"
    "Summarises a run directory (its trace.h5), a trace.h5 or a dataset: the best verified\n"
    "setting, one line per generation over all ranks (evaluations, best ms, GCells/s, mean\n"
    "MCR, longest wait), and the evaluations by status.\n";

// One generation over all ranks.
struct Row {
  int ranks = 0;
  int evaluations = 0;
  double best_ms = std::numeric_limits<double>::infinity();
  double mcr_sum = 0;
  double wait_max = 0;
  double wall_max = 0;
};

}  // namespace

int report_command(const Args& args) {
  const ParsedArgs parsed = parse_args("report", args, {}, {});
  if (parsed.help) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  expect_positional(parsed, 1, "isletune report DIR|FILE");
  const TraceReader reader(parsed.positional[0]);
  const RunInfo info = reader.run_info();
  const StencilInfo stencil = reader.stencil();
  std::printf("%s %s (schema %d), created %s by `%s`, seed %llu\n", reader.format().c_str(),
              reader.path().c_str(), reader.version(), info.created.c_str(), info.command.c_str(),
              static_cast<unsigned long long>(info.seed));
  std::printf("stencil %s (%d-D, order %d, %zu points)\n", stencil.name.c_str(), stencil.dims,
              stencil.order, stencil.offsets.size());
  for (const auto& env : reader.environment()) {
    std::printf("rank %d: %s on %s\n", env.rank, env.gpu_name.c_str(), env.host.c_str());
  }

  std::map<int, Row> rows;
  std::array<long long, kStatusCount> by_status{};
  long long measured = 0, cached = 0, migrants = 0;
  double best_ms = std::numeric_limits<double>::infinity();
  double naive_ms = std::nan("");  // the naive-equivalent setting's measurement, if any
  const Setting naive = naive_setting(stencil.dims);
  std::string best_key;
  int best_rank = -1;
  const auto ranks = reader.ranks();
  for (int rank : ranks) {
    for (const EvaluationRecord& e : reader.evaluations(rank)) {
      if (e.cached) {
        ++cached;
        continue;
      }
      if (e.setting == naive && e.measurement.ok())
        naive_ms = e.measurement.median_ms;
      if (e.migrant) {
        ++migrants;
        continue;
      }
      ++measured;
      ++by_status[static_cast<int>(e.measurement.status)];
      if (e.measurement.ok() && e.measurement.median_ms < best_ms) {
        best_ms = e.measurement.median_ms;
        best_key = canonical_key(e.setting);
        best_rank = rank;
      }
    }
    for (const GenerationRecord& g : reader.generations(rank)) {
      Row& r = rows[g.generation];
      ++r.ranks;
      r.evaluations += g.evaluations;
      if (!std::isnan(g.best_ms))
        r.best_ms = std::min(r.best_ms, g.best_ms);
      r.mcr_sum += g.mcr;
      r.wait_max = std::max(r.wait_max, g.wait_s);
      r.wall_max = std::max(r.wall_max, g.wall_s);
    }
  }

  const auto result = reader.result();
  // The grid is in the config; the cells per step give GCells/s.
  const double cells = result && result->median_ms > 0
                           ? result->gcells_per_s * result->median_ms * 1e6
                           : std::nan("");
  if (!rows.empty()) {
    std::printf("\n gen ranks  evals   best ms    GCells/s  mean MCR  max wait s  clock s\n");
    for (const auto& [g, r] : rows) {
      const double gc =
          std::isfinite(r.best_ms) && !std::isnan(cells) ? cells / (r.best_ms * 1e6) : std::nan("");
      std::printf("%4d %5d %6d %9.5f %11.2f %9.3f %11.4f %8.1f\n", g, r.ranks, r.evaluations,
                  std::isfinite(r.best_ms) ? r.best_ms : std::nan(""), gc, r.mcr_sum / r.ranks,
                  r.wait_max, r.wall_max);
    }
  }

  std::printf("\nevaluations: %lld measured, %lld cache hits, %lld migrants\n", measured, cached,
              migrants);
  for (int s = 0; s < kStatusCount; ++s) {
    std::printf("  %-14s %8lld\n", std::string(status_name(static_cast<Status>(s))).c_str(),
                by_status[s]);
  }

  if (result) {
    std::printf("\nresult: stop %s after %d generations, %lld evaluations, %.1f s\n",
                result->stop_reason.c_str(), result->generations,
                static_cast<long long>(result->evaluations), result->wall_s);
    if (!result->best_key.empty()) {
      std::printf("best: %.5f ms/step (%.2f GCells/s) on rank %d\n  %s\n  key: %s\n",
                  result->median_ms, result->gcells_per_s, result->best_rank,
                  short_setting(result->best).c_str(), result->best_key.c_str());
      // Against the naive kernel and the copy roofline (cells from GCells/s x ms).
      double bw = 0;
      for (const auto& env : reader.environment()) {
        if (env.limits)
          bw = env.limits->memory_bandwidth_gbs;
      }
      const double roof = bw > 0 ? cells * 16.0 / (bw * 1e9) * 1e3 : std::nan("");
      char naive_text[80] = "naive setting not measured";
      if (!std::isnan(naive_ms)) {
        std::snprintf(naive_text, sizeof naive_text, "%.2fx (naive %.5f ms)",
                      naive_ms / result->median_ms, naive_ms);
      }
      char roof_text[80] = "unknown";
      if (!std::isnan(roof)) {
        std::snprintf(roof_text, sizeof roof_text, "%.0f%% (copy %.0f GB/s)",
                      100 * roof / result->median_ms, bw);
      }
      std::printf("  vs naive: %s; copy roofline: %s\n", naive_text, roof_text);
    }
  } else if (!best_key.empty()) {
    std::printf("\nno result recorded (%s); best measured: %.5f ms/step on rank %d\n  %s\n",
                reader.is_dataset() ? "a dataset" : "interrupted or still running", best_ms,
                best_rank, best_key.c_str());
  } else {
    std::printf("\nno verified setting recorded\n");
  }
  return 0;
}

}  // namespace isletune::cli
