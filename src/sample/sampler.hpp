// Quota-based reward sampling over OCs (docs/architecture.md, "The sampler", paper Alg. 2).
//
// Target n = min(ceil(sample_ratio * |space|), max_samples) (and at most |space| when all
// counts are exact), |space| the sum of the source's counts per OC (SettingSource::count_per_oc:
// distinct kernels for the whole space, recorded settings for replay). Ratios start
// proportional to each OC's count, lifted to at least the floor per OC. Units (the paper's): the
// per-OC ratios of a round sum to 1, so the paper's TR = 1 %, AR = LR = 0.1 % of the space become
// round_ratio = 0.1 of n (with n = 10 % of the space) and adjust = floor = AR / TR = 0.1 of a
// round. The floor per OC is min(floor, 0.5 / active OCs): the paper's 0.1 cannot hold with more
// than 10 active OCs, so with many OCs each keeps at least half an equal share. Each round draws
// min(round quota, n - drawn) new settings, split over the active OCs by their ratios (every active
// OC gets at least one while the quota allows; the rest by largest remainder). An OC that runs out
// (its exact count reached, its source empty, or `max_redraws` duplicate draws in a row) gets ratio
// 0; its ratio goes to the others in proportion and its unfilled quota is drawn from them. The OC
// whose draw this round holds the best predicted setting wins: every other active OC loses `adjust`
// (never below its floor) and the winner gets the rest. When every prediction of a round ties
// (`uniform`, an uninformative model) no OC is rewarded; a best shared by several OCs goes to one
// of them at random. Quotas carry each OC's unpaid fraction to the next round, so with no reward
// the sample is stratified by the initial ratios.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
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

// The samples of restart epochs (IslandStrategy): epoch e >= 1 of island `rank` runs the
// sampler again on a fresh source from `make_source` with its own seed (seed, rank, e),
// so every setting the source holds has a chance in every epoch, however large the space
// is against max_samples.
using EpochSampler = std::function<std::vector<Setting>(int epoch)>;
[[nodiscard]] EpochSampler epoch_sampler(
    std::function<std::unique_ptr<SettingSource>()> make_source,
    std::shared_ptr<const Predictor> predictor, const SamplerSettings& settings, std::uint64_t seed,
    int rank);

// The predictor's local optima around `starts`: from each start, steepest descent of the
// prediction over the settings of `space` one move away (one parameter to another of its values,
// or a merge factor and its unroll factor together to the same value), at most `max_steps` moves.
// Returns the distinct end points, in the order of their starts. The sample holds about 4,000 of
// a space of millions: for a compute-bound stencil the best predicted tile of the whole space,
// measured on the H100, runs at 0.92-0.95 of the best tile measured, while the best predicted
// of the sample left the 120-s tuner at 0.80-0.84 (docs/decisions.md#refine-compute-bound).
[[nodiscard]] std::vector<Setting> refine_by_prediction(const Space& space,
                                                        const Predictor& predictor,
                                                        std::span<const Setting> starts,
                                                        int max_steps = 32);

// A compute-bound stencil's (issue_term_applies) sample drawn from the whole space (not a
// replay's recorded settings, the only ones with answers there) gains the predictor's local
// optima (refine_by_prediction) around each OC's kRefineStartsPerOc best predicted settings,
// the kRefinedStarts predicted fastest of those not sampled yet, so the predicted seeds of
// generation 0 are the best of the whole space as the roofline sees it (box3d2r 512^3: 0.03 s).
// Memory-bound stencils keep their sample: there the roofline ranks settings less well than it
// ranks register tiles (docs/decisions.md#refine-compute-bound). 8: the predicted seeds of up to 8
// islands.
inline constexpr std::size_t kRefinedStarts = 8;
inline constexpr std::size_t kRefineStartsPerOc = 16;
void refine_sample(SampledSet& set, const Space& space, const Predictor& predictor,
                   bool whole_space);

// The naive-equivalent setting (naive_setting) when the search may draw it: valid in
// `space` and, when `recorded` is given (replay), one of the recorded settings.
[[nodiscard]] std::optional<Setting> naive_seed(const Space& space,
                                                const std::vector<Setting>* recorded);

}  // namespace isletune
