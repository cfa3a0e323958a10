// The per-rank run behind `isletune run` and `isletune resume` (docs/architecture.md: "Data flow",
// "The search loop", "Traces and run directories"): one island per MPI rank, errors agreed on
// collectively, the trace written through a checkpointing sink (one commit per generation), one
// progress line per generation on rank 0, the environment gathered, the winner broadcast into
// /result, and resume from the newest generation every rank completed. The CLI parses arguments
// into a request, calls run_rank / resume_rank on every rank and prints the outcome.
//
// Run-directory safety (trace/run_directory.hpp): rank 0 holds DIR/.lock for the run's
// life; `run` prepares the directory with prepare_new_run and marks it created last;
// `resume` checks every rank file before anything changes and, when it must start over,
// sets the earlier files aside instead of deleting them. A trace write error (full disk)
// stops every rank at the next stop vote and ends the run with exit code 3.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "run/checkpoint.hpp"
#include "trace/reader.hpp"
#include "trace/trace_types.hpp"

namespace isletune::run {

// What `isletune run` asks for.
struct RunRequest {
  std::string config_path;
  std::optional<std::string> backend;  // overrides evaluator.backend
  std::optional<std::string> output;   // overrides `output`
  std::optional<std::uint64_t> seed;   // overrides `seed`
  bool overwrite = false;              // replace the run already in the directory
  std::string command_line;            // recorded in the trace
  std::string usage_error;             // a parse error, reported collectively
};

// What `isletune resume` asks for.
struct ResumeRequest {
  std::string dir;  // the run directory (or its trace.h5)
  std::string command_line;
  std::string usage_error;
};

// Where rank 0's text goes (progress lines and notes; the agreed error sentence).
struct RunPrinter {
  std::function<void(const std::string&)> line;   // one line, no newline
  std::function<void(const std::string&)> error;  // "isletune run: <sentence>"
};

// How a run ended, for the CLI to print (rank 0 has `result`).
struct RunOutcome {
  int exit_code = 0;      // common/exit_codes.hpp
  bool reporter = false;  // rank 0: the rank that prints
  std::filesystem::path dir;
  std::optional<ResultInfo> result;  // rank 0, once a search ended
  bool found = false;                // result names a verified best setting
  double wall_s = 0;                 // real seconds since the command started
  std::string already_finished;      // resume of a finished run: its stop reason
};

// Collective (every rank): a fresh run of the request's configuration.
[[nodiscard]] RunOutcome run_rank(const RunRequest& request, const RunPrinter& printer);
// Collective (every rank): continues the run in request.dir.
[[nodiscard]] RunOutcome resume_rank(const ResumeRequest& request, const RunPrinter& printer);

// This rank's checkpoint in the trace of run directory `dir` (nullopt: it completed no
// generation). Throws InputError naming the rank file when it is missing or damaged.
[[nodiscard]] std::optional<RankCheckpoint> load_resume_state(const TraceReader& reader,
                                                              const std::filesystem::path& dir,
                                                              int rank);

}  // namespace isletune::run
