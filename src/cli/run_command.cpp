// `isletune run` and `isletune resume`: the distributed search. One island per MPI rank
// (one GPU per rank with the cuda backend), migration and the stop vote around the ring
// (src/ring), every evaluation into the rank's trace file, the run-level trace and one
// progress line per generation on rank 0, a checkpoint per generation for resume.
//
// Errors before the search (bad config, unusable output directory, missing dataset, no
// GPU) are agreed on collectively: every rank returns the same exit code and rank 0
// prints the sentence, so nothing hangs. An exception inside the search on one rank
// cannot be agreed on without stalling the others; that rank prints its sentence and
// ends the job with MPI_Abort (the last resort).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/setup.hpp"
#include "cli/signals.hpp"
#include "common/error.hpp"
#include "config/config.hpp"
#include "eval/replay/replay_evaluator.hpp"
#include "ga/search.hpp"
#include "ring/ring_migrator.hpp"
#include "ring/ring_stop_vote.hpp"
#include "ring/world.hpp"
#include "run/checkpoint.hpp"
#include "run/recording.hpp"
#include "trace/reader.hpp"
#include "trace/run_directory.hpp"
#include "trace/run_writer.hpp"

namespace isletune::cli {
namespace {

namespace fs = std::filesystem;

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
    "ISLETUNE_REPLAY_DELAY_S=x sleeps x seconds per evaluated batch with replay.\n";
constexpr const char* kResumeHelp =
    "usage: isletune resume DIR\n"
    "\n"
    "Continues the interrupted island-ga run in DIR from the last generation every rank\n"
    "completed (populations, caches, random state, budgets, in-flight migrants), with the\n"
    "same number of ranks as the original run. With replay it ends with the same answer as\n"
    "a run that was never interrupted. A finished run is left alone (exit 0).\n";

// Collects one rank's error across phases and agrees on it with every rank.
class Phases {
 public:
  explicit Phases(const ring::World& world) : world_(world) {}

  // Runs `f` unless an earlier phase failed here; remembers its error sentence.
  template <typename F>
  void attempt(F&& f) {
    if (!error_.empty())
      return;
    try {
      f();
    } catch (const InputError& e) {
      error_ = e.what();
    } catch (const TraceWriteError& e) {  // a full disk: a sentence, not an internal error
      error_ = e.what();
    } catch (const std::exception& e) {
      error_ = std::string("internal error: ") + e.what();
    }
  }

  // Collective: true when some rank failed; rank 0 then prints the first error.
  bool failed(const char* command) {
    const std::string agreed = world_.first_error(error_);
    if (agreed.empty())
      return false;
    if (world_.rank() == 0)
      std::fprintf(stderr, "isletune %s: %s\n", command, agreed.c_str());
    return true;
  }

 private:
  const ring::World& world_;
  std::string error_;
};

// The rank's TraceSink: forwards to its rank file, shows each generation to an observer
// (the progress line) and stores each generation's checkpoint in the same commit as its
// rows (one commit per generation; the trace's markers never let a checkpoint refer to
// rows that were lost).
class CheckpointingSink final : public TraceSink {
 public:
  CheckpointingSink(RankTraceWriter& writer, std::function<void(const GenerationRecord&)> observer,
                    std::string& write_error)
      : writer_(writer), observer_(std::move(observer)), write_error_(write_error) {}
  void evaluation(const EvaluationRecord& r) override { writer_.evaluation(r); }
  void generation(const GenerationRecord& r) override {
    writer_.generation(r);
    if (observer_)
      observer_(r);
  }
  void migration(const MigrationRecord& r) override { writer_.migration(r); }
  // A write error (full disk) is kept, not thrown: the search then stops every rank at
  // the next stop vote (see search()), and finish() reports it once.
  void flush() override {
    try {
      if (pending_) {
        writer_.write_checkpoint(pending_generation_, *pending_);
        pending_.reset();
      } else {
        writer_.flush();
      }
    } catch (const TraceWriteError& e) {
      if (write_error_.empty())
        write_error_ = e.what();
    }
  }
  void set_pending(int generation, std::vector<std::uint8_t> bytes) {
    pending_generation_ = generation;
    pending_ = std::move(bytes);
  }

 private:
  RankTraceWriter& writer_;
  std::function<void(const GenerationRecord&)> observer_;  // the progress line
  int pending_generation_ = 0;
  std::optional<std::vector<std::uint8_t>> pending_;
  std::string& write_error_;  // the first TraceWriteError of this rank
};

// Everything one rank builds before the search.
struct Session {
  Config config;
  fs::path dir;
  std::string command_line;
  std::optional<Stencil> stencil;
  std::unique_ptr<Evaluator> evaluator;
  EnvironmentInfo env;
  std::optional<Space> space;
  std::optional<std::vector<Setting>> candidates;
  SampledSet sampled;
  std::vector<Setting> global_alphabet;  // global-ga: the whole (recorded) space
  std::optional<RankTraceWriter> rank_writer;
  std::optional<RunTraceWriter> run_writer;  // rank 0
  std::optional<run::RankState> resume;
  std::optional<RunDirectoryLock> lock;  // rank 0: DIR/.lock for the run's life
  std::string write_error;               // the first trace write error of this rank
};

// Seconds on a monotonic clock (wait times, run wall time).
double now_s() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

// Environment of one rank as one string for gathering (fields separated by \x1f).
std::string pack(const EnvironmentInfo& e) {
  const char sep = '\x1f';
  return std::to_string(e.rank) + sep + e.host + sep + e.gpu_name + sep + e.gpu_uuid + sep +
         std::to_string(e.sm_count) + sep + std::to_string(e.sm_clock_mhz) + sep +
         std::to_string(e.memory_clock_mhz) + sep + e.driver_version + sep + e.cuda_version + sep +
         e.mpi_library;
}

EnvironmentInfo unpack(const std::string& s) {
  std::vector<std::string> f;
  std::size_t start = 0;
  for (;;) {
    const auto end = s.find('\x1f', start);
    f.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos)
      break;
    start = end + 1;
  }
  f.resize(10);
  EnvironmentInfo e;
  e.rank = std::atoi(f[0].c_str());
  e.host = f[1];
  e.gpu_name = f[2];
  e.gpu_uuid = f[3];
  e.sm_count = std::atoi(f[4].c_str());
  e.sm_clock_mhz = std::atoi(f[5].c_str());
  e.memory_clock_mhz = std::atoi(f[6].c_str());
  e.driver_version = f[7];
  e.cuda_version = f[8];
  e.mpi_library = f[9];
  return e;
}

// Rank 0's per-generation progress line (collective: every rank gathers its numbers).
class Progress {
 public:
  Progress(const ring::World& world, const Config& config, double start_s, std::int64_t evaluations)
      : world_(world), config_(config), start_s_(start_s), evaluations_(evaluations) {}

  // Every strategy records one GenerationRecord per generation on every rank, so the
  // gather below is matched on all ranks. `evaluations` counts measurements so far.
  void generation(const GenerationRecord& g) {
    evaluations_ += g.evaluations;
    const std::vector<double> mine = {static_cast<double>(g.generation),
                                      static_cast<double>(evaluations_), g.best_ms, g.mcr,
                                      g.wall_s};
    const std::vector<double> all = world_.gather(mine);
    if (world_.rank() != 0)
      return;
    double best_all = std::numeric_limits<double>::infinity();
    double evals = 0, min_evals_left = std::numeric_limits<double>::infinity(), elapsed = 0;
    std::string mcrs;
    for (int r = 0; r < world_.size(); ++r) {
      const double* v = &all[static_cast<std::size_t>(r) * 5];
      if (!std::isnan(v[2]))
        best_all = std::min(best_all, v[2]);
      evals += v[1];
      if (config_.ga.max_evaluations > 0) {
        min_evals_left =
            std::min(min_evals_left, static_cast<double>(config_.ga.max_evaluations) - v[1]);
      }
      elapsed = std::max(elapsed, v[4]);
      char buf[16];
      std::snprintf(buf, sizeof buf, "%s%.2f", r ? " " : "", v[3]);
      mcrs += buf;
    }
    std::string left;
    const GaSettings& ga = config_.ga;
    if (ga.max_generations > 0)
      left += " " + std::to_string(ga.max_generations - g.generation) + " gen";
    if (ga.max_evaluations > 0)
      left += " " + std::to_string(static_cast<long long>(min_evals_left)) + " evals";
    if (ga.time_budget_s > 0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, " %.0f s", ga.time_budget_s - elapsed);
      left += buf;
    }
    if (left.empty())
      left = " MCR stop only";
    std::vector<char> line(256 + mcrs.size() + left.size());
    if (std::isinf(best_all)) {
      std::snprintf(
          line.data(), line.size(),
          "gen %4d | evals %6.0f | best      none           | MCR %s | %.1f s (wall %.3f s) | "
          "left:%s\n",
          g.generation, evals, mcrs.c_str(), elapsed, now_s() - start_s_, left.c_str());
    } else {
      std::snprintf(
          line.data(), line.size(),
          "gen %4d | evals %6.0f | best %.5f ms %7.2f GCells/s | MCR %s | %.1f s (wall %.3f s) | "
          "left:%s\n",
          g.generation, evals, best_all, gcells_per_s(config_.grid, best_all), mcrs.c_str(),
          elapsed, now_s() - start_s_, left.c_str());
    }
    std::fputs(line.data(), stdout);
    std::fflush(stdout);
    // The same line for monitoring a live run (the trace itself is open for writing).
    write_status_file(config_.output, line.data());
  }

 private:
  const ring::World& world_;
  const Config& config_;
  double start_s_;
  std::int64_t evaluations_ = 0;
};

// Runs the configured strategy on this rank to the end; collective (ring, vote,
// progress). Returns the island's result and its last snapshot's clock.
SearchResult search(const ring::World& world, Session& s, double start_s, double& elapsed_s) {
  ring::RingMigrator ring_migrator(world.comm());
  ring::RingStopVote ring_vote(world.comm());
  run::RecordingMigrator migrator(ring_migrator);
  run::RecordingVote vote(ring_vote);
  Progress progress(world, s.config, start_s, s.resume ? s.resume->island.evaluations : 0);
  CheckpointingSink sink(
      *s.rank_writer,
      [&](const GenerationRecord& g) {
        elapsed_s = g.wall_s;
        progress.generation(g);
      },
      s.write_error);
  std::optional<IslandState> resume_island;
  std::optional<run::RankState> previous;
  if (s.resume) {
    migrator.restore(s.resume->sends, s.resume->last_sent);
    vote.restore(s.resume->votes, s.resume->last_wish, s.resume->island.generation);
    resume_island = s.resume->island;
    previous = s.resume;
    // The replay clock continues where it was, so every later time is the same sum, bit
    // for bit, as in a run that was never interrupted.
    if (auto* replay = dynamic_cast<ReplayEvaluator*>(s.evaluator.get())) {
      replay->set_clock_s(s.resume->island.elapsed_s);
    }
  }
  elapsed_s = s.resume ? s.resume->island.elapsed_s : 0.0;

  SearchHooks hooks;
  // A signal, or a trace that can no longer be written, stops the search at the next
  // collective stop vote.
  hooks.interrupted = [poll = termination_poll(), &s] { return poll() || !s.write_error.empty(); };
  hooks.wall_clock = now_s;
  hooks.on_snapshot = [&](const IslandState& st) {
    run::RankState current{st, migrator.sends(), migrator.last_sent(), vote.votes(),
                           vote.last_wish()};
    sink.set_pending(st.generation, run::encode_checkpoint({current, previous}));
    previous = std::move(current);
  };

  const Config& c = s.config;
  const auto seed = c.seed;
  const int rank = world.rank();
  SearchResult result;
  try {
    switch (c.strategy) {
      case Strategy::island_ga:
        result = run_island(c.ga, s.sampled, *s.evaluator, migrator, vote, sink, seed, rank, hooks,
                            resume_island);
        break;
      case Strategy::sampled_random:
        result = run_sampled_random(c.ga, s.sampled, *s.evaluator, vote, sink, seed, rank, hooks);
        break;
      case Strategy::global_ga:
        result =
            run_global_ga(c.ga, s.global_alphabet, *s.evaluator, vote, sink, seed, rank, hooks);
        break;
      case Strategy::random: {
        std::function<std::optional<Setting>(Rng&)> draw;
        if (s.candidates) {
          draw = [&](Rng& rng) -> std::optional<Setting> {
            return (*s.candidates)[rng.below(s.candidates->size())];
          };
        } else {
          draw = [&](Rng& rng) { return s.space->random_setting(rng); };
        }
        result = run_random(c.ga, draw, *s.evaluator, vote, sink, seed, rank, hooks);
        break;
      }
    }
  } catch (const std::exception& e) {
    // The others are inside collectives of the search: they cannot be told politely.
    std::fprintf(stderr, "isletune: rank %d: %s\n", rank, e.what());
    std::fflush(stderr);
    world.abort(1);
  }
  ring_vote.drain();
  ring_migrator.drain();
  return result;
}

// Collective end of a run: the best over all ranks into /result (rank 0) and the answer
// printed. Returns the exit code.
int finish(const ring::World& world, Session& s, const SearchResult& result, double elapsed_s,
           double start_s, const char* command) {
  // A rank that could not write its trace: every rank exits 3, rank 0 says why once; the
  // committed generations stay readable and resumable (no /result is written).
  if (const std::string error = world.first_error(s.write_error); !error.empty()) {
    if (world.rank() == 0) {
      std::fprintf(stderr,
                   "isletune %s: %s; stopped, the trace keeps every generation committed "
                   "before it: free space, then `isletune resume %s`.\n",
                   command, error.c_str(), s.dir.c_str());
    }
    return 3;
  }
  const double best = result.best ? result.best_measurement.median_ms : std::nan("");
  const std::vector<double> mine = {
      std::isnan(best) ? std::numeric_limits<double>::infinity() : best,
      static_cast<double>(result.evaluations), elapsed_s, static_cast<double>(result.generations)};
  const std::vector<double> all = world.gather(mine);
  std::string winner_text;
  if (world.rank() == 0) {
    int winner = -1;
    double best_ms = std::numeric_limits<double>::infinity();
    for (int r = 0; r < world.size(); ++r) {
      if (all[static_cast<std::size_t>(r) * 4] < best_ms) {
        best_ms = all[static_cast<std::size_t>(r) * 4];
        winner = r;
      }
    }
    winner_text = std::to_string(winner);
  }
  const int winner = std::atoi(world.broadcast(winner_text).c_str());
  std::string source;
  if (winner >= 0 && world.rank() == winner && result.best) {
    source = s.evaluator->source(*result.best);
  }
  if (winner > 0)
    source = world.broadcast(source, winner);
  // The winner's measurement travels as its key; rank 0 has the numbers gathered.
  std::string key = (world.rank() == winner && result.best) ? canonical_key(*result.best) : "";
  if (winner > 0)
    key = world.broadcast(key, winner);
  if (world.rank() != 0)
    return 0;

  ResultInfo info;
  double evaluations = 0, wall = 0;
  for (int r = 0; r < world.size(); ++r) {
    evaluations += all[static_cast<std::size_t>(r) * 4 + 1];
    wall = std::max(wall, all[static_cast<std::size_t>(r) * 4 + 2]);
  }
  info.stop_reason = stop_reason_name(result.reason);
  info.generations = result.generations;
  info.evaluations = static_cast<std::int64_t>(evaluations);
  info.wall_s = wall;
  if (winner >= 0) {
    info.best_rank = winner;
    info.best_key = key;
    info.best = setting_from_key(key).value_or(Setting{});
    info.median_ms = all[static_cast<std::size_t>(winner) * 4];
    info.gcells_per_s = gcells_per_s(s.config.grid, info.median_ms);
    info.source = source;
  }
  try {
    s.run_writer->write_result(info);
  } catch (const TraceWriteError& e) {
    std::fprintf(stderr,
                 "isletune %s: %s; the result was not recorded, the trace keeps every "
                 "generation: free space, then `isletune resume %s`.\n",
                 command, e.what(), s.dir.c_str());
    return 3;
  }
  if (winner >= 0) {
    std::printf(
        "best: %.5f ms/step (%.2f GCells/s) on rank %d after %d generations, %lld "
        "evaluations, stop: %s (%.1f s search clock, %.3f s wall)\n"
        "  %s\n  key: %s\n",
        info.median_ms, info.gcells_per_s, winner, info.generations,
        static_cast<long long>(info.evaluations), info.stop_reason.c_str(), wall, now_s() - start_s,
        short_setting(info.best).c_str(), key.c_str());
  } else {
    std::printf("no setting was verified after %lld evaluations (stop: %s)\n",
                static_cast<long long>(info.evaluations), info.stop_reason.c_str());
  }
  std::printf("trace: %s\n", (s.dir / RunTraceWriter::kTraceFile).c_str());
  if (result.reason == StopReason::signal) {
    std::printf("stopped by a signal: continue with `isletune resume %s`\n", s.dir.c_str());
  }
  std::fflush(stdout);
  return 0;
}

// Builds stencil, evaluator, space and candidates on every rank (collective errors).
void build(const ring::World& world, Session& s, Phases& phases) {
  phases.attempt([&] {
    s.stencil = resolve_stencil(s.config);
    s.env.rank = world.rank();
    s.env.host = world.host();
    s.env.mpi_library = ring::World::library_version();
    s.evaluator = make_evaluator(s.config, world.gpu(), s.env);
    s.space.emplace(make_space(s.config, *s.stencil, s.evaluator->limits()));
    s.candidates = recorded_candidates(*s.evaluator, *s.space);
  });
}

std::string join_command(const std::string& name, const Args& args) {
  std::string out = "isletune " + name;
  for (const auto& a : args)
    out += " " + a;
  return out;
}

// Builds everything, writes the trace headers and runs the search from generation 0.
// `s.config` and `s.dir` are set; rank 0 has prepared the directory. Collective.
int start_fresh(const ring::World& world, Phases& phases, Session& s, const char* command,
                double start_s) {
  build(world, s, phases);
  phases.attempt([&] {
    const Config& c = s.config;
    if (c.strategy == Strategy::island_ga || c.strategy == Strategy::sampled_random) {
      s.sampled = sample_settings(c, *s.stencil, *s.space, s.candidates);
    }
    if (c.strategy == Strategy::global_ga) {
      // No sampling: the recorded settings, or the whole space when it can be listed.
      if (s.candidates) {
        s.global_alphabet = *s.candidates;
      } else if (s.space->size(c.seed) <= 200000) {
        s.space->for_each_valid(-1, [&](const Setting& x) { s.global_alphabet.push_back(x); });
      } else {
        throw InputError(c.origin + ": strategy global-ga enumerates the space, which has " +
                         std::to_string(static_cast<long long>(s.space->size(c.seed))) +
                         " settings; narrow `space` to at most 200000.");
      }
    }
  });
  if (phases.failed(command))
    return 2;
  // Rank 0 first creates trace.h5; then every rank its own file.
  phases.attempt([&] {
    if (world.rank() != 0)
      return;
    RunInfo info;
    info.command = s.command_line;
    info.seed = s.config.seed;
    s.run_writer.emplace(RunTraceWriter::create_trace(s.dir, info));
    s.run_writer->write_config(to_yaml(s.config));
    s.run_writer->write_stencil(*s.stencil);
    s.run_writer->write_space(s.space->all_values());
    if (!s.sampled.empty())
      s.run_writer->write_sample(to_sample_data(s.sampled));
    s.run_writer->link_ranks(world.size());
  });
  if (phases.failed(command))
    return 2;
  phases.attempt([&] { s.rank_writer.emplace(RankTraceWriter::create(s.dir, world.rank())); });
  const auto envs = world.gather(pack(s.env));
  phases.attempt([&] {
    if (world.rank() != 0)
      return;
    for (const auto& e : envs)
      s.run_writer->write_environment(unpack(e));
    s.run_writer->flush();
    mark_run_created(s.dir);  // last: the directory now holds a complete new run
  });
  if (phases.failed(command))
    return 2;
  if (world.rank() == 0) {
    std::printf(
        "isletune %s: %s %dx%dx%d, strategy %s, backend %s, %d rank%s, %zu sampled "
        "settings, trace %s\n",
        command, s.stencil->name().c_str(), s.config.grid.nx, s.config.grid.ny, s.config.grid.nz,
        std::string(strategy_name(s.config.strategy)).c_str(), s.evaluator->name().c_str(),
        world.size(), world.size() == 1 ? "" : "s", s.sampled.size(), s.dir.c_str());
    std::fflush(stdout);
  }
  double elapsed_s = 0;
  const SearchResult result = search(world, s, start_s, elapsed_s);
  return finish(world, s, result, elapsed_s, start_s, command);
}

}  // namespace

int run_command(const Args& args) {
  ParsedArgs parsed;
  std::string usage_error;  // reported collectively, once, by rank 0
  try {
    parsed = parse_args("run", args, {"--backend", "--out", "--seed"}, {"--overwrite"});
  } catch (const InputError& e) {
    usage_error = e.what();
  }
  if (parsed.help) {
    std::fputs(kRunHelp, stdout);
    return 0;
  }
  const double start_s = now_s();
  ring::World world(nullptr, nullptr);
  Phases phases(world);
  Session s;
  s.command_line = join_command("run", args);
  phases.attempt([&] {
    if (!usage_error.empty())
      throw InputError(usage_error);
    expect_positional(parsed, 1, kRunUsage);
    s.config = load_config(parsed.positional[0]);
    ConfigOverrides o;
    o.backend = parsed.option("--backend");
    if (auto out = parsed.option("--out"))
      o.output = *out;
    if (auto seed = parsed.option("--seed"))
      o.seed = parse_unsigned("--seed", *seed);
    apply_overrides(s.config, o);
    s.dir = s.config.output;
    if (world.rank() == 0) {
      s.lock.emplace(RunDirectoryLock::acquire(s.dir));
      prepare_new_run(s.dir, parsed.has("--overwrite"),
                      {parsed.positional[0], s.config.evaluator.dataset});
    }
  });
  if (phases.failed("run"))
    return 2;
  return start_fresh(world, phases, s, "run", start_s);
}

int resume_command(const Args& args) {
  ParsedArgs parsed;
  std::string usage_error;  // reported collectively, once, by rank 0
  try {
    parsed = parse_args("resume", args, {}, {});
  } catch (const InputError& e) {
    usage_error = e.what();
  }
  if (parsed.help) {
    std::fputs(kResumeHelp, stdout);
    return 0;
  }
  const double start_s = now_s();
  ring::World world(nullptr, nullptr);
  Phases phases(world);
  Session s;
  s.command_line = join_command("resume", args);
  std::optional<run::RankCheckpoint> checkpoint;
  std::string finished_reason;
  bool creating = false;  // the directory never finished its creation
  phases.attempt([&] {
    if (!usage_error.empty())
      throw InputError(usage_error);
    expect_positional(parsed, 1, "isletune resume DIR");
    s.dir = parsed.positional[0];
    const fs::path file = fs::is_directory(s.dir) ? s.dir / RunTraceWriter::kTraceFile : s.dir;
    if (!fs::is_directory(s.dir))
      s.dir = s.dir.parent_path();
    const TraceReader reader(file);
    if (reader.is_dataset()) {
      throw InputError(file.string() + " is a dataset, not a run; nothing to resume.");
    }
    if (world.rank() == 0)
      s.lock.emplace(RunDirectoryLock::acquire(s.dir));
    // A directory whose creation a kill cut short holds no generation: start it over.
    creating = run_directory_state(s.dir) == RunDirState::creating;
    if (creating && reader.config_yaml().empty()) {
      throw InputError(s.dir.string() + " never finished its creation and holds no " +
                       "configuration; start it again with `isletune run CONFIG --out " +
                       s.dir.string() + "` (which accepts such a directory).");
    }
    s.config = parse_config(reader.config_yaml(), file.string(), s.dir);
    s.config.output = s.dir;
    if (creating)
      return;
    const auto ranks = reader.ranks();
    if (static_cast<int>(ranks.size()) != world.size()) {
      throw InputError(file.string() + " was written by " + std::to_string(ranks.size()) +
                       " ranks; resume it with the same number (mpirun -np " +
                       std::to_string(ranks.size()) + ").");
    }
    if (const auto result = reader.result(); result && result->stop_reason != "signal") {
      finished_reason = result->stop_reason;
      return;
    }
    if (s.config.strategy != Strategy::island_ga) {
      throw InputError(file.string() +
                       ": resume continues island-ga runs only; this run used "
                       "strategy " +
                       std::string(strategy_name(s.config.strategy)) + ".");
    }
    // A rank without a checkpoint completed no generation: the run then starts over. A
    // damaged rank file is an error that changes nothing.
    check_rank_file(s.dir, world.rank());
    if (const auto blob = reader.checkpoint(world.rank()))
      checkpoint = run::decode_checkpoint(blob->bytes);
    const auto sample = reader.sample();
    if (!sample)
      throw InputError(file.string() + " has no /sample to continue from.");
    s.sampled = to_sampled_set(*sample);
  });
  if (phases.failed("resume"))
    return 2;
  if (!world.first_error(finished_reason).empty()) {
    if (world.rank() == 0) {
      std::printf("isletune resume: %s already finished (stop reason %s); nothing to do.\n",
                  s.dir.c_str(), finished_reason.c_str());
    }
    return 0;
  }
  // Every rank continues from the newest generation all of them completed; when some
  // rank completed none, nothing can be continued and the run starts over (the same
  // configuration and seed: exactly what the interrupted run would have done).
  const int newest = checkpoint ? checkpoint->current.island.generation : -1;
  const int common = -static_cast<int>(world.max(-static_cast<double>(newest)));
  if (common < 0) {
    s.sampled = {};
    // Nothing is deleted: the earlier files move into a subdirectory first.
    phases.attempt([&] {
      if (world.rank() != 0)
        return;
      const fs::path kept = set_aside_run_files(s.dir);
      std::printf(
          "isletune resume: %s %s; earlier files kept in %s; starting over\n", s.dir.c_str(),
          creating ? "never finished its creation" : "completed no generation on every rank",
          kept.c_str());
      std::fflush(stdout);
    });
    if (phases.failed("resume"))
      return 2;
    return start_fresh(world, phases, s, "resume", start_s);
  }
  phases.attempt([&] {
    s.resume = checkpoint->at(common);
    if (!s.resume) {
      throw InputError(s.dir.string() + ": rank " + std::to_string(world.rank()) +
                       " has no checkpoint of generation " + std::to_string(common) + ".");
    }
    if (s.resume->island.stopped == StopReason::signal)
      s.resume->island.stopped = StopReason::none;
  });
  build(world, s, phases);
  if (phases.failed("resume"))
    return 2;
  phases.attempt([&] {
    s.rank_writer.emplace(RankTraceWriter::reopen(s.dir, world.rank(), common));
    if (world.rank() == 0)
      s.run_writer.emplace(RunTraceWriter::reopen_trace(s.dir));
  });
  if (phases.failed("resume"))
    return 2;
  if (world.rank() == 0) {
    std::printf("isletune resume: %s from generation %d on %d rank%s\n", s.dir.c_str(), common,
                world.size(), world.size() == 1 ? "" : "s");
    std::fflush(stdout);
  }
  double elapsed_s = 0;
  const SearchResult result = search(world, s, start_s, elapsed_s);
  return finish(world, s, result, elapsed_s, start_s, "resume");
}

}  // namespace isletune::cli
