// Island search driver, global GA and the random baselines.
#include "ga/search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "common/error.hpp"

namespace isletune {
namespace {

// Throws the one-sentence error for a GA key.
[[noreturn]] void bad(const std::string& key, const std::string& value,
                      const std::string& expected) {
  throw InputError("ga." + key + " = " + value + " is out of range; expected " + expected + ".");
}

// Rate in [0, 1].
void check_rate(double v, const char* key) {
  if (!(v >= 0 && v <= 1))
    bad(key, std::to_string(v), "a probability in [0, 1]");
}

// Best-ever median ms, NaN when nothing succeeded yet.
double best_ms(const std::optional<std::pair<Setting, Measurement>>& best) {
  return best ? best->second.median_ms : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

// Range and consistency checks of every GA setting.
void GaSettings::validate() const {
  if (rows < 1)
    bad("rows", std::to_string(rows), "an integer >= 1");
  if (cols < 1)
    bad("cols", std::to_string(cols), "an integer >= 1");
  if (population < 2)
    bad("population", std::to_string(population), "an integer >= 2");
  if (population != rows * cols) {
    throw InputError("ga.population = " + std::to_string(population) +
                     " does not match ga.rows x ga.cols = " + std::to_string(rows) + " x " +
                     std::to_string(cols) + "; expected population = rows * cols.");
  }
  check_rate(crossover_rate, "crossover_rate");
  check_rate(mutation_rate, "mutation_rate");
  if (migration_interval < 0)
    bad("migration.interval", std::to_string(migration_interval), "an integer >= 0 (0: never)");
  if (migration_count < 0 || migration_count > population) {
    bad("migration.count", std::to_string(migration_count), "an integer in [0, population]");
  }
  if (!(mcr_threshold >= 0 && mcr_threshold <= 1))
    bad("mcr_threshold", std::to_string(mcr_threshold), "a ratio in [0, 1] (0: no MCR stop)");
  if (max_generations < 0)
    bad("max_generations", std::to_string(max_generations), "an integer >= 0 (0: unlimited)");
  if (max_evaluations < 0)
    bad("max_evaluations", std::to_string(max_evaluations), "an integer >= 0 (0: unlimited)");
  if (!(time_budget_s >= 0) || !std::isfinite(time_budget_s)) {
    bad("time_budget_s", std::to_string(time_budget_s), "seconds >= 0 (0: unlimited)");
  }
  if (max_generations == 0 && max_evaluations == 0 && time_budget_s == 0) {
    throw InputError(
        "ga.max_generations, ga.max_evaluations and ga.time_budget_s are all 0 (unlimited); "
        "expected at least one budget > 0.");
  }
}

// The vote's answer, or max_generations once generation g reaches the limit. The limit is
// the same on every island and all islands are at the same generation when they vote, so
// applying it here stops them together without waiting for a pipelined vote to carry it
// (which would run one generation past the budget).
StopReason GaSettings::generation_limit(int g, StopReason voted) const {
  if (voted == StopReason::none && max_generations > 0 && g >= max_generations)
    return StopReason::max_generations;
  return voted;
}

// The MCR stop and every budget that is set.
std::unique_ptr<StopRule> GaSettings::stop_rules(bool with_mcr) const {
  auto any = std::make_unique<AnyOf>();
  if (with_mcr && mcr_threshold > 0)
    any->add(std::make_unique<McrStop>(mcr_threshold));
  if (max_generations > 0)
    any->add(std::make_unique<MaxGenerations>(max_generations));
  if (max_evaluations > 0)
    any->add(std::make_unique<MaxEvaluations>(max_evaluations));
  if (time_budget_s > 0)
    any->add(std::make_unique<TimeBudget>(time_budget_s));
  return any;
}

// A fresh island, or the one in `resume`, with the search clock continued.
IslandSearch::IslandSearch(const GaSettings& settings, const Reindex& alphabet,
                           Evaluator& evaluator, Migrator& migrator, StopVote& vote,
                           TraceSink& sink, std::uint64_t seed, int rank, SearchHooks hooks,
                           const std::optional<IslandState>& resume)
    : settings_(settings),
      torus_(settings.rows, settings.cols),
      evaluator_(evaluator),
      migrator_(migrator),
      vote_(vote),
      sink_(sink),
      rank_(rank),
      hooks_(std::move(hooks)),
      rules_(settings.stop_rules()),
      island_(resume ? Island(alphabet, torus_, {settings.crossover_rate, settings.mutation_rate},
                              *resume)
                     : Island(alphabet, torus_, {settings.crossover_rate, settings.mutation_rate},
                              seed, static_cast<std::uint64_t>(rank))) {
  settings_.validate();
  if (settings_.mcr_threshold == 0 && settings_.max_generations == 0) {
    throw InputError(
        "ga.mcr_threshold is 0 (no MCR stop) while ga.max_generations is 0; expected a "
        "generation limit, since a converged population measures nothing new and may never "
        "spend the evaluation or time budget.");
  }
  clock_offset_ = (resume ? resume->elapsed_s : 0.0) - evaluator_.clock_s();
  if (resume)
    stopped_ = resume->stopped;
  island_.set_clock_offset(clock_offset_);
}

// One generation: breed/evaluate, migrate, vote, record.
bool IslandSearch::step() {
  if (finished())
    return false;
  int measured = 0;
  if (island_.generation() < 0) {
    measured = island_.initialize(evaluator_, sink_);
  } else {
    measured = island_.step(evaluator_, sink_);
  }
  const int g = island_.generation();

  double wait_s = 0;
  if (migrator_.neighbours() > 0) {
    const MigrationPolicy policy{settings_.migration_interval, settings_.migration_count};
    if (policy.due(g)) {
      const std::vector<Migrant> out = island_.emigrants(policy.count, rank_);
      const double t0 = wall();
      migrator_.send(out);
      wait_s += wall() - t0;
      for (const Migrant& m : out) {
        sink_.migration({g, +1, -1, canonical_key(m.setting), m.measurement.median_ms});
      }
    }
    const double t0 = wall();
    const std::vector<Migrant> in = migrator_.receive();
    wait_s += wall() - t0;
    for (const Migrant& m : in) {
      sink_.migration({g, -1, m.source_rank, canonical_key(m.setting), m.measurement.median_ms});
    }
    island_.immigrate(in, sink_, elapsed());
  }

  const IslandProgress progress{g, island_.evaluations(), island_.mcr(), elapsed()};
  StopReason wish = rules_->check(progress);
  if (hooks_.interrupted && hooks_.interrupted()) {
    if (wish == StopReason::none || StopReason::signal < wish)
      wish = StopReason::signal;
  }
  const double t0 = wall();
  const StopReason decision = settings_.generation_limit(g, vote_.vote(g, wish));
  wait_s += wall() - t0;

  GenerationRecord r;
  r.generation = g;
  r.wall_s = elapsed();
  r.wait_s = wait_s;
  r.best_ms = best_ms(island_.best());
  r.mean_fitness = island_.mean_fitness();
  r.mcr = island_.mcr();
  r.unique_genomes = island_.unique_genomes();
  r.evaluations = measured;
  sink_.generation(r);
  stopped_ = decision;
  if (hooks_.on_snapshot)
    hooks_.on_snapshot(snapshot());
  sink_.flush();
  return !finished();
}

SearchResult IslandSearch::result() const {
  SearchResult out;
  if (island_.best()) {
    out.best = island_.best()->first;
    out.best_measurement = island_.best()->second;
  }
  out.reason = stopped_;
  out.generations = std::max(0, island_.generation());
  out.evaluations = island_.evaluations();
  return out;
}

IslandState IslandSearch::snapshot() const {
  IslandState s = island_.state();
  s.elapsed_s = elapsed();
  s.stopped = stopped_;
  return s;
}

SearchResult run_island(const GaSettings& settings, const SampledSet& sampled, Evaluator& evaluator,
                        Migrator& migrator, StopVote& vote, TraceSink& sink, std::uint64_t seed,
                        int rank, const SearchHooks& hooks,
                        const std::optional<IslandState>& resume) {
  settings.validate();
  const Reindex alphabet(sampled.settings, settings.encoding, settings.gray);
  IslandSearch search(settings, alphabet, evaluator, migrator, vote, sink, seed, rank, hooks,
                      resume);
  while (search.step()) {
  }
  return search.result();
}

SearchResult run_global_ga(const GaSettings& settings, const std::vector<Setting>& alphabet,
                           Evaluator& evaluator, StopVote& vote, TraceSink& sink,
                           std::uint64_t seed, int rank, const SearchHooks& hooks) {
  SampledSet all;
  all.settings = alphabet;
  NoMigrator alone;
  return run_island(settings, all, evaluator, alone, vote, sink, seed, rank, hooks);
}

namespace {

// The random baselines: `population` draws per generation, cached repeats, budgets only.
SearchResult random_loop(const GaSettings& settings,
                         const std::function<std::optional<Setting>(Rng&)>& draw,
                         Evaluator& evaluator, StopVote& vote, TraceSink& sink, std::uint64_t seed,
                         int rank, const SearchHooks& hooks) {
  settings.validate();
  const std::unique_ptr<StopRule> rules = settings.stop_rules(false);
  Rng rng(seed, static_cast<std::uint64_t>(rank));
  const double start = evaluator.clock_s();
  std::unordered_map<Setting, Measurement, SettingHash> cache;
  SearchResult out;
  std::int64_t eval_id = 0;
  // Generations in a row whose draws were all repeats: after kIdleLimit of them the space
  // is treated as exhausted, since no budget that counts measurements or the (replay)
  // evaluator clock would ever be reached.
  constexpr int kIdleLimit = 64;
  int idle = 0;
  for (int g = 0;; ++g) {
    bool exhausted = false;
    std::vector<Setting> batch;
    while (static_cast<int>(batch.size()) < settings.population) {
      const std::optional<Setting> s = draw(rng);
      if (!s) {
        exhausted = true;
        break;
      }
      batch.push_back(*s);
    }
    std::vector<Setting> pending;
    std::vector<bool> repeat(batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const bool seen = cache.count(batch[i]) > 0 ||
                        std::find(pending.begin(), pending.end(), batch[i]) != pending.end();
      repeat[i] = seen;
      if (!seen)
        pending.push_back(batch[i]);
    }
    std::vector<Measurement> results =
        pending.empty() ? std::vector<Measurement>{} : evaluator.evaluate(pending);
    for (std::size_t i = 0; i < pending.size() && i < results.size(); ++i) {
      const Measurement& m = results[i];
      if (m.fitness() > 0 && (!out.best || m.fitness() > out.best_measurement.fitness())) {
        out.best = pending[i];
        out.best_measurement = m;
      }
      cache.emplace(pending[i], m);
    }
    out.evaluations += static_cast<std::int64_t>(pending.size());
    idle = pending.empty() ? idle + 1 : 0;
    if (idle >= kIdleLimit)
      exhausted = true;
    const double elapsed = evaluator.clock_s() - start;
    double fitness_sum = 0;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      EvaluationRecord r;
      r.eval_id = eval_id++;
      r.generation = g;
      r.cell = static_cast<int>(i);
      r.setting = batch[i];
      r.measurement = cache.at(batch[i]);
      r.wall_s = elapsed;
      r.cached = repeat[i];
      fitness_sum += r.measurement.fitness();
      sink.evaluation(r);
    }
    StopReason wish = rules->check({g, out.evaluations, 0.0, elapsed});
    if (exhausted && wish == StopReason::none)
      wish = StopReason::max_evaluations;
    if (hooks.interrupted && hooks.interrupted()) {
      if (wish == StopReason::none || StopReason::signal < wish)
        wish = StopReason::signal;
    }
    const double t0 = hooks.wall_clock ? hooks.wall_clock() : 0.0;
    const StopReason decision = settings.generation_limit(g, vote.vote(g, wish));
    GenerationRecord gr;
    gr.generation = g;
    gr.wall_s = elapsed;
    gr.wait_s = (hooks.wall_clock ? hooks.wall_clock() : 0.0) - t0;
    gr.best_ms =
        out.best ? out.best_measurement.median_ms : std::numeric_limits<double>::quiet_NaN();
    gr.mean_fitness = batch.empty() ? 0.0 : fitness_sum / static_cast<double>(batch.size());
    std::vector<Setting> distinct = batch;
    std::sort(distinct.begin(), distinct.end());
    gr.unique_genomes =
        static_cast<int>(std::unique(distinct.begin(), distinct.end()) - distinct.begin());
    gr.evaluations = static_cast<int>(pending.size());
    sink.generation(gr);
    sink.flush();
    out.generations = g;
    if (decision != StopReason::none) {
      out.reason = decision;
      return out;
    }
  }
}

}  // namespace

SearchResult run_random(const GaSettings& settings,
                        const std::function<std::optional<Setting>(Rng&)>& draw,
                        Evaluator& evaluator, StopVote& vote, TraceSink& sink, std::uint64_t seed,
                        int rank, const SearchHooks& hooks) {
  return random_loop(settings, draw, evaluator, vote, sink, seed, rank, hooks);
}

// A seeded Fisher-Yates order of the sampled set, consumed front to back.
SearchResult run_sampled_random(const GaSettings& settings, const SampledSet& sampled,
                                Evaluator& evaluator, StopVote& vote, TraceSink& sink,
                                std::uint64_t seed, int rank, const SearchHooks& hooks) {
  std::vector<Setting> order = sampled.settings;
  std::sort(order.begin(), order.end());
  order.erase(std::unique(order.begin(), order.end()), order.end());
  Rng shuffle(seed, 0x52414e44 + static_cast<std::uint64_t>(rank));  // "RAND"
  for (std::size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[shuffle.below(i)]);
  }
  std::size_t next = 0;
  const auto draw = [&](Rng&) -> std::optional<Setting> {
    if (next >= order.size())
      return std::nullopt;
    return order[next++];
  };
  return random_loop(settings, draw, evaluator, vote, sink, seed, rank, hooks);
}

}  // namespace isletune
