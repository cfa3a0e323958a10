// The cellular island (docs/architecture.md, "The island GA"): a population on a rows x cols torus
// over the alphabet of a Reindex, a per-island measurement cache keyed by setting (equivalently by
// canonical key) so no setting is measured twice, the best individual ever seen, and the
// migration policies as pure code: when (MigrationPolicy::due), which (select_best),
// how (replace_worst_if_better).
#pragma once

#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/rng.hpp"
#include "eval/evaluator.hpp"
#include "ga/ga_settings.hpp"
#include "ga/migrator.hpp"
#include "ga/records.hpp"
#include "ga/reindex.hpp"
#include "ga/selection.hpp"
#include "sample/online_model.hpp"

namespace isletune {

// One individual: its sampled-setting id, canonical genome (encode(id)) and measurement.
struct Individual {
  int id = -1;
  Genome genome;
  Measurement measurement;
  [[nodiscard]] double fitness() const { return measurement.fitness(); }
};

// Everything needed to continue an island exactly where it was (resume, checkpoints).
struct IslandState {
  int generation = -1;                                  // last completed generation (-1: none yet)
  std::vector<Individual> population;                   // one per cell
  std::vector<std::pair<Setting, Measurement>> cache;   // sorted by setting
  std::optional<std::pair<Setting, Measurement>> best;  // best ever seen on this island
  Rng::State rng{};
  std::int64_t next_eval_id = 0;  // next EvaluationRecord::eval_id
  std::int64_t evaluations = 0;   // new measurements so far
  // Settings learned from neighbours since the last emigration, to pass on (ops.forward).
  std::vector<Setting> forward;
  double elapsed_s = 0;                   // search clock when the state was taken
  StopReason stopped = StopReason::none;  // the decision that ended the search, if any
};

// The parameters whose indicators interact with every other one in the island's online
// model (OnlineModel's `interact`): those the registered families' OCs are selected by (merge
// kind, the streaming family's switches, a family's selector), which change what the other
// parameters do (replay sweep, docs/decisions.md#model-features). Read from the OC table, merge
// first, then in parameter order (the order of the model's columns): merge, streaming,
// retiming, prefetch in the production build. A parameter the sampled settings hold at one
// value adds no column (OnlineModel skips a parameter that does not vary).
[[nodiscard]] std::vector<Param> model_interactions();

// The online model's fit and how its choices spread (the product's defaults; the replay
// sweep varies them: bench/sweep.cpp).
struct ModelKnobs {
  double lambda = 1.0;   // ridge strength (OnlineModel's `lambda`)
  double explore = 1.0;  // thompson: the spread of its draws over the posterior's
  // The prior's plan features as continuous columns (OnlineModel's `plan_features`).
  bool plan_features = true;
  // ... and each of them times each interacting indicator (OnlineModel's `plan_interact`).
  bool plan_interact = true;
  // The ridge strength of the plan-feature columns (< 0: lambda).
  double plan_lambda = -1;
  // With plan features: also fit the model without them and let the one with the lower
  // leave-one-out error on the island's measurements choose (OnlineModel::loo_rmse).
  bool plan_select = false;
  // The model's picks and a restart's model cells only while it predicts the island's
  // measurements better than their mean (leave-one-out error below the targets' standard
  // deviation); otherwise those cells keep their bred children (random share cells at a
  // restart). Off by default since failures no longer bend the fit (FailedAs::median): the
  // gate was there for the synthetic landscape, where they did (docs/decisions.md#skill-gate).
  bool skill_gate = false;
  // A failed measurement's target in the fit (OnlineModel::set_failed_as).
  FailedAs failed_as = FailedAs::median;
  // The kernel correction (OnlineModel::set_kernel; length 0: off).
  double kernel_length = 0;
  double kernel_noise = 1;
  // The forest correction (OnlineModel::set_forest; trees 0: off): 30 trees, leaves of 3
  // points at least, a third of the features tried per split. On the replay datasets it
  // finds the optimum within the budget more often (star3d1r 87 -> 93 of 100 runs,
  // star3d2r 65 -> 72) at the same measurements to 5 % (docs/decisions.md#forest).
  RegressionForest::Options forest{.trees = 30};
  // Greedy picks rank by the forest's lower confidence bound, the prediction lowered by
  // this many of its trees' standard deviations (OnlineModel::optimistic_ms; 0: the mean).
  double forest_kappa = 0;
  // Greedy picks of one generation differ pairwise in at least this many parameters (down
  // the ranking; then the closest ones; 0 or 1: off).
  int pick_spread = 0;
  // local: this share of the picks (at least one) is the model's best among the unmeasured
  // settings at most local_radius parameters from one of the local_centres best settings
  // the island knows.
  double local_share = 0.25;
  int local_centres = 8;
  int local_radius = 2;
};

// The variation rates of an island (defaults: GaSettings's, declared there once).
struct GaOperators {
  double crossover_rate = GaSettings{}.crossover_rate;
  double mutation_rate = GaSettings{}.mutation_rate;
  // A child (or immigrant) whose setting is already on the island does not take a cell:
  // clones of a fitter neighbour no longer crowd out the population.
  bool unique_cells = true;
  // Children bred per cell; with more than 1 the online model (sample/online_model.hpp),
  // refit each generation on the island's measurements, picks the one predicted fastest
  // among those not measured yet (the first child while the model is unfit).
  int candidates = 1;
  // Cells per generation (the least fit) whose child is instead the sampled setting the
  // online model predicts fastest among those not measured yet (0: none).
  int model_picks = 0;
  // The online model's prior feature (OnlineModel), e.g. the roofline predictor; must
  // outlive the island. Null: parameters only.
  const Predictor* prior = nullptr;
  // Islands of the run and this island's place among them. The model's picks and a
  // restart's cells are drawn from this island's share of the alphabet: the settings whose
  // setting_hash % pick_stride == pick_offset (the best of the rest only when its share
  // has fewer unmeasured settings than cells to fill). The shares are disjoint, so no two
  // islands ever pick the same setting, whether or not their models agree.
  int pick_stride = 1;
  int pick_offset = 0;
  // Share by setting_hash (above); false: take every pick_stride-th setting of the
  // island's own ranking from pick_offset on (islands whose models differ then pick the
  // same settings; kept for the replay sweep's comparison).
  bool hash_shares = true;
  // Pass on every measurement learned from a neighbour that was new to this island, in
  // the next emigrants (measurement-only), so on a ring of more than 2 islands every
  // island learns every measurement of the run (ring neighbours only otherwise).
  bool forward = false;
  // Up to this generation the model's picks are every pick_stride-th of the island's own
  // ranking even with hash_shares: right after the exchange of generation 0 every
  // island's model is fit on the same measurements, so the rankings agree and the islands
  // split the best picks of the run between them (0: hash shares from generation 1).
  int ranked_until = 0;
  // Parameters whose indicators interact with every other one in the online model
  // (OnlineModel's `interact`).
  std::vector<Param> interact = model_interactions();
  // How the model chooses its picks and a restart's model cells (GaSettings::model_policy).
  ModelPolicy model_policy = GaSettings{}.model_policy;
  ModelKnobs model;
};

// The children of one generation (one per cell, or a whole population: generation 0, a
// restart), split into the settings to measure (`fresh`, in the evaluator's queue until
// Island::settle takes their measurements) and those the island knows already.
struct Brood {
  enum class Kind : std::uint8_t { initial, restart, offspring };
  static constexpr int kRepeat = -1;   // a setting measured or queued already
  static constexpr int kDropped = -2;  // past the measurement cap: not measured, no row
  Kind kind = Kind::offspring;
  std::vector<int> ids;        // per child: its sampled-setting id
  std::vector<int> cells;      // per child: its cell
  std::vector<bool> bred;      // per child: counted in the offspring MCR (empty: every child)
  std::vector<int> first_of;   // per child: its index into `fresh`, kRepeat or kDropped
  std::vector<Setting> fresh;  // the settings to measure
};

// When to migrate: every `interval` generations (0: never), `count` individuals.
struct MigrationPolicy {
  int interval = 1;
  int count = 1;
  [[nodiscard]] bool due(int generation) const {
    return interval > 0 && count > 0 && generation % interval == 0;
  }
};

// Which: the cells of the `count` fittest individuals, fittest first (ties: lower cell).
[[nodiscard]] std::vector<int> select_best(std::span<const Individual> population, int count);

// How: each immigrant (fittest first) replaces the currently worst cell (ties: lower
// cell) when it is strictly fitter. Returns, per immigrant, the cell it took or -1.
std::vector<int> replace_worst_if_better(std::vector<Individual>& population,
                                         std::span<const Individual> immigrants);

class Island {
 public:
  // A fresh island; its engine is Rng(seed, stream).
  Island(const Reindex& alphabet, const Torus& torus, GaOperators ops, std::uint64_t seed,
         std::uint64_t stream);
  // An island continuing from `state` (the population must fit the torus).
  Island(const Reindex& alphabet, const Torus& torus, GaOperators ops, const IslandState& state);

  // Offset added to the evaluator clock for record times: the search clock is
  // evaluator.clock_s() + offset.
  void set_clock_offset(double offset) { clock_offset_ = offset; }

  // Generation 0: a uniformly random sampled setting per cell, evaluated as one batch;
  // the first cells hold the ids of `fixed` instead (e.g. the naive-equivalent setting).
  // Returns the number of new measurements. At most `room` new settings are measured
  // (-1: no cap); a child past the cap is neither measured nor recorded, and its cell
  // holds it unmeasured (fitness 0).
  int initialize(Evaluator& evaluator, TraceSink& sink, std::int64_t room = -1,
                 std::span<const int> fixed = {});
  // A restart (the next generation): cell 0 holds `keep` (the best setting, measured),
  // every other cell a setting of the alphabet this island has not measured: the online
  // model's fastest for half of them when the model is on and fit, uniformly random ones
  // otherwise; then one batch as in step(). Returns the new measurements, or -1 (nothing
  // changed) when every setting of the alphabet is measured.
  int restart(int keep, Evaluator& evaluator, TraceSink& sink, std::int64_t room = -1);
  // Settings of the alphabet this island has not measured (nor received).
  [[nodiscard]] int unmeasured() const;

  // The three kinds of generation as proposals whose settings an evaluator's queue measures
  // (the pipeline, docs/architecture.md): initialize(), restart() (nullopt: every setting
  // measured) and step() before their batch. Each proposal's `fresh` settings are known to
  // the island from then on (a later proposal repeats them rather than queue them twice).
  [[nodiscard]] Brood propose_initial(std::int64_t room = -1, std::span<const int> fixed = {});
  [[nodiscard]] std::optional<Brood> propose_restart(int keep, std::int64_t room = -1);
  [[nodiscard]] Brood propose_offspring(std::int64_t room = -1);
  // Completes the oldest proposal with `results` (per fresh setting; nullopt: still queued,
  // it comes back through late()): the next generation's rows, its population. Proposals
  // settle in the order they were made. Returns the new measurements.
  int settle(const Brood& b, std::span<const std::optional<Measurement>> results, TraceSink& sink,
             double wall_s, std::span<const Timeline> timelines = {});
  // A measurement of a settled proposal that came back after it (as an extra() pick: the
  // cache, the worst cell when fitter, a row of the current generation, the neighbours).
  void late(const Setting& s, const Measurement& m, TraceSink& sink, double wall_s,
            const Timeline& timeline = {});
  // A measurement of `b`'s fresh setting `slot`, `b` not settled yet: into the cache at once
  // (the online model and later proposals know it) and, with `place` and offspring, into its
  // child's cell when fitter, as settle() would give it (later proposals breed from it); its
  // row when the proposal settles.
  void take_in(const Brood& b, std::size_t slot, const Measurement& m, bool place);
  // A proposal restored from a checkpoint: its settings count as queued again.
  void adopt(const Brood& b);
  // Whether `s` is measured, received, or queued by a proposal.
  [[nodiscard]] bool known(const Setting& s) const { return cached(s) || queued_.count(s) > 0; }
  // Next generation: breed one child per cell, evaluate the uncached distinct children
  // as one batch (at most `room` of them, in cell order; the others are dropped),
  // replace each cell whose child is strictly fitter.
  int step(Evaluator& evaluator, TraceSink& sink, std::int64_t room = -1);

  // More measurements between generations, while the island would otherwise wait for its
  // neighbours (SearchStrategy::extra): the online model's `count` fastest unmeasured
  // settings of this island's share, measured as one batch and recorded as rows of the
  // current generation. Each takes the worst cell when fitter (as an immigrant would) and
  // goes to the neighbours as a measured setting with the next emigrants. Returns how many
  // were measured: 0 when the model is off or not fit (trusted), or every setting of the
  // alphabet is measured.
  int extra(Evaluator& evaluator, TraceSink& sink, int count);

  // Emigrants for this generation (select_best), with their measurements, followed by
  // every other measurement this generation made and, with ops.forward, every measurement
  // learned from a neighbour since the last emigration, as measurement-only migrants
  // (shared so no island measures them again). Call sent() once they have left.
  [[nodiscard]] std::vector<Migrant> emigrants(int count, int rank) const;
  // Measurements every island learns at once (Migrator::gather_first): into the cache
  // only (the model's data; never measured here), no row, no cell, nothing to pass on.
  // The best ever seen stays this island's own or received as an immigrant (a row), so
  // it is always a measurement of this island's trace; the senders' best individuals
  // still arrive by the ring.
  void learn(const std::vector<Migrant>& migrants);
  // The emigrants have been sent: the learned measurements are passed on, not again.
  void sent() { forward_.clear(); }
  // Whether `s` is in this island's share of the alphabet (GaOperators::pick_stride).
  [[nodiscard]] bool owns(const Setting& s) const;
  // Integrates immigrants (replace_worst_if_better); their measurements enter the cache
  // and are never measured again here. Records each as a migrant evaluation row. An
  // immigrant whose setting the island already holds takes no cell; measurement-only
  // migrants only enter the cache (no row: the sender recorded the measurement).
  // Immigrants whose setting is not in this island's alphabet only enter the cache. `wall_s` is
  // the search clock recorded with them.
  void immigrate(const std::vector<Migrant>& migrants, TraceSink& sink, double wall_s);

  [[nodiscard]] int generation() const { return generation_; }
  [[nodiscard]] std::int64_t evaluations() const { return evaluations_; }
  [[nodiscard]] const std::vector<Individual>& population() const { return population_; }
  [[nodiscard]] const std::optional<std::pair<Setting, Measurement>>& best() const { return best_; }
  // MCR measured on the offspring (docs/architecture.md, "The island GA"): the share of the last
  // generation's bred children (the model's picks left out) that copy a setting the island
  // already knew (cached, or an earlier child of the same batch). With unique cells the
  // population cannot fill with copies, so its most-common-genome ratio no longer shows
  // convergence; repeated offspring do: an island whose children are mostly copies measures
  // next to nothing new.
  [[nodiscard]] double mcr() const;
  // The counts behind mcr(): (children that repeated, children considered).
  [[nodiscard]] std::pair<int, int> offspring_counts() const { return offspring_counts_; }
  // (copies of the most frequent genome) / population: the paper's population MCR.
  [[nodiscard]] double population_mcr() const;
  [[nodiscard]] int unique_genomes() const;
  [[nodiscard]] double mean_fitness() const;
  // Number of settings in the cache.
  [[nodiscard]] std::size_t cache_size() const { return cache_.size(); }
  [[nodiscard]] bool cached(const Setting& s) const { return cache_.count(s) > 0; }
  // Everything needed to continue (elapsed_s and stopped are the caller's to fill).
  [[nodiscard]] IslandState state() const;

 private:
  // Evaluates the individuals bred for `cells` (ids) as one batch and records them.
  // The offspring MCR counts only the children with `bred[i]` true (all when empty): the
  // model's picks are unmeasured by construction and would hide convergence.
  // The ids of the alphabet's settings not measured (nor received) here.
  [[nodiscard]] std::vector<int> unmeasured_ids() const;
  // One evaluator call for `batch`; throws when it answers other than one result each.
  static std::vector<Measurement> measure(Evaluator& evaluator, const std::vector<Setting>& batch);
  // Writes the evaluation row of `ind` in the current generation (`known`: a repeat, `cached`).
  void record(const Individual& ind, int cell, double wall_s, bool known, bool migrant,
              TraceSink& sink, const Timeline* timeline = nullptr, int generation = -1);
  // Dedupes `ids` against known() and within the batch (at most `room` fresh).
  Brood propose(std::vector<int> ids, std::vector<int> cells, std::vector<bool> bred,
                std::int64_t room, Brood::Kind kind);
  // Measures a proposal as one batch and settles it.
  void evaluate(const Brood& b, Evaluator& evaluator, TraceSink& sink);
  void note_best(const Setting& s, const Measurement& m);
  // Breeds one child for `cell` from its torus neighbours; returns its sampled-setting id.
  int breed(int cell, const std::vector<double>& fitness);
  // Replaces the children of the least fit cells by the model's fastest unmeasured picks.
  // Returns, per cell, whether its child is still the bred one.
  std::vector<bool> pick_by_model(std::vector<int>& ids, const std::vector<double>& fitness);
  // The model's `count` choices among `open` (ids of settings neither measured nor in the
  // batch) by ops_.model_policy, from this island's share first (strided_best); thompson
  // draws from the island's engine.
  std::vector<int> model_choice(std::vector<int> open, std::size_t count);
  // Refits the online model on the cache (in setting order, so resume refits the same).
  void refit_model();

  const Reindex& alphabet_;
  const Torus& torus_;
  GaOperators ops_;
  Rng rng_;
  int generation_ = -1;
  std::vector<Individual> population_;
  std::unordered_map<Setting, Measurement, SettingHash> cache_;
  std::optional<std::pair<Setting, Measurement>> best_;
  std::int64_t next_eval_id_ = 0;
  std::int64_t evaluations_ = 0;
  double clock_offset_ = 0;
  // Settings measured by the last initialize/step, in measurement order (shared).
  std::vector<Setting> fresh_;
  // Measurements learned from neighbours, new to this island, and this island's extra()
  // measurements, not passed on yet.
  std::vector<Setting> forward_;
  // The last batch's children that repeated a known setting, and the children considered.
  std::pair<int, int> offspring_counts_{0, 0};
  std::unordered_set<Setting, SettingHash> queued_;  // proposed, not measured yet
  int unsettled_ = 0;        // offspring and restart proposals not settled yet
  int pick_generation_ = 0;  // the generation the model's picks are made for (ranked_until)
  std::optional<OnlineModel> model_;  // built on first use when ops_.candidates > 1
  // With ModelKnobs::plan_select: the same model without the plan features, and whether
  // its leave-one-out error beat model_'s at the last refit (then it chooses).
  std::optional<OnlineModel> plain_;
  bool use_plain_ = false;
  [[nodiscard]] const OnlineModel& model() const { return use_plain_ ? *plain_ : *model_; }
  // Fitted, and (with ModelKnobs::skill_gate) its leave-one-out error below the targets'
  // standard deviation.
  [[nodiscard]] bool model_trusted() const {
    return model_ && model_->fitted() &&
           (!ops_.model.skill_gate || model().loo_rmse() < model().target_sd());
  }
};

// Migrator of a lone island: no neighbours, sends nothing, receives nothing.
class NoMigrator final : public Migrator {
 public:
  [[nodiscard]] int neighbours() const override { return 0; }
  void send(const std::vector<Migrant>&) override {}
  std::vector<Migrant> receive() override { return {}; }
};

}  // namespace isletune
