// The settings of every search strategy (YAML `ga` and `budget`): the one place where
// their defaults are declared and their rules checked (GaSettings::validate, called once
// by the search loop), and the stop rules they ask for.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ga/reindex.hpp"
#include "ga/stop.hpp"

namespace isletune {

// How the online model chooses the settings it measures (its picks and a restart's
// cells), a named policy (config `ga.model_policy`; docs/decisions.md#model-policy):
// - greedy (default): the unmeasured settings it predicts fastest;
// - thompson: each pick the fastest under its own draw from the model's posterior
//   (OnlineModel::draw): where the measurements leave the fit unsure, a setting it ranks
//   low can come first;
// - local: a quarter of the picks (at least one) the fastest predicted among the
//   unmeasured settings at most 2 parameters from one of the 8 best settings the island
//   knows (a trust region around the incumbents), the rest as greedy.
enum class ModelPolicy : std::uint8_t { greedy = 0, thompson = 1, local = 2 };
// The policies' names (config, sweep keys), indexed by ModelPolicy.
inline constexpr std::string_view kModelPolicyNames[] = {"greedy", "thompson", "local"};
[[nodiscard]] std::string_view model_policy_name(ModelPolicy p);
[[nodiscard]] std::optional<ModelPolicy> model_policy_from_name(std::string_view name);

struct GaSettings {
  int population = 16;
  int rows = 4;
  int cols = 4;
  // Population, rows and cols not configured: 16 individuals per run, split over the
  // islands by for_islands (4x4 alone, 2x4 for 2 islands, 2x2 for 3 or more), so islands
  // buy time without costing measurements (docs/decisions.md#population-split), async islands
  // too (docs/decisions.md#async-islands).
  bool auto_population = true;
  double crossover_rate = 0.8;
  double mutation_rate = 0.05;  // docs/decisions.md#encoding
  Encoding encoding = Encoding::parameters;
  bool gray = false;
  int migration_interval = 1;  // generations between migrations (0: never)
  int migration_count = 1;     // emigrants per migration
  // Generations a batch of emigrants takes to reach the neighbours' receive (the ring's
  // lag, ring/ring_migrator.hpp): 0, each island waits for its neighbours' current
  // generation before its next, so every model is fit on the neighbours' latest
  // measurements; 1, an island goes on with their previous generation's (islands wait
  // less, their models lag; more measurements to the optimum, docs/decisions.md#migration-lag).
  int migration_lag = 0;
  // Islands that wait for each other only when drift generations apart (-1: off, the
  // deterministic ring above). With drift D >= 0 an island hands out whatever its neighbours
  // have sent so far and waits only for their batches older than D of its own sends; the stop
  // vote is pipelined D + 1 generations deep. Faster islands run ahead instead of waiting, so
  // a run depends on timing. kDriftAuto (not configured): async (below) where the measurements
  // come from GPUs, whose times vary from run to run anyway (the ring's determinism buys
  // nothing there, and waiting costs wall time: docs/decisions.md#migration-drift,
  // docs/decisions.md#async-islands), off in replay, where
  // determinism is what reproducible runs and identical resumes rest on (resolve_drift,
  // src/config).
  //
  // kDriftAsync (config `drift: async`): islands that never wait for each other
  // (docs/decisions.md#async-islands). An island integrates whatever its
  // neighbours have sent when it migrates, never waits for a batch; the stop vote is
  // asynchronous too (ring/async_stop_vote.hpp: every island's wish reaches every other as a
  // message, each island stops as soon as the wishes it knows decide it, and the run agrees
  // on one reason at the end); no gather of every island's generation 0 (forwarding around
  // the ring carries it); resume continues every rank from its own newest generation.
  static constexpr int kDriftAuto = -2;
  static constexpr int kMaxDrift = 3;
  static constexpr int kDriftAsync = 1 << 20;  // "no bound": larger than any run's sends
  int migration_drift = kDriftAuto;
  [[nodiscard]] bool async_islands() const { return migration_drift == kDriftAsync; }
  // The ring's wait in sends (RingMigrator's lag) and the stop vote's pipeline depth in
  // generations, from migration_lag or migration_drift (kDriftAuto unresolved: off). Async
  // islands have no vote pipeline (their vote never waits): depth 1.
  [[nodiscard]] int ring_lag() const {
    return migration_drift < 0 ? migration_lag : migration_drift;
  }
  [[nodiscard]] int vote_depth() const {
    return migration_drift < 0 || async_islands() ? 1 : migration_drift + 1;
  }
  // The drift as configuration text ("async", or the integer).
  [[nodiscard]] std::string drift_text() const {
    return async_islands() ? "async" : std::to_string(migration_drift);
  }
  // With drift: an island that would wait for its neighbours' batches or for the stop vote
  // measures the online model's next `fill_picks` picks instead, as one batch
  // (SearchLoop::fill), again until they are ready, so a GPU that would idle measures (0:
  // it waits). No effect on the deterministic ring (drift off), whose runs must not depend
  // on timing. Off by default: on four H100s fill 4 took the waiting from about 16 to 1.5 s
  // per rank and measured more, yet ended with a slower best kernel than waiting in 10 of
  // 10 paired runs (fewer generations; the fills' greedy picks rarely were among the best;
  // docs/decisions.md#migration-fill).
  static constexpr int kMaxFillPicks = 64;
  int fill_picks = 0;
  [[nodiscard]] bool fills_waits() const { return fill_picks > 0 && migration_drift >= 0; }
  double mcr_threshold = 0.9;  // MCR on offspring; every island must reach it (StopTally)
  // Surrogate-assisted breeding (island.hpp GaOperators): children bred per cell, the
  // online model measuring the one it predicts fastest (1: off), and cells per generation
  // given the model's fastest unmeasured setting (0: none; -1: default_model_picks).
  int candidates = 1;
  int model_picks = -1;
  // model_picks not configured: half of one island's population; with several islands five
  // eighths of each island's, rounded up (5 of 8 cells at 2 islands, 3 of 4 at 3 or more).
  // Two islands then reach a kernel within 5 % of the optimum in fewer measurements than one
  // island on all eight replay datasets, four on seven (docs/decisions.md#model-picks).
  [[nodiscard]] static int default_model_picks(int population, int islands);
  ModelPolicy model_policy = ModelPolicy::greedy;
  // Trees of the random forest the online model fits on its ridge's residuals (0: the ridge
  // alone; -1: the model's default, ModelKnobs::forest).
  int model_trees = -1;
  static constexpr int kMaxModelTrees = 256;
  // What ga.model_trees must be, for the messages of the config and of validate().
  [[nodiscard]] static std::string model_trees_expected() {
    return "an integer in [0, " + std::to_string(kMaxModelTrees) +
           "] (0: the ridge alone; -1: the default forest)";
  }
  // Generations an island keeps in the evaluator's queue at once (the pipeline, ga/pipeline.hpp):
  // 0 (default) as many as keep its compile threads and GPU busy, at most as below; 1 one
  // generation at a time (each waits for its slowest compile); n: at most n. Only an
  // asynchronous evaluator (the CUDA worker, replay) overlaps them.
  // The automatic depth bounds the children bred before their parents' measurements came back
  // rather than the generations: kAutoPipeline generations of 16, whatever the population, so
  // an island of 4 (the default split over four islands) may queue 64 generations. Fewer kept
  // such an island's GPU 25-44 % busy on four H200s, its queue 6-8 settings deep against the
  // 20 its compile threads could take (docs/decisions.md#async-islands). Most of those
  // generations have come back and wait only for the oldest one's slowest compiles (the
  // settings still queued stay at most Pipeline::target): with 8 generations of 16 the
  // proposals ran out behind them and the GPU idled (lap3d19 on an H100: 6.7 of its 9.8 idle
  // seconds with fewer settings queued than compile threads); 16 measured 5-22 % more in
  // 60 s of replay, no later to 5 % of the optimum
  // (docs/studies/2026-12-06-proposals-behind-a-slow-compile.md).
  static constexpr int kMaxPipeline = 8;  // the most a user's `ga.pipeline` may ask for
  static constexpr int kAutoPipeline = 2 * kMaxPipeline;
  static constexpr int kPipelineChildren = kAutoPipeline * 16;
  static constexpr int kMaxPipelineBroods = kPipelineChildren / 2;  // population >= 2
  int pipeline = 0;
  [[nodiscard]] int pipeline_broods() const {
    return pipeline > 0 ? pipeline
                        : std::max(kAutoPipeline, kPipelineChildren / std::max(1, population));
  }
  [[nodiscard]] static std::string pipeline_expected() {
    return "an integer in [0, " + std::to_string(kMaxPipeline) +
           "] (0: as deep as keeps the GPU busy; 1: one generation at a time)";
  }
  // Cells of generation 0 given the sampler's best predicted settings (island r the r-th
  // share of them; -1: population / 4, at least 1).
  int predicted_seeds = -1;
  int max_generations = 100;         // after the initial population (0: unlimited)
  std::int64_t max_evaluations = 0;  // new measurements per island, a cap (0: unlimited)
  double time_budget_s = 0;          // evaluator clock seconds (0: unlimited)

  // An explicit budget (max_evaluations or time_budget_s): a converged island then
  // restarts instead of stopping the run (no MCR stop), so the budget is spent.
  [[nodiscard]] bool explicit_budget() const { return max_evaluations > 0 || time_budget_s > 0; }
  // These settings for one island of a run of `islands`: the automatic population split,
  // model_picks and predicted_seeds resolved (-1 replaced by their values).
  [[nodiscard]] GaSettings for_islands(int islands) const;
  // Throws InputError naming the key ("ga.<name>") and what was expected.
  void validate() const;
  // The stop rules these settings ask for (MCR only when `with_mcr` and no explicit budget).
  [[nodiscard]] std::unique_ptr<StopRule> stop_rules(bool with_mcr = true) const;
  // The collective decision for generation g: `voted`, or max_generations once g reaches
  // the limit (deterministic on every island, so it needs no vote).
  [[nodiscard]] StopReason generation_limit(int g, StopReason voted) const;
  // New measurements an island may still make after `evaluations` (-1: unlimited).
  [[nodiscard]] std::int64_t evaluations_left(std::int64_t evaluations) const;
};

}  // namespace isletune
