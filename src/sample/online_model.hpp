// The online regression predictor (docs/architecture.md, "The sampler"): a ridge regression of
// log(time per step) on the setting's parameters, refit from the run's own measurements, so later
// choices lean toward what the GPU has shown to be fast. Pure C++, no dependency.
//
// Features (built once from the settings the search may visit): for every parameter with
// more than one value among them, one indicator per value but the first (one-hot main
// effects); and, for each `interact` parameter that varies (by default the merge kind;
// the island GA adds the streaming family's switches, ga/island.hpp kModelInteractions),
// the product of each of its indicators with every other indicator (merging changes what
// the other parameters do: block merging along x breaks coalescing, cyclic does not;
// streaming, retiming and prefetch change the kernel family). Target: log(median ms); a failed
// setting counts as twice the slowest success. With a `prior` predictor (e.g. the roofline model,
// which reads the kernel plan: traffic, redundancy, shared memory, occupancy), its
// log(predicted ms) is one more, continuous feature, so the regression starts from what
// the plan says and learns the GPU's corrections. Fit: minimise |X w + b - y|^2 +
// lambda |w|^2 (intercept b unpenalised) by Cholesky on the normal equations.
#pragma once

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sample/predictor.hpp"
#include "setting/setting.hpp"

namespace isletune {

class OnlineModel final : public Predictor {
 public:
  // Feature map over `settings` (the alphabet of the search); lambda = ridge strength.
  // `prior` (may be null) must outlive the model.
  // `interact`: the parameters whose indicators multiply every other indicator (default:
  // the merge kind, as above).
  explicit OnlineModel(std::span<const Setting> settings, double lambda = 1.0,
                       const Predictor* prior = nullptr,
                       std::span<const Param> interact = kMergeOnly);
  static constexpr Param kMergeOnly[] = {Param::merge};

  // Refits on measured (setting, median ms) pairs; ms <= 0 or NaN marks a failure. Fewer
  // than `min_points` successes leave the model unfit.
  void fit(std::span<const std::pair<Setting, double>> measured, int min_points = 8);
  [[nodiscard]] bool fitted() const { return fitted_; }
  // Predicted ms (exp of the regression); 1 for every setting while unfit.
  [[nodiscard]] double predict_ms(const Setting& s) const override;
  [[nodiscard]] std::string name() const override { return "online"; }
  [[nodiscard]] std::size_t features() const { return feature_count_; }

 private:
  // Indicator features of `s` (indices of the features that are 1).
  [[nodiscard]] std::vector<int> active(const Setting& s) const;
  // The prior's feature of `s` (log of its prediction, clamped), 0 without a prior.
  [[nodiscard]] double prior_feature(const Setting& s) const;

  struct Level {
    Param param;
    int value;
  };
  std::vector<Level> levels_;      // one-hot main effects
  std::vector<int> merge_levels_;  // indices into levels_ of the interacting indicators
  std::size_t feature_count_ = 0;
  double lambda_;
  const Predictor* prior_ = nullptr;  // its feature is the last one (index feature_count_ - 1)
  std::vector<double> weights_;
  double intercept_ = 0;
  bool fitted_ = false;
};

}  // namespace isletune
