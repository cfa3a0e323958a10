// The quota-based reward sampler (algorithm described in sampler.hpp).
#include "sample/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <unordered_set>

#include "common/error.hpp"

namespace isletune {
namespace {

using Ratios = std::array<double, kOcCount>;

// Throws unless lo < value <= hi (or lo <= value when lo_inclusive).
void check_range(double value, const char* key, double lo, double hi, bool lo_inclusive,
                 const char* expected) {
  const bool ok = (lo_inclusive ? value >= lo : value > lo) && value <= hi && std::isfinite(value);
  if (!ok) {
    throw InputError(std::string("sample.") + key + " = " + std::to_string(value) +
                     " is out of range; expected " + expected + ".");
  }
}

// Lifts every active ratio below `floor` to it, taking the difference from the ratios
// above it in proportion to their excess, then renormalises to sum 1.
void apply_floor(Ratios& r, const std::array<bool, kOcCount>& active, double floor) {
  double deficit = 0, excess = 0;
  for (int oc = 0; oc < kOcCount; ++oc) {
    if (!active[oc])
      continue;
    if (r[oc] < floor) {
      deficit += floor - r[oc];
      r[oc] = floor;
    } else {
      excess += r[oc] - floor;
    }
  }
  if (deficit > 0 && excess > 0) {
    const double scale = std::max(0.0, 1.0 - deficit / excess);
    for (int oc = 0; oc < kOcCount; ++oc) {
      if (active[oc] && r[oc] > floor)
        r[oc] = floor + (r[oc] - floor) * scale;
    }
  }
  double sum = 0;
  for (int oc = 0; oc < kOcCount; ++oc)
    sum += active[oc] ? r[oc] : 0.0;
  for (int oc = 0; oc < kOcCount; ++oc)
    r[oc] = active[oc] && sum > 0 ? r[oc] / sum : 0.0;
}

// Splits `quota` over the active OCs by ratio: one each while the quota allows, the rest
// by each OC's share plus what it was owed from earlier rounds (largest remainder, ties at
// random), so over many rounds every OC gets its ratio's share (stratified) and no OC id is
// favoured. `owed` carries each OC's unpaid fraction to the next round.
std::array<int, kOcCount> split_quota(int quota, const Ratios& r,
                                      const std::array<bool, kOcCount>& active, Ratios& owed,
                                      Rng& rng) {
  std::array<int, kOcCount> k{};
  int n_active = 0;
  for (int oc = 0; oc < kOcCount; ++oc)
    n_active += active[oc] ? 1 : 0;
  if (n_active == 0 || quota <= 0)
    return k;
  // Each OC's share of the whole quota plus what it is owed; the one-each minimum is paid
  // out of that share, so the carry keeps the totals proportional.
  const bool one_each = quota >= n_active;
  int left = quota;
  std::array<double, kOcCount> share{};
  for (int oc = 0; oc < kOcCount; ++oc) {
    if (!active[oc])
      continue;
    share[oc] = quota * r[oc] + owed[oc];
    if (one_each) {
      k[oc] = 1;
      share[oc] -= 1;
      --left;
    }
  }
  int given = 0;
  for (int oc = 0; oc < kOcCount; ++oc) {
    if (!active[oc])
      continue;
    const int whole = std::max(0, static_cast<int>(std::floor(share[oc])));
    const int take = std::min(whole, left - given);
    k[oc] += take;
    given += take;
    share[oc] -= take;
  }
  for (int extra = left - given; extra > 0; --extra) {
    int best = -1;
    int tied = 0;
    for (int oc = 0; oc < kOcCount; ++oc) {
      if (!active[oc])
        continue;
      if (best < 0 || share[oc] > share[best]) {
        best = oc;
        tied = 1;
      } else if (share[oc] == share[best] && rng.below(static_cast<std::uint64_t>(++tied)) == 0) {
        best = oc;
      }
    }
    k[best] += 1;
    share[best] -= 1;
  }
  for (int oc = 0; oc < kOcCount; ++oc)
    owed[oc] = active[oc] ? share[oc] : 0.0;
  return k;
}

// The floor that applies to each active OC: `floor` (a fraction of a round, the paper's
// LR / TR), but at most half of an equal share, so that with many active OCs the floors
// never take the whole round and the reward always has something to move.
double floor_per_oc(const std::array<bool, kOcCount>& active, double floor) {
  int n_active = 0;
  for (int oc = 0; oc < kOcCount; ++oc)
    n_active += active[oc] ? 1 : 0;
  return n_active == 0 ? floor : std::min(floor, 0.5 / n_active);
}

}  // namespace

// Range checks of every sampler setting.
void SamplerSettings::validate() const {
  check_range(sample_ratio, "sample_ratio", 0, 1, false, "a ratio in (0, 1]");
  check_range(round_ratio, "round_ratio", 0, 1, false, "a ratio in (0, 1]");
  check_range(adjust, "adjust", 0, 1, false, "a ratio in (0, 1]");
  check_range(floor, "floor", 0, 1, false, "a ratio in (0, 1]");
  if (floor > adjust) {
    throw InputError("sample.floor = " + std::to_string(floor) + " is above sample.adjust = " +
                     std::to_string(adjust) + "; expected floor <= adjust.");
  }
  if (max_samples < 1) {
    throw InputError("sample.max_samples = " + std::to_string(max_samples) +
                     " is out of range; expected an integer >= 1.");
  }
  if (max_redraws < 1) {
    throw InputError("sample.max_redraws = " + std::to_string(max_redraws) +
                     " is out of range; expected an integer >= 1.");
  }
}

// Runs the rounds until n settings are drawn or every OC is exhausted.
SampleResult sample(SettingSource& source, const Predictor& predictor,
                    const SamplerSettings& settings, std::uint64_t seed) {
  settings.validate();
  SampleResult result;
  Rng rng(seed, 0x53414d50);  // "SAMP": the sampler's own stream
  result.counts = source.count_per_oc(seed);

  Ratios ratios{};
  std::array<bool, kOcCount> active{};
  std::array<double, kOcCount> count{};
  std::array<bool, kOcCount> exact{};
  bool all_exact = true;
  for (const OcCount& c : result.counts) {
    if (c.oc < 0 || c.oc >= kOcCount || !(c.count > 0))
      continue;
    active[c.oc] = true;
    count[c.oc] = c.count;
    exact[c.oc] = c.exact;
    all_exact = all_exact && c.exact;
    result.space_size += c.count;
    if (!c.exact)
      result.set.estimated_ocs.push_back(c.oc);
  }
  if (result.space_size <= 0)
    return result;
  for (int oc = 0; oc < kOcCount; ++oc)
    ratios[oc] = count[oc] / result.space_size;
  apply_floor(ratios, active, floor_per_oc(active, settings.floor));

  double n =
      std::min<double>(std::ceil(settings.sample_ratio * result.space_size), settings.max_samples);
  if (all_exact)
    n = std::min(n, std::floor(result.space_size));
  result.target = std::max<std::int64_t>(1, static_cast<std::int64_t>(n));
  const int round_quota =
      std::max(1, static_cast<int>(std::lround(settings.round_ratio * result.target)));

  std::unordered_set<Setting, SettingHash> taken;
  Ratios owed{};
  std::array<std::int64_t, kOcCount> drawn_total{};

  // Draws one new setting of `oc`, or marks the OC exhausted and returns false.
  // Per round: the OCs holding the best prediction, and whether any prediction differed.
  std::vector<int> best_ocs;
  double round_worst = -std::numeric_limits<double>::infinity();
  auto draw_one = [&](int oc, SampleRound& round, double& round_best, int& round_winner) {
    if (exact[oc] && static_cast<double>(drawn_total[oc]) >= count[oc])
      return false;
    for (int tries = 0; tries < settings.max_redraws; ++tries) {
      const std::optional<Setting> s = source.draw(oc, rng);
      if (!s)
        return false;
      if (!taken.insert(*s).second)
        continue;
      const double p = predictor.predict_ms(*s);
      result.set.add(*s, oc, p);
      ++drawn_total[oc];
      ++round.drawn[oc];
      round_worst = std::max(round_worst, p);
      if (round_winner < 0 || p < round_best) {
        round_best = p;
        round_winner = oc;
        best_ocs.assign(1, oc);
      } else if (p == round_best &&
                 std::find(best_ocs.begin(), best_ocs.end(), oc) == best_ocs.end()) {
        best_ocs.push_back(oc);
      }
      return true;
    }
    return false;
  };

  while (static_cast<std::int64_t>(result.set.size()) < result.target) {
    bool any_active = false;
    for (int oc = 0; oc < kOcCount; ++oc)
      any_active = any_active || active[oc];
    if (!any_active)
      break;

    SampleRound round;
    round.ratios = ratios;
    double round_best = std::numeric_limits<double>::infinity();
    int round_winner = -1;
    best_ocs.clear();
    round_worst = -std::numeric_limits<double>::infinity();
    int quota = static_cast<int>(std::min<std::int64_t>(
        round_quota, result.target - static_cast<std::int64_t>(result.set.size())));
    // Split the quota; what exhausted OCs could not give is split again over the rest.
    while (quota > 0) {
      const std::array<int, kOcCount> k = split_quota(quota, ratios, active, owed, rng);
      bool exhausted_any = false;
      for (int oc = 0; oc < kOcCount; ++oc) {
        for (int i = 0; i < k[oc] && active[oc]; ++i) {
          if (draw_one(oc, round, round_best, round_winner)) {
            --quota;
          } else {
            active[oc] = false;
            ratios[oc] = 0;
            exhausted_any = true;
          }
        }
      }
      if (!exhausted_any)
        break;
      apply_floor(ratios, active, floor_per_oc(active, settings.floor));
      bool still = false;
      for (int oc = 0; oc < kOcCount; ++oc)
        still = still || active[oc];
      if (!still)
        break;
    }

    // Reward: every other active OC loses `adjust` (not below floor), the winner the rest.
    // When every prediction of the round ties, nobody is rewarded; when the best is shared
    // by several OCs, the winner is one of them at random (never by OC id).
    if (round_winner >= 0 && round_worst <= round_best)
      round_winner = -1;
    else if (best_ocs.size() > 1)
      round_winner = best_ocs[rng.below(best_ocs.size())];
    round.winner = round_winner;
    round.best_predicted_ms = round_best;
    if (round_winner >= 0 && active[round_winner]) {
      double others = 0;
      for (int oc = 0; oc < kOcCount; ++oc) {
        if (!active[oc] || oc == round_winner)
          continue;
        ratios[oc] = std::max(floor_per_oc(active, settings.floor), ratios[oc] - settings.adjust);
        others += ratios[oc];
      }
      ratios[round_winner] = 1.0 - others;
    }
    result.rounds.push_back(round);
  }
  result.final_ratios = ratios;
  return result;
}

EpochSampler epoch_sampler(std::function<std::unique_ptr<SettingSource>()> make_source,
                           std::shared_ptr<const Predictor> predictor,
                           const SamplerSettings& settings, std::uint64_t seed, int rank) {
  return [make_source = std::move(make_source), predictor = std::move(predictor), settings, seed,
          rank](int epoch) {
    const std::unique_ptr<SettingSource> source = make_source();
    // A seed per (seed, rank, epoch): golden-ratio steps keep them apart.
    const std::uint64_t mixed =
        seed + 0x9e3779b97f4a7c15ULL * (1 + static_cast<std::uint64_t>(rank) * 4099 +
                                        static_cast<std::uint64_t>(epoch));
    return sample(*source, *predictor, settings, mixed).set.settings;
  };
}

std::vector<Setting> refine_by_prediction(const Space& space, const Predictor& predictor,
                                          std::span<const Setting> starts, int max_steps) {
  std::vector<Setting> out;
  for (const Setting& start : starts) {
    Setting at = start;
    double best = predictor.predict_ms(at);
    for (int step = 0; step < max_steps; ++step) {
      Setting next = at;
      double next_ms = best;
      const auto consider = [&](const Setting& c) {
        if (c == at || !space.valid(c))
          return;
        const double ms = predictor.predict_ms(c);
        if (ms < next_ms) {
          next_ms = ms;
          next = c;
        }
      };
      for (std::size_t q = 0; q < kParamCount; ++q) {
        const auto p = static_cast<Param>(q);
        for (const int v : space.values(p)) {
          Setting c = at;
          c[p] = v;
          consider(c);
        }
      }
      for (std::size_t d = 0; d < 3; ++d) {
        for (const int v : space.values(kMf[d])) {
          Setting c = at;
          c[kMf[d]] = v;
          c[kUf[d]] = v;
          consider(c);
        }
      }
      if (!(next_ms < best))
        break;
      at = next;
      best = next_ms;
    }
    // One move changes one parameter, so an end may set one its family does not read (the
    // tensor-core family's base parameters): its canonical setting builds the same kernel.
    at = space.ocs().canonical(space.shape(), at);
    if (std::find(out.begin(), out.end(), at) == out.end())
      out.push_back(at);
  }
  return out;
}

void refine_sample(SampledSet& set, const Space& space, const Predictor& predictor,
                   bool whole_space) {
  if (!whole_space || !issue_term_applies(space.shape().flops_per_cell, space.limits()) ||
      set.predicted_ms.size() != set.settings.size() || set.oc.size() != set.settings.size())
    return;
  // kRefineStartsPerOc starts per OC (its best predicted sampled settings): a move between
  // families changes several parameters at once, so a descent stays near its OC, and one start
  // per OC ends in local optima short of the floor (box3d2r: 1.21 against 1.00 ms; 16 reach it).
  std::vector<std::vector<std::pair<double, std::size_t>>> by_oc(kOcCount);
  for (std::size_t i = 0; i < set.settings.size(); ++i) {
    const auto oc = static_cast<std::size_t>(set.oc[i]);
    if (oc < by_oc.size())
      by_oc[oc].emplace_back(set.predicted_ms[i], i);
  }
  std::vector<Setting> starts;
  for (auto& v : by_oc) {
    const std::size_t k = std::min(v.size(), kRefineStartsPerOc);
    std::partial_sort(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    for (std::size_t j = 0; j < k; ++j)
      starts.push_back(set.settings[v[j].second]);
  }
  std::vector<std::pair<double, Setting>> ends;
  for (const Setting& s : refine_by_prediction(space, predictor, starts)) {
    if (std::find(set.settings.begin(), set.settings.end(), s) == set.settings.end())
      ends.emplace_back(predictor.predict_ms(s), s);
  }
  std::stable_sort(ends.begin(), ends.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 0; i < ends.size() && i < kRefinedStarts; ++i)
    set.add(ends[i].second, Space::oc_of(ends[i].second), ends[i].first);
}

std::optional<Setting> naive_seed(const Space& space, const std::vector<Setting>* recorded) {
  const Setting naive = naive_setting(space.dims());
  if (!space.valid(naive))
    return std::nullopt;
  if (recorded && std::find(recorded->begin(), recorded->end(), naive) == recorded->end())
    return std::nullopt;
  return naive;
}

}  // namespace isletune
