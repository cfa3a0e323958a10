// A random forest of regression trees (CART on bootstrap samples, a random share of the
// features tried at each split), for the online model's residuals (OnlineModel::set_forest):
// the ridge regression's main effects and their interactions with the kernel family cannot
// say that a block of 256 threads pays only with a given merge factor; a tree splits on any
// feature given any path of splits above it. Pure C++, no dependency; deterministic for a
// seed, so a resumed island refits the same forest.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace isletune {

class RegressionForest {
 public:
  struct Options {
    int trees = 0;                // 0: no forest (predict() is 0)
    int min_leaf = 3;             // the fewest (bootstrap-weighted) points a leaf holds
    int max_depth = 12;           // splits from the root to a leaf, at most
    double feature_share = 0.33;  // share of the features tried at each split (at least 1)
  };

  RegressionForest() = default;
  explicit RegressionForest(Options options) : options_(options) {}

  // Fits on rows x (every row the same length) and targets y; `seed` draws the bootstrap
  // samples and the features tried. Fewer than 2 * min_leaf rows fit nothing.
  void fit(std::span<const std::vector<double>> x, std::span<const double> y, std::uint64_t seed);
  // The mean of the trees' leaves for `row` (0 without trees).
  [[nodiscard]] double predict(std::span<const double> row) const;
  // The mean and the standard deviation of the trees' leaves for `row` (0, 0 without
  // trees): how much the bootstrap samples disagree there, an uncertainty.
  [[nodiscard]] std::pair<double, double> predict_spread(std::span<const double> row) const;
  [[nodiscard]] bool empty() const { return nodes_.empty(); }
  [[nodiscard]] const Options& options() const { return options_; }

 private:
  // A split node (feature >= 0: go left when row[feature] <= threshold) or a leaf (value).
  struct Node {
    int feature = -1;
    double threshold = 0;
    int left = -1, right = -1;
    double value = 0;
  };
  Options options_;
  std::vector<Node> nodes_;  // every tree's nodes, each tree's root at roots_[t]
  std::vector<int> roots_;
};

}  // namespace isletune
