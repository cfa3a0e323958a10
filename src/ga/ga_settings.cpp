// GaSettings: validation, stop rules, generation limit and the evaluation cap.
#include "ga/ga_settings.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>

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

}  // namespace

std::string_view model_policy_name(ModelPolicy p) {
  return kModelPolicyNames[static_cast<std::size_t>(p)];
}

std::optional<ModelPolicy> model_policy_from_name(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kModelPolicyNames); ++i) {
    if (name == kModelPolicyNames[i])
      return static_cast<ModelPolicy>(i);
  }
  return std::nullopt;
}

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
  if (migration_lag < 0 || migration_lag > 1)
    bad("migration.lag", std::to_string(migration_lag), "0 or 1");
  if ((migration_drift < -1 && migration_drift != kDriftAuto) ||
      (migration_drift > kMaxDrift && !async_islands())) {
    bad("migration.drift", std::to_string(migration_drift),
        "an integer in [0, " + std::to_string(kMaxDrift) + "], async, or -1 (off)");
  }
  if (migration_drift >= 0 && migration_lag != 0) {
    throw InputError(
        "ga.migration: lag " + std::to_string(migration_lag) + " and drift " + drift_text() +
        " exclude each other; expected lag (the deterministic ring) or drift (islands that wait "
        "only when drift generations apart), not both.");
  }
  if (fill_picks < 0 || fill_picks > kMaxFillPicks) {
    bad("migration.fill", std::to_string(fill_picks),
        "an integer in [0, " + std::to_string(kMaxFillPicks) + "] (0: wait)");
  }
  if (migration_interval < 0)
    bad("migration.interval", std::to_string(migration_interval), "an integer >= 0 (0: never)");
  if (migration_count < 0 || migration_count > population) {
    bad("migration.count", std::to_string(migration_count), "an integer in [0, population]");
  }
  if (candidates < 1 || candidates > 64)
    bad("candidates", std::to_string(candidates), "an integer in [1, 64] (1: no surrogate)");
  if (model_picks < -1 || model_picks > population) {
    bad("model_picks", std::to_string(model_picks),
        "an integer in [0, population] (-1: half the population, five eighths with several "
        "islands)");
  }
  if (pipeline < 0 || pipeline > kMaxPipeline)
    bad("pipeline", std::to_string(pipeline), pipeline_expected());
  if (model_trees < -1 || model_trees > kMaxModelTrees) {
    bad("model_trees", std::to_string(model_trees), model_trees_expected());
  }
  if (predicted_seeds < -1 || predicted_seeds > population) {
    bad("predicted_seeds", std::to_string(predicted_seeds),
        "an integer in [0, population] (-1: population / 4)");
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

int GaSettings::default_model_picks(int population, int islands) {
  return islands > 1 ? (5 * population + 7) / 8 : population / 2;
}

GaSettings GaSettings::for_islands(int islands) const {
  GaSettings g = *this;
  // (Async islands too: in the replay sweep's model of them four islands of 4 reached the
  // optimum 2.3x sooner than four of 16, docs/decisions.md#async-islands.)
  if (auto_population && islands > 1) {
    g.rows = 2;
    g.cols = islands == 2 ? 4 : 2;
    g.population = g.rows * g.cols;
  }
  g.model_picks = g.model_picks < 0 ? default_model_picks(g.population, islands)
                                    : std::min(g.model_picks, g.population);
  g.predicted_seeds = g.predicted_seeds < 0 ? std::max(1, g.population / 4)
                                            : std::min(g.predicted_seeds, g.population);
  g.migration_count = std::min(g.migration_count, g.population);
  return g;
}

// The MCR stop and every budget that is set.
std::unique_ptr<StopRule> GaSettings::stop_rules(bool with_mcr) const {
  auto any = std::make_unique<AnyOf>();
  if (with_mcr && mcr_threshold > 0 && !explicit_budget())
    any->add(std::make_unique<McrStop>(mcr_threshold));
  if (max_generations > 0)
    any->add(std::make_unique<MaxGenerations>(max_generations));
  if (max_evaluations > 0)
    any->add(std::make_unique<MaxEvaluations>(max_evaluations));
  if (time_budget_s > 0)
    any->add(std::make_unique<TimeBudget>(time_budget_s));
  return any;
}

// The cap on new measurements: what the budget still allows (never negative).
std::int64_t GaSettings::evaluations_left(std::int64_t evaluations) const {
  if (max_evaluations <= 0)
    return -1;
  return std::max<std::int64_t>(0, max_evaluations - evaluations);
}

}  // namespace isletune
