// The per-rank run (see rank_run.hpp). Errors before the search (bad config, unusable
// output directory, missing dataset, no GPU) are agreed on collectively: every rank
// returns the same exit code and rank 0 reports the sentence, so nothing hangs. An
// exception inside the search on one rank cannot be agreed on without stalling the
// others; that rank prints its sentence and ends the job with MPI_Abort (the last resort).
#include "run/rank_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/exit_codes.hpp"
#include "config/config.hpp"
#include "eval/cuda/compile_cpus.hpp"
#include "ga/search.hpp"
#include "ring/async_stop_vote.hpp"
#include "ring/bounded_wait.hpp"
#include "ring/mailbox.hpp"
#include "ring/ring_migrator.hpp"
#include "ring/ring_stop_vote.hpp"
#include "ring/world.hpp"
#include "run/checkpoint.hpp"
#include "run/progress.hpp"
#include "run/recording.hpp"
#include "run/setup.hpp"
#include "run/signals.hpp"
#include "space/values_taken.hpp"
#include "stencil/features.hpp"
#include "trace/reader.hpp"
#include "trace/run_directory.hpp"
#include "trace/run_writer.hpp"

namespace isletune::run {
namespace {

namespace fs = std::filesystem;

// An error text without the HDF5 call and source location an h5::Error carries ("HDF5
// call H5Dwrite(...) failed at src/trace/x.cpp:78: file write failed" -> "an HDF5 write
// failed: file write failed"): a user's message names no source file.
std::string without_call_text(const std::string& what) {
  static const std::regex call("HDF5 call .* failed at [^ ]+:[0-9]+(: )?");
  return std::regex_replace(what, call, "an HDF5 operation failed: ");
}

// Collects one rank's error across phases and agrees on it with every rank.
class Phases {
 public:
  Phases(const ring::World& world, const RunPrinter& printer) : world_(world), printer_(printer) {}

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
      error_ = std::string("internal error: ") + without_call_text(e.what());
    }
  }

  // Collective: true when some rank failed; rank 0 then prints the first error.
  bool failed(const char* command) {
    const std::string agreed = world_.first_error(error_);
    if (agreed.empty())
      return false;
    if (world_.rank() == 0 && printer_.error)
      printer_.error(std::string("isletune ") + command + ": " + agreed);
    return true;
  }

 private:
  const ring::World& world_;
  const RunPrinter& printer_;
  std::string error_;
};

// The rank's TraceSink: forwards to its rank file and stores each generation's
// checkpoint in the same commit as its rows (one commit per generation; the trace's
// markers never let a checkpoint refer to rows that were lost).
class CheckpointingSink final : public TraceSink {
 public:
  CheckpointingSink(RankTraceWriter& writer, std::string& write_error)
      : writer_(writer), write_error_(write_error) {}
  void evaluation(const EvaluationRecord& r) override {
    if (!r.migrant)
      compile_ms_ += r.measurement.compile_ms;
    if (naive_ && r.setting == *naive_ && r.measurement.ok()) {
      naive_ms_ = r.measurement.median_ms;
    } else if (naive_ && r.setting == *naive_ && !r.migrant && !r.cached) {
      naive_missing_ = "naive " + std::string(status_name(r.measurement.status));
    }
    writer_.evaluation(r);
  }
  // Watches for the measurement of `naive` (the progress line's speed-up over it);
  // `known_ms`: its time from before a resume (NaN: none).
  void watch_naive(const Setting& naive, double known_ms) {
    naive_ = naive;
    naive_ms_ = known_ms;
  }
  // Why the search will never measure the naive setting (e.g. "naive not in the dataset").
  void naive_unreachable(std::string why) { naive_missing_ = std::move(why); }
  // The naive-equivalent setting's time on this rank (NaN until measured or received) and,
  // while NaN, why (the progress line prints it in the field's place).
  [[nodiscard]] NaiveTime naive() const {
    return {naive_ms_, std::isnan(naive_ms_) ? naive_missing_ : std::string()};
  }
  // Compile time (s) of the measurements recorded since the last call, for the progress line.
  [[nodiscard]] double take_compile_s() {
    const double s = compile_ms_ * 1e-3;
    compile_ms_ = 0;
    return s;
  }
  void generation(const GenerationRecord& r) override { writer_.generation(r); }
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
  int pending_generation_ = 0;
  std::optional<std::vector<std::uint8_t>> pending_;
  std::string& write_error_;  // the first TraceWriteError of this rank
  double compile_ms_ = 0;     // of the rows recorded since take_compile_s
  std::optional<Setting> naive_;
  double naive_ms_ = std::numeric_limits<double>::quiet_NaN();
  std::string naive_missing_ = "naive not measured yet";
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
  std::optional<RankState> resume;
  // Resume: the resumed generation's state and those kept before it (the next checkpoints
  // keep them, as the interrupted run's would have).
  std::optional<RankCheckpoint> resume_kept;
  std::optional<RunDirectoryLock> lock;  // rank 0: DIR/.lock for the run's life
  std::string write_error;               // the first trace write error of this rank
  // Resume: the naive setting's time in this rank's committed rows (NaN: none).
  double resumed_naive_ms = std::numeric_limits<double>::quiet_NaN();
};

// Environment of one rank as one string for gathering (fields separated by \x1f).
std::string pack(const EnvironmentInfo& e) {
  const char sep = '\x1f';
  return std::to_string(e.rank) + sep + e.host + sep + e.gpu_name + sep + e.gpu_uuid + sep +
         std::to_string(e.sm_count) + sep + std::to_string(e.sm_clock_mhz) + sep +
         std::to_string(e.memory_clock_mhz) + sep + e.driver_version + sep + e.cuda_version + sep +
         e.mpi_library + sep + std::to_string(e.compile_threads) + sep + e.compile_cpus + sep +
         e.node + sep + std::to_string(e.node_rank) + sep + std::to_string(e.node_ranks) + sep +
         e.gpu_device;
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
  f.resize(16);
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
  e.compile_threads = std::atoi(f[10].c_str());
  e.compile_cpus = f[11];
  e.node = f[12];
  e.node_rank = std::atoi(f[13].c_str());
  e.node_ranks = std::atoi(f[14].c_str());
  e.gpu_device = f[15];
  return e;
}

// Runs the configured strategy on this rank to the end; collective (ring, vote,
// progress). Returns the island's result and its last snapshot's clock.
SearchResult search(const ring::World& world, Session& s, const RunPrinter& printer, double start_s,
                    double& elapsed_s) {
  const GaSettings& pace = s.config.ga;
  // One rank waits for no one: its vote needs no depth (which would only run it past a stop).
  const int depth = world.size() > 1 ? pace.vote_depth() : 1;
  // Async islands wait for no one: their vote is messages (ring/async_stop_vote.hpp).
  const bool async = pace.async_islands() && world.size() > 1;
  ring::RingMigrator ring_migrator(world.comm(), pace.ring_lag(), pace.migration_drift >= 0);
  std::optional<ring::RingStopVote> ring_vote;
  std::optional<ring::AsyncStopVote> async_vote;
  if (async)
    async_vote.emplace(world.comm());
  else
    ring_vote.emplace(world.comm(), depth);
  RecordingMigrator migrator(ring_migrator);
  RecordingVote vote(async ? static_cast<StopVote&>(*async_vote) : *ring_vote);
  Progress progress(world, s.config, printer, start_s, s.resume ? s.resume->search.evaluations : 0,
                    s.evaluator->limits().memory_bandwidth_gbs, async);
  CheckpointingSink sink(*s.rank_writer, s.write_error);
  const std::optional<Setting> naive =
      naive_seed(*s.space, s.candidates ? &*s.candidates : nullptr);
  if (naive) {
    sink.watch_naive(*naive, s.resumed_naive_ms);
  } else {
    sink.naive_unreachable(s.space->valid(naive_setting(s.space->dims()))
                               ? "naive not in the replay dataset"
                               : "naive outside the space");
  }
  std::optional<SearchState> resume_search;
  std::optional<RankCheckpoint> kept;  // the states the next checkpoint keeps
  if (s.resume) {
    migrator.restore(s.resume->sends, s.resume->last_sent, pace.ring_lag());
    vote.restore(s.resume->votes, s.resume->last_wish, s.resume->search.generation, depth);
    resume_search = s.resume->search;
    kept = s.resume_kept;
    // The replay clock continues where it was, so every later time is the same sum, bit
    // for bit, as in a run that was never interrupted.
    s.evaluator->resume_clock_s(s.resume->search.elapsed_s);
  }
  elapsed_s = s.resume ? s.resume->search.elapsed_s : 0.0;

  SearchHooks hooks;
  // A signal, or a trace that can no longer be written, stops the search at the next
  // collective stop vote.
  hooks.interrupted = [poll = termination_poll(), &s] { return poll() || !s.write_error.empty(); };
  hooks.wall_clock = now_s;
  hooks.on_generation = [&](const GenerationRecord& g) {
    elapsed_s = g.wall_s;
    progress.generation(g, sink.take_compile_s(), sink.naive());
  };
  hooks.on_prepared = [&] { progress.poll(sink.naive()); };
  hooks.on_snapshot = [&](const SearchState& st) {
    RankState current{st, migrator.sends(), migrator.last_sent(), vote.votes(), vote.last_wish()};
    kept = kept ? kept->then(std::move(current), kept_states(depth))
                : RankCheckpoint{std::move(current), {}};
    sink.set_pending(st.generation, encode_checkpoint(*kept));
  };

  const Config& c = s.config;
  const auto seed = c.seed;
  const int rank = world.rank();
  const GaSettings ga = c.ga.for_islands(world.size());
  SearchResult result;
  try {
    switch (c.strategy) {
      case Strategy::island_ga: {
        // Restarts spend an explicit budget; their epochs draw fresh samples.
        IslandExtras extras;
        extras.islands = world.size();
        // Async islands never wait for every island's generation 0: forwarding around the
        // ring brings it to every island as it comes.
        extras.gather_first = !ga.async_islands();
        if (ga.explicit_budget()) {
          extras.refill =
              refill_source(c, *s.stencil, *s.space, s.candidates, rank, s.sampled.size());
        }
        if (naive && rank == 0)
          extras.seeds.push_back(*naive);
        // The sampler's best predicted settings, this rank's share of them.
        std::vector<std::size_t> order(s.sampled.size());
        for (std::size_t i = 0; i < order.size(); ++i)
          order[i] = i;
        if (s.sampled.predicted_ms.size() == order.size()) {
          std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
            return s.sampled.predicted_ms[a] < s.sampled.predicted_ms[b];
          });
          for (int k = 0; k < ga.predicted_seeds; ++k) {
            const std::size_t at = static_cast<std::size_t>(rank * ga.predicted_seeds + k);
            if (at < order.size())
              extras.seeds.push_back(s.sampled.settings[order[at]]);
          }
        }
        if (ga.candidates > 1 || ga.model_picks > 0) {
          extras.prior = make_predictor(predictor_name(c.predictor), *s.stencil, c.grid,
                                        s.evaluator->limits());
        }
        result = run_island(ga, s.sampled, *s.evaluator, migrator, vote, sink, seed, rank, hooks,
                            resume_search, std::move(extras));
        break;
      }
      case Strategy::sampled_random:
        result = run_sampled_random(ga, s.sampled, *s.evaluator, vote, sink, seed, rank, hooks,
                                    resume_search);
        break;
      case Strategy::global_ga:
        result = run_global_ga(ga, s.global_alphabet, *s.evaluator, vote, sink, seed, rank, hooks,
                               resume_search);
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
        result = run_random(ga, draw, *s.evaluator, vote, sink, seed, rank, hooks, resume_search);
        break;
      }
    }
  } catch (const std::exception& e) {
    // The others are inside collectives of the search: they cannot be told politely.
    std::fprintf(stderr, "isletune: rank %d: %s\n", rank, e.what());
    std::fflush(stderr);
    world.abort(kExitInternal);
  }
  progress.finish(sink.naive());
  if (async_vote) {
    // Each island stopped on the wishes it knew; the run's reason is the one every island
    // agrees on once every wish has arrived (a generation limit is each island's own).
    if (const StopReason agreed = async_vote->drain(); agreed != StopReason::none)
      result.reason = agreed;
  } else {
    ring_vote->drain();
  }
  ring_migrator.drain();
  return result;
}

// Collective end of a run: the best over all ranks into /result (rank 0), returned for
// the CLI to print.
RunOutcome finish(const ring::World& world, Session& s, const RunPrinter& printer,
                  const SearchResult& result, double elapsed_s, double start_s,
                  const char* command) {
  RunOutcome outcome;
  outcome.dir = s.dir;
  outcome.reporter = world.rank() == 0;
  // A trace that could not be written ends the run with exit kExitTrace (3) and one sentence that
  // says what the trace still holds and how to go on.
  const auto write_failed = [&](const std::string& error, const char* kept, bool say) {
    if (say && printer.error) {
      printer.error(printf_text("isletune %s: %s; %s: free space, then `isletune resume %s`.",
                                command, error.c_str(), kept, s.dir.c_str()));
    }
    outcome.exit_code = kExitTrace;
    return outcome;
  };
  // A rank that could not write its trace: every rank exits 3, rank 0 says why once; the
  // committed generations stay readable and resumable (no /result is written).
  if (const std::string error = world.first_error(s.write_error); !error.empty()) {
    return write_failed(error, "stopped, the trace keeps every generation committed before it",
                        world.rank() == 0);
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
    return outcome;

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
    return write_failed(e.what(), "the result was not recorded, the trace keeps every generation",
                        true);
  }
  outcome.result = info;
  outcome.found = winner >= 0;
  outcome.wall_s = now_s() - start_s;
  return outcome;
}

// The outcome of a run that failed before its search (the error is already reported).
RunOutcome failure(const ring::World& world, const Session& s) {
  RunOutcome out;
  out.reporter = world.rank() == 0;
  out.exit_code = kExitInput;
  out.dir = s.dir;
  return out;
}

// Builds stencil, evaluator, space and candidates on every rank (collective errors).
// `resuming`: a resumed run keeps its backend, so a cuda run that cannot start here is
// told where it can be resumed (not to switch to replay, which `resume` does not offer).
void build(const ring::World& world, Session& s, Phases& phases, bool resuming = false) {
  // Collective over the node's ranks, so before anything that may throw: do the CPU
  // bindings they inherited overlap (then each compiles on its own slice of the node)?
  const bool bindings_overlap = cuda::any_overlap(world.gather_node(cuda::current_cpus()));
  phases.attempt([&] {
    s.stencil = resolve_stencil(s.config);
    s.env.rank = world.rank();
    s.env.host = world.host();
    s.env.node = world.node();
    s.env.node_rank = world.local_rank();
    s.env.node_ranks = world.local_size();
    s.env.gpu_device = world.gpu_device();
    s.env.mpi_library = ring::World::library_version();
    try {
      s.evaluator = make_evaluator(s.config, world.gpu(), s.env, world.local_rank(),
                                   world.local_size(), bindings_overlap);
    } catch (const InputError& e) {
      if (!resuming || s.config.evaluator.backend != Backend::cuda)
        throw;
      std::string why = e.what();
      for (const char* advice :
           {"; use --backend replay on this machine", "; use --backend replay."}) {
        if (const auto at = why.find(advice); at != std::string::npos)
          why.erase(at);
      }
      if (why.ends_with("."))
        why.pop_back();
      throw InputError(why + "; " + s.dir.string() + " was run with the cuda backend and " +
                       "resumes only with it: resume it where isletune has CUDA and a GPU.");
    }
    s.space.emplace(make_space(s.config, *s.stencil, s.evaluator->limits()));
    s.candidates = recorded_candidates(*s.evaluator, *s.space);
  });
}

// global-ga's alphabet (no sampling): the recorded settings, or the whole space when it
// can be listed.
void list_global_alphabet(Session& s) {
  const Config& c = s.config;
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

// The Table-2 features of the stencil as /stencil/features rows.
std::vector<StencilFeature> feature_rows(const Stencil& stencil) {
  const StencilFeatures f = stencil_features(stencil);
  const std::vector<std::string> names = f.names();
  const std::vector<double> values = f.as_vector();
  std::vector<StencilFeature> rows;
  for (std::size_t i = 0; i < names.size() && i < values.size(); ++i)
    rows.push_back({names[i], values[i]});
  return rows;
}

// Builds everything, writes the trace headers and runs the search from generation 0.
// `s.config` and `s.dir` are set; rank 0 has prepared the directory. Collective.
RunOutcome start_fresh(const ring::World& world, Phases& phases, Session& s,
                       const RunPrinter& printer, const char* command, double start_s) {
  build(world, s, phases);
  phases.attempt([&] {
    const Config& c = s.config;
    if (c.strategy == Strategy::island_ga || c.strategy == Strategy::sampled_random) {
      s.sampled = sample_settings(c, *s.stencil, *s.space, s.candidates);
    }
    if (c.strategy == Strategy::global_ga)
      list_global_alphabet(s);
  });
  if (phases.failed(command))
    return failure(world, s);
  // A write error while the run's files are created (a full disk): nothing was committed,
  // so the sentence says to start the run again once there is space.
  const auto creating = [&](auto&& create) {
    return [&, create] {
      try {
        create();
      } catch (const TraceWriteError& e) {
        std::string reason = e.what();
        if (reason.ends_with("."))
          reason.pop_back();
        const bool full = reason.find("No space left") != std::string::npos ||
                          reason.find("quota") != std::string::npos;
        throw InputError(
            reason + "; the run was not created: " + (full ? "free space" : "fix that") +
            ", then start it again with " + "`isletune run CONFIG --out " + s.dir.string() + "`.");
      }
    };
  };
  // Rank 0 first creates trace.h5; then every rank its own file, stamped with trace.h5's
  // creation time so a reader can tell a rank file of another run.
  const std::string created = world.broadcast(world.rank() == 0 ? utc_now_iso() : std::string());
  phases.attempt(creating([&] {
    if (world.rank() != 0)
      return;
    RunInfo info;
    info.created = created;
    info.command = s.command_line;
    info.seed = s.config.seed;
    s.run_writer.emplace(RunTraceWriter::create_trace(s.dir, info));
    s.run_writer->write_config(to_yaml(s.config));
    if (const Recording* recorded = s.evaluator->recording())
      s.run_writer->write_replay_fingerprint(recorded->fingerprint);
    s.run_writer->write_stencil(*s.stencil, feature_rows(*s.stencil));
    s.run_writer->write_space(values_taken(*s.stencil, *s.space));
    if (!s.sampled.empty())
      s.run_writer->write_sample(to_sample_data(s.sampled));
    s.run_writer->link_ranks(world.size());
  }));
  if (phases.failed(command))
    return failure(world, s);
  phases.attempt(creating(
      [&] { s.rank_writer.emplace(RankTraceWriter::create(s.dir, world.rank(), created)); }));
  const auto envs = world.gather(pack(s.env));
  phases.attempt(creating([&] {
    if (world.rank() != 0)
      return;
    for (const auto& e : envs) {
      EnvironmentInfo env = unpack(e);
      env.limits = s.evaluator->limits();  // rank 0's (the copy bandwidth for `report`)
      s.run_writer->write_environment(env);
    }
    s.run_writer->flush();
    mark_run_created(s.dir);  // last: the directory now holds a complete new run
  }));
  if (phases.failed(command))
    return failure(world, s);
  if (world.rank() == 0 && printer.line) {
    // How the islands wait for each other (several ranks): the deterministic ring or drift.
    const GaSettings& ga = s.config.ga;
    const std::string ring =
        world.size() == 1 ? ""
        : ga.fills_waits()
            ? printf_text(" (drift %s, fill %d)", ga.drift_text().c_str(), ga.fill_picks)
        : ga.migration_drift >= 0 ? printf_text(" (drift %s)", ga.drift_text().c_str())
                                  : printf_text(" (lag %d)", ga.migration_lag);
    printer.line(printf_text(
        "isletune %s: %s %dx%dx%d, strategy %s, backend %s, %d rank%s%s, %zu sampled "
        "settings, trace %s%s%s",
        command, s.stencil->name().c_str(), s.config.grid.nx, s.config.grid.ny, s.config.grid.nz,
        std::string(strategy_name(s.config.strategy)).c_str(), s.evaluator->name().c_str(),
        world.size(), world.size() == 1 ? "" : "s", ring.c_str(), s.sampled.size(), s.dir.c_str(),
        s.evaluator->detail().empty() ? "" : "; rank 0: ", s.evaluator->detail().c_str()));
  }
  double elapsed_s = 0;
  const SearchResult result = search(world, s, printer, start_s, elapsed_s);
  return finish(world, s, printer, result, elapsed_s, start_s, command);
}

}  // namespace

std::optional<RankCheckpoint> load_resume_state(const TraceReader& reader, const fs::path& dir,
                                                int rank) {
  check_rank_file(dir, rank);  // a damaged rank file is an error that changes nothing
  // Resume copies the committed rows into a fresh rank file: a row the reader would refuse
  // (a status outside 0-6, a damaged table) is an error now, not a damaged resumed run.
  try {
    static_cast<void>(reader.evaluations(rank));
    static_cast<void>(reader.generations(rank));
    static_cast<void>(reader.migrations(rank));
  } catch (const InputError& e) {
    std::string why = e.what();
    if (why.ends_with("."))
      why.pop_back();
    throw InputError(why + "; rank " + std::to_string(rank) +
                     " cannot be resumed (nothing was changed).");
  }
  const auto blob = reader.checkpoint(rank);
  if (!blob)
    return std::nullopt;
  try {
    return decode_checkpoint(blob->bytes);
  } catch (const InputError&) {
    throw InputError((dir / RankTraceWriter::file_name(rank)).string() +
                     ": the checkpoint of rank " + std::to_string(rank) +
                     " is damaged or was written by another isletune version; the run cannot be "
                     "resumed (nothing was changed).");
  }
}

RunOutcome run_rank(const RunRequest& request, const RunPrinter& printer) {
  const double start_s = now_s();
  ring::World world(nullptr, nullptr);
  Phases phases(world, printer);
  Session s;
  s.command_line = request.command_line;
  phases.attempt([&] {
    if (!request.usage_error.empty())
      throw InputError(request.usage_error);
    static_cast<void>(ring::rank_timeout_s());  // a bad ISLETUNE_RANK_TIMEOUT_S is refused
    s.config = load_config(request.config_path);
    ConfigOverrides o;
    o.backend = request.backend;
    if (request.output)
      o.output = *request.output;
    o.seed = request.seed;
    apply_overrides(s.config, o);
    s.dir = s.config.output;
    ring::set_wait_advice([dir = s.dir] { return next_step_advice(dir); });  // issue 50
    if (world.rank() == 0) {
      s.lock.emplace(RunDirectoryLock::acquire(s.dir));
      std::vector<fs::path> inputs{request.config_path};
      if (s.config.evaluator.backend == Backend::replay) {
        for (const auto& f : trace_input_files(s.config.evaluator.dataset))
          inputs.push_back(f);
      }
      prepare_new_run(s.dir, request.overwrite, inputs);
    }
  });
  if (phases.failed("run"))
    return failure(world, s);
  return start_fresh(world, phases, s, printer, "run", start_s);
}

RunOutcome resume_rank(const ResumeRequest& request, const RunPrinter& printer) {
  const double start_s = now_s();
  ring::World world(nullptr, nullptr);
  Phases phases(world, printer);
  Session s;
  s.command_line = request.command_line;
  std::optional<RankCheckpoint> checkpoint;
  std::string recorded_fingerprint;  // of the replay dataset the run started with
  std::string finished_reason;
  bool creating = false;  // the directory never finished its creation
  phases.attempt([&] {
    if (!request.usage_error.empty())
      throw InputError(request.usage_error);
    static_cast<void>(ring::rank_timeout_s());  // a bad ISLETUNE_RANK_TIMEOUT_S is refused
    s.dir = request.dir;
    const fs::path file = fs::is_directory(s.dir) ? s.dir / RunTraceWriter::kTraceFile : s.dir;
    if (!fs::is_directory(s.dir))
      s.dir = s.dir.parent_path();
    ring::set_wait_advice([dir = s.dir] { return next_step_advice(dir); });  // issue 50
    // A trace.h5 that a full disk or a kill left half-written, in a directory that never
    // finished its creation, holds nothing to continue: `run` starts it again.
    const auto half_created = [&](const std::string& why) {
      return InputError(s.dir.string() + " never finished its creation (" + why +
                        "); start it again with `isletune run CONFIG --out " + s.dir.string() +
                        "`, which accepts such a directory.");
    };
    std::optional<TraceReader> opened;
    try {
      opened.emplace(file);
    } catch (const InputError& e) {
      if (fs::is_directory(s.dir) && run_directory_state(s.dir) == RunDirState::creating)
        throw half_created(fs::exists(file) ? "its trace.h5 is incomplete" : "it has no trace.h5");
      throw;
    }
    const TraceReader& reader = *opened;
    if (reader.is_dataset()) {
      throw InputError(file.string() + " is a dataset, not a run; nothing to resume.");
    }
    if (world.rank() == 0)
      s.lock.emplace(RunDirectoryLock::acquire(s.dir));
    // A directory whose creation a kill cut short holds no generation: start it over.
    creating = run_directory_state(s.dir) == RunDirState::creating;
    if (creating && reader.config_yaml().empty())
      throw half_created("it holds no configuration");
    s.config = parse_config(reader.config_yaml(), file.string() + ":/config", s.dir);
    s.config.output = s.dir;
    recorded_fingerprint = reader.replay_fingerprint();
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
    // A rank without a checkpoint completed no generation: the run then starts over. A
    // damaged rank file is an error that changes nothing.
    checkpoint = load_resume_state(reader, s.dir, world.rank());
    // Generation 0 measured the naive setting before the interruption (progress line).
    const Setting naive = naive_setting(reader.stencil().dims);
    for (const EvaluationRecord& e : reader.evaluations(world.rank())) {
      if (e.setting == naive && e.measurement.ok())
        s.resumed_naive_ms = e.measurement.median_ms;
    }
    if (s.config.strategy == Strategy::island_ga || s.config.strategy == Strategy::sampled_random) {
      const auto sample = reader.sample();
      if (!sample)
        throw InputError(file.string() + " has no /sample to continue from.");
      s.sampled = to_sampled_set(*sample);
    }
  });
  if (phases.failed("resume"))
    return failure(world, s);
  if (!world.first_error(finished_reason).empty()) {
    RunOutcome out;
    out.reporter = world.rank() == 0;
    out.dir = s.dir;
    out.already_finished = finished_reason;
    return out;
  }
  // Every rank continues from the newest generation all of them completed; when some
  // rank completed none, nothing can be continued and the run starts over (the same
  // configuration and seed: exactly what the interrupted run would have done).
  const int newest = checkpoint ? checkpoint->current.search.generation : -1;
  const int common = -static_cast<int>(world.max(-static_cast<double>(newest)));
  // Async islands never were at one generation together: each continues from its own newest.
  const int from = common >= 0 && s.config.ga.async_islands() && world.size() > 1 ? newest : common;
  if (common < 0) {
    s.sampled = {};
    // Nothing is deleted: the earlier files move into a subdirectory first.
    phases.attempt([&] {
      if (world.rank() != 0)
        return;
      check_room_to_start(s.dir);  // a full disk: the run stays as it was
      const fs::path kept = set_aside_run_files(s.dir);
      if (printer.line) {
        printer.line(
            "isletune resume: " + s.dir.string() +
            (creating ? " never finished its creation" : " completed no generation on every rank") +
            "; earlier files kept in " + kept.string() + "; starting over");
      }
    });
    if (phases.failed("resume"))
      return failure(world, s);
    return start_fresh(world, phases, s, printer, "resume", start_s);
  }
  phases.attempt([&] {
    s.resume = checkpoint->at(from);
    if (!s.resume) {
      throw InputError(s.dir.string() + ": rank " + std::to_string(world.rank()) +
                       " has no checkpoint of generation " + std::to_string(from) + ".");
    }
    if (s.resume->search.stopped == StopReason::signal)
      s.resume->search.stopped = StopReason::none;
    RankCheckpoint kept{*s.resume, {}};
    for (const RankState& older : checkpoint->earlier) {
      if (older.search.generation < from)
        kept.earlier.push_back(older);
    }
    s.resume_kept = std::move(kept);
  });
  build(world, s, phases, true);
  phases.attempt([&] {
    // The replay answers must be those the run started with, or the resumed run mixes
    // the times of two datasets.
    const Recording* replay = s.evaluator->recording();
    if (replay != nullptr && !recorded_fingerprint.empty() &&
        replay->fingerprint != recorded_fingerprint) {
      throw InputError(replay->origin + " is not the dataset " + s.dir.string() +
                       " was started with: its measurements changed (fingerprint " +
                       replay->fingerprint + ", the run recorded " + recorded_fingerprint +
                       "); restore that dataset to resume, or start a new run.");
    }
    if (s.config.strategy == Strategy::global_ga)
      list_global_alphabet(s);
  });
  if (phases.failed("resume"))
    return failure(world, s);
  phases.attempt([&] {
    s.rank_writer.emplace(RankTraceWriter::reopen(s.dir, world.rank(), from));
    if (world.rank() == 0)
      s.run_writer.emplace(RunTraceWriter::reopen_trace(s.dir));
  });
  if (phases.failed("resume"))
    return failure(world, s);
  if (world.rank() == 0 && printer.line) {
    printer.line(printf_text("isletune resume: %s from generation %d on %d rank%s", s.dir.c_str(),
                             from, world.size(), world.size() == 1 ? "" : "s"));
  }
  double elapsed_s = 0;
  const SearchResult result = search(world, s, printer, start_s, elapsed_s);
  return finish(world, s, printer, result, elapsed_s, start_s, "resume");
}

}  // namespace isletune::run
