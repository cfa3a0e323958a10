// The search loop (docs/architecture.md, "The search loop"), written once for every strategy. A
// strategy is a small policy (SearchStrategy): run one generation of its own proposals within a cap
// on new measurements, exchange with neighbours, describe its population, save and restore its
// state. The loop does the rest, the same way for all of them:
//
//   room   = what max_evaluations still allows on this island (the batch is trimmed to
//            it, so a budget is a cap: an island never measures more than its budget)
//   prepare the generation with the other islands (the island GA gathers every island's
//            generation 0 before generation 1; timed into wait_s)
//   advance the strategy one generation (generation 0: its initial batch)
//   exchange with neighbours when the strategy migrates (timed into wait_s)
//   wish   = the stop rules (MCR when the strategy converges, budgets), the strategy's
//            own "nothing left to propose", or a signal
//   vote   = the collective decision (pipelined: a wish takes effect one generation
//            later on the other islands; at most that generation is run with room 0)
//   record = one GenerationRecord (cache hits counted, not written as rows), then the
//            snapshot hook (checkpoint) and flush, which commit the generation
//
// Evaluation rows: every new measurement and every immigrant is one row, numbered
// 0, 1, 2, ... (eval_id) by the loop; a cache hit is not a row but counted in its
// generation's `cache_hits`, so a converged island writes one small generation row per
// generation instead of `population` evaluation rows.
//
// Wall-clock waiting (wait_s) is measured around every collective the loop makes or
// calls: the migrator, the vote and the `on_generation` hook (the run's progress gather).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "eval/evaluator.hpp"
#include "ga/ga_settings.hpp"
#include "ga/island.hpp"
#include "ga/migrator.hpp"
#include "ga/pipeline.hpp"
#include "ga/records.hpp"
#include "ga/reindex.hpp"
#include "ga/selection.hpp"
#include "ga/stop.hpp"
#include "sample/predictor.hpp"
#include "sample/sampled_set.hpp"

namespace isletune {

// What the loop keeps between generations; with the strategy's own bytes it is all a
// resume needs (checkpoints store it).
struct SearchState {
  int generation = -1;                    // last completed generation (-1: none yet)
  std::int64_t evaluations = 0;           // new measurements so far
  std::int64_t rows = 0;                  // evaluation rows written (the next eval_id)
  double elapsed_s = 0;                   // search clock when the state was taken
  StopReason stopped = StopReason::none;  // the decision that ended the search, if any
  std::vector<std::uint8_t> strategy;     // SearchStrategy::save()
  std::vector<std::uint8_t> queue;        // Evaluator::save_queue() (replay's schedule)
};

// What one generation of a strategy did.
struct GenerationOutcome {
  int measured = 0;        // new measurements
  bool exhausted = false;  // the strategy has nothing new left to propose
  bool restart = false;    // the island restarted on a fresh sample (IslandStrategy::restart)
};

// The population figures of a generation record.
struct PopulationView {
  double mcr = 0;
  int unique_genomes = 0;
  double mean_fitness = 0;
};

// Everything a strategy needs for one generation.
struct StepContext {
  Evaluator& evaluator;
  TraceSink& sink;
  std::int64_t room = -1;   // at most this many new measurements (-1: unlimited)
  double clock_offset = 0;  // search clock = evaluator.clock_s() + clock_offset
  [[nodiscard]] double now() const { return evaluator.clock_s() + clock_offset; }
  // While the strategy would wait for its neighbours (GaSettings::fill_picks): measures
  // more settings (SearchLoop::fill) and returns true, or false when there is nothing to
  // measure or no room for it. Empty: the strategy waits.
  std::function<bool()> fill;
  // The search clock at which the time budget is spent (infinite: no time budget).
  double deadline = std::numeric_limits<double>::infinity();
  [[nodiscard]] bool spent() const { return now() >= deadline; }
};

// A search strategy as a policy of the loop.
class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  // Runs generation g (0: the initial batch): proposes, measures at most ctx.room new
  // settings (cache hits are free), records every evaluation in ctx.sink.
  virtual GenerationOutcome advance(int g, StepContext& ctx) = 0;
  // True when the population converges (then the MCR stop applies).
  [[nodiscard]] virtual bool converges() const { return false; }
  // Before generation g, with neighbours: collectives it must not start without (island
  // GA: every island's generation 0, gathered before generation 1). Returns the wall
  // seconds spent in the migrator (`wall` is the hooks' clock).
  virtual double prepare(int /*g*/, Migrator& /*migrator*/, StepContext& /*ctx*/,
                         const std::function<double()>& /*wall*/) {
    return 0;
  }
  // Migration after generation g (island GA only). Returns the wall seconds spent in
  // the migrator (`wall` is the hooks' clock).
  virtual double exchange(int /*g*/, Migrator& /*migrator*/, StepContext& /*ctx*/,
                          const std::function<double()>& /*wall*/) {
    return 0;
  }
  // More measurements between generations, while the island would wait for the others:
  // returns the new measurements it made (0: nothing to measure; the default), at most
  // ctx.room of them, as one batch.
  virtual int extra(StepContext& /*ctx*/) { return 0; }
  // While the island would wait for the others: keeps its evaluator's queue full (the
  // pipeline's next generations) and takes in a measurement that comes back, without
  // settling anything; false when there is nothing to do (the default).
  virtual bool pump(StepContext& /*ctx*/) { return false; }
  [[nodiscard]] virtual PopulationView population() const = 0;
  // Best successful measurement seen (none if all failed).
  [[nodiscard]] virtual std::optional<std::pair<Setting, Measurement>> best() const = 0;
  // The strategy's state (engine, population, cache, counters) as bytes, and back.
  [[nodiscard]] virtual std::vector<std::uint8_t> save() const = 0;
  virtual void restore(const std::vector<std::uint8_t>& bytes) = 0;
  // After restore(): the settings the strategy had queued are queued again (`kept`: the
  // evaluator's queue was restored with their tickets; else they are submitted anew).
  virtual void requeue(Evaluator& /*evaluator*/, bool /*kept*/) {}
};

// Callbacks from the world outside the pure core.
struct SearchHooks {
  std::function<bool()> interrupted;   // SIGTERM/SIGINT seen (polled each generation)
  std::function<double()> wall_clock;  // seconds, for wait_s
  // Before each generation record is written (e.g. the progress gather; its time counts
  // as waiting).
  std::function<void(const GenerationRecord&)> on_generation;
  std::function<void(const SearchState&)> on_snapshot;  // after every generation
  // After a generation's collectives before its measurements (the gather of generation 0):
  // e.g. the progress lines the others' generations completed meanwhile.
  std::function<void()> on_prepared;
};

struct SearchResult {
  std::optional<Setting> best;  // best successful setting seen (none if all failed)
  Measurement best_measurement;
  StopReason reason = StopReason::none;
  int generations = 0;           // generations completed after the initial population
  std::int64_t evaluations = 0;  // new measurements
};

// The one search loop (see the file comment).
class SearchLoop {
 public:
  // Validates `settings` (the only place they are validated). `strategy`, `evaluator`,
  // `migrator`, `vote`, `sink` must outlive the loop. With `resume`, continues from
  // that snapshot (the same trajectory as never stopping).
  SearchLoop(const GaSettings& settings, SearchStrategy& strategy, Evaluator& evaluator,
             Migrator& migrator, StopVote& vote, TraceSink& sink, SearchHooks hooks = {},
             const std::optional<SearchState>& resume = std::nullopt);
  ~SearchLoop();
  SearchLoop(const SearchLoop&) = delete;
  SearchLoop& operator=(const SearchLoop&) = delete;

  // Runs one generation; false once the search has ended (then does nothing).
  bool step();
  [[nodiscard]] bool finished() const { return stopped_ != StopReason::none; }
  // While the migrator or the vote would wait (with drift): first the strategy's pump (its
  // evaluator's queue kept full, SearchStrategy::pump), else GaSettings::fill_picks more
  // measurements of the strategy's (SearchStrategy::extra) between generations, within the
  // budgets (the replay sweep's wall model calls it while an island would wait). The fills'
  // rows belong to the last generation, their count to the next generation record. False
  // when nothing was done.
  bool fill();
  [[nodiscard]] SearchResult result() const;
  [[nodiscard]] SearchState snapshot() const;

 private:
  class CountingSink;
  double elapsed() const;
  // The search clock at which the time budget is spent (infinite: no time budget).
  double deadline() const {
    return settings_.time_budget_s > 0 ? settings_.time_budget_s
                                       : std::numeric_limits<double>::infinity();
  }
  double wall() const { return hooks_.wall_clock ? hooks_.wall_clock() : 0.0; }

  GaSettings settings_;
  SearchStrategy& strategy_;
  Evaluator& evaluator_;
  Migrator& migrator_;
  StopVote& vote_;
  std::unique_ptr<CountingSink> sink_;
  SearchHooks hooks_;
  std::unique_ptr<StopRule> rules_;
  int generation_ = -1;
  std::int64_t evaluations_ = 0;
  double clock_offset_ = 0;
  std::int64_t filled_ = 0;  // fill()'s measurements not in a generation record yet
  StopReason stopped_ = StopReason::none;
};

// Runs `strategy` to the end in a SearchLoop.
SearchResult run_search(const GaSettings& settings, SearchStrategy& strategy, Evaluator& evaluator,
                        Migrator& migrator, StopVote& vote, TraceSink& sink,
                        const SearchHooks& hooks = {},
                        const std::optional<SearchState>& resume = std::nullopt);

// The strategies. Each is deterministic in (seed, rank).

// Fresh settings for a restart epoch (1, 2, ...): e.g. the sampler run again with a seed of
// (seed, rank, epoch), so a setting the first sample left out can still be reached.
using RefillSource = std::function<std::vector<Setting>(int epoch)>;

// What a run gives an island beyond its settings and alphabet (all optional).
struct IslandExtras {
  RefillSource refill;         // samples of restart epochs (see IslandStrategy)
  std::vector<Setting> seeds;  // placed in the first cells of generation 0 (this island's)
  // The online model's prior (OnlineModel; e.g. the roofline predictor) when the
  // surrogate is on (GaSettings::candidates > 1 or model_picks > 0).
  std::shared_ptr<const Predictor> prior;
  int islands = 1;  // islands of the run (the model's picks are shared out by rank)
  // Islands pick from disjoint shares of the alphabet by setting hash (GaOperators::
  // hash_shares; false: every islands-th setting of the island's own ranking).
  bool hash_shares = true;
  // With more than 2 islands, measurements learned from a neighbour are passed on around
  // the ring (GaOperators::forward), so every island's cache and model hold every
  // measurement of the run.
  bool forward = true;
  // Generations whose offspring an island pools to decide a restart (0: `islands`): an
  // island of a run of R breeds 1/R of the run's children per generation, so it decides on
  // as many children as one island of the whole population breeds in one generation.
  int restart_window = 0;
  // An island with an explicit budget also restarts once it has measured this many settings
  // since its best last improved (0: never; -1: the default, stale_default()). The MCR
  // verdict alone never came on a GPU: the pipeline keeps breeding fresh mutations of a
  // converged population, so an island of 16 measured 2,500 settings of one epoch's sample
  // (4,096 of a space of 97,884 kernels) after its last new best at 8.9 s of 120 and
  // returned box2d2r at 349 GCells/s against 371 a run of the same space's sample found
  // (docs/studies/2026-12-06-restarts-on-a-stale-best.md).
  std::int64_t stale_restart = -1;
  // The default: an eighth of the epoch's alphabet, at least 64 measurements.
  [[nodiscard]] static std::int64_t stale_default(std::int64_t alphabet) {
    return std::max<std::int64_t>(64, alphabet / 8);
  }
  // Before generation 1 every island learns every island's generation 0
  // (Migrator::gather_first), so every model starts from the run's whole generation 0
  // rather than the island's share of it (with migration on).
  bool gather_first = true;
  // Generations (from 1) in which the model's picks are every islands-th of the island's
  // own ranking (GaOperators::ranked_until); hash shares after.
  int ranked_until = 0;
  // The online model's interacting parameters (GaOperators::interact).
  std::vector<Param> interact = model_interactions();
  ModelKnobs model;  // the online model's fit and choices (GaOperators::model)
};

// island-ga (and global-ga): one cellular island over `alphabet`.
//
// Restarts (with an explicit budget, GaSettings::explicit_budget): when the island has
// converged (offspring MCR >= mcr_threshold, pooled over the last `restart_window`
// generations (IslandExtras); with mcr_threshold 0, a generation that measured nothing
// new) or its best has not improved for IslandExtras::stale_restart of its measurements,
// its next generation is a restart (Island::restart): its best
// setting stays, every other cell gets a setting it has not measured. With a `refill`
// source each restart opens a new epoch whose alphabet is refill(epoch) plus the kept
// best, so the sample never locks a setting out; without one the alphabet stays. When no
// unmeasured setting is left (after up to 4 epochs tried in a row), the strategy is
// exhausted and the run ends. Without an explicit budget the MCR stop ends the run.
// The next epoch's sample is drawn on a thread of its own while the island breeds: a fresh
// sample of a whole default space takes about a second of CPU, which at lag 0 or a small
// drift every rank of the ring would wait for at each restart; refill(epoch) depends on
// (seed, rank, epoch) alone, so the run is the same as without it.
class IslandStrategy final : public SearchStrategy {
 public:
  // `alphabet` must outlive the strategy. `extras.seeds`: settings placed in the first
  // cells of generation 0 (those in the alphabet; e.g. the naive-equivalent setting on
  // rank 0).
  IslandStrategy(const GaSettings& settings, const Reindex& alphabet, std::uint64_t seed, int rank,
                 IslandExtras extras = {});
  GenerationOutcome advance(int g, StepContext& ctx) override;
  [[nodiscard]] bool converges() const override { return true; }
  double prepare(int g, Migrator& migrator, StepContext& ctx,
                 const std::function<double()>& wall) override;
  double exchange(int g, Migrator& migrator, StepContext& ctx,
                  const std::function<double()>& wall) override;
  int extra(StepContext& ctx) override;
  bool pump(StepContext& ctx) override;
  [[nodiscard]] PopulationView population() const override;
  [[nodiscard]] std::optional<std::pair<Setting, Measurement>> best() const override {
    return island_->best();
  }
  [[nodiscard]] std::vector<std::uint8_t> save() const override;
  void restore(const std::vector<std::uint8_t>& bytes) override;
  void requeue(Evaluator& evaluator, bool kept) override { pipeline_.requeue(evaluator, kept); }
  [[nodiscard]] const Island& island() const { return *island_; }
  // Restarts so far (the current epoch when a refill source is set).
  [[nodiscard]] int restarts() const { return restarts_; }

 private:
  // The alphabet of `epoch` (0: the one given; else refill(epoch) plus `kept`).
  [[nodiscard]] std::unique_ptr<Reindex> epoch_alphabet(int epoch, const Setting& kept);
  // refill(epoch): the prefetched sample when it is that epoch's, else drawn now.
  [[nodiscard]] std::vector<Setting> epoch_settings(int epoch);
  // Starts drawing refill(epoch_ + 1) on a thread when restarts may open it.
  void prefetch_next_epoch();
  GenerationOutcome restart(StepContext& ctx);
  // Settles the pipeline's oldest proposal as generation g (proposing the next ones
  // meanwhile); `early`: it may settle without its slowest settings; `quorum` >= 0 (without
  // `early`): once that many of its settings have come back, 0 at once (the rest come back as
  // late measurements; Pipeline::take).
  int settle_next(StepContext& ctx, bool early, int quorum = -1);
  // Notes a new best of the island (best_at_); whether its best has gone stale since
  // (IslandExtras::stale_restart).
  void note_best();
  [[nodiscard]] bool stale() const;
  // Whether a due restart stops the proposals (propose_next), its sample drawn or not.
  [[nodiscard]] bool holds_proposals() const;
  // The next generation's proposal within the cap (nullopt: none now).
  std::optional<Brood> propose_next(const StepContext& ctx);
  // A measurement of a settled proposal, come back late.
  void on_late(StepContext& ctx, const Setting& s, const Completion& c);

  Torus torus_;  // before island_, which refers to it
  const Reindex& alphabet_;
  GaOperators ops_;
  MigrationPolicy policy_;
  int rank_;
  bool restarts_on_ = false;
  double restart_mcr_ = 0;
  IslandExtras extras_;
  std::unique_ptr<Reindex> epoch_alpha_;  // the current epoch's alphabet (epoch > 0)
  int epoch_ = 0;
  std::optional<Setting> epoch_kept_;  // the best kept when the epoch opened
  int restarts_ = 0;
  bool restart_due_ = false;
  int window_ = 1;  // generations pooled for the restart decision (IslandExtras)
  // The pool so far: generations, repeated children, children considered.
  int window_gens_ = 0;
  std::int64_t window_repeats_ = 0;
  std::int64_t window_children_ = 0;
  bool exhausted_ = false;        // nothing left to measure (stays so: it waits for the others)
  std::optional<Island> island_;  // re-made by restore() and by restarts
  // refill(prefetched_epoch_) in flight or done (after extras_: ends before the source does).
  int prefetched_epoch_ = -1;
  std::future<std::vector<Setting>> prefetch_;
  Pipeline pipeline_;
  int late_ = 0;  // late measurements since the last generation settled
  // A run that depends on timing anyway (GaSettings::migration_drift >= 0): a due restart
  // waits, breeding on, until its epoch's sample is drawn (epoch_ready()), and does not wait
  // for the settled generations' last compiles (their measurements come back as late ones of
  // the new epoch) so the GPU keeps measuring while the restart's settings compile.
  // A due restart whose proposals have stopped (propose_next) settles the queued ones at
  // once (its sample drawn), so it does not wait for a drained queue.
  bool timing_ = false;
  // New settings of the island's last proposal (-1: none yet, or not saved across a resume):
  // in a run that depends on timing a restart due on the MCR stops the proposals once one
  // brings none.
  int last_fresh_ = -1;
  // The island's measurements when its best last improved, and that best's fitness
  // (IslandExtras::stale_restart).
  std::int64_t best_at_ = 0;
  double best_fitness_ = 0;
  [[nodiscard]] bool epoch_ready();
};

// random and sampled-random: `population` proposals per generation, repeats answered
// from a cache (cache hits).
class RandomStrategy final : public SearchStrategy {
 public:
  // random: draws from `draw` (e.g. Space::random_setting); nullopt ends the search.
  RandomStrategy(const GaSettings& settings, std::function<std::optional<Setting>(Rng&)> draw,
                 std::uint64_t seed, int rank);
  // sampled-random: the sampled settings in a seeded random order, without repeats.
  RandomStrategy(const GaSettings& settings, const SampledSet& sampled, std::uint64_t seed,
                 int rank);
  GenerationOutcome advance(int g, StepContext& ctx) override;
  [[nodiscard]] PopulationView population() const override { return view_; }
  [[nodiscard]] std::optional<std::pair<Setting, Measurement>> best() const override {
    return best_;
  }
  [[nodiscard]] std::vector<std::uint8_t> save() const override;
  void restore(const std::vector<std::uint8_t>& bytes) override;

 private:
  std::optional<Setting> next();

  int population_;
  std::function<std::optional<Setting>(Rng&)> draw_;
  std::vector<Setting> order_;  // sampled-random: the shuffled sampled set
  std::int64_t cursor_ = 0;     // sampled-random: next index into order_
  Rng rng_;
  std::unordered_map<Setting, Measurement, SettingHash> cache_;
  std::optional<std::pair<Setting, Measurement>> best_;
  std::int64_t next_eval_id_ = 0;
  int idle_ = 0;  // generations in a row with nothing new
  PopulationView view_;
};

// One island's search through IslandSearch's loop (kept for the in-memory ring tests
// that step several islands in turn).
class IslandSearch {
 public:
  IslandSearch(const GaSettings& settings, const Reindex& alphabet, Evaluator& evaluator,
               Migrator& migrator, StopVote& vote, TraceSink& sink, std::uint64_t seed, int rank,
               SearchHooks hooks = {}, const std::optional<SearchState>& resume = std::nullopt,
               IslandExtras extras = {});
  bool step() { return loop_.step(); }
  bool fill() { return loop_.fill(); }
  [[nodiscard]] bool finished() const { return loop_.finished(); }
  [[nodiscard]] SearchResult result() const { return loop_.result(); }
  [[nodiscard]] SearchState snapshot() const { return loop_.snapshot(); }
  [[nodiscard]] const Island& island() const { return strategy_.island(); }
  [[nodiscard]] int restarts() const { return strategy_.restarts(); }

 private:
  IslandStrategy strategy_;
  SearchLoop loop_;
};

// Runs one island to the end over the sampled set (`extras`: IslandStrategy).
SearchResult run_island(const GaSettings& settings, const SampledSet& sampled, Evaluator& evaluator,
                        Migrator& migrator, StopVote& vote, TraceSink& sink, std::uint64_t seed,
                        int rank, const SearchHooks& hooks = {},
                        const std::optional<SearchState>& resume = std::nullopt,
                        IslandExtras extras = {});

// global-ga: one population over `alphabet` (any finite set, e.g. an enumerated space),
// no migration; otherwise as run_island.
SearchResult run_global_ga(const GaSettings& settings, const std::vector<Setting>& alphabet,
                           Evaluator& evaluator, StopVote& vote, TraceSink& sink,
                           std::uint64_t seed, int rank, const SearchHooks& hooks = {},
                           const std::optional<SearchState>& resume = std::nullopt);

// random: `population` draws per generation from `draw`. Stops on the budgets (no MCR),
// when `draw` returns nullopt, or after 64 generations in a row of repeats only
// (reason max_evaluations: nothing new can be measured).
SearchResult run_random(const GaSettings& settings,
                        const std::function<std::optional<Setting>(Rng&)>& draw,
                        Evaluator& evaluator, StopVote& vote, TraceSink& sink, std::uint64_t seed,
                        int rank, const SearchHooks& hooks = {},
                        const std::optional<SearchState>& resume = std::nullopt);

// sampled-random: the sampled settings in a seeded random order, without repeats.
SearchResult run_sampled_random(const GaSettings& settings, const SampledSet& sampled,
                                Evaluator& evaluator, StopVote& vote, TraceSink& sink,
                                std::uint64_t seed, int rank, const SearchHooks& hooks = {},
                                const std::optional<SearchState>& resume = std::nullopt);

}  // namespace isletune
