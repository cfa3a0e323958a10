// Ridge regression over one-hot setting features (model documented in online_model.hpp).
#include "sample/online_model.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace isletune {
namespace {

// The upper median of `v` (not empty; reordered).
double median_of(std::vector<double>& v) {
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

// Solves K x = b in place (b becomes x) for K symmetric positive definite, given by its
// lower triangle (row-major, m x m), which becomes its Cholesky factor. False when K is
// not positive definite.
bool cholesky_solve(std::vector<double>& k, std::size_t m, std::vector<double>& b) {
  for (std::size_t j = 0; j < m; ++j) {
    double diag = k[j * m + j];
    for (std::size_t q = 0; q < j; ++q)
      diag -= k[j * m + q] * k[j * m + q];
    if (!(diag > 0))
      return false;
    diag = std::sqrt(diag);
    k[j * m + j] = diag;
    for (std::size_t i = j + 1; i < m; ++i) {
      double v = k[i * m + j];
      for (std::size_t q = 0; q < j; ++q)
        v -= k[i * m + q] * k[j * m + q];
      k[i * m + j] = v / diag;
    }
  }
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t q = 0; q < i; ++q)
      b[i] -= k[i * m + q] * b[q];
    b[i] /= k[i * m + i];
  }
  for (std::size_t i = m; i-- > 0;) {
    for (std::size_t q = i + 1; q < m; ++q)
      b[i] -= k[q * m + i] * b[q];
    b[i] /= k[i * m + i];
  }
  return true;
}

}  // namespace

// One indicator per non-first value of every varying parameter, plus merge interactions,
// then the dense columns (the prior's log prediction, the scaled plan features).
OnlineModel::OnlineModel(std::span<const Setting> settings, double lambda, const Predictor* prior,
                         std::span<const Param> interact, bool plan_features, bool plan_interact)
    : lambda_(lambda),
      prior_(prior),
      plan_features_(plan_features && prior != nullptr),
      plan_interact_(plan_interact && plan_features_) {
  for (std::size_t p = 0; p < kParamCount; ++p) {
    std::set<int> values;
    for (const Setting& s : settings)
      values.insert(s[static_cast<Param>(p)]);
    if (values.size() < 2)
      continue;
    varying_.push_back(static_cast<Param>(p));
    for (auto it = std::next(values.begin()); it != values.end(); ++it) {
      if (std::find(interact.begin(), interact.end(), static_cast<Param>(p)) != interact.end())
        merge_levels_.push_back(static_cast<int>(levels_.size()));
      levels_.push_back({static_cast<Param>(p), *it});
    }
  }
  sparse_count_ = levels_.size() + merge_levels_.size() * levels_.size();
  std::size_t dense_count = prior_ ? 1 : 0;
  std::vector<std::vector<double>> raw;  // the plan features of `settings`, computed once
  if (plan_features_) {
    // Scale each plan feature to unit standard deviation over `settings` (a constant one
    // gets scale 0: it carries nothing the intercept does not).
    const std::size_t f = prior_->feature_count();
    plan_mean_.assign(f, 0.0);
    plan_scale_.assign(f, 0.0);
    std::vector<double> sq(f, 0.0);
    raw.reserve(settings.size());
    for (const Setting& s : settings) {
      raw.push_back(prior_->features(s));
      for (std::size_t k = 0; k < f; ++k) {
        plan_mean_[k] += raw.back()[k];
        sq[k] += raw.back()[k] * raw.back()[k];
      }
    }
    const double n = static_cast<double>(std::max<std::size_t>(1, settings.size()));
    for (std::size_t k = 0; k < f; ++k) {
      plan_mean_[k] /= n;
      const double var = sq[k] / n - plan_mean_[k] * plan_mean_[k];
      plan_scale_[k] = var > 1e-12 ? 1.0 / std::sqrt(var) : 0.0;
    }
    dense_count += f * (1 + (plan_interact_ ? merge_levels_.size() : 0));
  }
  feature_count_ = sparse_count_ + dense_count;
  if (prior_) {
    for (std::size_t i = 0; i < settings.size(); ++i)
      dense_cache_.emplace(settings[i],
                           dense_of(settings[i], plan_features_ ? std::span<const double>(raw[i])
                                                                : std::span<const double>()));
  }
}

std::vector<double> OnlineModel::compute_dense(const Setting& s) const {
  if (!plan_features_)
    return dense_of(s, {});
  const std::vector<double> f = prior_->features(s);
  return dense_of(s, f);
}

std::vector<double> OnlineModel::dense_of(const Setting& s, std::span<const double> f) const {
  std::vector<double> z;
  if (!prior_)
    return z;
  const double p = prior_->predict_ms(s);
  // Unfit plans (RooflinePredictor::kUnfit) and failures sit one decade above the rest.
  z.push_back(std::log(std::clamp(p > 0 && std::isfinite(p) ? p : 1e3, 1e-6, 1e3)));
  if (plan_features_) {
    const std::size_t first = z.size();
    for (std::size_t k = 0; k < plan_mean_.size(); ++k)
      z.push_back(k < f.size() ? (f[k] - plan_mean_[k]) * plan_scale_[k] : 0.0);
    if (plan_interact_) {
      for (const int level : merge_levels_) {
        const bool on = s[levels_[level].param] == levels_[level].value;
        for (std::size_t k = 0; k < plan_mean_.size(); ++k)
          z.push_back(on ? z[first + k] : 0.0);
      }
    }
  }
  return z;
}

std::vector<double> OnlineModel::forest_row(const Setting& s, std::span<const double> z) const {
  std::vector<double> row;
  row.reserve(varying_.size() + 1 + plan_mean_.size());
  for (const Param p : varying_)
    row.push_back(s[p]);
  const std::size_t own = std::min(z.size(), 1 + plan_mean_.size());
  row.insert(row.end(), z.begin(), z.begin() + static_cast<std::ptrdiff_t>(own));
  return row;
}

std::vector<double> OnlineModel::dense(const Setting& s) const {
  const auto it = dense_cache_.find(s);
  return it != dense_cache_.end() ? it->second : compute_dense(s);
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
  std::vector<double> successes;
  for (const auto& [s, ms] : measured) {
    if (ms > 0 && std::isfinite(ms))
      successes.push_back(ms);
  }
  fitted_ = false;
  if (std::ssize(successes) < min_points || feature_count_ == 0)
    return;
  const double slow_ms = 2 * *std::max_element(successes.begin(), successes.end());
  const double failed_ms = failed_as_ == FailedAs::median ? median_of(successes) : slow_ms;
  const std::size_t d = feature_count_;
  const std::size_t s0 = sparse_count_;  // the first dense column
  std::vector<std::vector<int>> rows;
  std::vector<std::vector<double>> z;  // dense columns per row
  std::vector<double> y;               // targets
  for (const auto& [s, ms] : measured) {
    rows.push_back(active(s));
    const bool slow = ms == std::numeric_limits<double>::infinity();
    y.push_back(std::log(ms > 0 && std::isfinite(ms) ? ms : (slow ? slow_ms : failed_ms)));
    z.push_back(dense(s));
  }
  const double n = static_cast<double>(y.size());
  double mean_y = 0;
  for (const double v : y)
    mean_y += v / n;
  double var_y = 0;
  for (const double v : y)
    var_y += (v - mean_y) * (v - mean_y) / n;
  target_sd_ = std::sqrt(var_y);
  // Column means of X, so the intercept stays out of the penalty.
  std::vector<double> mean_x(d, 0.0);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (const int j : rows[i])
      mean_x[j] += 1.0 / n;
    for (std::size_t c = 0; c < z[i].size(); ++c)
      mean_x[s0 + c] += z[i][c] / n;
  }
  std::vector<double> a(d * d, 0.0), b(d, 0.0);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double dy = y[i] - mean_y;
    for (const int j : rows[i]) {
      b[j] += dy;
      for (const int k : rows[i])
        a[j * d + k] += 1.0;
      for (std::size_t c = 0; c < z[i].size(); ++c) {
        a[j * d + s0 + c] += z[i][c];
        a[(s0 + c) * d + j] += z[i][c];
      }
    }
    for (std::size_t c = 0; c < z[i].size(); ++c) {
      b[s0 + c] += z[i][c] * dy;
      for (std::size_t e = 0; e < z[i].size(); ++e)
        a[(s0 + c) * d + s0 + e] += z[i][c] * z[i][e];
    }
  }
  // The plan features follow the prior's own column (s0).
  const double plan_lambda = plan_lambda_ >= 0 ? plan_lambda_ : lambda_;
  for (std::size_t j = 0; j < d; ++j) {
    for (std::size_t k = 0; k < d; ++k)
      a[j * d + k] -= n * mean_x[j] * mean_x[k];
    a[j * d + j] += j > s0 ? plan_lambda : lambda_;
  }
  // a = L L^T in place in the lower triangle (kept for the posterior), w = a^-1 b.
  std::vector<double> w(b);
  if (!cholesky_solve(a, d, w))
    return;
  weights_ = std::move(w);
  intercept_ = mean_y;
  for (std::size_t j = 0; j < d; ++j)
    intercept_ -= weights_[j] * mean_x[j];
  chol_ = std::move(a);
  const auto fitted_value = [&](std::size_t i) {
    double v = intercept_;
    for (const int j : rows[i])
      v += weights_[j];
    for (std::size_t c = 0; c < z[i].size(); ++c)
      v += weights_[s0 + c] * z[i][c];
    return v;
  };
  double rss = 0;
  for (std::size_t i = 0; i < rows.size(); ++i)
    rss += (y[i] - fitted_value(i)) * (y[i] - fitted_value(i));
  residual_sd_ = std::sqrt(rss / n);
  loo_rmse_ = std::numeric_limits<double>::quiet_NaN();
  if (loo_) {
    // h_ii = 1/n + |L^-1 (x_i - mean_x)|^2 (the intercept's share and the centred row's).
    double press = 0;
    std::vector<double> v(d);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      for (std::size_t j = 0; j < d; ++j)
        v[j] = -mean_x[j];
      for (const int j : rows[i])
        v[j] += 1.0;
      for (std::size_t c = 0; c < z[i].size(); ++c)
        v[s0 + c] += z[i][c];
      double h = 1.0 / n;
      for (std::size_t j = 0; j < d; ++j) {
        double t = v[j];
        for (std::size_t q = 0; q < j; ++q)
          t -= chol_[j * d + q] * v[q];
        v[j] = t / chol_[j * d + j];
        h += v[j] * v[j];
      }
      const double e = (y[i] - fitted_value(i)) / std::max(1e-6, 1.0 - h);
      press += e * e;
    }
    loo_rmse_ = std::sqrt(press / n);
  }
  // The forest on the ridge's residuals; its seed is the number of points, so a refit on
  // the same measurements (a resumed island) grows the same trees.
  std::vector<std::vector<double>> fx;
  if (forest_.options().trees > 0) {
    std::vector<double> r;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      fx.push_back(forest_row(measured[i].first, z[i]));
      r.push_back(y[i] - fitted_value(i));
    }
    forest_.fit(fx, r, rows.size());
  }
  kernel_points_.clear();
  kernel_alpha_.clear();
  if (kernel_length_ > 0) {
    for (std::size_t k = 0; k <= kParamCount; ++k)
      kernel_of_distance_[k] = std::exp(-static_cast<double>(k) / kernel_length_);
    const std::size_t m = rows.size();
    std::vector<double> r(m);
    for (std::size_t i = 0; i < m; ++i) {
      r[i] = y[i] - fitted_value(i) - (fx.empty() ? 0.0 : forest_.predict(fx[i]));
      kernel_points_.push_back(measured[i].first);
    }
    std::vector<double> k(m * m);
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j <= i; ++j) {
        const double v = kernel_of_distance_[static_cast<std::size_t>(
            differing_params(kernel_points_[i], kernel_points_[j]))];
        k[i * m + j] = v + (i == j ? kernel_noise_ : 0.0);
      }
    if (cholesky_solve(k, m, r))
      kernel_alpha_ = std::move(r);
    else
      kernel_points_.clear();
  }
  fitted_ = true;
}

double OnlineModel::kernel_term(const Setting& s) const {
  double v = 0;
  for (std::size_t j = 0; j < kernel_alpha_.size(); ++j)
    v += kernel_alpha_[j] *
         kernel_of_distance_[static_cast<std::size_t>(differing_params(s, kernel_points_[j]))];
  return v;
}

// offset = scale * sigma * L^-T u, u standard normal (Box-Muller on the engine's reals):
// its covariance is (scale sigma)^2 (L L^T)^-1 = (scale sigma)^2 A^-1.
std::vector<double> OnlineModel::draw(Rng& rng, double scale) const {
  if (!fitted_)
    return {};
  const std::size_t d = feature_count_;
  std::vector<double> u(d);
  for (std::size_t i = 0; i < d; i += 2) {
    const double r = std::sqrt(-2.0 * std::log(1.0 - rng.uniform()));
    const double t = 2.0 * 3.14159265358979323846 * rng.uniform();
    u[i] = r * std::cos(t);
    if (i + 1 < d)
      u[i + 1] = r * std::sin(t);
  }
  const double s = scale * residual_sd_;
  for (std::size_t i = d; i-- > 0;) {
    for (std::size_t k = i + 1; k < d; ++k)
      u[i] -= chol_[k * d + i] * u[k];
    u[i] /= chol_[i * d + i];
  }
  for (double& v : u)
    v *= s;
  return u;
}

double OnlineModel::predict_ms(const Setting& s) const {
  return predict_ms(s, {});
}

double OnlineModel::optimistic_ms(const Setting& s, double kappa) const {
  return fitted_ ? std::exp(log_ms(s, {}, kappa)) : 1.0;
}

double OnlineModel::predict_ms(const Setting& s, std::span<const double> offset) const {
  return fitted_ ? std::exp(log_ms(s, offset, 0.0)) : 1.0;
}

// The offset's intercept shift (offset . mean_x) is the same for every setting, so it is
// left out: rankings by a draw do not depend on it.
double OnlineModel::log_ms(const Setting& s, std::span<const double> offset, double kappa) const {
  const bool shifted = offset.size() == weights_.size();
  double v = intercept_;
  for (const int j : active(s))
    v += weights_[j] + (shifted ? offset[j] : 0.0);
  const std::vector<double> z = prior_ ? dense(s) : std::vector<double>{};
  for (std::size_t c = 0; c < z.size(); ++c)
    v += (weights_[sparse_count_ + c] + (shifted ? offset[sparse_count_ + c] : 0.0)) * z[c];
  if (!forest_.empty()) {
    const auto [mean, sd] = forest_.predict_spread(forest_row(s, z));
    v += mean - kappa * sd;
  }
  if (!kernel_alpha_.empty())
    v += kernel_term(s);
  return v;
}

}  // namespace isletune
