// Ridge regression over one-hot setting features (model documented in online_model.hpp).
#include "sample/online_model.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace isletune {

// One indicator per non-first value of every varying parameter, plus merge interactions.
OnlineModel::OnlineModel(std::span<const Setting> settings, double lambda, const Predictor* prior,
                         std::span<const Param> interact)
    : lambda_(lambda), prior_(prior) {
  for (std::size_t p = 0; p < kParamCount; ++p) {
    std::set<int> values;
    for (const Setting& s : settings)
      values.insert(s[static_cast<Param>(p)]);
    if (values.size() < 2)
      continue;
    for (auto it = std::next(values.begin()); it != values.end(); ++it) {
      if (std::find(interact.begin(), interact.end(), static_cast<Param>(p)) != interact.end())
        merge_levels_.push_back(static_cast<int>(levels_.size()));
      levels_.push_back({static_cast<Param>(p), *it});
    }
  }
  feature_count_ = levels_.size() + merge_levels_.size() * levels_.size() + (prior_ ? 1 : 0);
}

double OnlineModel::prior_feature(const Setting& s) const {
  if (!prior_)
    return 0;
  const double p = prior_->predict_ms(s);
  // Unfit plans (RooflinePredictor::kUnfit) and failures sit one decade above the rest.
  return std::log(std::clamp(p > 0 && std::isfinite(p) ? p : 1e3, 1e-6, 1e3));
}

// Main-effect indicators first, then merge-level x main-effect products.
std::vector<int> OnlineModel::active(const Setting& s) const {
  std::vector<int> on;
  for (std::size_t i = 0; i < levels_.size(); ++i) {
    if (s[levels_[i].param] == levels_[i].value)
      on.push_back(static_cast<int>(i));
  }
  const std::size_t mains = on.size();
  for (std::size_t m = 0; m < merge_levels_.size(); ++m) {
    const int level = merge_levels_[m];
    if (s[levels_[level].param] != levels_[level].value)
      continue;
    for (std::size_t j = 0; j < mains; ++j) {
      const int base = static_cast<int>(levels_.size() + m * levels_.size());
      on.push_back(base + on[j]);
    }
  }
  return on;
}

// Normal equations on centred targets, solved by Cholesky (A is positive definite).
void OnlineModel::fit(std::span<const std::pair<Setting, double>> measured, int min_points) {
  double slowest = 0;
  int ok = 0;
  for (const auto& [s, ms] : measured) {
    if (ms > 0 && std::isfinite(ms)) {
      slowest = std::max(slowest, ms);
      ++ok;
    }
  }
  fitted_ = false;
  if (ok < min_points || feature_count_ == 0)
    return;
  const std::size_t d = feature_count_;
  const int pf = prior_ ? static_cast<int>(d) - 1 : -1;  // the prior's column
  std::vector<std::vector<int>> rows;
  std::vector<double> y, z;  // targets, prior feature per row
  for (const auto& [s, ms] : measured) {
    rows.push_back(active(s));
    y.push_back(std::log(ms > 0 && std::isfinite(ms) ? ms : 2 * slowest));
    z.push_back(prior_feature(s));
  }
  const double n = static_cast<double>(y.size());
  double mean_y = 0;
  for (const double v : y)
    mean_y += v / n;
  // Column means of X, so the intercept stays out of the penalty.
  std::vector<double> mean_x(d, 0.0);
  for (const auto& r : rows)
    for (const int j : r)
      mean_x[j] += 1.0 / n;
  if (pf >= 0) {
    for (const double v : z)
      mean_x[pf] += v / n;
  }
  std::vector<double> a(d * d, 0.0), b(d, 0.0);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (const int j : rows[i]) {
      b[j] += y[i] - mean_y;
      for (const int k : rows[i])
        a[j * d + k] += 1.0;
      if (pf >= 0) {
        a[j * d + pf] += z[i];
        a[pf * d + j] += z[i];
      }
    }
    if (pf >= 0) {
      b[pf] += z[i] * (y[i] - mean_y);
      a[pf * d + pf] += z[i] * z[i];
    }
  }
  for (std::size_t j = 0; j < d; ++j) {
    for (std::size_t k = 0; k < d; ++k)
      a[j * d + k] -= n * mean_x[j] * mean_x[k];
    a[j * d + j] += lambda_;
  }
  // Cholesky: a = L L^T, in place in the lower triangle.
  for (std::size_t j = 0; j < d; ++j) {
    double diag = a[j * d + j];
    for (std::size_t k = 0; k < j; ++k)
      diag -= a[j * d + k] * a[j * d + k];
    if (!(diag > 0))
      return;
    diag = std::sqrt(diag);
    a[j * d + j] = diag;
    for (std::size_t i = j + 1; i < d; ++i) {
      double v = a[i * d + j];
      for (std::size_t k = 0; k < j; ++k)
        v -= a[i * d + k] * a[j * d + k];
      a[i * d + j] = v / diag;
    }
  }
  std::vector<double> w(b);
  for (std::size_t i = 0; i < d; ++i) {
    for (std::size_t k = 0; k < i; ++k)
      w[i] -= a[i * d + k] * w[k];
    w[i] /= a[i * d + i];
  }
  for (std::size_t i = d; i-- > 0;) {
    for (std::size_t k = i + 1; k < d; ++k)
      w[i] -= a[k * d + i] * w[k];
    w[i] /= a[i * d + i];
  }
  weights_ = std::move(w);
  intercept_ = mean_y;
  for (std::size_t j = 0; j < d; ++j)
    intercept_ -= weights_[j] * mean_x[j];
  fitted_ = true;
}

double OnlineModel::predict_ms(const Setting& s) const {
  if (!fitted_)
    return 1.0;
  double v = intercept_;
  for (const int j : active(s))
    v += weights_[j];
  if (prior_)
    v += weights_.back() * prior_feature(s);
  return std::exp(v);
}

}  // namespace isletune
