// Replay sweep (docs/architecture.md, "The island GA": defaults are chosen by replay sweeps over
// recorded spaces): runs search variants x seeds on a recorded dataset, in process and without a
// GPU, and prints per variant how often the final best is the dataset's optimum, within
// 2 % and within 5 % of it, the median gap, the median number of measurements spent and
// the median number of measurements until the best seen was within 5 %, and the median wall
// time until then and until the optimum was first measured: the run's wall clock rebuilt
// from each island's replay clock per generation and the ring's waits (wall_ends; with the
// dataset's compile threads, the CUDA worker's clock of a batch).
//
//   isletune-sweep DATASET.h5 [--seeds N] [--rank] [VARIANT ...]
//   VARIANT = name[:key=value,key=value...]
//   keys: strategy (ga | random | sampled-random), encoding (index | parameters),
//         mutation, crossover, mcr, rows, cols (the torus, population = rows x cols),
//         sample_ratio, max_samples, round_ratio, adjust, floor,
//         predictor (roofline | uniform), islands (1), candidates (children bred per cell,
//         the online model measures the one it predicts fastest), picks (cells per
//         generation given the model's fastest unmeasured setting), generations,
//         evaluations (total over the islands; each island gets its share as its
//         budget.max_evaluations), time (budget.time_budget_s per island, replay clock),
//         compile_threads (the replay clock's simulated NVRTC threads per batch; default
//         the dataset's recorded ones, 0 when it records none: every cost in series),
//         race (evaluator.race_factor: a kernel over this x the fastest returned so far
//         costs a raced timing while another kernel waits; 0, off; default
//         kDefaultRaceFactor), settle (evaluator.settle_spread: a kernel whose first
//         recorded runs agree within this costs a settled timing while another kernel waits;
//         0, off; default kDefaultSettleSpread), cscale (evaluator.compile_scale: the
//         recorded compile times times this; 1),
//         pipeline (ga.pipeline: generations queued at once; 0 as deep as keeps the
//         simulated GPU busy, 1 one at a time), naive (0/1: generation 0 holds the
//         naive-equivalent setting; 1), refill (0/1:
//         restart epochs draw fresh samples; 1), prior (0/1: the online model's prior
//         feature is the predictor; 1), init (ga.predicted_seeds: generation 0 holds the
//         predictor's best k sampled settings, island r the r-th k of them), stride (0/1: islands
//         share out the model's picks; 1), shares (1: by setting hash, disjoint; 0: every
//         islands-th of the island's own ranking), forward (0/1: measurements learned from a
//         neighbour are passed on around the ring; 1), window (generations an island pools
//         offspring over for its restart decision; 0: the number of islands), stale (an island
//         restarts once this many of its measurements found no new best; 0: never; -1, the default:
//         IslandExtras::stale_default), first (0/1:
//         every island learns every island's generation 0 before generation 1; 1), ranked
//         (generations from 1 in which the model's picks are every islands-th of the
//         island's own ranking instead of its hash share), lag (ga.migration.lag,
//         the default 0: each island waits for its neighbours' current generation, the
//         islands on threads; 1: the MPI ring with lag 1 delivers a neighbour's generation
//         a generation late; either way each island's trajectory is the one it has under
//         mpirun; -1: everything sent to it so far, the ring of the figures before
//         2026-11-24's generation-0 exchange), threads (0/1: the
//         islands on threads over the blocking in-memory ring, any lag), async (0/1:
//         islands that never wait for each other, a design the MPI loop does not have yet:
//         the earliest island by its wall clock steps next, migrants arrive by their
//         sender's wall clock, each island stops on its own; AsyncRing), drift (with async=1:
//         an island waits only when more than D generations ahead of a ring neighbour, and
//         for every island's generation g - 1 - D, ga.migration.drift's rule; -1, the default:
//         never), fill (with drift: an island that would wait measures the model's next `fill`
//         picks instead, as one batch, again until it may start; ga.migration.fill, whose
//         default, 0, applies: it waits), timing (0/1, default: async; the island strategy
//         of a run that depends on timing: restarts wait for their sample breeding on and
//         leave their stragglers queued, as on GPUs),
//         interact (the online model's interacting parameters: parameter names joined by
//         '+', e.g. `merge` (the previous default), `none`; `family` (the default: merge,
//         streaming, retiming, prefetch), `flags` (family, use_shared, use_constant)),
//         lambda (the online model's ridge strength; 1), policy (the model's choice:
//         greedy | thompson; ga.model_policy), explore (thompson's spread;
//         0-100, 1), klen / knoise (the online model's kernel correction's length
//         and noise; 0: off), trees / fleaf / fdepth / fshare (the online model's forest
//         correction: trees, fewest points per leaf, depth, share of features per split;
//         ModelKnobs::forest's 30, 3, 12, 0.33; trees 0: off), kappa (greedy picks rank
//         by the forest's lower confidence bound, kappa of its trees' deviations; 0), spread (the
//         model's picks of one batch differ pairwise in at least this many parameters; 0: off),
//         plan (0/1: the plan features as columns of the online model; 1), pinter (0/1: each of
//         them times each interacting indicator; 1), plambda (their ridge strength; -1: lambda),
//         psel (0/1: the model without plan features is fit too, the lower leave-one-out error
//         chooses; 0), gate (0/1: the model chooses only while its leave-one-out error is
//         below the spread of the measured log times; 1), failed (a failed measurement's
//         target in the online model's fit: 0 the median success, the default; 1 twice the
//         slowest success, the figures before 2026-11-27).
//   Unset keys take the library defaults (SamplerSettings, GaSettings), so the variant
//   named `default` with no keys is the shipped default (without a budget: MCR stop).
//
// The GA runs the product's code: one IslandSearch (SearchLoop + IslandStrategy) per
// island over the in-memory ring and the in-memory pipelined stop vote (MemoryRing,
// MemoryStopVote), stepped in turn on one thread, with the product's stop rule, restarts
// and measurement sharing. The in-memory ring delivers as the MPI ring does (lag 1: a
// neighbour's generation arrives one generation late; generation 0 of every island
// before generation 1), so each island's trajectory is the one it has under mpirun
// (mpi.island_ring.torture checks it). Each island has its own replay evaluator (own
// clock); the sweep counts every island's measurements together. Replay answers from the recorded
// measurements; settings are drawn from the recorded ones only. Besides the figures
// above it prints, for runs with an evaluation budget, how many ended with more than 10 %
// of it unspent ("short"). --rank prints the roofline predictor's Spearman rank
// correlation with the recorded times. Diagnostics: SWEEP_RUNS=1 prints each seed's
// measurements to 5 %; SWEEP_TRACE=1, per generation of island 0, whether the optimum
// is measured and its rank among the unmeasured settings by the island's model and by
// the prior; SWEEP_FIT=1 the optimum's rank by the online model fit on every recorded
// setting, for several sets of interacting parameters, with and without the plan features
// (what the model can represent), and fit on SWEEP_FIT_N (150) random recorded settings
// (SWEEP_FIT_TREES=T: with a forest correction of T trees).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "config/config.hpp"
#include "eval/race.hpp"
#include "eval/replay/replay_evaluator.hpp"
#include "ga/ga_settings.hpp"
#include "ga/island.hpp"
#include "ga/memory_ring.hpp"
#include "ga/search.hpp"
#include "kernel/registry.hpp"
#include "sample/online_model.hpp"
#include "sample/predictor.hpp"
#include "sample/sampler.hpp"
#include "sample/setting_source.hpp"
#include "trace/reader.hpp"
#include "trace/replay_dataset.hpp"

#include "async_ring.hpp"  // bench/: islands that never wait (async=1)
#include "wall_clock.hpp"  // bench/: the sweep's wall clock

namespace isletune {
namespace {

// Drops every record: the sweep only needs the figures.
class NullSink final : public TraceSink {
 public:
  void evaluation(const EvaluationRecord&) override {}
  void generation(const GenerationRecord&) override {}
  void migration(const MigrationRecord&) override {}
  void flush() override {}
};

// The recorded kernels' medians of all their runs, by canonical setting: what a run's best is
// judged by (a settled answer, evaluator.settle_spread, is the median of its first runs).
struct TrueMedians {
  ProblemShape shape;
  std::unordered_map<Setting, double, SettingHash> median_ms;
  [[nodiscard]] double of(const Setting& s, double answered) const {
    const auto it = median_ms.find(canonical(shape, s));
    return it == median_ms.end() ? answered : it->second;
  }
};

// What every island's measurements of one run add up to.
struct Tally {
  long long count = 0;
  long long repeats = 0;  // measurements of a setting some island had measured before
  std::unordered_set<Setting, SettingHash> seen;
  long long to_5pct = -1;
  long long to_optimum = -1;
  double best = std::numeric_limits<double>::infinity();       // the fastest answer
  double best_true = std::numeric_limits<double>::infinity();  // its kernel's recorded median
  const TrueMedians* truth = nullptr;
};

// Adds one measurement to the tally.
void count(Tally& tally, const Setting& s, const Measurement& m, double optimum) {
  ++tally.count;
  if (!tally.seen.insert(s).second)
    ++tally.repeats;
  if (m.ok() && m.median_ms < tally.best) {
    tally.best = m.median_ms;
    tally.best_true = tally.truth ? tally.truth->of(s, m.median_ms) : m.median_ms;
  }
  if (tally.to_5pct < 0 && tally.best_true <= optimum * 1.05)
    tally.to_5pct = tally.count;
  if (tally.to_optimum < 0 && tally.best_true <= optimum)
    tally.to_optimum = tally.count;
}

// One island's measurements in order, and how many it had after each of its steps
// (islands on threads: tallied afterwards in the order islands stepped in turn have).
struct IslandLog {
  std::vector<std::pair<Setting, Measurement>> measured;
  std::vector<std::size_t> after_step;
};

// Counts measurements into a shared Tally (or, with a log, into the island's log) and
// notes when the best seen first came within 5 % of `optimum`.
class Counting final : public Evaluator {
 public:
  Counting(Evaluator& inner, double optimum, Tally& tally, IslandLog* log = nullptr)
      : inner_(inner), optimum_(optimum), tally_(tally), log_(log) {}
  std::vector<Measurement> evaluate(std::span<const Setting> batch) override {
    std::vector<Measurement> out = inner_.evaluate(batch);
    for (std::size_t i = 0; i < out.size(); ++i)
      note(batch[i], out[i]);
    return out;
  }
  // The inner evaluator's queue (the pipeline), counted as its measurements come back.
  Ticket submit(const Setting& s) override {
    const Ticket t = inner_.submit(s);
    queued_.emplace(t, s);
    return t;
  }
  std::optional<Completion> next() override {
    std::optional<Completion> c = inner_.next();
    if (c) {
      const auto it = queued_.find(c->ticket);
      note(it->second, c->measurement);
      queued_.erase(it);
    }
    return c;
  }
  [[nodiscard]] int outstanding() const override { return inner_.outstanding(); }
  [[nodiscard]] bool asynchronous() const override { return inner_.asynchronous(); }
  [[nodiscard]] int compile_threads() const override { return inner_.compile_threads(); }
  [[nodiscard]] DeviceLimits limits() const override { return inner_.limits(); }
  [[nodiscard]] double clock_s() const override { return inner_.clock_s(); }
  [[nodiscard]] std::string name() const override { return "counting"; }

 private:
  void note(const Setting& s, const Measurement& m) {
    if (log_)
      log_->measured.emplace_back(s, m);
    else
      count(tally_, s, m, optimum_);
  }
  std::unordered_map<Ticket, Setting> queued_;
  Evaluator& inner_;
  double optimum_;
  Tally& tally_;
  IslandLog* log_;
};

struct Variant {
  std::string name;
  std::map<std::string, std::string> keys;
  [[nodiscard]] std::string get(const std::string& k, const std::string& fallback) const {
    const auto it = keys.find(k);
    return it == keys.end() ? fallback : it->second;
  }
  [[nodiscard]] double num(const std::string& k, double fallback) const {
    const auto it = keys.find(k);
    return it == keys.end() ? fallback : std::stod(it->second);
  }
  // Key `failed`: a failed measurement's target in the online model's fit.
  [[nodiscard]] FailedAs failed_as() const {
    return num("failed", 0) != 0 ? FailedAs::twice_slowest : FailedAs::median;
  }
  // Keys trees, fleaf, fdepth, fshare: the online model's forest (ModelKnobs::forest's
  // values where unset).
  [[nodiscard]] RegressionForest::Options forest() const {
    const RegressionForest::Options d = ModelKnobs{}.forest;
    return {.trees = static_cast<int>(num("trees", d.trees)),
            .min_leaf = static_cast<int>(num("fleaf", d.min_leaf)),
            .max_depth = static_cast<int>(num("fdepth", d.max_depth)),
            .feature_share = num("fshare", d.feature_share)};
  }
};

// "name:key=value,key=value".
Variant parse_variant(const std::string& text) {
  Variant v;
  const auto colon = text.find(':');
  v.name = text.substr(0, colon);
  if (colon == std::string::npos)
    return v;
  std::stringstream in(text.substr(colon + 1));
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "variant '%s': expected key=value, got '%s'\n", text.c_str(),
                   item.c_str());
      std::exit(2);
    }
    v.keys[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return v;
}

struct Outcome {
  double best_ms = std::numeric_limits<double>::infinity();
  long long measured = 0;
  long long to_5pct = -1;
  double wall_5pct = -1;         // the run's wall clock when to_5pct was reached (wall_ends)
  double wall_optimum = -1;      // ... when the optimum was first measured
  bool short_of_budget = false;  // ended with > 10 % of an evaluation budget unspent
  int restarts = 0;              // over all islands
  long long repeats = 0;         // measurements of a setting measured before in the run
};

struct Problem {
  Stencil stencil;
  Grid grid;
  std::vector<Setting> candidates;
  double optimum = 0;
  TrueMedians truth;
  std::optional<Space> space;
  std::optional<ReplayEvaluator> replay;  // loaded once, copied per island
};

// One run of `v` with `seed`.
Outcome run_once(const Problem& p, const Variant& v, std::uint64_t seed) {
  ReplayEvaluator replay = *p.replay;
  if (v.keys.count("compile_threads"))
    replay.set_compile_threads(static_cast<int>(v.num("compile_threads", 0)));
  replay.set_race_factor(v.num("race", kDefaultRaceFactor));
  replay.set_settle_spread(v.num("settle", kDefaultSettleSpread));
  replay.set_compile_scale(v.num("cscale", 1));
  Tally tally;
  tally.truth = &p.truth;
  Counting eval(replay, p.optimum, tally);
  NullSink sink;
  const std::string strategy = v.get("strategy", "ga");
  const long long budget = static_cast<long long>(v.num("evaluations", 0));

  SamplerSettings ss;
  ss.sample_ratio = v.num("sample_ratio", ss.sample_ratio);
  ss.max_samples = static_cast<int>(v.num("max_samples", ss.max_samples));
  ss.round_ratio = v.num("round_ratio", ss.round_ratio);
  ss.adjust = v.num("adjust", ss.adjust);
  ss.floor = v.num("floor", ss.floor);
  std::shared_ptr<const Predictor> predictor =
      make_predictor(v.get("predictor", "roofline"), p.stencil, p.grid, replay.limits());

  Outcome out;
  if (strategy == "random" || strategy == "sampled-random") {
    std::vector<Setting> order;
    if (strategy == "random") {
      order = p.candidates;
    } else {
      ListSource source(p.space->shape(), p.candidates);
      order = sample(source, *predictor, ss, seed).set.settings;
    }
    Rng rng(seed, 0x52414e44);
    for (std::size_t i = order.size(); i > 1; --i)
      std::swap(order[i - 1], order[rng.below(i)]);
    const long long n = budget > 0
                            ? std::min<long long>(budget, static_cast<long long>(order.size()))
                            : static_cast<long long>(order.size());
    for (long long i = 0; i < n; ++i)
      (void)eval.evaluate(std::span<const Setting>(&order[static_cast<std::size_t>(i)], 1));
  } else {
    ListSource source(p.space->shape(), p.candidates);
    SampledSet sampled = sample(source, *predictor, ss, seed).set;
    IslandExtras base;
    if (v.num("naive", 1) != 0) {
      if (const auto naive = naive_seed(*p.space, &p.candidates)) {
        base.seeds.push_back(*naive);
        if (std::find(sampled.settings.begin(), sampled.settings.end(), *naive) ==
            sampled.settings.end())
          sampled.settings.push_back(*naive);
      }
    }
    GaSettings ga;
    if (v.keys.count("encoding"))
      ga.encoding =
          v.get("encoding", "parameters") == "index" ? Encoding::index : Encoding::parameters;
    ga.crossover_rate = v.num("crossover", ga.crossover_rate);
    ga.mutation_rate = v.num("mutation", ga.mutation_rate);
    ga.candidates = static_cast<int>(v.num("candidates", ga.candidates));
    ga.model_picks = static_cast<int>(v.num("picks", ga.model_picks));
    ga.mcr_threshold = v.num("mcr", ga.mcr_threshold);
    ga.fill_picks = static_cast<int>(v.num("fill", ga.fill_picks));
    ga.pipeline = static_cast<int>(v.num("pipeline", ga.pipeline));
    if (v.keys.count("rows") || v.keys.count("cols")) {
      ga.auto_population = false;
      ga.rows = static_cast<int>(v.num("rows", ga.rows));
      ga.cols = static_cast<int>(v.num("cols", ga.cols));
      ga.population = ga.rows * ga.cols;
    }
    ga.predicted_seeds = static_cast<int>(v.num("init", ga.predicted_seeds));
    if (v.keys.count("policy")) {
      const auto policy = model_policy_from_name(v.get("policy", ""));
      if (!policy) {
        std::fprintf(stderr, "variant '%s': policy is greedy or thompson\n", v.name.c_str());
        std::exit(2);
      }
      ga.model_policy = *policy;
    }

    const int islands = static_cast<int>(v.num("islands", 1));
    ga = ga.for_islands(islands);
    if (budget > 0)
      ga.max_evaluations = budget / islands;
    ga.time_budget_s = v.num("time", 0);
    // As the config does: an explicit budget drops the default generation limit.
    ga.max_generations =
        static_cast<int>(v.num("generations", ga.explicit_budget() ? 0 : ga.max_generations));
    const Reindex alphabet(sampled.settings, ga.encoding, ga.gray);
    std::vector<Setting> by_prediction = sampled.settings;
    std::vector<double> predicted(by_prediction.size());
    for (std::size_t i = 0; i < predicted.size(); ++i)
      predicted[i] = predictor->predict_ms(by_prediction[i]);
    {
      std::vector<std::size_t> order(predicted.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t a, std::size_t b) { return predicted[a] < predicted[b]; });
      std::vector<Setting> sorted;
      for (const std::size_t i : order)
        sorted.push_back(by_prediction[i]);
      by_prediction = std::move(sorted);
    }
    const bool whole = sampled.settings.size() >= p.candidates.size();
    std::vector<Param> interact = model_interactions();
    if (v.get("interact", "") == "flags") {
      interact = {Param::merge,    Param::streaming,  Param::retiming,
                  Param::prefetch, Param::use_shared, Param::use_constant};
    } else if (v.get("interact", "") == "family") {
      interact = {Param::merge, Param::streaming, Param::retiming, Param::prefetch};
    } else if (v.keys.count("interact")) {  // parameter names joined by '+'
      interact.clear();
      std::stringstream names(v.get("interact", ""));
      std::string name;
      while (std::getline(names, name, '+')) {
        if (const auto param = param_from_name(name))
          interact.push_back(*param);
      }
    }
    const int lag = static_cast<int>(v.num("lag", ga.migration_lag));
    // Lag 0 (each island waits for its neighbours' current generation) needs the islands
    // on threads; threads=1 runs any lag so.
    const bool async = islands > 1 && v.num("async", 0) != 0;
    // timing (0/1, default: async): the island strategy of a run that depends on timing, as
    // on GPUs (ga.migration.drift >= 0): restarts wait for their sample breeding on and leave
    // their stragglers queued (IslandStrategy).
    if (v.num("timing", async ? 1 : 0) != 0)
      ga.migration_drift = GaSettings::kDriftAsync;
    const bool threaded = !async && islands > 1 && (lag == 0 || v.num("threads", 0) != 0);
    MemoryRing ring(islands, lag, threaded);
    MemoryStopVote votes(islands, threaded);
    std::vector<ReplayEvaluator> replays(static_cast<std::size_t>(islands), replay);
    // async: each island's wall clock is its replay clock plus the one wait it has (the
    // gather of generation 0).
    std::vector<double> offset(static_cast<std::size_t>(islands), 0.0);
    const auto wall_of = [&](int r) {
      return offset[static_cast<std::size_t>(r)] + replays[static_cast<std::size_t>(r)].clock_s();
    };
    AsyncRing async_ring(islands, wall_of);
    std::vector<LocalStopVote> own_votes(static_cast<std::size_t>(islands));
    std::vector<IslandLog> logs(static_cast<std::size_t>(islands));
    std::vector<std::unique_ptr<Counting>> evals;
    std::vector<std::unique_ptr<IslandSearch>> isl;
    for (int r = 0; r < islands; ++r) {
      evals.push_back(
          std::make_unique<Counting>(replays[r], p.optimum, tally, threaded ? &logs[r] : nullptr));
      IslandExtras extras = base;
      extras.islands = v.num("stride", 1) != 0 ? islands : 1;
      extras.hash_shares = v.num("shares", 1) != 0;
      extras.forward = v.num("forward", 1) != 0;
      extras.restart_window = static_cast<int>(v.num("window", 0));
      extras.stale_restart = static_cast<std::int64_t>(v.num("stale", -1));
      extras.gather_first = v.num("first", 1) != 0;
      extras.interact = interact;
      extras.model.lambda = v.num("lambda", extras.model.lambda);
      extras.model.explore = v.num("explore", extras.model.explore);
      extras.model.plan_features = v.num("plan", extras.model.plan_features ? 1 : 0) != 0;
      extras.model.plan_interact = v.num("pinter", extras.model.plan_interact ? 1 : 0) != 0;
      extras.model.plan_lambda = v.num("plambda", extras.model.plan_lambda);
      extras.model.plan_select = v.num("psel", extras.model.plan_select ? 1 : 0) != 0;
      extras.model.skill_gate = v.num("gate", extras.model.skill_gate ? 1 : 0) != 0;
      extras.model.failed_as = v.failed_as();
      extras.model.kernel_length = v.num("klen", extras.model.kernel_length);
      extras.model.kernel_noise = v.num("knoise", extras.model.kernel_noise);
      extras.model.forest = v.forest();
      extras.model.forest_kappa = v.num("kappa", extras.model.forest_kappa);
      extras.model.pick_spread = static_cast<int>(v.num("spread", extras.model.pick_spread));
      extras.model.local_share = v.num("lshare", extras.model.local_share);
      extras.model.local_centres = static_cast<int>(v.num("lcentres", extras.model.local_centres));
      extras.model.local_radius = static_cast<int>(v.num("lradius", extras.model.local_radius));
      extras.ranked_until = static_cast<int>(v.num("ranked", extras.ranked_until));
      if (r > 0)
        extras.seeds.clear();  // the naive setting on rank 0, as the run does
      // init=k: the predictor's k best sampled settings (rank r: the r-th k of them).
      const int init = ga.predicted_seeds;
      for (int k = 0; k < init; ++k) {
        const std::size_t at = static_cast<std::size_t>(r * init + k);
        if (at < by_prediction.size())
          extras.seeds.push_back(by_prediction[at]);
      }
      if (ga.explicit_budget() && !whole && v.num("refill", 1) != 0) {
        extras.refill = epoch_sampler(
            [&p] { return std::make_unique<ListSource>(p.space->shape(), p.candidates); },
            predictor, ss, seed, r);
      }
      if ((ga.candidates > 1 || ga.model_picks > 0) && v.num("prior", 1) != 0)
        extras.prior = predictor;
      isl.push_back(std::make_unique<IslandSearch>(
          ga, alphabet, *evals[r], async ? async_ring.migrator(r) : ring.migrator(r),
          async ? static_cast<StopVote&>(own_votes[static_cast<std::size_t>(r)]) : votes.vote(r),
          sink, seed, r, SearchHooks{}, std::nullopt, std::move(extras)));
    }
    // SWEEP_TRACE=1: per generation of island 0, whether the optimum is measured, its rank
    // among the unmeasured recorded settings by a model refit as the island's (its cache,
    // the prior) and by the prior alone, and whether the first sample holds it.
    const bool trace = std::getenv("SWEEP_TRACE") != nullptr;
    std::optional<Setting> opt;
    if (trace) {
      ReplayEvaluator lookup = *p.replay;
      const std::vector<Measurement> all = lookup.evaluate(p.candidates);
      for (std::size_t i = 0; i < all.size(); ++i) {
        if (all[i].ok() && all[i].median_ms == p.optimum)
          opt = p.candidates[i];
      }
      std::printf("seed %llu: sample %zu settings, optimum %s in it\n",
                  static_cast<unsigned long long>(seed), sampled.settings.size(),
                  opt && std::find(sampled.settings.begin(), sampled.settings.end(), *opt) !=
                              sampled.settings.end()
                      ? "is"
                      : "is NOT");
    }
    // Each island's busy time per generation (wall_ends), and where the run first came
    // within 5 %: island and generation.
    std::vector<std::vector<double>> busy(static_cast<std::size_t>(islands));
    int hit_island = -1;
    std::size_t hit_step = 0;
    int opt_island = -1;  // where the run first measured the optimum
    std::size_t opt_step = 0;
    // After island r's step `step`: where the tally first came within 5 % / to the optimum.
    const auto note_firsts = [&](int r, std::size_t step, bool had_5pct, bool had_optimum) {
      if (!had_5pct && tally.to_5pct >= 0) {
        hit_island = r;
        hit_step = step;
      }
      if (!had_optimum && tally.to_optimum >= 0) {
        opt_island = r;
        opt_step = step;
      }
    };
    if (threaded) {
      std::vector<std::thread> threads;
      for (int r = 0; r < islands; ++r) {
        threads.emplace_back([&, r] {
          for (bool more = true; more;) {
            const double before = replays[r].clock_s();
            more = isl[r]->step();
            busy[r].push_back(replays[r].clock_s() - before);
            logs[r].after_step.push_back(logs[r].measured.size());
          }
        });
      }
      for (std::thread& t : threads)
        t.join();
      std::vector<std::size_t> at(static_cast<std::size_t>(islands), 0);
      for (std::size_t step = 0;; ++step) {
        bool any = false;
        for (int r = 0; r < islands; ++r) {
          const IslandLog& log = logs[r];
          if (step >= log.after_step.size())
            continue;
          any = true;
          const bool had = tally.to_5pct >= 0, had_opt = tally.to_optimum >= 0;
          for (; at[r] < log.after_step[step]; ++at[r])
            count(tally, log.measured[at[r]].first, log.measured[at[r]].second, p.optimum);
          note_firsts(r, step, had, had_opt);
        }
        if (!any)
          break;
      }
    }
    std::vector<std::vector<double>> async_ends(static_cast<std::size_t>(islands));
    double filled_5pct = -1, filled_optimum = -1;  // reached by a fill (async, fill=1): the wall
    if (async) {  // generation 0 everywhere, the gather, then the earliest island steps
      std::vector<bool> going(static_cast<std::size_t>(islands), true);
      const auto step = [&](int r) {
        const auto ri = static_cast<std::size_t>(r);
        const double before = replays[ri].clock_s();
        const bool had = tally.to_5pct >= 0, had_opt = tally.to_optimum >= 0;
        going[ri] = isl[ri]->step();
        busy[ri].push_back(replays[ri].clock_s() - before);
        async_ends[ri].push_back(wall_of(r));
        note_firsts(r, busy[ri].size() - 1, had, had_opt);
      };
      for (int r = 0; r < islands; ++r)
        step(r);
      if (v.num("first", 1) != 0) {
        double last = 0;
        for (int r = 0; r < islands; ++r)
          last = std::max(last, wall_of(r));
        for (int r = 0; r < islands; ++r)
          offset[static_cast<std::size_t>(r)] += last - wall_of(r);
      }
      // drift=D: the island that may start earliest steps next, after its wait. With fills
      // (GaSettings::fill_picks, key fill): an island that would wait measures the model's
      // next picks instead (SearchLoop::fill), one batch as its event at its own clock, and
      // asks again.
      const int drift = static_cast<int>(v.num("drift", -1));
      const bool fill = drift >= 0 && ga.fill_picks > 0;
      std::vector<bool> unfilled(static_cast<std::size_t>(islands), false);  // fill() said no
      for (;;) {
        int next = -1;
        double next_at = 0, next_start = 0;
        for (int r = 0; r < islands; ++r) {
          if (!going[static_cast<std::size_t>(r)])
            continue;
          const std::optional<double> start =
              drift < 0 ? std::optional<double>(wall_of(r))
                        : drift_start(async_ends, going, r, drift, wall_of(r));
          if (!start)
            continue;
          const bool waits = *start > wall_of(r);
          const double at =
              fill && waits && !unfilled[static_cast<std::size_t>(r)] ? wall_of(r) : *start;
          if (next < 0 || at < next_at) {
            next = r;
            next_at = at;
            next_start = *start;
          }
        }
        if (next < 0)
          break;
        const auto ni = static_cast<std::size_t>(next);
        if (next_at < next_start) {
          const bool had = tally.to_5pct >= 0, had_opt = tally.to_optimum >= 0;
          if (!isl[ni]->fill()) {
            unfilled[ni] = true;
            continue;
          }
          if (!had && tally.to_5pct >= 0)
            filled_5pct = wall_of(next);
          if (!had_opt && tally.to_optimum >= 0)
            filled_optimum = wall_of(next);
          continue;
        }
        unfilled[ni] = false;
        offset[ni] += next_start - wall_of(next);
        step(next);
      }
    }
    for (bool going = !threaded && !async; going;) {
      going = false;
      for (int r = 0; r < islands; ++r) {
        const double before = replays[r].clock_s();
        const bool had = tally.to_5pct >= 0, had_opt = tally.to_optimum >= 0;
        going = isl[r]->step() || going;
        busy[r].push_back(replays[r].clock_s() - before);
        note_firsts(r, busy[r].size() - 1, had, had_opt);
      }
      if (trace && opt) {
        const Island& is0 = isl[0]->island();
        OnlineModel model(sampled.settings, 1.0, predictor.get(), interact,
                          v.num("plan", ModelKnobs{}.plan_features ? 1 : 0) != 0,
                          v.num("pinter", ModelKnobs{}.plan_interact ? 1 : 0) != 0);
        model.set_kernel(v.num("klen", 0), v.num("knoise", 1));
        model.set_forest(v.forest());
        model.set_plan_lambda(v.num("plambda", ModelKnobs{}.plan_lambda));
        model.set_failed_as(v.failed_as());
        std::vector<std::pair<Setting, double>> data;
        for (const auto& [s, m] : is0.state().cache)
          data.emplace_back(s, m.model_ms());
        model.fit(data);
        int nearest = static_cast<int>(kParamCount);  // parameters from the optimum to the cache
        for (const auto& [s, m] : is0.state().cache) {
          int d = 0;
          for (std::size_t q = 0; q < kParamCount; ++q)
            d += s.values[q] != opt->values[q] ? 1 : 0;
          nearest = std::min(nearest, d);
        }
        int by_model = 0, by_prior = 0, open = 0;
        const double mo = model.predict_ms(*opt), po = predictor->predict_ms(*opt);
        for (const Setting& c : p.candidates) {
          if (is0.cached(c))
            continue;
          ++open;
          by_model += model.predict_ms(c) < mo ? 1 : 0;
          by_prior += predictor->predict_ms(c) < po ? 1 : 0;
        }
        std::printf(
            "  gen %3d evals %5lld best %+6.1f%% optimum %s model rank %4d prior rank "
            "%4d of %d, restarts %d, nearest measured %d parameters away\n",
            is0.generation(), tally.count, 100 * (tally.best_true / p.optimum - 1),
            is0.cached(*opt) ? "measured" : "open    ", by_model, by_prior, open,
            isl[0]->restarts(), nearest);
      }
    }
    const auto ends = async ? async_ends : wall_ends(busy, lag, v.num("first", 1) != 0);
    if (hit_island >= 0)
      out.wall_5pct = ends[static_cast<std::size_t>(hit_island)][hit_step];
    if (opt_island >= 0)
      out.wall_optimum = ends[static_cast<std::size_t>(opt_island)][opt_step];
    if (filled_5pct >= 0)
      out.wall_5pct = filled_5pct;
    if (filled_optimum >= 0)
      out.wall_optimum = filled_optimum;
    if (const char* at = std::getenv("SWEEP_WALL_AT")) {  // each island's generations by then
      const double t = std::atof(at);
      std::printf("  wall %.0f s: generations", t);
      for (const auto& e : ends)
        std::printf(" %td", std::count_if(e.begin(), e.end(), [t](double x) { return x <= t; }));
      std::printf(" (of");
      for (const auto& e : ends)
        std::printf(" %zu", e.size());
      std::printf("), run's wall %.1f s, busy",
                  std::max_element(ends.begin(), ends.end(), [](const auto& a, const auto& b) {
                    return a.back() < b.back();
                  })->back());
      for (const auto& b : busy)
        std::printf(" %.1f", std::accumulate(b.begin(), b.end(), 0.0));
      std::printf(" s, measured");
      for (const ReplayEvaluator& e : replays)
        std::printf(" %lld", e.measured());
      std::printf("\n");
    }
    for (const auto& island : isl)
      out.restarts += island->restarts();
    if (ga.max_evaluations > 0) {
      const long long total = ga.max_evaluations * islands;
      out.short_of_budget = tally.count < total - total / 10 &&
                            tally.count < static_cast<long long>(p.candidates.size());
    }
  }
  out.best_ms = tally.best_true;
  out.measured = tally.count;
  out.to_5pct = tally.to_5pct;
  out.repeats = tally.repeats;
  return out;
}

double median(std::vector<double> v) {
  if (v.empty())
    return std::nan("");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Spearman correlation of the roofline prediction with the recorded times.
void print_rank(const Problem& p, const std::filesystem::path& dataset) {
  ReplayEvaluator replay = load_replay(dataset);
  const RooflinePredictor roofline(p.stencil, p.grid, replay.limits());
  const std::vector<Measurement> m = replay.evaluate(p.candidates);
  std::vector<double> predicted, times;
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (m[i].ok()) {
      predicted.push_back(roofline.predict_ms(p.candidates[i]));
      times.push_back(m[i].median_ms);
    }
  }
  std::printf("roofline rank correlation on %s: %.3f (%zu settings)\n", dataset.filename().c_str(),
              rank_correlation(predicted, times), times.size());
}

int main_sweep(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DATASET.h5 [--seeds N] [--rank] [VARIANT ...]\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dataset = argv[1];
  int seeds = 20;
  bool rank = false;
  std::vector<Variant> variants;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seeds" && i + 1 < argc)
      seeds = std::atoi(argv[++i]);
    else if (a == "--rank")
      rank = true;
    else
      variants.push_back(parse_variant(a));
  }
  const Config config =
      parse_config(TraceReader(dataset).config_yaml(), dataset.string(), dataset.parent_path());
  ReplayEvaluator replay = load_replay(dataset);
  Problem p{resolve_stencil(config), config.grid, {}, std::numeric_limits<double>::infinity()};
  p.space.emplace(p.stencil, p.grid, replay.limits(), space_values(config));
  p.replay.emplace(replay);
  for (const Setting& s : replay.candidates()) {
    if (p.space->valid(s))
      p.candidates.push_back(s);
  }
  p.truth.shape = replay.shape();
  const std::vector<Measurement> recorded = replay.evaluate(p.candidates);  // all runs each
  for (std::size_t i = 0; i < recorded.size(); ++i) {
    if (!recorded[i].ok())
      continue;
    p.optimum = std::min(p.optimum, recorded[i].median_ms);
    p.truth.median_ms.emplace(canonical(p.truth.shape, p.candidates[i]), recorded[i].median_ms);
  }
  if (rank)
    print_rank(p, dataset);
  if (std::getenv("SWEEP_FIT")) {  // the optimum's rank by the online model fit on everything
    const std::shared_ptr<const Predictor> roof =
        make_predictor("roofline", p.stencil, p.grid, replay.limits());
    const std::vector<Measurement> m = replay.evaluate(p.candidates);
    const std::vector<std::pair<std::string, std::vector<Param>>> sets = {
        {"merge", {Param::merge}},
        {"family", {Param::merge, Param::streaming, Param::retiming, Param::prefetch}},
        {"family,tdeg",
         {Param::merge, Param::streaming, Param::retiming, Param::prefetch, Param::tdeg}},
        {"none", {}},
    };
    // Per set and model: the optimum's rank by the model fit on every recorded setting; then,
    // fit on SWEEP_FIT_N (150) random recorded settings, 10 times, the median rank of the
    // optimum and how many of the 30 fastest settings the model puts among its 100 fastest.
    const char* fit_n = std::getenv("SWEEP_FIT_N");
    const std::size_t subset = fit_n ? static_cast<std::size_t>(std::atoi(fit_n)) : 150;
    std::vector<std::pair<Setting, double>> all;
    std::size_t at = 0;
    for (std::size_t i = 0; i < m.size(); ++i) {
      all.emplace_back(p.candidates[i], m[i].model_ms());
      if (m[i].ok() && m[i].median_ms == p.optimum)
        at = i;
    }
    std::vector<std::size_t> by_time(all.size());
    std::iota(by_time.begin(), by_time.end(), 0);
    std::sort(by_time.begin(), by_time.end(), [&](std::size_t a, std::size_t b) {
      const double ta = all[a].second > 0 ? all[a].second : 1e30;
      const double tb = all[b].second > 0 ? all[b].second : 1e30;
      return ta < tb;
    });
    const double lambda =
        std::getenv("SWEEP_FIT_LAMBDA") ? std::atof(std::getenv("SWEEP_FIT_LAMBDA")) : 1.0;
    for (const auto& [label, inter] : sets)
      for (const int mode : {3, 2, 1, 0}) {  // plan x interactions, plan, prior only, neither
        const Predictor* prior = mode > 0 ? roof.get() : nullptr;
        OnlineModel model(p.candidates, lambda, prior, inter, mode >= 2, mode == 3);
        if (const char* pl = std::getenv("SWEEP_FIT_PLAMBDA"))
          model.set_plan_lambda(std::atof(pl));
        if (const char* trees = std::getenv("SWEEP_FIT_TREES"))
          model.set_forest({.trees = std::atoi(trees)});  // the default shape
        model.fit(all);
        const auto rank_of = [&](std::size_t i) {
          const double mo = model.predict_ms(p.candidates[i]);
          int better = 0;
          for (const Setting& c : p.candidates)
            better += model.predict_ms(c) < mo ? 1 : 0;
          return better;
        };
        const int full_rank = rank_of(at);
        std::vector<double> ranks, recall;
        for (int rep = 0; rep < 10; ++rep) {
          Rng rng(static_cast<std::uint64_t>(rep + 1), 0x464954);
          std::vector<std::pair<Setting, double>> part = all;
          for (std::size_t i = part.size(); i > 1; --i)
            std::swap(part[i - 1], part[rng.below(i)]);
          part.resize(std::min(subset, part.size()));
          model.fit(part);
          ranks.push_back(rank_of(at));
          std::vector<double> pred(all.size());
          for (std::size_t i = 0; i < all.size(); ++i)
            pred[i] = model.predict_ms(all[i].first);
          std::vector<double> sorted = pred;
          std::nth_element(sorted.begin(), sorted.begin() + 99, sorted.end());
          int hits = 0;
          for (std::size_t k = 0; k < 30; ++k)
            hits += pred[by_time[k]] <= sorted[99] ? 1 : 0;
          recall.push_back(hits);
        }
        std::printf(
            "%-22s %-5s %4zu features: optimum ranked %4d fit on all, %6.1f fit on %zu; "
            "%4.1f of the 30 fastest in its top 100\n",
            label.c_str(),
            mode == 3   ? "pint"
            : mode == 2 ? "plan"
            : mode == 1 ? "prior"
                        : "none",
            model.features(), full_rank, median(ranks), subset, median(recall));
      }
  }
  if (variants.empty())
    return 0;
  std::printf("dataset %s: %zu settings, optimum %.5f ms, %d seeds\n", dataset.filename().c_str(),
              p.candidates.size(), p.optimum, seeds);
  const auto naive = naive_seed(*p.space, &p.candidates);
  if (naive) {
    const Measurement m = replay.evaluate(std::vector<Setting>{*naive})[0];
    std::printf("naive-equivalent setting recorded: %.5f ms (optimum %.2fx faster)\n", m.median_ms,
                m.median_ms / p.optimum);
  } else {
    std::printf("naive-equivalent setting not recorded\n");
  }
  std::printf("%-28s %7s %7s %7s %9s %10s %10s %6s %8s %8s %9s %9s\n", "variant", "optimum", "<=2%",
              "<=5%", "gap %", "measured", "to 5%", "short", "restarts", "repeats", "wall 5% s",
              "wall opt s");
  for (const Variant& v : variants) {
    int hit = 0, in2 = 0, in5 = 0, short_runs = 0;
    std::vector<double> gaps, measured, to5, restarts, repeats, wall5, wallopt;
    for (int seed = 1; seed <= seeds; ++seed) {
      const Outcome o = run_once(p, v, static_cast<std::uint64_t>(seed));
      short_runs += o.short_of_budget ? 1 : 0;
      restarts.push_back(o.restarts);
      repeats.push_back(static_cast<double>(o.repeats));
      const double gap = o.best_ms / p.optimum - 1;
      hit += gap <= 1e-12 ? 1 : 0;
      in2 += gap <= 0.02 ? 1 : 0;
      in5 += gap <= 0.05 ? 1 : 0;
      gaps.push_back(100 * gap);
      measured.push_back(static_cast<double>(o.measured));
      to5.push_back(o.to_5pct < 0 ? std::numeric_limits<double>::infinity()
                                  : static_cast<double>(o.to_5pct));
      wall5.push_back(o.wall_5pct < 0 ? std::numeric_limits<double>::infinity() : o.wall_5pct);
      wallopt.push_back(o.wall_optimum < 0 ? std::numeric_limits<double>::infinity()
                                           : o.wall_optimum);
    }
    std::printf(
        "%-28s %4d/%-2d %4d/%-2d %4d/%-2d %9.2f %10.0f %10.1f %6d %8.0f %8.0f %9.2f %9.2f\n",
        v.name.c_str(), hit, seeds, in2, seeds, in5, seeds, median(gaps), median(measured),
        median(to5), short_runs, median(restarts), median(repeats), median(wall5), median(wallopt));
    if (std::getenv("SWEEP_RUNS")) {  // per-seed measurements to 5 % (-1: never)
      std::printf("  to5:");
      for (const double t : to5)
        std::printf(" %.0f", std::isinf(t) ? -1.0 : t);
      std::printf("\n  wall5:");
      for (const double t : wall5)
        std::printf(" %.2f", std::isinf(t) ? -1.0 : t);
      std::printf("\n  wallopt:");
      for (const double t : wallopt)
        std::printf(" %.2f", std::isinf(t) ? -1.0 : t);
      std::printf("\n");
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace isletune

int main(int argc, char** argv) {
  try {
    return isletune::main_sweep(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "isletune-sweep: %s\n", e.what());
    return 1;
  }
}
