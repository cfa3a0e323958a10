// The cellular island: breeding, batch evaluation with a cache, replacement, migration.
#include "ga/island.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "ga/variation.hpp"
#include "kernel/registry.hpp"

namespace isletune {

std::vector<Param> model_interactions() {
  std::array<bool, kParamCount> named{};
  for (const OcEntry& e : oc_table()) {
    for (const OcValue& v : e.oc->values)
      named[static_cast<std::size_t>(v.param)] = true;
  }
  std::vector<Param> out;
  if (named[static_cast<std::size_t>(Param::merge)])
    out.push_back(Param::merge);
  for (std::size_t i = 0; i < kParamCount; ++i) {
    if (named[i] && static_cast<Param>(i) != Param::merge)
      out.push_back(static_cast<Param>(i));
  }
  return out;
}

// Cells by fitness, best first; stable so ties keep the lower cell first.
std::vector<int> select_best(std::span<const Individual> population, int count) {
  std::vector<int> cells(population.size());
  for (std::size_t i = 0; i < cells.size(); ++i)
    cells[i] = static_cast<int>(i);
  std::stable_sort(cells.begin(), cells.end(),
                   [&](int a, int b) { return population[a].fitness() > population[b].fitness(); });
  cells.resize(std::min<std::size_t>(cells.size(), static_cast<std::size_t>(std::max(0, count))));
  return cells;
}

// Fittest immigrant first, each against the worst cell at that moment; an immigrant the
// population already holds (same sampled-setting id) takes no cell.
std::vector<int> replace_worst_if_better(std::vector<Individual>& population,
                                         std::span<const Individual> immigrants) {
  std::vector<int> order(immigrants.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return immigrants[a].fitness() > immigrants[b].fitness(); });
  std::vector<int> taken(immigrants.size(), -1);
  for (const int i : order) {
    const bool held = std::any_of(population.begin(), population.end(),
                                  [&](const Individual& p) { return p.id == immigrants[i].id; });
    if (held)
      continue;
    int worst = 0;
    for (int c = 1; c < static_cast<int>(population.size()); ++c) {
      if (population[c].fitness() < population[worst].fitness())
        worst = c;
    }
    if (!population.empty() && immigrants[i].fitness() > population[worst].fitness()) {
      population[worst] = immigrants[i];
      taken[i] = worst;
    }
  }
  return taken;
}

namespace {

// The ids of the `count` best (lowest predicted) entries of `ranked` in this island's share
// (GaOperators::pick_stride): with hash shares the entries `owned` admits, else every
// ops.pick_stride-th from ops.pick_offset on (also with hash shares up to generation
// ops.ranked_until). Fewer than `count` in the share: the best of the rest.
std::vector<int> strided_best(std::vector<std::pair<double, int>>& ranked, std::size_t count,
                              const GaOperators& ops, int generation,
                              const std::function<bool(int)>& owned) {
  const std::size_t stride = static_cast<std::size_t>(std::max(1, ops.pick_stride));
  std::vector<int> out;
  if (ops.hash_shares && stride > 1 && generation > ops.ranked_until) {
    std::vector<std::pair<double, int>> mine;
    for (const auto& entry : ranked) {
      if (owned(entry.second))
        mine.push_back(entry);
    }
    const std::size_t need = std::min(mine.size(), count);
    std::partial_sort(mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(need), mine.end());
    for (std::size_t i = 0; i < need; ++i)
      out.push_back(mine[i].second);
    if (out.size() < count) {
      const std::size_t all = std::min(ranked.size(), count + out.size());
      std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(all),
                        ranked.end());
      for (std::size_t i = 0; i < all && out.size() < count; ++i) {
        if (std::find(out.begin(), out.end(), ranked[i].second) == out.end())
          out.push_back(ranked[i].second);
      }
    }
    return out;
  }
  const std::size_t offset = static_cast<std::size_t>(std::max(0, ops.pick_offset)) % stride;
  const std::size_t need = std::min(ranked.size(), offset + count * stride);
  std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(need),
                    ranked.end());
  for (std::size_t i = offset; i < need && out.size() < count; i += stride)
    out.push_back(ranked[i].second);
  // Fewer than `count` in this island's share: the best of the rest.
  for (std::size_t i = 0; i < need && out.size() < count; ++i) {
    if (std::find(out.begin(), out.end(), ranked[i].second) == out.end())
      out.push_back(ranked[i].second);
  }
  return out;
}

}  // namespace

Island::Island(const Reindex& alphabet, const Torus& torus, GaOperators ops, std::uint64_t seed,
               std::uint64_t stream)
    : alphabet_(alphabet), torus_(torus), ops_(ops), rng_(seed, stream) {}

// Restores population, cache, best, engine and counters.
Island::Island(const Reindex& alphabet, const Torus& torus, GaOperators ops,
               const IslandState& state)
    : alphabet_(alphabet), torus_(torus), ops_(ops) {
  if (!state.population.empty() && static_cast<int>(state.population.size()) != torus.cells()) {
    throw std::invalid_argument("IslandState: population does not match the torus");
  }
  rng_.set_state(state.rng);
  generation_ = state.generation;
  population_ = state.population;
  for (const auto& [s, m] : state.cache)
    cache_.emplace(s, m);
  best_ = state.best;
  next_eval_id_ = state.next_eval_id;
  evaluations_ = state.evaluations;
  forward_ = state.forward;
}

bool Island::owns(const Setting& s) const {
  const std::uint64_t stride = static_cast<std::uint64_t>(std::max(1, ops_.pick_stride));
  return stride == 1 || !ops_.hash_shares ||
         setting_hash(s) % stride == static_cast<std::uint64_t>(ops_.pick_offset) % stride;
}

// Keeps the fittest successful measurement ever seen (the first one on ties).
void Island::note_best(const Setting& s, const Measurement& m) {
  if (m.fitness() <= 0)
    return;
  if (!best_ || m.fitness() > best_->second.fitness())
    best_ = std::make_pair(s, m);
}

// The ids of the alphabet's settings this island has not measured (nor received).
std::vector<int> Island::unmeasured_ids() const {
  std::vector<int> open;
  for (int id = 0; id < alphabet_.size(); ++id) {
    if (!known(alphabet_.setting(id)))
      open.push_back(id);
  }
  return open;
}

// One evaluator call, its answer checked for one result per setting.
std::vector<Measurement> Island::measure(Evaluator& evaluator, const std::vector<Setting>& batch) {
  std::vector<Measurement> results = evaluator.evaluate(batch);
  if (results.size() != batch.size()) {
    throw std::runtime_error("Evaluator '" + evaluator.name() + "' returned " +
                             std::to_string(results.size()) + " results for " +
                             std::to_string(batch.size()) + " settings");
  }
  return results;
}

// One evaluation row for `ind`, numbered next.
void Island::record(const Individual& ind, int cell, double wall_s, bool known, bool migrant,
                    TraceSink& sink, const Timeline* timeline, int generation) {
  EvaluationRecord r;
  r.eval_id = next_eval_id_++;
  r.generation = generation < 0 ? generation_ : generation;
  r.cell = cell;
  r.genes = ind.genome;
  r.setting = alphabet_.setting(ind.id);
  r.measurement = ind.measurement;
  r.wall_s = wall_s;
  r.cached = known;
  r.migrant = migrant;
  if (timeline) {  // on the search clock
    r.timeline = {timeline->submit_s + clock_offset_, timeline->start_s + clock_offset_,
                  timeline->finish_s + clock_offset_};
  }
  sink.evaluation(r);
}

// Dedupes against what the island knows (measured or queued) and within the batch; the rest
// is the brood's `fresh` settings, queued until settle().
Brood Island::propose(std::vector<int> ids, std::vector<int> cells, std::vector<bool> bred,
                      std::int64_t room, Brood::Kind kind) {
  Brood b;
  b.kind = kind;
  b.first_of.reserve(ids.size());
  std::unordered_map<Setting, int, SettingHash> in_batch;
  for (const int id : ids) {
    const Setting& s = alphabet_.setting(id);
    if (known(s) || in_batch.count(s)) {
      b.first_of.push_back(Brood::kRepeat);
      continue;
    }
    if (room >= 0 && static_cast<std::int64_t>(b.fresh.size()) >= room) {
      b.first_of.push_back(Brood::kDropped);
      continue;
    }
    in_batch.emplace(s, static_cast<int>(b.fresh.size()));
    b.first_of.push_back(static_cast<int>(b.fresh.size()));
    b.fresh.push_back(s);
  }
  for (const Setting& s : b.fresh)
    queued_.insert(s);
  b.ids = std::move(ids);
  b.cells = std::move(cells);
  b.bred = std::move(bred);
  return b;
}

// Takes in the measurements that came back, records every child in cell order, and hands the
// children to the population (all cells, or each cell whose child is fitter).
int Island::settle(const Brood& b, std::span<const std::optional<Measurement>> results,
                   TraceSink& sink, double wall_s, std::span<const Timeline> timelines) {
  const bool next = b.kind == Brood::Kind::offspring || b.kind == Brood::Kind::restart;
  generation_ = next ? generation_ + 1 : 0;
  unsettled_ = next ? std::max(0, unsettled_ - 1) : 0;
  fresh_.clear();
  int measured = 0;
  for (std::size_t i = 0; i < b.fresh.size(); ++i) {
    if (!results[i])
      continue;  // still queued: it comes back later (late())
    queued_.erase(b.fresh[i]);
    note_best(b.fresh[i], *results[i]);
    fresh_.push_back(b.fresh[i]);
    cache_.emplace(b.fresh[i], *results[i]);
    ++measured;
  }
  evaluations_ += measured;
  // Offspring MCR: the share of the children considered (those past the cap are not)
  // that repeat a setting already measured or already in the batch.
  std::ptrdiff_t repeats = 0, considered = 0;
  for (std::size_t i = 0; i < b.first_of.size(); ++i) {
    if (b.first_of[i] == Brood::kDropped || (!b.bred.empty() && !b.bred[i]))
      continue;
    ++considered;
    repeats += b.first_of[i] == Brood::kRepeat ? 1 : 0;
  }
  offspring_counts_ = {static_cast<int>(repeats), static_cast<int>(considered)};
  std::vector<Individual> children;
  children.reserve(b.ids.size());
  for (std::size_t i = 0; i < b.ids.size(); ++i) {
    Individual ind;
    ind.id = b.ids[i];
    ind.genome = alphabet_.encode(b.ids[i]);
    const Setting& s = alphabet_.setting(b.ids[i]);
    const auto at = cache_.find(s);
    // Past the cap, a repeat of a setting still queued, or its own setting still queued (a
    // straggler, also when a neighbour's measurement of it has arrived meanwhile: its row
    // comes with late(), which counts it): unmeasured here (fitness 0, never replaces a
    // cell), no row.
    const int own = b.first_of[i];
    if (own == Brood::kDropped || at == cache_.end() ||
        (own >= 0 && static_cast<std::size_t>(own) < results.size() && !results[own])) {
      children.push_back(std::move(ind));
      continue;
    }
    ind.measurement = at->second;
    const int f = b.first_of[i];
    record(ind, b.cells[i], wall_s, f < 0, false, sink,
           f >= 0 && static_cast<std::size_t>(f) < timelines.size() ? &timelines[f] : nullptr);
    children.push_back(std::move(ind));
  }
  if (b.kind != Brood::Kind::offspring) {
    population_ = std::move(children);
    return measured;
  }
  for (int c = 0; c < torus_.cells(); ++c) {
    if (!(children[c].fitness() > population_[c].fitness()))
      continue;
    const bool held = std::any_of(population_.begin(), population_.end(),
                                  [&](const Individual& p) { return p.id == children[c].id; });
    if (ops_.unique_cells && held)
      continue;
    population_[c] = std::move(children[c]);
  }
  return measured;
}

// A measurement that came back after its brood settled: as an extra() pick would be.
void Island::late(const Setting& s, const Measurement& m, TraceSink& sink, double wall_s,
                  const Timeline& timeline) {
  queued_.erase(s);
  note_best(s, m);
  // Measured here and counted (IslandStrategy counts every late measurement), also when a
  // neighbour's measurement of it arrived while it was queued: then it is not passed on.
  ++evaluations_;
  if (cache_.emplace(s, m).second)
    forward_.push_back(s);  // to the neighbours with the next emigrants
  const std::optional<int> id = alphabet_.id_of(s);
  if (!id)
    return;
  Individual ind;
  ind.id = *id;
  ind.genome = alphabet_.encode(ind.id);
  ind.measurement = m;
  const std::vector<int> taken =
      replace_worst_if_better(population_, std::span<const Individual>(&ind, 1));
  // A row of the generation being formed (its record counts it).
  record(ind, taken.front(), wall_s, false, false, sink, &timeline, generation_ + 1);
}

void Island::take_in(const Brood& b, std::size_t slot, const Measurement& m, bool place) {
  const Setting& s = b.fresh[slot];
  cache_.emplace(s, m);
  // Its cell at once, as settle() would give it (its children in cell order: the first cell
  // it is fitter than, unless the population holds it already), so the proposals made before
  // its own settles breed from it. Taken at settle() instead, a proposal made while its
  // predecessor had one setting left bred from the population of two generations before:
  // 73.5 measurements to within 5 % on box2d2r-8192 against 48.5 (20 seeds; one generation
  // at a time: 49.5). Only while generations overlap: settle() takes its children in cell
  // order, and a child's cell taken before then can keep another child (one its old
  // occupant repeated) out or let it in, so one generation at a time stays as it was. A
  // generation initial or restart replaces the whole population when it settles.
  if (!place || b.kind != Brood::Kind::offspring)
    return;
  for (std::size_t i = 0; i < b.ids.size(); ++i) {
    if (b.first_of[i] == Brood::kDropped || alphabet_.setting(b.ids[i]) != s)
      continue;
    Individual ind;
    ind.id = b.ids[i];
    ind.genome = alphabet_.encode(b.ids[i]);
    ind.measurement = m;
    const int c = b.cells[i];
    if (!(ind.fitness() > population_[c].fitness()))
      continue;
    const bool held = std::any_of(population_.begin(), population_.end(),
                                  [&](const Individual& p) { return p.id == ind.id; });
    if (ops_.unique_cells && held)
      return;
    population_[c] = std::move(ind);
    return;
  }
}

void Island::adopt(const Brood& b) {
  for (std::size_t i = 0; i < b.ids.size(); ++i) {
    if (b.ids[i] < 0 || b.ids[i] >= alphabet_.size() || b.cells[i] < 0 ||
        b.cells[i] >= torus_.cells())
      throw std::invalid_argument("Island::adopt: a proposal of another island");
  }
  if (b.kind == Brood::Kind::offspring && static_cast<int>(b.ids.size()) != torus_.cells())
    throw std::invalid_argument("Island::adopt: a proposal of another island");
  for (const Setting& s : b.fresh) {
    if (!cached(s))
      queued_.insert(s);
  }
  if (b.kind == Brood::Kind::offspring || b.kind == Brood::Kind::restart)
    ++unsettled_;
}

void Island::evaluate(const Brood& b, Evaluator& evaluator, TraceSink& sink) {
  std::vector<Measurement> results;
  if (!b.fresh.empty())
    results = measure(evaluator, b.fresh);
  std::vector<std::optional<Measurement>> got(results.begin(), results.end());
  settle(b, got, sink, evaluator.clock_s() + clock_offset_);
}

// Random initial population.
Brood Island::propose_initial(std::int64_t room, std::span<const int> fixed) {
  std::vector<int> ids(torus_.cells());
  std::vector<int> cells(torus_.cells());
  for (int c = 0; c < torus_.cells(); ++c) {
    ids[c] = static_cast<int>(rng_.below(static_cast<std::uint64_t>(alphabet_.size())));
    if (c < static_cast<int>(fixed.size()) && fixed[c] >= 0 && fixed[c] < alphabet_.size())
      ids[c] = fixed[c];
    cells[c] = c;
  }
  return propose(std::move(ids), std::move(cells), {}, room, Brood::Kind::initial);
}

int Island::initialize(Evaluator& evaluator, TraceSink& sink, std::int64_t room,
                       std::span<const int> fixed) {
  const std::int64_t before = evaluations_;
  evaluate(propose_initial(room, fixed), evaluator, sink);
  return static_cast<int>(evaluations_ - before);
}

int Island::unmeasured() const {
  return static_cast<int>(unmeasured_ids().size());
}

// Best kept in cell 0, the rest unmeasured settings (model picks and random ones).
std::optional<Brood> Island::propose_restart(int keep, std::int64_t room) {
  std::vector<int> open = unmeasured_ids();
  if (open.empty())
    return std::nullopt;
  pick_generation_ = generation_ + 1 + unsettled_++;
  const int cells_n = torus_.cells();
  std::vector<int> ids;
  ids.reserve(static_cast<std::size_t>(cells_n));
  ids.push_back(keep);
  if (ops_.candidates > 1 || ops_.model_picks > 0)
    refit_model();
  if (model_trusted()) {
    for (const int id : model_choice(open, static_cast<std::size_t>(cells_n / 2))) {
      ids.push_back(id);
      std::erase(open, id);
    }
  }
  // The random cells from this island's share first, so islands restarting in the same
  // generation do not draw the same settings.
  const std::size_t owned_open = static_cast<std::size_t>(
      std::stable_partition(open.begin(), open.end(),
                            [&](int id) { return owns(alphabet_.setting(id)); }) -
      open.begin());
  // Uniformly random unmeasured settings without repeats (partial Fisher-Yates); when
  // fewer remain than cells, random settings of the alphabet (cache hits) fill the rest.
  for (std::size_t i = 0; static_cast<int>(ids.size()) < cells_n; ++i) {
    if (i < open.size()) {
      const std::size_t end = i < owned_open ? owned_open : open.size();
      std::swap(open[i], open[i + rng_.below(end - i)]);
      ids.push_back(open[i]);
    } else {
      ids.push_back(static_cast<int>(rng_.below(static_cast<std::uint64_t>(alphabet_.size()))));
    }
  }
  std::vector<int> cells(static_cast<std::size_t>(cells_n));
  for (int c = 0; c < cells_n; ++c)
    cells[c] = c;
  return propose(std::move(ids), std::move(cells), {}, room, Brood::Kind::restart);
}

int Island::restart(int keep, Evaluator& evaluator, TraceSink& sink, std::int64_t room) {
  std::optional<Brood> b = propose_restart(keep, room);
  if (!b)
    return -1;
  const std::int64_t before = evaluations_;
  evaluate(*b, evaluator, sink);
  return static_cast<int>(evaluations_ - before);
}

// Selection, crossover, mutation and decoding per cell: the children of the next generation.
Brood Island::propose_offspring(std::int64_t room) {
  pick_generation_ = generation_ + 1 + unsettled_++;
  std::vector<double> fitness(population_.size());
  for (std::size_t c = 0; c < population_.size(); ++c)
    fitness[c] = population_[c].fitness();
  std::vector<int> ids(torus_.cells());
  std::vector<int> cells(torus_.cells());
  if (ops_.candidates > 1 || ops_.model_picks > 0)
    refit_model();
  for (int c = 0; c < torus_.cells(); ++c) {
    cells[c] = c;
    ids[c] = breed(c, fitness);
    if (ops_.candidates <= 1 || !model_ || !model_->fitted())
      continue;
    // The child predicted fastest among the unmeasured candidates (first if all measured).
    double best =
        known(alphabet_.setting(ids[c])) ? HUGE_VAL : model().predict_ms(alphabet_.setting(ids[c]));
    for (int k = 1; k < ops_.candidates; ++k) {
      const int id = breed(c, fitness);
      const Setting& s = alphabet_.setting(id);
      if (known(s))
        continue;
      const double p = model().predict_ms(s);
      if (p < best) {
        best = p;
        ids[c] = id;
      }
    }
  }
  std::vector<bool> bred;
  if (ops_.model_picks > 0 && model_trusted())
    bred = pick_by_model(ids, fitness);
  return propose(std::move(ids), std::move(cells), std::move(bred), room, Brood::Kind::offspring);
}

// One generation: its children as one batch, then replacement.
int Island::step(Evaluator& evaluator, TraceSink& sink, std::int64_t room) {
  const std::int64_t before = evaluations_;
  evaluate(propose_offspring(room), evaluator, sink);
  return static_cast<int>(evaluations_ - before);
}

// The model's next picks, measured as one batch between generations.
int Island::extra(Evaluator& evaluator, TraceSink& sink, int count) {
  if (generation_ < 0 || ops_.model_picks <= 0 || count <= 0)
    return 0;
  pick_generation_ = generation_;
  refit_model();  // on everything known by now: this generation, its immigrants, extras
  if (!model_trusted())
    return 0;
  const std::vector<int> picks = model_choice(unmeasured_ids(), static_cast<std::size_t>(count));
  if (picks.empty())
    return 0;
  std::vector<Setting> batch;
  for (const int id : picks)
    batch.push_back(alphabet_.setting(id));
  std::vector<Measurement> results = measure(evaluator, batch);
  const double wall = evaluator.clock_s() + clock_offset_;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    note_best(batch[i], results[i]);
    const Measurement& m = cache_.emplace(batch[i], std::move(results[i])).first->second;
    ++evaluations_;
    forward_.push_back(batch[i]);  // to the neighbours with the next emigrants
    Individual ind;
    ind.id = picks[i];
    ind.genome = alphabet_.encode(ind.id);
    ind.measurement = m;
    const std::vector<int> taken =
        replace_worst_if_better(population_, std::span<const Individual>(&ind, 1));
    record(ind, taken.front(), wall, false, false, sink);
  }
  return static_cast<int>(batch.size());
}

// Roulette parents among the torus neighbours, crossover, mutation, decoding.
int Island::breed(int cell, const std::vector<double>& fitness) {
  const auto [a, b] = select_parents(torus_, cell, fitness, rng_);
  Genome child = crossover(population_[a].genome, population_[b].genome, ops_.crossover_rate, rng_,
                           alphabet_.alleles());
  mutate(child, alphabet_.alleles(), ops_.mutation_rate, rng_);
  return alphabet_.decode(child, rng_);
}

// The least fit cells get the unmeasured settings the model predicts fastest.
std::vector<bool> Island::pick_by_model(std::vector<int>& ids, const std::vector<double>& fitness) {
  std::vector<int> open;
  for (int id = 0; id < alphabet_.size(); ++id) {
    if (!known(alphabet_.setting(id)) && std::find(ids.begin(), ids.end(), id) == ids.end())
      open.push_back(id);
  }
  const std::vector<int> picks =
      model_choice(std::move(open), static_cast<std::size_t>(ops_.model_picks));
  const std::size_t k = std::min(picks.size(), ids.size());
  std::vector<int> cells(ids.size());
  for (std::size_t c = 0; c < cells.size(); ++c)
    cells[c] = static_cast<int>(c);
  std::stable_sort(cells.begin(), cells.end(),
                   [&](int a, int b) { return fitness[a] < fitness[b]; });
  std::vector<bool> bred(ids.size(), true);
  for (std::size_t i = 0; i < k; ++i) {
    ids[cells[i]] = picks[i];
    bred[cells[i]] = false;
  }
  return bred;
}

// Greedy: one ranking by prediction. Thompson: per choice a fresh posterior draw ranks
// what is still open, so a batch spreads over what the fit is unsure of.
std::vector<int> Island::model_choice(std::vector<int> open, std::size_t count) {
  const auto mine = [&](int i) { return owns(alphabet_.setting(i)); };
  std::vector<std::pair<double, int>> ranked;
  ranked.reserve(open.size());
  if (ops_.model_policy == ModelPolicy::local) {
    std::vector<std::pair<double, Setting>> known;
    for (const auto& [s, m] : cache_) {
      if (m.ok())
        known.emplace_back(m.median_ms, s);
    }
    const std::size_t k =
        std::min(known.size(), static_cast<std::size_t>(ops_.model.local_centres));
    std::partial_sort(known.begin(), known.begin() + static_cast<std::ptrdiff_t>(k), known.end());
    std::vector<std::pair<double, int>> near;
    for (const int id : open) {
      const Setting& s = alphabet_.setting(id);
      for (std::size_t c = 0; c < k; ++c) {
        int d = 0;
        for (std::size_t q = 0; q < kParamCount && d <= ops_.model.local_radius; ++q)
          d += s.values[q] != known[c].second.values[q] ? 1 : 0;
        if (d <= ops_.model.local_radius) {
          near.emplace_back(model().predict_ms(s), id);
          break;
        }
      }
    }
    const std::size_t local_n =
        count == 0
            ? 0
            : std::max<std::size_t>(1, static_cast<std::size_t>(std::lround(
                                           static_cast<double>(count) * ops_.model.local_share)));
    std::vector<int> out =
        strided_best(near, std::min(local_n, count), ops_, pick_generation_, mine);
    for (const int id : out)
      std::erase(open, id);
    for (const int id : open)
      ranked.emplace_back(model().predict_ms(alphabet_.setting(id)), id);
    for (const int id : strided_best(ranked, count - out.size(), ops_, pick_generation_, mine))
      out.push_back(id);
    return out;
  }
  if (ops_.model_policy == ModelPolicy::greedy && ops_.model.pick_spread <= 1) {
    for (const int id : open)
      ranked.emplace_back(model().optimistic_ms(alphabet_.setting(id), ops_.model.forest_kappa),
                          id);
    return strided_best(ranked, count, ops_, pick_generation_, mine);
  }
  if (ops_.model_policy == ModelPolicy::greedy) {
    // Spread: down this island's share of the ranking, each pick at least pick_spread
    // parameters away from the picks before it; then the closest ones, then the rest.
    for (const int id : open)
      ranked.emplace_back(model().predict_ms(alphabet_.setting(id)), id);
    std::stable_sort(ranked.begin(), ranked.end());
    std::stable_partition(ranked.begin(), ranked.end(),
                          [&](const auto& e) { return mine(e.second); });
    std::vector<int> out;
    std::vector<bool> taken(ranked.size(), false);
    for (std::size_t i = 0; i < ranked.size() && out.size() < count; ++i) {
      const Setting& s = alphabet_.setting(ranked[i].second);
      bool far = true;
      for (const int o : out) {
        const Setting& t = alphabet_.setting(o);
        int d = 0;
        for (std::size_t p = 0; p < kParamCount; ++p)
          d += s.values[p] != t.values[p] ? 1 : 0;
        if (d < ops_.model.pick_spread) {
          far = false;
          break;
        }
      }
      if (far) {
        out.push_back(ranked[i].second);
        taken[i] = true;
      }
    }
    for (std::size_t i = 0; i < ranked.size() && out.size() < count; ++i) {
      if (!taken[i])
        out.push_back(ranked[i].second);
    }
    return out;
  }
  std::vector<int> out;
  while (out.size() < count && !open.empty()) {
    const std::vector<double> offset = model().draw(rng_, ops_.model.explore);
    ranked.clear();
    for (const int id : open)
      ranked.emplace_back(model().predict_ms(alphabet_.setting(id), offset), id);
    const std::vector<int> one = strided_best(ranked, 1, ops_, pick_generation_, mine);
    if (one.empty())
      break;
    out.push_back(one.front());
    std::erase(open, one.front());
  }
  return out;
}

void Island::refit_model() {
  if (!model_) {
    std::vector<Setting> all;
    all.reserve(static_cast<std::size_t>(alphabet_.size()));
    for (int i = 0; i < alphabet_.size(); ++i)
      all.push_back(alphabet_.setting(i));
    model_.emplace(all, ops_.model.lambda, ops_.prior, ops_.interact, ops_.model.plan_features,
                   ops_.model.plan_interact);
    model_->set_kernel(ops_.model.kernel_length, ops_.model.kernel_noise);
    model_->set_forest(ops_.model.forest);
    model_->set_plan_lambda(ops_.model.plan_lambda);
    model_->set_failed_as(ops_.model.failed_as);
    model_->set_loo(ops_.model.skill_gate);
    if (ops_.model.plan_features && ops_.model.plan_select && ops_.prior) {
      model_->set_loo(true);
      plain_.emplace(all, ops_.model.lambda, ops_.prior, ops_.interact);
      plain_->set_kernel(ops_.model.kernel_length, ops_.model.kernel_noise);
      plain_->set_forest(ops_.model.forest);
      plain_->set_failed_as(ops_.model.failed_as);
      plain_->set_loo(true);
    }
  }
  std::vector<std::pair<Setting, double>> data;
  data.reserve(cache_.size());
  for (const auto& [s, m] : cache_)
    data.emplace_back(s, m.model_ms());
  std::sort(data.begin(), data.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  model_->fit(data);
  use_plain_ = false;
  if (plain_) {
    plain_->fit(data);
    use_plain_ = plain_->fitted() && model_->fitted() && plain_->loo_rmse() < model_->loo_rmse();
  }
}

// The best `count` individuals with their measurements.
std::vector<Migrant> Island::emigrants(int count, int rank) const {
  std::vector<Migrant> out;
  for (const int c : select_best(population_, count)) {
    Migrant m;
    m.setting = alphabet_.setting(population_[c].id);
    m.measurement = population_[c].measurement;
    m.source_rank = rank;
    m.generation = generation_;
    out.push_back(std::move(m));
  }
  const std::size_t individuals = out.size();
  // A measurement-only migrant for `s` unless one of out[0, upto) already carries it.
  const auto pass_on = [&](const Setting& s, std::size_t upto) {
    if (std::any_of(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(upto),
                    [&](const Migrant& m) { return m.setting == s; }))
      return;
    Migrant m;
    m.setting = s;
    m.measurement = cache_.at(s);
    m.source_rank = rank;
    m.generation = generation_;
    m.measurement_only = true;
    out.push_back(std::move(m));
  };
  for (const Setting& s : fresh_)
    pass_on(s, individuals);
  // Measurements learned from neighbours, passed on (each island passes a measurement on
  // at most once: only when it was new to it, so the flood ends).
  for (const Setting& s : forward_)
    pass_on(s, out.size());
  return out;
}

void Island::learn(const std::vector<Migrant>& migrants) {
  for (const Migrant& m : migrants)
    cache_.emplace(m.setting, m.measurement);
}

// Caches and integrates immigrants without measuring them.
void Island::immigrate(const std::vector<Migrant>& migrants, TraceSink& sink, double wall_s) {
  std::vector<Individual> arrivals;
  std::vector<bool> known;
  for (const Migrant& m : migrants) {
    const auto [it, inserted] = cache_.emplace(m.setting, m.measurement);
    note_best(m.setting, it->second);
    if (inserted && ops_.forward)
      forward_.push_back(m.setting);
    const std::optional<int> id = alphabet_.id_of(m.setting);
    if (!id || m.measurement_only)
      continue;
    Individual ind;
    ind.id = *id;
    ind.genome = alphabet_.encode(*id);
    ind.measurement = it->second;
    arrivals.push_back(std::move(ind));
    known.push_back(!inserted);
  }
  const std::vector<int> taken = replace_worst_if_better(population_, arrivals);
  for (std::size_t i = 0; i < arrivals.size(); ++i) {
    record(arrivals[i], taken[i], wall_s, known[i], true, sink);
  }
}

double Island::mcr() const {
  const auto [repeats, considered] = offspring_counts_;
  return considered == 0 ? 0.0 : static_cast<double>(repeats) / static_cast<double>(considered);
}

double Island::population_mcr() const {
  if (population_.empty())
    return 0;
  std::unordered_map<int, int> copies;
  int most = 0;
  for (const Individual& ind : population_)
    most = std::max(most, ++copies[ind.id]);
  return static_cast<double>(most) / static_cast<double>(population_.size());
}

int Island::unique_genomes() const {
  std::vector<int> ids;
  for (const Individual& ind : population_)
    ids.push_back(ind.id);
  std::sort(ids.begin(), ids.end());
  return static_cast<int>(std::unique(ids.begin(), ids.end()) - ids.begin());
}

double Island::mean_fitness() const {
  if (population_.empty())
    return 0;
  double sum = 0;
  for (const Individual& ind : population_)
    sum += ind.fitness();
  return sum / static_cast<double>(population_.size());
}

// Snapshot with the cache sorted so equal islands give equal states.
IslandState Island::state() const {
  IslandState s;
  s.generation = generation_;
  s.population = population_;
  s.cache.assign(cache_.begin(), cache_.end());
  std::sort(s.cache.begin(), s.cache.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  s.best = best_;
  s.rng = rng_.state();
  s.next_eval_id = next_eval_id_;
  s.evaluations = evaluations_;
  s.forward = forward_;
  return s;
}

}  // namespace isletune
