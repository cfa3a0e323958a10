// unit.ValuesTaken.*: values_taken lists exactly the values some valid setting takes (by
// full enumeration on spaces small enough), drops values no setting can take (sb above the
// grid, unrolling no merge factor admits), and shrinks the listed product of a 2-D part-1
// space to close to its valid-setting count.
#include <gtest/gtest.h>

#include <set>

#include "space/space.hpp"
#include "space/values_taken.hpp"
#include "stencil/typical.hpp"

namespace isletune {
namespace {

// Per parameter, the values of every valid setting (full enumeration).
Space::Values enumerated(const Space& space) {
  std::array<std::set<int>, kParamCount> seen;
  space.for_each_valid(-1, [&](const Setting& s) {
    for (std::size_t i = 0; i < kParamCount; ++i)
      seen[i].insert(s.values[i]);
  });
  Space::Values out;
  for (std::size_t i = 0; i < kParamCount; ++i)
    out[i].assign(seen[i].begin(), seen[i].end());
  return out;
}

// Product of the list lengths.
double product(const Space::Values& v) {
  double n = 1;
  for (const auto& list : v)
    n *= static_cast<double>(list.size());
  return n;
}

TEST(ValuesTaken, EqualsTheValuesOfEveryValidSettingOn2D) {
  const Stencil st = typical_stencil("star2d1r");
  const Grid grid{4096, 4096, 1};
  Space::Values v = Space::default_values(2, grid);
  v[index_of(Param::streaming)] = {0};
  v[index_of(Param::tdeg)] = {1};
  const Space space(st, grid, DeviceLimits{}, v);
  const Space::Values taken = values_taken(st, space);
  EXPECT_EQ(taken, enumerated(space));
  // The listed product is the configured lists' (millions) cut to near the valid count.
  EXPECT_LT(product(taken), product(space.all_values()));
}

TEST(ValuesTaken, DropsStreamingBlocksAboveTheGridAndUnusableUnrolling) {
  const Stencil st = typical_stencil("star3d1r");
  const Grid grid{32, 32, 8};
  Space::Values v = Space::default_values(3, grid);
  v[index_of(Param::streaming)] = {1};
  v[index_of(Param::merge)] = {0};
  v[index_of(Param::tdeg)] = {1};
  v[index_of(Param::sd)] = {2};
  v[index_of(Param::sb)] = {4, 8, 64, 256};
  v[index_of(Param::ufx)] = {1, 2};
  v[index_of(Param::ufy)] = {1};
  v[index_of(Param::use_constant)] = {1};
  const Space space(st, grid, DeviceLimits{}, v);
  const Space::Values taken = values_taken(st, space);
  EXPECT_EQ(taken, enumerated(space));
  EXPECT_EQ(taken[index_of(Param::sb)], (std::vector<int>{4, 8}));  // sb <= nz = 8
  EXPECT_EQ(taken[index_of(Param::ufx)], (std::vector<int>{1}));    // merge none: uf = 1
}

}  // namespace
}  // namespace isletune
