// The search loop and the strategies it runs (see search.hpp).
#include "ga/search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "common/error.hpp"
#include "eval/byte_codec.hpp"

namespace isletune {
namespace {

// A strategy's bytes that do not read back: a resume from a damaged or foreign state.
[[noreturn]] void damaged_state() {
  throw InputError("the search state to resume is damaged or of another isletune version.");
}

ByteReader reader_of(const std::vector<std::uint8_t>& bytes) {
  return ByteReader(bytes, [] { damaged_state(); });
}

void put_best(ByteWriter& w, const std::optional<std::pair<Setting, Measurement>>& best) {
  w.put(static_cast<std::uint8_t>(best.has_value()));
  if (best) {
    w.put_setting(best->first);
    w.put_measurement(best->second);
  }
}

std::optional<std::pair<Setting, Measurement>> get_best(ByteReader& r) {
  if (!r.get<std::uint8_t>())
    return std::nullopt;
  Setting s = r.get_setting();
  return std::make_pair(s, r.get_measurement());
}

// A cache as rows sorted by setting, so equal caches give equal bytes.
void put_cache(ByteWriter& w, std::vector<std::pair<Setting, Measurement>> rows) {
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  w.put(static_cast<std::uint32_t>(rows.size()));
  for (const auto& [setting, m] : rows) {
    w.put_setting(setting);
    w.put_measurement(m);
  }
}

std::vector<std::pair<Setting, Measurement>> get_cache(ByteReader& r) {
  std::vector<std::pair<Setting, Measurement>> rows(r.get<std::uint32_t>());
  for (auto& [setting, m] : rows) {
    setting = r.get_setting();
    m = r.get_measurement();
  }
  return rows;
}

constexpr std::uint32_t kIslandTag = 0x49534c34U;   // "ISL4" (the pipeline)
constexpr std::uint32_t kIslandTag3 = 0x49534c33U;  // "ISL3" (restart epochs, forwards)
constexpr std::uint32_t kRandomTag = 0x524e4453U;   // "RNDS"

}  // namespace

// ---- the loop --------------------------------------------------------------------------

// Forwards records to the run's sink, keeping cache hits out of the evaluation rows and
// counting them for the generation record.
class SearchLoop::CountingSink final : public TraceSink {
 public:
  explicit CountingSink(TraceSink& inner) : inner_(inner) {}
  void evaluation(const EvaluationRecord& r) override {
    if (r.cached && !r.migrant) {
      ++cache_hits_;
      return;
    }
    EvaluationRecord numbered = r;
    numbered.eval_id = rows_++;
    inner_.evaluation(numbered);
  }
  void generation(const GenerationRecord& r) override { inner_.generation(r); }
  void migration(const MigrationRecord& r) override { inner_.migration(r); }
  void flush() override { inner_.flush(); }
  // Cache hits since the last call.
  int take_cache_hits() { return std::exchange(cache_hits_, 0); }
  // Rows written so far (the next eval_id).
  [[nodiscard]] std::int64_t rows() const { return rows_; }
  void set_rows(std::int64_t rows) { rows_ = rows; }

 private:
  TraceSink& inner_;
  int cache_hits_ = 0;
  std::int64_t rows_ = 0;
};

SearchLoop::SearchLoop(const GaSettings& settings, SearchStrategy& strategy, Evaluator& evaluator,
                       Migrator& migrator, StopVote& vote, TraceSink& sink, SearchHooks hooks,
                       const std::optional<SearchState>& resume)
    : settings_(settings),
      strategy_(strategy),
      evaluator_(evaluator),
      migrator_(migrator),
      vote_(vote),
      sink_(std::make_unique<CountingSink>(sink)),
      hooks_(std::move(hooks)) {
  settings_.validate();
  // (validate() requires a budget: with mcr_threshold 0 and no generation limit an
  // explicit budget is set, and converged islands restart to spend it.)
  rules_ = settings_.stop_rules(strategy_.converges());
  if (resume) {
    strategy_.restore(resume->strategy);
    strategy_.requeue(evaluator_, evaluator_.restore_queue(resume->queue));
    generation_ = resume->generation;
    evaluations_ = resume->evaluations;
    sink_->set_rows(resume->rows);
    stopped_ = resume->stopped;
  }
  clock_offset_ = (resume ? resume->elapsed_s : 0.0) - evaluator_.clock_s();
}

SearchLoop::~SearchLoop() = default;

double SearchLoop::elapsed() const {
  return evaluator_.clock_s() + clock_offset_;
}

// One generation: advance within the cap, exchange, wish, vote, record, snapshot, flush.
bool SearchLoop::step() {
  if (finished())
    return false;
  const int g = generation_ + 1;
  StepContext ctx{evaluator_, *sink_, settings_.evaluations_left(evaluations_), clock_offset_, {}};
  // Waits (with drift) keep the evaluator's queue full, or measure fills.
  if (settings_.fills_waits() || (settings_.migration_drift >= 0 &&
                                  overlaps_generations(evaluator_, settings_.pipeline_broods())))
    ctx.fill = [this] { return fill(); };
  double wait_s = 0;
  if (migrator_.neighbours() > 0)
    wait_s += strategy_.prepare(g, migrator_, ctx, [this] { return wall(); });
  if (hooks_.on_prepared)
    hooks_.on_prepared();
  const GenerationOutcome outcome = strategy_.advance(g, ctx);
  generation_ = g;
  evaluations_ += outcome.measured;

  if (migrator_.neighbours() > 0)
    wait_s += strategy_.exchange(g, migrator_, ctx, [this] { return wall(); });
  // The vote would wait for a slower island: measure meanwhile (ga.migration.fill).
  while (ctx.fill && !vote_.ready() && ctx.fill()) {
  }

  const PopulationView pop = strategy_.population();
  const IslandProgress progress{g, evaluations_, pop.mcr, elapsed()};
  StopReason wish = rules_->check(progress);
  if (outcome.exhausted && wish == StopReason::none)
    wish = StopReason::max_evaluations;
  if (hooks_.interrupted && hooks_.interrupted()) {
    if (wish == StopReason::none || StopReason::signal < wish)
      wish = StopReason::signal;
  }
  double t0 = wall();
  const StopReason decision = settings_.generation_limit(g, vote_.vote(g, wish));
  wait_s += wall() - t0;

  GenerationRecord r;
  r.generation = g;
  r.wall_s = elapsed();
  const auto best = strategy_.best();
  r.best_ms = best ? best->second.median_ms : std::numeric_limits<double>::quiet_NaN();
  r.mean_fitness = pop.mean_fitness;
  r.mcr = pop.mcr;
  r.unique_genomes = pop.unique_genomes;
  r.evaluations = outcome.measured + static_cast<int>(filled_);
  r.fills = static_cast<int>(filled_);
  filled_ = 0;
  r.cache_hits = sink_->take_cache_hits();
  if (hooks_.on_generation) {
    t0 = wall();
    hooks_.on_generation(r);
    wait_s += wall() - t0;
  }
  r.wait_s = wait_s;
  sink_->generation(r);
  stopped_ = decision;
  if (hooks_.on_snapshot)
    hooks_.on_snapshot(snapshot());
  sink_->flush();
  return !finished();
}

bool SearchLoop::fill() {
  if (finished() || generation_ < 0 ||
      (settings_.time_budget_s > 0 && elapsed() >= settings_.time_budget_s))
    return false;
  const std::int64_t room = settings_.evaluations_left(evaluations_);
  StepContext pumped{evaluator_, *sink_, room, clock_offset_, {}};
  if (strategy_.pump(pumped))
    return true;
  if (room == 0 || settings_.fill_picks <= 0)
    return false;
  const std::int64_t batch = settings_.fill_picks;
  StepContext ctx{evaluator_, *sink_, room < 0 ? batch : std::min(room, batch), clock_offset_, {}};
  const int measured = strategy_.extra(ctx);
  evaluations_ += measured;
  filled_ += measured;
  return measured > 0;
}

SearchResult SearchLoop::result() const {
  SearchResult out;
  if (const auto best = strategy_.best()) {
    out.best = best->first;
    out.best_measurement = best->second;
  }
  out.reason = stopped_;
  out.generations = std::max(0, generation_);
  out.evaluations = evaluations_;
  return out;
}

SearchState SearchLoop::snapshot() const {
  SearchState s;
  s.generation = generation_;
  s.evaluations = evaluations_;
  s.rows = sink_->rows();
  s.elapsed_s = elapsed();
  s.stopped = stopped_;
  s.strategy = strategy_.save();
  s.queue = evaluator_.save_queue();
  return s;
}

SearchResult run_search(const GaSettings& settings, SearchStrategy& strategy, Evaluator& evaluator,
                        Migrator& migrator, StopVote& vote, TraceSink& sink,
                        const SearchHooks& hooks, const std::optional<SearchState>& resume) {
  SearchLoop loop(settings, strategy, evaluator, migrator, vote, sink, hooks, resume);
  while (loop.step()) {
  }
  return loop.result();
}

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
      pipeline_(settings.pipeline_broods()) {
  pipeline_.set_on_result(
      [this](const Setting& s, const Measurement& m) { island_->take_in(s, m); });
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
    return out;
  }
  if (exhausted_) {
    out.exhausted = true;
    return out;
  }
  if (restart_due_ && pipeline_.broods() == 0) {
    // A restart may open another epoch's alphabet: nothing of the old one stays queued.
    pipeline_.drain_late(ctx.evaluator,
                         [&](const Setting& s, const Completion& c) { on_late(ctx, s, c); });
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
  return out;
}

// More generations while earlier ones' measurements come back, within the cap on new
// measurements (what is queued counts), and none once a restart is due.
std::optional<Brood> IslandStrategy::propose_next(const StepContext& ctx) {
  if (restart_due_ || exhausted_)
    return std::nullopt;
  std::int64_t room = -1;
  if (ctx.room >= 0) {
    room = ctx.room - late_ - pipeline_.owed();
    if (room <= 0)
      return std::nullopt;
  }
  return island_->propose_offspring(room);
}

int IslandStrategy::settle_next(StepContext& ctx, bool early) {
  const auto propose = [&] { return propose_next(ctx); };
  const QueuedBrood q = pipeline_.take(
      ctx.evaluator, early ? std::function<std::optional<Brood>()>(propose) : nullptr,
      [&](const Setting& s, const Completion& c) { on_late(ctx, s, c); }, early);
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
    exhausted_ = out.exhausted = true;  // every setting this island may draw is measured
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
  restart_due_ = false;
  window_gens_ = 0;
  window_repeats_ = window_children_ = 0;
  const Reindex& alpha = epoch_alpha_ ? *epoch_alpha_ : alphabet_;
  island_.emplace(alpha, torus_, ops_, state);
  island_->set_clock_offset(ctx.clock_offset);
  // (The late measurements drained before it count against the cap.)
  std::optional<Brood> b =
      island_->propose_restart(alpha.id_of(kept).value_or(population_best),
                               ctx.room < 0 ? -1 : std::max<std::int64_t>(0, ctx.room - late_));
  if (b) {
    pipeline_.push(std::move(*b), ctx.evaluator);
    out.measured = settle_next(ctx, false);
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
  return std::move(w.bytes);
}

void IslandStrategy::restore(const std::vector<std::uint8_t>& bytes) {
  ByteReader r = reader_of(bytes);
  const std::uint32_t tag = r.get<std::uint32_t>();
  if (tag != kIslandTag && tag != kIslandTag3)
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
  pipeline_ = Pipeline(pipeline_.max_broods());
  pipeline_.set_on_result(
      [this](const Setting& s, const Measurement& m) { island_->take_in(s, m); });
  late_ = 0;
  if (tag == kIslandTag) {
    try {
      pipeline_.restore(r, *island_);
    } catch (const std::invalid_argument&) {
      damaged_state();
    }
    late_ = r.get<std::int32_t>();
  }
  if (!r.done() || late_ < 0)
    damaged_state();
}

// ---- random and sampled-random ---------------------------------------------------------

RandomStrategy::RandomStrategy(const GaSettings& settings,
                               std::function<std::optional<Setting>(Rng&)> draw, std::uint64_t seed,
                               int rank)
    : population_(settings.population),
      draw_(std::move(draw)),
      rng_(seed, static_cast<std::uint64_t>(rank)) {}

// A seeded Fisher-Yates order of the distinct sampled settings, consumed front to back.
RandomStrategy::RandomStrategy(const GaSettings& settings, const SampledSet& sampled,
                               std::uint64_t seed, int rank)
    : population_(settings.population),
      order_(sampled.settings),
      rng_(seed, static_cast<std::uint64_t>(rank)) {
  std::sort(order_.begin(), order_.end());
  order_.erase(std::unique(order_.begin(), order_.end()), order_.end());
  Rng shuffle(seed, 0x52414e44 + static_cast<std::uint64_t>(rank));  // "RAND"
  for (std::size_t i = order_.size(); i > 1; --i)
    std::swap(order_[i - 1], order_[shuffle.below(i)]);
}

std::optional<Setting> RandomStrategy::next() {
  if (draw_)
    return draw_(rng_);
  if (cursor_ >= static_cast<std::int64_t>(order_.size()))
    return std::nullopt;
  return order_[static_cast<std::size_t>(cursor_++)];
}

// `population` proposals; the first `room` new ones are measured as one batch.
GenerationOutcome RandomStrategy::advance(int g, StepContext& ctx) {
  // Generations in a row whose proposals were all repeats: after kIdleLimit of them the
  // space is treated as exhausted, since no budget that counts measurements or the
  // (replay) evaluator clock would ever be reached.
  constexpr int kIdleLimit = 64;
  GenerationOutcome out;
  std::vector<Setting> batch;
  while (static_cast<int>(batch.size()) < population_) {
    std::optional<Setting> s = next();
    if (!s) {
      out.exhausted = true;
      break;
    }
    batch.push_back(std::move(*s));
  }
  std::vector<Setting> pending;
  enum class Kind { fresh, repeat, past_cap };
  std::vector<Kind> kind(batch.size(), Kind::fresh);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (cache_.count(batch[i]) ||
        std::find(pending.begin(), pending.end(), batch[i]) != pending.end()) {
      kind[i] = Kind::repeat;
    } else if (ctx.room >= 0 && static_cast<std::int64_t>(pending.size()) >= ctx.room) {
      kind[i] = Kind::past_cap;
    } else {
      pending.push_back(batch[i]);
    }
  }
  if (!pending.empty()) {
    std::vector<Measurement> results = ctx.evaluator.evaluate(pending);
    if (results.size() != pending.size()) {
      throw std::runtime_error("Evaluator '" + ctx.evaluator.name() + "' returned " +
                               std::to_string(results.size()) + " results for " +
                               std::to_string(pending.size()) + " settings");
    }
    for (std::size_t i = 0; i < pending.size(); ++i) {
      const Measurement& m = results[i];
      if (m.fitness() > 0 && (!best_ || m.fitness() > best_->second.fitness()))
        best_ = std::make_pair(pending[i], m);
      cache_.emplace(pending[i], m);
    }
  }
  out.measured = static_cast<int>(pending.size());
  idle_ = pending.empty() ? idle_ + 1 : 0;
  if (idle_ >= kIdleLimit)
    out.exhausted = true;
  const double wall_s = ctx.now();
  double fitness_sum = 0;
  int recorded = 0;
  std::vector<Setting> distinct;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (kind[i] == Kind::past_cap)
      continue;
    EvaluationRecord r;
    r.eval_id = next_eval_id_++;
    r.generation = g;
    r.cell = static_cast<int>(i);
    r.setting = batch[i];
    r.measurement = cache_.at(batch[i]);
    r.wall_s = wall_s;
    r.cached = kind[i] == Kind::repeat;
    fitness_sum += r.measurement.fitness();
    ++recorded;
    distinct.push_back(batch[i]);
    ctx.sink.evaluation(r);
  }
  std::sort(distinct.begin(), distinct.end());
  view_.mean_fitness = recorded == 0 ? 0.0 : fitness_sum / recorded;
  view_.unique_genomes =
      static_cast<int>(std::unique(distinct.begin(), distinct.end()) - distinct.begin());
  view_.mcr = 0;
  return out;
}

std::vector<std::uint8_t> RandomStrategy::save() const {
  ByteWriter w;
  w.put(kRandomTag);
  w.put(cursor_);
  for (const std::uint64_t word : rng_.state())
    w.put(word);
  put_cache(w, {cache_.begin(), cache_.end()});
  put_best(w, best_);
  w.put(next_eval_id_);
  w.put(static_cast<std::int32_t>(idle_));
  w.put(view_.mean_fitness);
  w.put(static_cast<std::int32_t>(view_.unique_genomes));
  return std::move(w.bytes);
}

void RandomStrategy::restore(const std::vector<std::uint8_t>& bytes) {
  ByteReader r = reader_of(bytes);
  if (r.get<std::uint32_t>() != kRandomTag)
    damaged_state();
  cursor_ = r.get<std::int64_t>();
  if (cursor_ < 0 || (!draw_ && cursor_ > static_cast<std::int64_t>(order_.size())))
    damaged_state();
  Rng::State state{};
  for (std::uint64_t& word : state)
    word = r.get<std::uint64_t>();
  rng_.set_state(state);
  cache_.clear();
  for (auto& [setting, m] : get_cache(r))
    cache_.emplace(setting, m);
  best_ = get_best(r);
  next_eval_id_ = r.get<std::int64_t>();
  idle_ = r.get<std::int32_t>();
  view_.mean_fitness = r.get<double>();
  view_.unique_genomes = r.get<std::int32_t>();
  if (!r.done())
    damaged_state();
}

// ---- entry points ----------------------------------------------------------------------

IslandSearch::IslandSearch(const GaSettings& settings, const Reindex& alphabet,
                           Evaluator& evaluator, Migrator& migrator, StopVote& vote,
                           TraceSink& sink, std::uint64_t seed, int rank, SearchHooks hooks,
                           const std::optional<SearchState>& resume, IslandExtras extras)
    : strategy_(settings, alphabet, seed, rank, std::move(extras)),
      loop_(settings, strategy_, evaluator, migrator, vote, sink, std::move(hooks), resume) {}

SearchResult run_island(const GaSettings& settings, const SampledSet& sampled, Evaluator& evaluator,
                        Migrator& migrator, StopVote& vote, TraceSink& sink, std::uint64_t seed,
                        int rank, const SearchHooks& hooks,
                        const std::optional<SearchState>& resume, IslandExtras extras) {
  const Reindex alphabet(sampled.settings, settings.encoding, settings.gray);
  IslandStrategy strategy(settings, alphabet, seed, rank, std::move(extras));
  return run_search(settings, strategy, evaluator, migrator, vote, sink, hooks, resume);
}

SearchResult run_global_ga(const GaSettings& settings, const std::vector<Setting>& alphabet,
                           Evaluator& evaluator, StopVote& vote, TraceSink& sink,
                           std::uint64_t seed, int rank, const SearchHooks& hooks,
                           const std::optional<SearchState>& resume) {
  SampledSet all;
  all.settings = alphabet;
  NoMigrator alone;
  return run_island(settings, all, evaluator, alone, vote, sink, seed, rank, hooks, resume);
}

SearchResult run_random(const GaSettings& settings,
                        const std::function<std::optional<Setting>(Rng&)>& draw,
                        Evaluator& evaluator, StopVote& vote, TraceSink& sink, std::uint64_t seed,
                        int rank, const SearchHooks& hooks,
                        const std::optional<SearchState>& resume) {
  RandomStrategy strategy(settings, draw, seed, rank);
  NoMigrator alone;
  return run_search(settings, strategy, evaluator, alone, vote, sink, hooks, resume);
}

SearchResult run_sampled_random(const GaSettings& settings, const SampledSet& sampled,
                                Evaluator& evaluator, StopVote& vote, TraceSink& sink,
                                std::uint64_t seed, int rank, const SearchHooks& hooks,
                                const std::optional<SearchState>& resume) {
  RandomStrategy strategy(settings, sampled, seed, rank);
  NoMigrator alone;
  return run_search(settings, strategy, evaluator, alone, vote, sink, hooks, resume);
}

}  // namespace isletune
