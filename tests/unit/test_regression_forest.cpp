// The random forest of regression trees (sample/regression_forest.hpp) and the online
// model's forest correction (OnlineModel::set_forest).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/rng.hpp"
#include "sample/online_model.hpp"
#include "sample/regression_forest.hpp"
#include "test_ga_fakes.hpp"

namespace isletune {
namespace {

// Rows over a 6 x 6 grid of (x0, x1) with a third column of noise-free ramp x2, and an
// AND interaction: y is 1 only where x0 >= 4 and x1 >= 4, else 0.
struct AndData {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  AndData() {
    for (int a = 0; a < 6; ++a)
      for (int b = 0; b < 6; ++b) {
        x.push_back({static_cast<double>(a), static_cast<double>(b), 0.1 * (a + b)});
        y.push_back(a >= 4 && b >= 4 ? 1.0 : 0.0);
      }
  }
};

TEST(RegressionForest, LearnsAnInteractionNoMainEffectHolds) {
  const AndData d;
  RegressionForest forest({.trees = 40, .min_leaf = 2, .max_depth = 8, .feature_share = 0.67});
  forest.fit(d.x, d.y, 1);
  ASSERT_FALSE(forest.empty());
  const double inside = forest.predict(std::vector<double>{5, 5, 1.0});
  const double row = forest.predict(std::vector<double>{5, 1, 0.6});
  const double column = forest.predict(std::vector<double>{1, 5, 0.6});
  const double corner = forest.predict(std::vector<double>{0, 0, 0.0});
  EXPECT_GT(inside, 0.6);
  EXPECT_LT(row, 0.3);
  EXPECT_LT(column, 0.3);
  EXPECT_LT(corner, 0.1);
}

TEST(RegressionForest, TheSameSeedGrowsTheSameTrees) {
  const AndData d;
  const RegressionForest::Options o{.trees = 10, .min_leaf = 2};
  RegressionForest a(o), b(o), c(o);
  a.fit(d.x, d.y, 7);
  b.fit(d.x, d.y, 7);
  c.fit(d.x, d.y, 8);
  bool differs = false;
  for (const auto& row : d.x) {
    EXPECT_EQ(a.predict(row), b.predict(row));
    differs = differs || a.predict(row) != c.predict(row);
  }
  EXPECT_TRUE(differs);  // another seed draws other bootstrap samples
}

// Where the rows agree the trees agree; where the targets scatter, the bootstrap samples
// grow different leaves and the spread is wide.
TEST(RegressionForest, TheSpreadIsWideOnlyWhereTheTargetsScatter) {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  Rng rng(3, 4);
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) {
      x.push_back({static_cast<double>(a), static_cast<double>(b)});
      y.push_back(a < 4 ? 1.0 : 4.0 * rng.uniform());
    }
  RegressionForest forest({.trees = 40, .min_leaf = 2, .feature_share = 1.0});
  forest.fit(x, y, 5);
  const auto [calm_mean, calm_sd] = forest.predict_spread(std::vector<double>{1, 3});
  const auto [rough_mean, rough_sd] = forest.predict_spread(std::vector<double>{6, 3});
  EXPECT_NEAR(calm_mean, 1.0, 0.05);
  EXPECT_LT(calm_sd, 0.05);
  EXPECT_GT(rough_sd, 5 * std::max(calm_sd, 0.01));
  EXPECT_EQ(forest.predict(std::vector<double>{6, 3}), rough_mean);
  EXPECT_EQ(RegressionForest().predict_spread(std::vector<double>{6, 3}), std::make_pair(0.0, 0.0));
}

// A feature of more distinct values than bins: the splits still fall where the target
// steps, in the feature's own values (predict() compares raw values with the thresholds).
TEST(RegressionForest, ManyDistinctValuesSplitWhereTheTargetSteps) {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  Rng rng(9, 1);
  for (int i = 0; i < 500; ++i) {
    const double v = 1000 + 500 * rng.uniform();  // 500 distinct values, far from 0
    x.push_back({v});
    y.push_back(v > 1250 ? 1.0 : 0.0);
  }
  RegressionForest forest({.trees = 20, .min_leaf = 3, .feature_share = 1.0});
  forest.fit(x, y, 2);
  EXPECT_LT(forest.predict(std::vector<double>{1010}), 0.05);
  EXPECT_LT(forest.predict(std::vector<double>{1235}), 0.2);
  EXPECT_GT(forest.predict(std::vector<double>{1265}), 0.8);
  EXPECT_GT(forest.predict(std::vector<double>{1490}), 0.95);
}

TEST(RegressionForest, NoTreesOrTooFewRowsFitNothing) {
  const AndData d;
  RegressionForest none({.trees = 0});
  none.fit(d.x, d.y, 1);
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.predict(d.x.front()), 0.0);
  RegressionForest few({.trees = 5, .min_leaf = 3});
  few.fit(std::span(d.x).first(5), std::span(d.y).first(5), 1);  // fewer than 2 * min_leaf
  EXPECT_TRUE(few.empty());
  // A leaf never holds fewer than min_leaf points: with min_leaf = all rows a tree is
  // one leaf, the (bootstrap) mean, the same for every row.
  RegressionForest stump({.trees = 3, .min_leaf = 18});
  stump.fit(d.x, d.y, 1);
  ASSERT_FALSE(stump.empty());
  EXPECT_EQ(stump.predict(d.x.front()), stump.predict(d.x.back()));
}

// tbx and tby do not interact in the ridge's features (only the merge kind does), yet here
// each alone is slow and both together fastest. Fit on every setting, the ridge with its
// main effects ranks the optimum far down; with the forest on its residuals, within the
// cell of settings that share its tbx and tby.
TEST(OnlineModel, AForestCorrectionRanksAnInteractionOptimum) {
  const SampledSet set = testing::landscape_set();
  const auto time = [](const Setting& s) {
    const bool x = s[Param::tbx] == 6, y = s[Param::tby] == 1;
    return (x && y ? 0.6 : (x || y ? 1.4 : 1.0)) * (1.0 + 0.05 * s[Param::ufx]);
  };
  std::vector<std::pair<Setting, double>> data;
  Setting optimum = set.settings.front();
  for (const Setting& s : set.settings) {
    data.emplace_back(s, time(s));
    if (time(s) < time(optimum))
      optimum = s;
  }
  const auto rank_of_optimum = [&](const OnlineModel& m) {
    int better = 0;
    for (const Setting& s : set.settings)
      better += m.predict_ms(s) < m.predict_ms(optimum) ? 1 : 0;
    return better;
  };
  OnlineModel ridge(set.settings);
  ridge.fit(data);
  OnlineModel forest(set.settings);
  // Four features here (no prior): two tried per split, as a third of the product's ~30.
  forest.set_forest({.trees = 30, .min_leaf = 2, .feature_share = 0.5});
  forest.fit(data);
  ASSERT_TRUE(ridge.fitted());
  ASSERT_TRUE(forest.fitted());
  EXPECT_GT(rank_of_optimum(ridge), 50);
  // The optimistic prediction is the forest's lower bound: never above the prediction, equal
  // with kappa 0 and without a forest.
  int lowered = 0;
  for (const Setting& s : set.settings) {
    EXPECT_LE(forest.optimistic_ms(s, 1.0), forest.predict_ms(s));
    EXPECT_EQ(forest.optimistic_ms(s, 0.0), forest.predict_ms(s));
    EXPECT_EQ(ridge.optimistic_ms(s, 1.0), ridge.predict_ms(s));
    lowered += forest.optimistic_ms(s, 1.0) < forest.predict_ms(s) ? 1 : 0;
  }
  EXPECT_GT(lowered, 0);
  // Every setting of the cell (tbx 6, tby 1; 16 of them) is faster than every other one.
  EXPECT_LT(rank_of_optimum(forest), 16);
}

}  // namespace
}  // namespace isletune
