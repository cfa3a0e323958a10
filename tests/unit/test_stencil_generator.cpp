// Random symmetric stencils (Alg. 1) and Table-2 features of known stencils.
#include <gtest/gtest.h>

#include <set>

#include "stencil/features.hpp"
#include "stencil/generator.hpp"
#include "stencil/typical.hpp"

namespace isletune {
namespace {

TEST(StencilGenerator, OutputIsSymmetricOverEveryAxis) {
  for (int dims = 2; dims <= 3; ++dims) {
    for (std::uint64_t seed = 0; seed < 200; ++seed) {
      const Stencil s = random_stencil(dims, seed);
      const std::set<Offset> set(s.offsets().begin(), s.offsets().end());
      for (const Offset& o : s.offsets()) {
        EXPECT_TRUE(set.contains(Offset{-o.x, o.y, o.z}));
        EXPECT_TRUE(set.contains(Offset{o.x, -o.y, o.z}));
        EXPECT_TRUE(set.contains(Offset{o.x, o.y, -o.z}));
        if (dims == 2)
          EXPECT_EQ(o.z, 0);
      }
      EXPECT_TRUE(set.contains(Offset{}));
    }
  }
}

TEST(StencilGenerator, SameSeedSameStencilDifferentSeedsDiffer) {
  for (int dims = 2; dims <= 3; ++dims) {
    std::set<std::vector<Offset>> distinct;
    for (std::uint64_t seed = 0; seed < 50; ++seed) {
      const Stencil a = random_stencil(dims, seed);
      const Stencil b = random_stencil(dims, seed);
      EXPECT_EQ(a.offsets(), b.offsets());
      EXPECT_EQ(a.coefficients(), b.coefficients());
      distinct.insert(a.offsets());
    }
    EXPECT_GE(distinct.size(), 45u);  // a handful of small 2-D patterns may repeat
  }
}

TEST(StencilGenerator, OrderAtMostFourWithEveryRingUpToItNonEmpty) {
  for (int dims = 2; dims <= 3; ++dims) {
    for (std::uint64_t seed = 0; seed < 300; ++seed) {
      const Stencil s = random_stencil(dims, seed);
      ASSERT_GE(s.order(), 1);
      ASSERT_LE(s.order(), 4);
      const auto f = stencil_features(s);
      for (int k = 1; k <= s.order(); ++k)
        EXPECT_GT(f.nnz_per_ring[static_cast<std::size_t>(k - 1)], 0);
    }
  }
}

TEST(StencilGenerator, OrderDrawnProportionalToBoxGrowth) {
  // 2-D weights (2r+1)^2 - 1 = 8, 24, 48, 80 of 160.
  std::array<int, 5> seen{};
  Rng rng(7, 1);
  const int n = 4000;
  for (int i = 0; i < n; ++i)
    ++seen[static_cast<std::size_t>(random_stencil(2, rng).order())];
  const std::array<double, 4> expected = {8 / 160.0, 24 / 160.0, 48 / 160.0, 80 / 160.0};
  for (int r = 1; r <= 4; ++r) {
    EXPECT_NEAR(seen[static_cast<std::size_t>(r)] / double(n),
                expected[static_cast<std::size_t>(r - 1)], 0.03)
        << r;
  }
}

TEST(StencilFeatures, Star2d2rRingsAndManhattanSteps) {
  const auto f = stencil_features(typical_stencil("star2d2r"));
  EXPECT_EQ(f.order, 2);
  EXPECT_EQ(f.nnz, 9);
  EXPECT_DOUBLE_EQ(f.sparsity, 9.0 / 25.0);
  EXPECT_EQ(f.nnz_per_ring[0], 4);
  EXPECT_EQ(f.nnz_per_ring[1], 4);
  EXPECT_EQ(f.nnz_per_ring[2], 0);
  EXPECT_DOUBLE_EQ(f.ratio_per_ring[0], 4.0 / 8.0);
  EXPECT_DOUBLE_EQ(f.ratio_per_ring[1], 4.0 / 16.0);
  EXPECT_EQ(f.nnz_per_step, (std::vector<int>{4, 4, 0, 0}));
  // Positions at L1 distance 1..4 inside the 5x5 square: 4, 8, 8, 4.
  EXPECT_EQ(f.ratio_per_step, (std::vector<double>{1.0, 0.5, 0.0, 0.0}));
}

TEST(StencilFeatures, BoxIsDenseAndCrossSitsOnEvenSteps) {
  const auto box = stencil_features(typical_stencil("box2d1r"));
  EXPECT_DOUBLE_EQ(box.sparsity, 1.0);
  EXPECT_DOUBLE_EQ(box.ratio_per_ring[0], 1.0);
  EXPECT_EQ(box.nnz_per_step, (std::vector<int>{4, 4}));
  const auto box3 = stencil_features(typical_stencil("box3d1r"));
  EXPECT_EQ(box3.nnz_per_step, (std::vector<int>{6, 12, 8}));
  const auto cross = stencil_features(typical_stencil("cross3d2r"));
  EXPECT_EQ(cross.nnz, 17);
  EXPECT_EQ(cross.nnz_per_step, (std::vector<int>{0, 0, 8, 0, 0, 8}));
  EXPECT_EQ(cross.nnz_per_ring[0], 8);
  EXPECT_DOUBLE_EQ(cross.ratio_per_ring[0], 8.0 / 26.0);
}

TEST(StencilFeatures, VectorHasFixedLengthPerDimsAndMatchesNames) {
  const auto small = stencil_features(typical_stencil("star3d1r"));
  const auto big = stencil_features(typical_stencil("box3d4r"));
  EXPECT_EQ(small.as_vector().size(), big.as_vector().size());
  EXPECT_EQ(small.as_vector().size(), small.names().size());
  EXPECT_EQ(small.as_vector().size(), 3u + 16u + 2u * 24u);
  EXPECT_EQ(small.names()[2], "sparsity");
  EXPECT_DOUBLE_EQ(big.as_vector()[1], 729.0);
  EXPECT_DOUBLE_EQ(big.as_vector()[2], 1.0);
}

}  // namespace
}  // namespace isletune
