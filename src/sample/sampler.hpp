// Quota-based reward sampling over OCs (docs/architecture.md, "The sampler", paper Alg. 2).
//
// Target n = min(ceil(sample_ratio * |space|), max_samples) (and at most |space| when all
// counts are exact). Ratios start proportional to each OC's valid count, lifted to at
// least the floor per OC. Units (the paper's): the per-OC ratios of a round sum to 1, so
// the paper's TR = 1 %, AR = LR = 0.1 % of the space become round_ratio = 0.1 of n (with
// n = 10 % of the space) and adjust = floor = AR / TR = 0.1 of a round. The floor per OC
// is min(floor, 0.5 / active OCs): the paper's 0.1 cannot hold with more than 10 active
// OCs, so with many OCs each keeps at least half an equal share. Each round draws min(round quota,
// n - drawn) new settings, split over the active OCs by their ratios (every active OC gets at least
// one while the quota allows; the rest by largest remainder). An OC that runs out (its exact count
// reached, its source empty, or `max_redraws` duplicate draws in a row) gets ratio 0; its ratio
// goes to the others in proportion and its unfilled quota is drawn from them. The OC whose draw
// this round holds the best predicted setting wins: every other active OC loses `adjust` (never
// below its floor) and the winner gets the rest. When every prediction of a round ties (`uniform`,
// an uninformative model) no OC is rewarded; a best shared by several OCs goes to one of them at
// random. Quotas carry each OC's unpaid fraction to the next round, so with no reward the sample is
// stratified by the initial ratios.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "sample/predictor.hpp"
#include "sample/sampled_set.hpp"
#include "sample/setting_source.hpp"

namespace isletune {

struct SamplerSettings {
  double sample_ratio = 1.0;  // fraction of the space to sample (capped by max_samples)
  int max_samples = 4096;     // cap on n
  double round_ratio = 0.10;  // round quota as a fraction of n
  double adjust = 0.1;        // ratio taken from every losing OC per round (paper AR / TR)
  double floor = 0.1;         // per-OC floor, capped at 0.5 / active OCs (paper LR / TR)
  int max_redraws = 64;       // duplicate draws in a row before an OC counts as exhausted

  // Throws InputError naming the key ("sample.<name>") and the allowed range.
  void validate() const;
};

// One sampling round, for tests and the trace.
struct SampleRound {
  std::array<double, kOcCount> ratios{};  // ratios the round's quota was split by
  std::array<int, kOcCount> drawn{};      // new settings drawn per OC this round
  int winner = -1;                        // OC rewarded after the round (-1: none drawn)
  double best_predicted_ms = 0;           // the winner's best predicted time
};

struct SampleResult {
  SampledSet set;
  std::vector<SampleRound> rounds;
  std::vector<OcCount> counts;  // what the ratios started from
  double space_size = 0;        // sum of counts
  std::int64_t target = 0;      // n
  std::array<double, kOcCount> final_ratios{};
};

// Samples settings from `source`, scored by `predictor`, deterministic given `seed`.
[[nodiscard]] SampleResult sample(SettingSource& source, const Predictor& predictor,
                                  const SamplerSettings& settings, std::uint64_t seed);

}  // namespace isletune
