// Re-indexing: the paper's example, folding, Gray code, and repair to the nearest
// sampled setting (checked against brute force).
#include <gtest/gtest.h>

#include <set>

#include "common/error.hpp"
#include "ga/reindex.hpp"
#include "test_ga_fakes.hpp"

namespace isletune {
namespace {

Setting two(int a, int b) {
  Setting s;
  s[Param::tbx] = a;
  s[Param::tby] = b;
  return s;
}

TEST(Reindex, MatchesThePapersExample) {
  const std::vector<Setting> sampled = {two(0, 1), two(4, 2), two(3, 4)};
  const Reindex r(sampled, Encoding::index);
  EXPECT_EQ(*r.id_of(sampled[0]), 0);
  EXPECT_EQ(*r.id_of(sampled[1]), 2);
  EXPECT_EQ(*r.id_of(sampled[2]), 1);
  EXPECT_EQ(r.gene_count(), 2);
  EXPECT_EQ(r.encode(sampled[1]), (Genome{1, 0}));
  Rng rng(1);
  EXPECT_EQ(r.decode(Genome{1, 1}, rng), 0);  // code 3 >= n folds to 3 mod 3
  EXPECT_FALSE(r.id_of(two(1, 1)).has_value());
}

TEST(Reindex, ParameterOrderPutsOcFlagsFirst) {
  Setting streaming = two(0, 0);
  streaming[Param::streaming] = 1;
  const Setting plain = two(9, 9);
  const Reindex r({streaming, plain}, Encoding::index);
  EXPECT_EQ(*r.id_of(plain), 0);
  EXPECT_EQ(*r.id_of(streaming), 1);
}

TEST(Reindex, EveryGenomeDecodesToASampledSettingInBothEncodings) {
  const SampledSet set = testing::product_set(
      {{Param::tbx, {1, 2, 4, 8, 16}}, {Param::tby, {1, 3}}, {Param::mfx, {1, 2, 4}}});
  // Drop a third of the product so parameter genomes can miss the set.
  std::vector<Setting> sparse;
  for (std::size_t i = 0; i < set.size(); ++i) {
    if (i % 3 != 1)
      sparse.push_back(set.settings[i]);
  }
  const std::set<Setting> allowed(sparse.begin(), sparse.end());
  for (const Encoding e : {Encoding::index, Encoding::parameters}) {
    for (const bool gray : {false, true}) {
      const Reindex r(sparse, e, gray);
      Rng rng(42);
      for (int trial = 0; trial < 5000; ++trial) {
        Genome g(r.gene_count());
        for (int i = 0; i < r.gene_count(); ++i) {
          g[i] = static_cast<int>(rng.below(static_cast<std::uint64_t>(r.alleles()[i])));
        }
        const int id = r.decode(g, rng);
        ASSERT_GE(id, 0);
        ASSERT_LT(id, r.size());
        ASSERT_TRUE(allowed.count(r.setting(id)));
      }
      // Round trip: encode then decode gives the same setting back.
      for (int id = 0; id < r.size(); ++id)
        EXPECT_EQ(r.decode(r.encode(id), rng), id);
    }
  }
}

TEST(Reindex, GrayCodeNeighboursDifferInOneBit) {
  std::vector<Setting> s;
  for (int i = 0; i < 16; ++i)
    s.push_back(two(i, 0));
  const Reindex r(s, Encoding::index, true);
  for (int id = 0; id + 1 < 16; ++id) {
    const Genome a = r.encode(id), b = r.encode(id + 1);
    int diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
      diff += a[i] != b[i];
    EXPECT_EQ(diff, 1);
  }
}

TEST(Reindex, RepairPicksANearestSampledSettingAndAllTies) {
  const SampledSet full = testing::landscape_set();
  std::vector<Setting> sparse;
  Rng pick(3);
  for (const Setting& s : full.settings) {
    if (pick.chance(0.2))
      sparse.push_back(s);
  }
  const Reindex r(sparse, Encoding::parameters);
  Rng rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    Genome g(r.gene_count());
    for (int i = 0; i < r.gene_count(); ++i) {
      g[i] = static_cast<int>(rng.below(static_cast<std::uint64_t>(r.alleles()[i])));
    }
    // Brute force: distances to every sampled genome.
    int best = 1000;
    std::set<int> nearest;
    for (int id = 0; id < r.size(); ++id) {
      const Genome s = r.encode(id);
      int d = 0;
      for (std::size_t i = 0; i < s.size(); ++i)
        d += s[i] != g[i];
      if (d < best) {
        best = d;
        nearest.clear();
      }
      if (d == best)
        nearest.insert(id);
    }
    std::set<int> seen;
    for (int k = 0; k < 40 * static_cast<int>(nearest.size()); ++k) {
      const int id = r.decode(g, rng);
      ASSERT_TRUE(nearest.count(id)) << "repair is not a nearest setting";
      seen.insert(id);
    }
    EXPECT_EQ(seen, nearest) << "ties are not all reachable";
    EXPECT_EQ(r.nearest_distance(g), best);
  }
}

TEST(Reindex, RejectsAnEmptySet) {
  EXPECT_THROW(Reindex({}, Encoding::index), InputError);
}

}  // namespace
}  // namespace isletune
