// The online regression predictor (docs/architecture.md, "The sampler"): a ridge regression of
// log(time per step) on the setting's parameters, refit from the run's own measurements, so later
// choices lean toward what the GPU has shown to be fast. Pure C++, no dependency.
//
// Features (built once from the settings the search may visit): for every parameter with
// more than one value among them, one indicator per value but the first (one-hot main
// effects); and, for each `interact` parameter that varies (by default the merge kind;
// the island GA adds the streaming family's switches, ga/island.hpp model_interactions()),
// the product of each of its indicators with every other indicator (merging changes what
// the other parameters do: block merging along x breaks coalescing, cyclic does not;
// streaming, retiming and prefetch change the kernel family). Target: log(median ms); a setting
// slower than any success (ms = +infinity: a timeout, Measurement::model_ms) counts as twice the
// slowest success; another failure (ms <= 0 or NaN) as the median success (FailedAs::median,
// the default) or also as twice the slowest (FailedAs::twice_slowest). With a `prior` predictor
// (e.g. the roofline model, which reads the kernel plan: traffic, redundancy, shared memory,
// occupancy), its log(predicted ms) is one more, continuous feature, so the regression starts from
// what the plan says and learns the GPU's corrections. With `plan_features` on, the prior's own
// continuous features (Predictor::features; the roofline's: tdeg, bytes per cell-step,
// redundancy, occupancy, threads, shared memory, waves, planes in flight, stream length,
// unroll, merged points) are more columns, each scaled to unit standard deviation over the
// settings the search may visit, so the fit can weigh the plan's quantities differently
// from the roofline formula (e.g. where the grid fits in the L2, traffic per step matters
// less than the formula says). Fit: minimise |X w + b - y|^2 +
// lambda |w|^2 (intercept b unpenalised) by Cholesky on the normal equations.
//
// Uncertainty (Bayesian linear regression with the ridge as its Gaussian prior): the
// weights' posterior is N(w, sigma^2 A^-1), A = Xc^T Xc + lambda I the normal matrix
// (centred columns), sigma the fit's residual standard deviation in log time. draw()
// returns one posterior sample's offset from w (Thompson sampling: ranking by a draw
// explores settings whose features the measurements have seen little of, in proportion
// to how unsure the fit is there, and exploits where it is sure).
#pragma once

#include <array>
#include <limits>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/rng.hpp"
#include "sample/predictor.hpp"
#include "sample/regression_forest.hpp"
#include "setting/setting.hpp"

namespace isletune {

// What a failed measurement that says nothing about speed (a compile or launch error, a wrong
// result, a crash) is in the fit. `median`: the median of the successes, so a region that fails
// is not preferred yet does not bend the main effects; `twice_slowest`: far above every success,
// so the fit avoids failures most, but a compile error of one kernel among fast settings pulls
// their indicators toward slow, and a few such outliers in log time outweigh the rest of a
// least-squares fit (docs/decisions.md#failed-as-median).
enum class FailedAs { median, twice_slowest };

class OnlineModel final : public Predictor {
 public:
  // Feature map over `settings` (the alphabet of the search); lambda = ridge strength.
  // `prior` (may be null) must outlive the model.
  // `interact`: the parameters whose indicators multiply every other indicator (default:
  // the merge kind, as above).
  // `plan_features`: the prior's features() as more columns (needs a prior); with
  // `plan_interact` also each of them times each interacting indicator.
  explicit OnlineModel(std::span<const Setting> settings, double lambda = 1.0,
                       const Predictor* prior = nullptr,
                       std::span<const Param> interact = kMergeOnly, bool plan_features = false,
                       bool plan_interact = false);
  static constexpr Param kMergeOnly[] = {Param::merge};

  // A kernel correction of the regression (off with length 0): after the ridge fit, its
  // residuals r are smoothed over the measured settings by kernel ridge regression,
  // k(s, t) = exp(-hamming(s, t) / length) over the parameters, alpha = (K + noise I)^-1 r,
  // and predict adds sum_j alpha_j k(s, t_j): a measured setting that beats the regression
  // lifts its neighbours, which the main effects and their interactions cannot express.
  void set_kernel(double length, double noise) {
    kernel_length_ = length;
    kernel_noise_ = noise;
  }

  // A forest correction of the regression (off with options.trees 0): after the ridge fit,
  // a random forest of regression trees (RegressionForest) is fit to its residuals over the
  // varying parameters' values, the prior's log prediction and the plan features, and
  // predict adds its mean: the trees split where the main effects and their interactions
  // with the kernel family fall short (e.g. a block size that pays only with one merge
  // factor). Fit before the kernel correction, which then smooths what it leaves.
  void set_forest(RegressionForest::Options options) { forest_ = RegressionForest(options); }

  void set_failed_as(FailedAs f) { failed_as_ = f; }

  // With `on`, fit() also computes the ridge's leave-one-out error (loo_rmse).
  void set_loo(bool on) { loo_ = on; }
  // Root mean square of the leave-one-out residuals of the last fit in log time (the
  // ridge part: e_i / (1 - h_ii), h the hat matrix), NaN while unfit or without set_loo.
  [[nodiscard]] double loo_rmse() const { return loo_rmse_; }
  // Standard deviation of the last fit's targets (log time, failures as fitted), 0 while
  // unfit: a loo_rmse() at or above it predicts no better than the mean.
  [[nodiscard]] double target_sd() const { return target_sd_; }
  // The ridge strength of the plan-feature columns (default: lambda, as every column).
  void set_plan_lambda(double lambda) { plan_lambda_ = lambda; }

  // Refits on measured (setting, median ms) pairs; +infinity marks a setting slower than any
  // success (a timeout), ms <= 0 or NaN another failure (Measurement::model_ms). Fewer
  // than `min_points` successes leave the model unfit.
  void fit(std::span<const std::pair<Setting, double>> measured, int min_points = 8);
  [[nodiscard]] bool fitted() const { return fitted_; }
  // Predicted ms (exp of the regression); 1 for every setting while unfit.
  [[nodiscard]] double predict_ms(const Setting& s) const override;
  [[nodiscard]] std::string name() const override { return "online"; }
  [[nodiscard]] std::size_t features() const { return feature_count_; }
  // Residual standard deviation of the last fit in log time (0 while unfit).
  [[nodiscard]] double residual_sd() const { return residual_sd_; }
  // One draw from the weights' posterior, as an offset from the fitted weights, its
  // covariance (scale * residual_sd())^2 A^-1; empty while unfit. Draws from `rng` only.
  [[nodiscard]] std::vector<double> draw(Rng& rng, double scale = 1.0) const;
  // An optimistic prediction: predict_ms(s) lowered by `kappa` times the forest's spread
  // there (its trees' standard deviation in log time), so the picks also go where the
  // bootstrap samples disagree (a lower confidence bound; predict_ms without a forest).
  [[nodiscard]] double optimistic_ms(const Setting& s, double kappa) const;
  // predict_ms(s) under the fitted weights plus `offset` (a draw(); empty: predict_ms(s)).
  [[nodiscard]] double predict_ms(const Setting& s, std::span<const double> offset) const;

 private:
  // Indicator features of `s` (indices of the features that are 1).
  [[nodiscard]] std::vector<int> active(const Setting& s) const;
  // The continuous columns of `s`: the prior's log prediction (clamped), then the scaled
  // plan features; empty without a prior. Cached for the settings given at construction.
  [[nodiscard]] std::vector<double> dense(const Setting& s) const;
  [[nodiscard]] std::vector<double> compute_dense(const Setting& s) const;
  // The same from the setting's plan features `f` (empty without plan features).
  [[nodiscard]] std::vector<double> dense_of(const Setting& s, std::span<const double> f) const;
  // The forest's row of `s` with dense columns `z` (dense(s)): the varying parameters'
  // values, then the prior's log prediction and the scaled plan features (not their
  // interaction copies).
  [[nodiscard]] std::vector<double> forest_row(const Setting& s, std::span<const double> z) const;
  // log(predict_ms(s, offset)), the forest's part lowered by `kappa` of its spread.
  [[nodiscard]] double log_ms(const Setting& s, std::span<const double> offset, double kappa) const;

  struct Level {
    Param param;
    int value;
  };
  std::vector<Level> levels_;      // one-hot main effects
  std::vector<Param> varying_;     // the parameters with more than one value
  std::vector<int> merge_levels_;  // indices into levels_ of the interacting indicators
  std::size_t feature_count_ = 0;
  std::size_t sparse_count_ = 0;  // indicator columns; the dense ones follow
  double lambda_;
  const Predictor* prior_ = nullptr;  // its feature is the first dense column
  bool plan_features_ = false;
  bool plan_interact_ = false;
  double plan_lambda_ = -1;  // < 0: lambda_
  bool loo_ = false;
  FailedAs failed_as_ = FailedAs::median;
  double target_sd_ = 0;
  double loo_rmse_ = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> plan_mean_, plan_scale_;  // per plan feature: (x - mean) * scale
  std::unordered_map<Setting, std::vector<double>, SettingHash> dense_cache_;
  std::vector<double> weights_;
  std::vector<double> chol_;  // lower Cholesky factor of the normal matrix A, d x d
  double residual_sd_ = 0;
  double kernel_length_ = 0, kernel_noise_ = 1;
  std::vector<Setting> kernel_points_;  // the measured settings of the kernel correction
  std::vector<double> kernel_alpha_;
  std::array<double, kParamCount + 1> kernel_of_distance_{};
  [[nodiscard]] double kernel_term(const Setting& s) const;
  RegressionForest forest_;  // fit on the ridge's residuals (set_forest)
  double intercept_ = 0;
  bool fitted_ = false;
};

}  // namespace isletune
