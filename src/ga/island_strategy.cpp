// The island GA as a strategy of the search loop (IslandStrategy, search.hpp): generations
// through the pipeline (ga/pipeline.hpp), restarts and epochs, migration, its state's bytes.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "ga/search.hpp"
#include "ga/state_codec.hpp"

namespace isletune {
namespace {

using namespace state_codec;

constexpr std::uint32_t kIslandTag = 0x49534c35U;   // "ISL5" (restarts on a stale best)
constexpr std::uint32_t kIslandTag4 = 0x49534c34U;  // "ISL4" (the pipeline)
constexpr std::uint32_t kIslandTag3 = 0x49534c33U;  // "ISL3" (restart epochs, forwards)

}  // namespace

// ---- island-ga -------------------------------------------------------------------------

namespace {

// The online model's knobs with what the configuration sets (GaSettings::model_trees).
ModelKnobs model_knobs(const GaSettings& settings, ModelKnobs knobs) {
  if (settings.model_trees >= 0)
    knobs.forest.trees = settings.model_trees;
  return knobs;
}

}  // namespace

IslandStrategy::IslandStrategy(const GaSettings& settings, const Reindex& alphabet,
                               std::uint64_t seed, int rank, IslandExtras extras)
    : torus_(settings.rows, settings.cols),
      alphabet_(alphabet),
      ops_{settings.crossover_rate,
           settings.mutation_rate,
           true,
           settings.candidates,
           settings.model_picks,
           extras.prior.get(),
           std::max(1, extras.islands),
           rank % std::max(1, extras.islands),
           extras.hash_shares,
           extras.forward && extras.islands > 2,
           extras.ranked_until,
           extras.interact,
           settings.model_policy,
           model_knobs(settings, extras.model)},
      policy_{settings.migration_interval, settings.migration_count},
      rank_(rank),
      restarts_on_(settings.explicit_budget()),
      restart_mcr_(settings.mcr_threshold),
      extras_(std::move(extras)),
      pipeline_(settings.pipeline_broods()),
      timing_(settings.migration_drift >= 0) {
  pipeline_.set_on_result([this](const Brood& b, std::size_t slot, const Measurement& m,
                                 bool overlapping) { island_->take_in(b, slot, m, overlapping); });
  pipeline_.set_known([this] { return static_cast<std::int64_t>(island_->cache_size()); });
  window_ = extras_.restart_window > 0 ? extras_.restart_window : std::max(1, extras_.islands);
  island_.emplace(alphabet_, torus_, ops_, seed, static_cast<std::uint64_t>(rank));
}

std::unique_ptr<Reindex> IslandStrategy::epoch_alphabet(int epoch, const Setting& kept) {
  std::vector<Setting> settings = epoch_settings(epoch);
  settings.push_back(kept);
  return std::make_unique<Reindex>(std::move(settings), alphabet_.encoding(), alphabet_.gray());
}

std::vector<Setting> IslandStrategy::epoch_settings(int epoch) {
  if (prefetch_.valid() && prefetched_epoch_ == epoch) {
    prefetched_epoch_ = -1;
    return prefetch_.get();
  }
  return extras_.refill(epoch);
}

void IslandStrategy::prefetch_next_epoch() {
  if (!extras_.refill || !restarts_on_ || exhausted_ || prefetched_epoch_ == epoch_ + 1)
    return;
  prefetched_epoch_ = epoch_ + 1;
  // (A future of another epoch, not taken by a restart, is waited for here.)
  prefetch_ = std::async(std::launch::async, extras_.refill, epoch_ + 1);
}

// Whether a due restart may begin: at once in a deterministic run; with a run that depends on
// timing anyway (drift or async islands, GPUs), only once the next epoch's sample has been
// drawn. On four H200s a restart that waited for its sample left a rank's GPU idle for 8-20 s
// (docs/studies/2026-11-28-async-islands-4xh200.md); meanwhile the island breeds on as before.
bool IslandStrategy::epoch_ready() {
  if (!timing_ || !extras_.refill || !restarts_on_)
    return true;
  prefetch_next_epoch();
  return !prefetch_.valid() || prefetched_epoch_ != epoch_ + 1 ||
         prefetch_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

GenerationOutcome IslandStrategy::advance(int g, StepContext& ctx) {
  island_->set_clock_offset(ctx.clock_offset);
  if (g > 0)
    prefetch_next_epoch();
  GenerationOutcome out;
  if (g == 0) {
    std::vector<int> fixed;
    for (const Setting& s : extras_.seeds) {
      if (const auto id = alphabet_.id_of(s))
        fixed.push_back(*id);
    }
    pipeline_.push(island_->propose_initial(ctx.room, fixed), ctx.evaluator);
    out.measured = settle_next(ctx, false);
    note_best();
    return out;
  }
  if (exhausted_) {
    out.exhausted = true;
    return out;
  }
  if (timing_ && holds_proposals() && pipeline_.broods() > 0 && epoch_ready()) {
    // A due restart of a run that depends on timing: the queued proposals settle at once,
    // one a generation, and the restart follows; their settings still queued come back as
    // late measurements while the restart's compile.
    out.measured = settle_next(ctx, false, 0);
    return out;
  }
  if (restart_due_ && pipeline_.broods() == 0 && epoch_ready()) {
    // A restart may open another epoch's alphabet: no proposal of the old one stays queued.
    // Its stragglers (settled proposals' last settings) come back as late measurements,
    // cached and given a cell where the new alphabet holds them; a deterministic run waits
    // for them here, as it always has (the GPU idled up to a slowest compile, 3.5 s on an
    // H200, at each restart).
    if (!timing_) {
      pipeline_.drain_late(
          ctx.evaluator, [&](const Setting& s, const Completion& c) { on_late(ctx, s, c); },
          [&] { return ctx.spent(); });
      if (pipeline_.stragglers() > 0) {
        // The time budget ran out first: the run stops after this generation, unrestarted
        // (a slow compile held the stop up to 5.8 % past the budget here).
        out.measured = std::exchange(late_, 0);
        return out;
      }
    }
    out = restart(ctx);
    out.measured += std::exchange(late_, 0);
    return out;
  }
  if (pipeline_.broods() == 0) {
    const std::int64_t room =
        ctx.room < 0 ? -1 : std::max<std::int64_t>(0, ctx.room - late_ - pipeline_.owed());
    pipeline_.push(island_->propose_offspring(room), ctx.evaluator);
  }
  out.measured = settle_next(ctx, true);
  if (restarts_on_ && restart_mcr_ > 0) {
    const auto [repeats, children] = island_->offspring_counts();
    window_repeats_ += repeats;
    window_children_ += children;
    if (++window_gens_ >= window_) {
      restart_due_ =
          window_children_ > 0 && static_cast<double>(window_repeats_) >=
                                      restart_mcr_ * static_cast<double>(window_children_);
      window_gens_ = 0;
      window_repeats_ = window_children_ = 0;
    }
  } else if (restarts_on_) {
    restart_due_ = out.measured == 0;
  }
  note_best();
  if (restarts_on_ && stale())
    restart_due_ = true;
  return out;
}

void IslandStrategy::note_best() {
  const auto& best = island_->best();
  if (best && best->second.fitness() > best_fitness_) {
    best_fitness_ = best->second.fitness();
    best_at_ = island_->evaluations();
  }
}

bool IslandStrategy::holds_proposals() const {
  return restart_due_ && (!timing_ || last_fresh_ == 0 || stale());
}

bool IslandStrategy::stale() const {
  std::int64_t limit = extras_.stale_restart;
  if (limit < 0)
    limit = IslandExtras::stale_default((epoch_alpha_ ? *epoch_alpha_ : alphabet_).size());
  return limit > 0 && island_->evaluations() - best_at_ >= limit;
}

// More generations while earlier ones' measurements come back, within the cap on new
// measurements (what is queued counts), and none once a restart is due: at once in a
// deterministic run; in a run that depends on timing once its sample is drawn and either a
// proposal brought nothing new or the best is stale (the queue then settles at once,
// advance()). There the restart's MCR window is noisy for a small island (an island of 4 breeds
// one child a generation beside its 3 model picks): a due restart that stopped the proposals
// drained the queue, was often no longer due once it had (the window's next verdict), and left
// a replayed island of 4 68 % busy with 14.5 settings queued; breeding on, 86 % and 18.6
// (docs/studies/2026-12-05-small-islands-queue.md). Breeding on, though, an island of 16 on a
// GPU never restarted on the MCR: the stale best is what restarts it
// (docs/studies/2026-12-06-restarts-on-a-stale-best.md).
std::optional<Brood> IslandStrategy::propose_next(const StepContext& ctx) {
  if (exhausted_ || (holds_proposals() && epoch_ready()))
    return std::nullopt;
  std::int64_t room = -1;
  if (ctx.room >= 0) {
    room = ctx.room - late_ - pipeline_.owed();
    if (room <= 0)
      return std::nullopt;
  }
  Brood b = island_->propose_offspring(room);
  last_fresh_ = static_cast<int>(b.fresh.size());
  return b;
}

int IslandStrategy::settle_next(StepContext& ctx, bool early, int quorum) {
  const auto propose = [&] { return propose_next(ctx); };
  const QueuedBrood q = pipeline_.take(
      ctx.evaluator, early ? std::function<std::optional<Brood>()>(propose) : nullptr,
      [&](const Setting& s, const Completion& c) { on_late(ctx, s, c); }, early,
      [&] { return ctx.spent(); }, quorum);
  const int measured = island_->settle(q.brood, q.results, ctx.sink, ctx.now(), q.timelines);
  return measured + std::exchange(late_, 0);
}

void IslandStrategy::on_late(StepContext& ctx, const Setting& s, const Completion& c) {
  island_->late(s, c.measurement, ctx.sink, ctx.now(), c.timeline);
  ++late_;
}

// Opens the next epoch that still has an unmeasured setting and restarts the island on it.
GenerationOutcome IslandStrategy::restart(StepContext& ctx) {
  constexpr int kEpochTries = 4;
  GenerationOutcome out;
  const auto best = island_->best();
  const Reindex& current = epoch_alpha_ ? *epoch_alpha_ : alphabet_;
  // The setting kept in cell 0: the best ever seen, else the population's best.
  Setting kept =
      best ? best->first
           : current.setting(island_->population()[select_best(island_->population(), 1)[0]].id);
  std::unique_ptr<Reindex> next;
  int epoch = epoch_;
  if (extras_.refill) {
    for (int t = 0; t < kEpochTries; ++t) {
      next = epoch_alphabet(epoch_ + 1 + t, kept);
      epoch = epoch_ + 1 + t;
      IslandState cache_only = island_->state();
      cache_only.population.clear();
      const Island probe(*next, torus_, ops_, cache_only);
      if (probe.unmeasured() > 0)
        break;
      next.reset();
    }
  } else if (island_->unmeasured() > 0) {
    epoch = epoch_ + 1;
  }
  if (!next && (extras_.refill || epoch == epoch_)) {
    // Every setting this island may draw is measured or queued: the stragglers still queued
    // (a run that depends on timing leaves them queued) are recorded before the island stops.
    pipeline_.drain_late(
        ctx.evaluator, [&](const Setting& s, const Completion& c) { on_late(ctx, s, c); },
        [&] { return ctx.spent(); });
    out.measured += std::exchange(late_, 0);
    exhausted_ = out.exhausted = true;
    return out;
  }
  // Cell 0 keeps `kept`; an alphabet without it (a best received from an island of
  // another alphabet, with no epoch opened) keeps the population's best instead.
  const int population_best =
      island_->population().empty()
          ? 0
          : island_->population()[select_best(island_->population(), 1)[0]].id;
  IslandState state = island_->state();
  state.population.clear();
  if (next) {
    epoch_alpha_ = std::move(next);
    epoch_kept_ = kept;
  }
  epoch_ = epoch;
  ++restarts_;
  out.restart = true;
  restart_due_ = false;
  best_at_ = island_->evaluations();
  window_gens_ = 0;
  window_repeats_ = window_children_ = 0;
  const Reindex& alpha = epoch_alpha_ ? *epoch_alpha_ : alphabet_;
  island_.emplace(alpha, torus_, ops_, state);
  island_->set_clock_offset(ctx.clock_offset);
  // The stragglers still queued are the new island's too: it proposes none of them again.
  if (std::vector<Setting> owed = pipeline_.straggling(); !owed.empty()) {
    Brood queued;
    queued.kind = Brood::Kind::initial;
    queued.fresh = std::move(owed);
    island_->adopt(queued);
  }
  // (The late measurements drained before it and the stragglers count against the cap.)
  std::optional<Brood> b = island_->propose_restart(
      alpha.id_of(kept).value_or(population_best),
      ctx.room < 0 ? -1 : std::max<std::int64_t>(0, ctx.room - late_ - pipeline_.owed()));
  if (b) {
    const int fresh = static_cast<int>(b->fresh.size());
    pipeline_.push(std::move(*b), ctx.evaluator);
    // In a run that depends on timing the restart's population settles once three quarters
    // of it has come back; the rest come back as late measurements and take the cells left
    // unmeasured (Island::late). Waiting for its slowest compiles instead left the GPU idle:
    // in replay of box2d2r 8192² (120 s, 12 seeds, a restart on every 100 stale
    // measurements) 1,725 measurements against 1,926 now, the same 56.5 to within 5 % of the
    // optimum (docs/studies/2026-12-06-restarts-on-a-stale-best.md).
    out.measured = settle_next(ctx, false, timing_ ? (3 * fresh + 3) / 4 : -1);
  }
  return out;
}

// Before generation 1: every island's generation 0 (the first batch each island sent:
// its best and every measurement it made), into the cache only. Every island then fits
// its first model on the run's whole generation 0. Resumed from generation 0, the
// migrator's first batch is generation 0's again (run/recording.hpp), so the answer is
// the same.
double IslandStrategy::prepare(int g, Migrator& migrator, StepContext& /*ctx*/,
                               const std::function<double()>& wall) {
  if (g != 1 || !extras_.gather_first || !policy_.due(0))
    return 0;
  const double t0 = wall();
  const std::vector<Migrant> all = migrator.gather_first();
  const double wait_s = wall() - t0;
  island_->learn(all);
  return wait_s;
}

// Emigrants to both neighbours when due, then whatever has arrived.
double IslandStrategy::exchange(int g, Migrator& migrator, StepContext& ctx,
                                const std::function<double()>& wall) {
  double wait_s = 0;
  if (policy_.due(g)) {
    const std::vector<Migrant> out = island_->emigrants(policy_.count, rank_);
    const double t0 = wall();
    migrator.send(out);
    island_->sent();
    wait_s += wall() - t0;
    for (const Migrant& m : out) {
      if (!m.measurement_only)  // shared measurements: no row (docs/trace.md)
        ctx.sink.migration({g, +1, -1, canonical_key(m.setting), m.measurement.median_ms});
    }
  }
  // The neighbours' batches are not all here: measure meanwhile (ga.migration.fill).
  while (ctx.fill && !migrator.ready() && ctx.fill()) {
  }
  const double t0 = wall();
  const std::vector<Migrant> in = migrator.receive();
  wait_s += wall() - t0;
  for (const Migrant& m : in) {
    if (!m.measurement_only)
      ctx.sink.migration({g, -1, m.source_rank, canonical_key(m.setting), m.measurement.median_ms});
  }
  island_->immigrate(in, ctx.sink, ctx.now());
  return wait_s;
}

bool IslandStrategy::pump(StepContext& ctx) {
  if (exhausted_ || pipeline_.broods() == 0)
    return false;  // between generation 0 and 1 (the gather), or nothing to continue
  island_->set_clock_offset(ctx.clock_offset);
  return pipeline_.pump(ctx.evaluator, [&] { return propose_next(ctx); });
}

int IslandStrategy::extra(StepContext& ctx) {
  if (exhausted_ || ctx.room == 0)
    return 0;
  island_->set_clock_offset(ctx.clock_offset);
  return island_->extra(ctx.evaluator, ctx.sink, static_cast<int>(ctx.room));
}

PopulationView IslandStrategy::population() const {
  return {island_->mcr(), island_->unique_genomes(), island_->mean_fitness()};
}

std::vector<std::uint8_t> IslandStrategy::save() const {
  const IslandState s = island_->state();
  ByteWriter w;
  w.put(kIslandTag);
  w.put(static_cast<std::int32_t>(s.generation));
  w.put(static_cast<std::uint32_t>(s.population.size()));
  for (const Individual& ind : s.population) {
    w.put(static_cast<std::int32_t>(ind.id));
    w.put_ints(ind.genome);
    w.put_measurement(ind.measurement);
  }
  put_cache(w, s.cache);
  put_best(w, s.best);
  for (const std::uint64_t word : s.rng)
    w.put(word);
  w.put(s.next_eval_id);
  w.put(s.evaluations);
  w.put(static_cast<std::uint32_t>(s.forward.size()));
  for (const Setting& f : s.forward)
    w.put_setting(f);
  w.put(static_cast<std::int32_t>(epoch_));
  w.put(static_cast<std::int32_t>(restarts_));
  w.put(static_cast<std::uint8_t>(restart_due_));
  w.put(static_cast<std::uint8_t>(exhausted_));
  w.put(static_cast<std::int32_t>(window_gens_));
  w.put(window_repeats_);
  w.put(window_children_);
  w.put(static_cast<std::uint8_t>(epoch_kept_.has_value()));
  if (epoch_kept_)
    w.put_setting(*epoch_kept_);
  pipeline_.save(w);
  w.put(static_cast<std::int32_t>(late_));
  w.put(best_at_);
  w.put(best_fitness_);
  return std::move(w.bytes);
}

void IslandStrategy::restore(const std::vector<std::uint8_t>& bytes) {
  ByteReader r = reader_of(bytes);
  const std::uint32_t tag = r.get<std::uint32_t>();
  if (tag != kIslandTag && tag != kIslandTag4 && tag != kIslandTag3)
    damaged_state();
  IslandState s;
  s.generation = r.get<std::int32_t>();
  s.population.resize(r.get<std::uint32_t>());
  if (!s.population.empty() && static_cast<int>(s.population.size()) != torus_.cells())
    damaged_state();
  for (Individual& ind : s.population) {
    ind.id = r.get<std::int32_t>();
    ind.genome = r.get_ints();
    ind.measurement = r.get_measurement();
  }
  s.cache = get_cache(r);
  s.best = get_best(r);
  for (std::uint64_t& word : s.rng)
    word = r.get<std::uint64_t>();
  s.next_eval_id = r.get<std::int64_t>();
  s.evaluations = r.get<std::int64_t>();
  s.forward.resize(r.get<std::uint32_t>());
  for (Setting& f : s.forward)
    f = r.get_setting();
  epoch_ = r.get<std::int32_t>();
  restarts_ = r.get<std::int32_t>();
  restart_due_ = r.get<std::uint8_t>() != 0;
  exhausted_ = r.get<std::uint8_t>() != 0;
  window_gens_ = r.get<std::int32_t>();
  window_repeats_ = r.get<std::int64_t>();
  window_children_ = r.get<std::int64_t>();
  epoch_kept_.reset();
  if (r.get<std::uint8_t>())
    epoch_kept_ = r.get_setting();
  if (epoch_ < 0 || restarts_ < 0 || (epoch_kept_ && !extras_.refill) || window_gens_ < 0 ||
      window_gens_ >= window_ || window_repeats_ < 0 || window_repeats_ > window_children_)
    damaged_state();
  epoch_alpha_.reset();
  if (epoch_kept_)
    epoch_alpha_ = epoch_alphabet(epoch_, *epoch_kept_);
  const Reindex& alpha = epoch_alpha_ ? *epoch_alpha_ : alphabet_;
  for (const Individual& ind : s.population) {
    if (ind.id < 0 || ind.id >= alpha.size())
      damaged_state();
  }
  for (const Setting& f : s.forward) {  // a forward is always a cached measurement
    const auto at =
        std::lower_bound(s.cache.begin(), s.cache.end(), f,
                         [](const auto& row, const Setting& x) { return row.first < x; });
    if (at == s.cache.end() || !(at->first == f))
      damaged_state();
  }
  island_.emplace(alpha, torus_, ops_, s);
  pipeline_.clear();
  late_ = 0;
  if (tag != kIslandTag3) {
    try {
      pipeline_.restore(r, *island_);
    } catch (const std::invalid_argument&) {
      damaged_state();
    }
    late_ = r.get<std::int32_t>();
  }
  // A state of before the stale rule counts from its resume.
  if (tag == kIslandTag) {
    best_at_ = r.get<std::int64_t>();
    best_fitness_ = r.get<double>();
  } else {
    best_at_ = island_->evaluations();
    best_fitness_ = island_->best() ? island_->best()->second.fitness() : 0;
  }
  if (!r.done() || late_ < 0 || best_at_ < 0 || best_at_ > island_->evaluations() ||
      !(best_fitness_ >= 0 && std::isfinite(best_fitness_)))
    damaged_state();
}

}  // namespace isletune
