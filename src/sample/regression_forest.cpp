// Random forest of regression trees (documented in regression_forest.hpp).
#include "sample/regression_forest.hpp"

#include <algorithm>
#include <numeric>

#include "common/rng.hpp"

namespace isletune {
namespace {

// One tree's growth over bootstrap counts: the rows of a node are the indices in
// [begin, end) of `idx`, each weighing `count[i]`.
class TreeBuilder {
 public:
  TreeBuilder(std::span<const std::vector<double>> x, std::span<const double> y,
              std::span<const int> count, const RegressionForest::Options& o, Rng& rng)
      : x_(x), y_(y), count_(count), o_(o), rng_(rng), features_(x.front().size()) {
    tried_ = std::max<std::size_t>(
        1, static_cast<std::size_t>(o.feature_share * static_cast<double>(features_) + 0.5));
    order_.resize(features_);
    std::iota(order_.begin(), order_.end(), 0);
  }

  // Grows the node of idx[begin, end) at `depth` into `nodes`; returns its index.
  template <class Node>
  int grow(std::vector<Node>& nodes, std::vector<int>& idx, std::size_t begin, std::size_t end,
           int depth) {
    double w = 0, sum = 0, sq = 0;
    for (std::size_t k = begin; k < end; ++k) {
      const double c = count_[static_cast<std::size_t>(idx[k])];
      const double v = y_[static_cast<std::size_t>(idx[k])];
      w += c;
      sum += c * v;
      sq += c * v * v;
    }
    const int at = static_cast<int>(nodes.size());
    nodes.push_back(Node{});
    nodes[static_cast<std::size_t>(at)].value = w > 0 ? sum / w : 0.0;
    if (depth >= o_.max_depth || w < 2.0 * o_.min_leaf)
      return at;
    // The features tried: a partial Fisher-Yates shuffle's first `tried_`.
    for (std::size_t k = 0; k < tried_; ++k)
      std::swap(order_[k], order_[k + rng_.below(features_ - k)]);
    const double parent_sse = sq - sum * sum / w;
    double best_gain = 1e-12 * (1.0 + parent_sse);
    int best_feature = -1;
    double best_threshold = 0;
    std::vector<int> sorted(idx.begin() + static_cast<std::ptrdiff_t>(begin),
                            idx.begin() + static_cast<std::ptrdiff_t>(end));
    for (std::size_t k = 0; k < tried_; ++k) {
      const std::size_t f = order_[k];
      const auto value = [&](int i) { return x_[static_cast<std::size_t>(i)][f]; };
      std::sort(sorted.begin(), sorted.end(), [&](int a, int b) { return value(a) < value(b); });
      double lw = 0, lsum = 0;
      for (std::size_t j = 0; j + 1 < sorted.size(); ++j) {
        const auto i = static_cast<std::size_t>(sorted[j]);
        lw += count_[i];
        lsum += count_[i] * y_[i];
        const double here = value(sorted[j]), next = value(sorted[j + 1]);
        if (!(here < next) || lw < o_.min_leaf || w - lw < o_.min_leaf)
          continue;
        const double rsum = sum - lsum;
        // SSE reduction = sum_l^2 / w_l + sum_r^2 / w_r - sum^2 / w.
        const double gain = lsum * lsum / lw + rsum * rsum / (w - lw) - sum * sum / w;
        if (gain > best_gain) {
          best_gain = gain;
          best_feature = static_cast<int>(f);
          best_threshold = 0.5 * (here + next);
        }
      }
    }
    if (best_feature < 0)
      return at;
    const auto f = static_cast<std::size_t>(best_feature);
    const auto mid = std::partition(idx.begin() + static_cast<std::ptrdiff_t>(begin),
                                    idx.begin() + static_cast<std::ptrdiff_t>(end), [&](int i) {
                                      return x_[static_cast<std::size_t>(i)][f] <= best_threshold;
                                    });
    const auto split = static_cast<std::size_t>(mid - idx.begin());
    const int left = grow(nodes, idx, begin, split, depth + 1);
    const int right = grow(nodes, idx, split, end, depth + 1);
    Node& n = nodes[static_cast<std::size_t>(at)];
    n.feature = best_feature;
    n.threshold = best_threshold;
    n.left = left;
    n.right = right;
    return at;
  }

 private:
  std::span<const std::vector<double>> x_;
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
    TreeBuilder builder(x, y, count, options_, rng);
    roots_.push_back(builder.grow(nodes_, idx, 0, idx.size(), 0));
  }
}

double RegressionForest::predict(std::span<const double> row) const {
  if (roots_.empty())
    return 0.0;
  double sum = 0;
  for (const int root : roots_) {
    const Node* n = &nodes_[static_cast<std::size_t>(root)];
    while (n->feature >= 0)
      n = &nodes_[static_cast<std::size_t>(
          row[static_cast<std::size_t>(n->feature)] <= n->threshold ? n->left : n->right)];
    sum += n->value;
  }
  return sum / static_cast<double>(roots_.size());
}

}  // namespace isletune
