// Quota-based reward sampling over OCs (ARCHITECTURE §5, paper Alg. 2).
//
// Target n = min(ceil(sample_ratio * |space|), max_samples) (and at most |space| when all
// counts are exact). Ratios start proportional to each OC's valid count, lifted to at
// least `floor`. Each round draws min(round quota, n - drawn) new settings, split over the
// active OCs by their ratios (every active OC gets at least one while the quota allows;
// the rest by largest remainder). An OC that runs out (its exact count reached, its
// source empty, or `max_redraws` duplicate draws in a row) gets ratio 0; its ratio goes
// to the others in proportion and its unfilled quota is drawn from them. The OC whose
// draw this round holds the best predicted setting wins: every other active OC loses
// `adjust` (never below `floor`) and the winner gets the rest.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "sample/predictor.hpp"
#include "sample/sampled_set.hpp"
#include "sample/setting_source.hpp"

namespace isletune {

struct SamplerSettings {
  double sample_ratio = 0.10;  // fraction of the space to sample
  int max_samples = 4096;      // cap on n
  double round_ratio = 0.10;   // round quota as a fraction of n
  double adjust = 0.001;       // ratio taken from every losing OC per round
  double floor = 0.001;        // no active OC's ratio drops below this
  int max_redraws = 64;        // duplicate draws in a row before an OC counts as exhausted

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
