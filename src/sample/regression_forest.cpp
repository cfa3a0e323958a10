// Random forest of regression trees (documented in regression_forest.hpp).
#include "sample/regression_forest.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "common/rng.hpp"

namespace isletune {
namespace {

// Features as small bin numbers, so a node's best split of a feature is one pass over its
// rows and the feature's bins rather than a sort: a feature with at most kBins distinct
// values among the rows gets one bin per value, one with more gets kBins bins of about
// equal counts of distinct values. A split between bins b and b + 1 sends a row left when
// its value lies at or below the threshold midway between the last value of bin b and the
// first of bin b + 1, so predict() needs only the raw value.
constexpr std::size_t kBins = 64;

struct Binned {
  std::vector<std::vector<std::uint8_t>> bin;  // [row][feature]
  std::vector<std::vector<double>> threshold;  // [feature][b]: between bins b and b + 1
};

Binned bin_rows(std::span<const std::vector<double>> x) {
  const std::size_t n = x.size(), features = x.front().size();
  Binned out;
  out.bin.assign(n, std::vector<std::uint8_t>(features, 0));
  out.threshold.resize(features);
  std::vector<double> u;
  for (std::size_t f = 0; f < features; ++f) {
    u.clear();
    for (const auto& row : x)
      u.push_back(row[f]);
    std::sort(u.begin(), u.end());
    u.erase(std::unique(u.begin(), u.end()), u.end());
    const std::size_t bins = std::min(kBins, u.size());
    // Bin b holds the distinct values u[first[b]] .. u[first[b + 1] - 1].
    std::vector<double> lowest;  // u[first[b]] for b >= 1
    for (std::size_t b = 1; b < bins; ++b) {
      const std::size_t first = b * u.size() / bins;
      lowest.push_back(u[first]);
      out.threshold[f].push_back(0.5 * (u[first - 1] + u[first]));
    }
    for (std::size_t i = 0; i < n; ++i)
      out.bin[i][f] = static_cast<std::uint8_t>(
          std::upper_bound(lowest.begin(), lowest.end(), x[i][f]) - lowest.begin());
  }
  return out;
}

// One tree's growth over bootstrap counts: the rows of a node are the indices in
// [begin, end) of `idx`, each weighing `count[i]`.
class TreeBuilder {
 public:
  TreeBuilder(const Binned& x, std::span<const double> y, std::span<const int> count,
              const RegressionForest::Options& o, Rng& rng)
      : x_(x), y_(y), count_(count), o_(o), rng_(rng), features_(x.threshold.size()) {
    tried_ = std::max<std::size_t>(
        1, static_cast<std::size_t>(o.feature_share * static_cast<double>(features_) + 0.5));
    order_.resize(features_);
    std::iota(order_.begin(), order_.end(), 0);
  }

  // Grows the node of idx[begin, end) at `depth` into `nodes`; returns its index.
  template <class Node>
  int grow(std::vector<Node>& nodes, std::vector<int>& idx, std::size_t begin, std::size_t end,
           int depth) {
    double w = 0, sum = 0;
    for (std::size_t k = begin; k < end; ++k) {
      const auto i = static_cast<std::size_t>(idx[k]);
      w += count_[i];
      sum += count_[i] * y_[i];
    }
    const int at = static_cast<int>(nodes.size());
    nodes.push_back(Node{});
    nodes[static_cast<std::size_t>(at)].value = w > 0 ? sum / w : 0.0;
    if (depth >= o_.max_depth || w < 2.0 * o_.min_leaf)
      return at;
    // The features tried: a partial Fisher-Yates shuffle's first `tried_`.
    for (std::size_t k = 0; k < tried_; ++k)
      std::swap(order_[k], order_[k + rng_.below(features_ - k)]);
    // SSE reduction of a split = sum_l^2 / w_l + sum_r^2 / w_r - sum^2 / w.
    const double base = sum * sum / w;
    double best_gain = 1e-12 * (1.0 + std::abs(base));
    int best_feature = -1;
    std::size_t best_bin = 0;
    std::array<double, kBins> hw{}, hs{};
    for (std::size_t k = 0; k < tried_; ++k) {
      const std::size_t f = order_[k];
      const std::size_t bins = x_.threshold[f].size() + 1;
      std::fill(hw.begin(), hw.begin() + static_cast<std::ptrdiff_t>(bins), 0.0);
      std::fill(hs.begin(), hs.begin() + static_cast<std::ptrdiff_t>(bins), 0.0);
      for (std::size_t q = begin; q < end; ++q) {
        const auto i = static_cast<std::size_t>(idx[q]);
        const std::size_t b = x_.bin[i][f];
        hw[b] += count_[i];
        hs[b] += count_[i] * y_[i];
      }
      double lw = 0, lsum = 0;
      for (std::size_t b = 0; b + 1 < bins; ++b) {
        lw += hw[b];
        lsum += hs[b];
        if (hw[b] == 0 || lw < o_.min_leaf || w - lw < o_.min_leaf)
          continue;  // an empty bin splits as its neighbour does
        const double rsum = sum - lsum;
        const double gain = lsum * lsum / lw + rsum * rsum / (w - lw) - base;
        if (gain > best_gain) {
          best_gain = gain;
          best_feature = static_cast<int>(f);
          best_bin = b;
        }
      }
    }
    if (best_feature < 0)
      return at;
    const auto f = static_cast<std::size_t>(best_feature);
    const auto mid = std::partition(idx.begin() + static_cast<std::ptrdiff_t>(begin),
                                    idx.begin() + static_cast<std::ptrdiff_t>(end), [&](int i) {
                                      return x_.bin[static_cast<std::size_t>(i)][f] <= best_bin;
                                    });
    const auto split = static_cast<std::size_t>(mid - idx.begin());
    const int left = grow(nodes, idx, begin, split, depth + 1);
    const int right = grow(nodes, idx, split, end, depth + 1);
    Node& n = nodes[static_cast<std::size_t>(at)];
    n.feature = best_feature;
    n.threshold = x_.threshold[f][best_bin];
    n.left = left;
    n.right = right;
    return at;
  }

 private:
  const Binned& x_;
  std::span<const double> y_;
  std::span<const int> count_;
  const RegressionForest::Options& o_;
  Rng& rng_;
  std::size_t features_;
  std::size_t tried_ = 1;
  std::vector<std::size_t> order_;
};

}  // namespace

void RegressionForest::fit(std::span<const std::vector<double>> x, std::span<const double> y,
                           std::uint64_t seed) {
  nodes_.clear();
  roots_.clear();
  const std::size_t n = x.size();
  if (options_.trees <= 0 || n != y.size() || n < 2 * static_cast<std::size_t>(options_.min_leaf) ||
      x.front().empty())
    return;
  Rng rng(seed, 0x7265);  // the forest's own stream
  const Binned binned = bin_rows(x);
  std::vector<int> count(n), idx;
  for (int t = 0; t < options_.trees; ++t) {
    std::fill(count.begin(), count.end(), 0);
    for (std::size_t k = 0; k < n; ++k)
      ++count[rng.below(n)];
    idx.clear();
    for (std::size_t i = 0; i < n; ++i) {
      if (count[i] > 0)
        idx.push_back(static_cast<int>(i));
    }
    TreeBuilder builder(binned, y, count, options_, rng);
    roots_.push_back(builder.grow(nodes_, idx, 0, idx.size(), 0));
  }
}

double RegressionForest::predict(std::span<const double> row) const {
  return predict_spread(row).first;
}

std::pair<double, double> RegressionForest::predict_spread(std::span<const double> row) const {
  if (roots_.empty())
    return {0.0, 0.0};
  double sum = 0, sq = 0;
  for (const int root : roots_) {
    const Node* n = &nodes_[static_cast<std::size_t>(root)];
    while (n->feature >= 0)
      n = &nodes_[static_cast<std::size_t>(
          row[static_cast<std::size_t>(n->feature)] <= n->threshold ? n->left : n->right)];
    sum += n->value;
    sq += n->value * n->value;
  }
  const double k = static_cast<double>(roots_.size());
  const double mean = sum / k;
  return {mean, std::sqrt(std::max(0.0, sq / k - mean * mean))};
}

}  // namespace isletune
