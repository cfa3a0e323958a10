// The search loop and the random strategies (see search.hpp); the island GA's strategy is
// ga/island_strategy.cpp.
#include "ga/search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "ga/state_codec.hpp"

namespace isletune {
namespace {

using namespace state_codec;

constexpr std::uint32_t kRandomTag = 0x524e4453U;  // "RNDS"

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
  ctx.deadline = deadline();
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
  r.restart = outcome.restart ? 1 : 0;
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
  if (finished() || generation_ < 0 || elapsed() >= deadline())
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
