// `isletune run` and `isletune resume`: argument parsing and printing around the per-rank
// run library (src/run/rank_run.hpp), which does the distributed search.
#include <cstdio>
#include <string>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "common/error.hpp"
#include "common/text.hpp"
#include "run/rank_run.hpp"
#include "run/setup.hpp"
#include "trace/run_writer.hpp"

namespace isletune::cli {
namespace {

constexpr const char* kRunUsage =
    "isletune run CONFIG [--backend cuda|replay] [--out DIR] [--seed N] [--overwrite]";
constexpr const char* kRunHelp =
    "usage: isletune run CONFIG [--backend cuda|replay] [--out DIR] [--seed N] [--overwrite]\n"
    "\n"
    "Tunes the stencil of CONFIG with the strategy it names (island-ga by default). Launch it\n"
    "under mpirun or srun: every rank runs one island on its own GPU (cuda) or on the\n"
    "recorded dataset (replay); islands exchange their best individuals around a ring.\n"
    "\n"
    "  --backend cuda|replay  overrides evaluator.backend\n"
    "  --out DIR              run directory (overrides `output`); must not hold a run yet\n"
    "  --seed N               overrides `seed`\n"
    "  --overwrite            replace the run already in DIR\n"
    "\n"
    "Writes DIR/trace.h5 (rank 0) and DIR/rank-NNNN.h5 (one per rank), prints one line\n"
    "per generation and the best setting. SIGTERM/SIGINT (or SIGUSR1 through mpirun) stop\n"
    "every rank after the current generation; `isletune resume DIR` continues.\n"
    "ISLETUNE_REPLAY_DELAY_S=x sleeps x seconds per evaluated batch with replay\n"
    "(ISLETUNE_REPLAY_DELAY_RANK=r: on rank r only).\n";
constexpr const char* kResumeHelp =
    "usage: isletune resume DIR\n"
    "\n"
    "Continues the interrupted run in DIR (any strategy) from the last generation every rank\n"
    "completed (populations, caches, random state, budgets, in-flight migrants), with the\n"
    "same number of ranks as the original run. With replay it ends with the same answer as\n"
    "a run that was never interrupted. A finished run is left alone (exit 0).\n";

// Rank 0's text: progress lines to stdout (flushed per line), errors to stderr; escaped
// and bounded, since they quote datasets and traces (a replayed GPU's name).
run::RunPrinter console() {
  run::RunPrinter p;
  p.line = [](const std::string& line) {
    std::printf("%s\n", printable(line, 4096).c_str());
    std::fflush(stdout);
  };
  p.error = [](const std::string& sentence) {
    std::fprintf(stderr, "%s\n", printable(sentence, 1000).c_str());
  };
  return p;
}

std::string join_command(const std::string& name, const Args& args) {
  std::string out = "isletune " + name;
  for (const auto& a : args)
    out += " " + a;
  return out;
}

// The end of a run on rank 0: the best setting, where the trace is, how to continue.
int print_outcome(const run::RunOutcome& out) {
  if (out.reporter && !out.already_finished.empty()) {
    std::printf("isletune resume: %s already finished (stop reason %s); nothing to do.\n",
                out.dir.c_str(), out.already_finished.c_str());
    std::fflush(stdout);
  }
  if (out.result) {
    const ResultInfo& info = *out.result;
    if (out.found) {
      std::printf(
          "best: %.5f ms/step (%.2f GCells/s) on rank %d after %d generations, %lld "
          "evaluations, stop: %s (%.1f s search clock, %.3f s wall)\n"
          "  %s\n  key: %s\n",
          info.median_ms, info.gcells_per_s, info.best_rank, info.generations,
          static_cast<long long>(info.evaluations), info.stop_reason.c_str(), info.wall_s,
          out.wall_s, run::short_setting(info.best).c_str(), info.best_key.c_str());
    } else {
      std::printf("no setting was verified after %lld evaluations (stop: %s)\n",
                  static_cast<long long>(info.evaluations), info.stop_reason.c_str());
    }
    std::printf("trace: %s\n", (out.dir / RunTraceWriter::kTraceFile).c_str());
    if (info.stop_reason == "signal") {
      std::printf("stopped by a signal: continue with `isletune resume %s`\n", out.dir.c_str());
    }
    std::fflush(stdout);
  }
  return out.exit_code;
}

}  // namespace

int run_command(const Args& args) {
  run::RunRequest request;
  request.command_line = join_command("run", args);
  try {
    const ParsedArgs parsed =
        parse_args("run", args, {"--backend", "--out", "--seed"}, {"--overwrite"});
    if (parsed.help) {
      return print_help(kRunHelp);
    }
    expect_positional(parsed, 1, kRunUsage);
    request.config_path = parsed.positional[0];
    request.backend = parsed.option("--backend");
    request.output = parsed.option("--out");
    if (auto seed = parsed.option("--seed"))
      request.seed = parse_unsigned("--seed", *seed);
    request.overwrite = parsed.has("--overwrite");
  } catch (const InputError& e) {
    request.usage_error = e.what();  // reported collectively, once, by rank 0
  }
  return print_outcome(run::run_rank(request, console()));
}

int resume_command(const Args& args) {
  run::ResumeRequest request;
  request.command_line = join_command("resume", args);
  try {
    const ParsedArgs parsed = parse_args("resume", args, {}, {});
    if (parsed.help) {
      return print_help(kResumeHelp);
    }
    expect_positional(parsed, 1, "isletune resume DIR");
    request.dir = parsed.positional[0];
  } catch (const InputError& e) {
    request.usage_error = e.what();
  }
  return print_outcome(run::resume_rank(request, console()));
}

}  // namespace isletune::cli
