// The search drivers: `run_island` (one island of the MPI island GA, or every island of
// an in-memory ring stepped through IslandSearch), `global-ga` (one population, no
// migration) and `random` / `sampled-random`, all emitting the same records so they can
// be compared on equal budgets.
//
// One generation of IslandSearch::step: (generation 0) the random initial population,
// or (later) breed / evaluate one batch / replace; then, when migration is due, send
// the best `migration_count` individuals; receive and integrate whatever arrived; then
// ask the stop rules (MCR, budgets) and `interrupted()` for this island's wish, cast it
// in the StopVote, record the generation, snapshot, flush. The search ends when the
// vote answers a reason other than none. Emigrants are recorded once per migrant with
// peer = -1 (sent to every ring neighbour); immigrants with their source rank.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "eval/evaluator.hpp"
#include "ga/island.hpp"
#include "ga/migrator.hpp"
#include "ga/records.hpp"
#include "ga/reindex.hpp"
#include "ga/selection.hpp"
#include "ga/stop.hpp"
#include "sample/sampled_set.hpp"

namespace isletune {

struct GaSettings {
  int population = 16;
  int rows = 4;
  int cols = 4;
  double crossover_rate = 0.8;
  double mutation_rate = 0.05;  // defaults chosen by bench/sweep (docs/benchmarks.md)
  Encoding encoding = Encoding::parameters;
  bool gray = false;
  int migration_interval = 1;        // generations between migrations (0: never)
  int migration_count = 1;           // emigrants per migration
  double mcr_threshold = 0.9;        // MCR on offspring; every island must reach it (StopTally)
  int max_generations = 100;         // after the initial population (0: unlimited)
  std::int64_t max_evaluations = 0;  // new measurements (0: unlimited)
  double time_budget_s = 0;          // evaluator clock seconds (0: unlimited)

  // Throws InputError naming the key ("ga.<name>") and what was expected.
  void validate() const;
  // The stop rules these settings ask for (MCR only when `with_mcr`).
  [[nodiscard]] std::unique_ptr<StopRule> stop_rules(bool with_mcr = true) const;
  // The collective decision for generation g: `voted`, or max_generations once g reaches
  // the limit (deterministic on every island, so it needs no vote).
  [[nodiscard]] StopReason generation_limit(int g, StopReason voted) const;
};

// Callbacks from the world outside the pure core.
struct SearchHooks {
  std::function<bool()> interrupted;   // SIGTERM/SIGINT seen (polled each generation)
  std::function<double()> wall_clock;  // seconds, for wait_s around migrator and vote
  std::function<void(const IslandState&)> on_snapshot;  // after every generation
};

struct SearchResult {
  std::optional<Setting> best;  // best successful setting seen (none if all failed)
  Measurement best_measurement;
  StopReason reason = StopReason::none;
  int generations = 0;           // generations completed after the initial population
  std::int64_t evaluations = 0;  // new measurements
};

// One island's search, generation by generation (see the file comment).
class IslandSearch {
 public:
  // `alphabet`, `evaluator`, `migrator`, `vote`, `sink` must outlive the search.
  // With `resume`, continues from that snapshot (same trajectory as never stopping).
  IslandSearch(const GaSettings& settings, const Reindex& alphabet, Evaluator& evaluator,
               Migrator& migrator, StopVote& vote, TraceSink& sink, std::uint64_t seed, int rank,
               SearchHooks hooks = {}, const std::optional<IslandState>& resume = std::nullopt);

  // Runs one generation; false once the search has ended (then does nothing).
  bool step();
  [[nodiscard]] bool finished() const { return stopped_ != StopReason::none; }
  [[nodiscard]] SearchResult result() const;
  [[nodiscard]] IslandState snapshot() const;
  [[nodiscard]] const Island& island() const { return island_; }

 private:
  double elapsed() const { return evaluator_.clock_s() + clock_offset_; }
  double wall() const { return hooks_.wall_clock ? hooks_.wall_clock() : 0.0; }

  GaSettings settings_;
  Torus torus_;
  Evaluator& evaluator_;
  Migrator& migrator_;
  StopVote& vote_;
  TraceSink& sink_;
  int rank_;
  SearchHooks hooks_;
  std::unique_ptr<StopRule> rules_;
  Island island_;
  double clock_offset_ = 0;
  StopReason stopped_ = StopReason::none;
};

// Runs one island to the end over the sampled set (validates `settings`).
SearchResult run_island(const GaSettings& settings, const SampledSet& sampled, Evaluator& evaluator,
                        Migrator& migrator, StopVote& vote, TraceSink& sink, std::uint64_t seed,
                        int rank, const SearchHooks& hooks = {},
                        const std::optional<IslandState>& resume = std::nullopt);

// global-ga: one population over `settings` (any finite alphabet, e.g. an enumerated
// space), no migration; otherwise as run_island.
SearchResult run_global_ga(const GaSettings& settings, const std::vector<Setting>& alphabet,
                           Evaluator& evaluator, StopVote& vote, TraceSink& sink,
                           std::uint64_t seed, int rank, const SearchHooks& hooks = {});

// random: `population` draws per generation from `draw` (e.g. Space::random_setting);
// repeats are answered from a cache and recorded as cached. Stops on the budgets of
// `settings` (no MCR) or when `draw` returns nullopt (reason max_evaluations).
SearchResult run_random(const GaSettings& settings,
                        const std::function<std::optional<Setting>(Rng&)>& draw,
                        Evaluator& evaluator, StopVote& vote, TraceSink& sink, std::uint64_t seed,
                        int rank, const SearchHooks& hooks = {});

// sampled-random: the sampled settings in a seeded random order, without repeats.
SearchResult run_sampled_random(const GaSettings& settings, const SampledSet& sampled,
                                Evaluator& evaluator, StopVote& vote, TraceSink& sink,
                                std::uint64_t seed, int rank, const SearchHooks& hooks = {});

}  // namespace isletune
