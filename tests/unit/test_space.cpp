// The optimization space: default values, value-list validation, OC ids, the shared
// memory estimate, and one test per explicit constraint (each rejects exactly its
// forbidden combination, starting from a valid setting).
#include <gtest/gtest.h>

#include <set>

#include "common/error.hpp"
#include "space/space.hpp"
#include "stencil/typical.hpp"

namespace isletune {
namespace {

const Grid kGrid{64, 64, 16};

Space space3d(const DeviceLimits& limits = {}) {
  return Space(typical_stencil("star3d1r"), kGrid, limits, Space::default_values(3, kGrid));
}

// Valid tiled setting: no streaming, no merging, 16x4x4 block (tiles exceed 2*radius = 2).
Setting tiled() {
  Setting s;
  s[Param::merge] = 0;
  s[Param::tdeg] = 1;
  s[Param::tbx] = 16;
  s[Param::tby] = 4;
  s[Param::tbz] = 4;
  for (const Param p : {Param::mfx, Param::mfy, Param::mfz, Param::ufx, Param::ufy, Param::ufz})
    s[p] = 1;
  return s;
}

// Valid streaming setting along z with a 32x4 block and sb = 8.
Setting streamed() {
  Setting s = tiled();
  s[Param::streaming] = 1;
  s[Param::sd] = 2;
  s[Param::sb] = 8;
  s[Param::tbx] = 32;
  s[Param::tbz] = 1;
  return s;
}

// Asserts `s` is rejected with a sentence containing `phrase`.
void expect_rejected(const Space& space, const Setting& s, const std::string& phrase) {
  const auto why = space.violation(s);
  ASSERT_TRUE(why.has_value()) << canonical_key(s);
  EXPECT_NE(why->find(phrase), std::string::npos) << *why;
  EXPECT_FALSE(space.valid(s));
}

TEST(SpaceDefaults, FollowTheArchitectureTable) {
  const auto v3 = Space::default_values(3, kGrid);
  EXPECT_EQ(v3[index_of(Param::tbx)].front(), 1);
  EXPECT_EQ(v3[index_of(Param::tbx)].back(), 1024);
  EXPECT_EQ(v3[index_of(Param::tbx)].size(), 11u);
  EXPECT_EQ(v3[index_of(Param::sd)], (std::vector<int>{1, 2}));
  EXPECT_EQ(v3[index_of(Param::sb)], (std::vector<int>{8, 16, 32, 64}));
  EXPECT_EQ(v3[index_of(Param::tdeg)], (std::vector<int>{1, 2, 3, 4, 6, 8, 12, 16}));
  EXPECT_EQ(v3[index_of(Param::mfz)], (std::vector<int>{1, 2, 4, 8}));
  const auto v2 = Space::default_values(2, Grid{128, 4, 1});
  EXPECT_EQ(v2[index_of(Param::sd)], (std::vector<int>{1}));
  EXPECT_EQ(v2[index_of(Param::sb)], (std::vector<int>{4}));  // grid narrower than 8
  for (const Param p : {Param::tbz, Param::mfz, Param::ufz})
    EXPECT_EQ(v2[index_of(p)], (std::vector<int>{1}));
}

TEST(SpaceValues, ListsAreSortedAndDeduplicated) {
  auto v = Space::default_values(3, kGrid);
  v[index_of(Param::tbx)] = {64, 8, 64, 32};
  const Space space(typical_stencil("star3d1r"), kGrid, {}, v);
  EXPECT_EQ(space.values(Param::tbx), (std::vector<int>{8, 32, 64}));
}

TEST(SpaceValues, BadListsThrowNamingTheParameter) {
  struct Case {
    Param p;
    std::vector<int> values;
    int dims;
    const char* phrase;
  };
  const Case cases[] = {
      {Param::tbx, {}, 3, "has no values"},
      {Param::tbx, {3}, 3, "power of two"},
      {Param::tby, {2048}, 3, "power of two"},
      {Param::mfx, {16, 128}, 3, "power of two"},
      {Param::ufy, {0}, 3, "unroll factor"},
      {Param::sb, {12}, 3, "power of two"},
      {Param::sd, {0}, 3, "1 (y) or 2 (z)"},
      {Param::sd, {2}, 2, "1 (y) for a 2-D stencil"},
      {Param::merge, {3}, 3, "cyclic"},
      {Param::streaming, {2}, 3, "0 or 1"},
      {Param::use_shared, {-1}, 3, "0 or 1"},
      {Param::tdeg, {0}, 3, "from 1 to 64"},
      {Param::tbz, {2}, 2, "only 1 for a 2-D stencil"},
  };
  for (const auto& c : cases) {
    const Grid grid = c.dims == 3 ? kGrid : Grid{64, 64, 1};
    auto v = Space::default_values(c.dims, grid);
    v[index_of(c.p)] = c.values;
    const Stencil st = typical_stencil(c.dims == 3 ? "star3d1r" : "star2d1r");
    try {
      Space space(st, grid, {}, v);
      ADD_FAILURE() << param_name(c.p) << " accepted";
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("'" + std::string(param_name(c.p)) + "'"), std::string::npos) << msg;
      EXPECT_NE(msg.find(c.phrase), std::string::npos) << msg;
    }
  }
}

TEST(SpaceOc, IdsAreStableAndNamed) {
  Setting s = streamed();
  s[Param::merge] = static_cast<int>(MergeKind::cyclic);
  s[Param::retiming] = 1;
  s[Param::prefetch] = 1;
  s[Param::tdeg] = 4;
  EXPECT_EQ(Space::oc_of(s), (((1 * 3 + 2) * 2 + 1) * 2 + 1) * 2 + 1);
  EXPECT_EQ(Space::oc_name(Space::oc_of(s)), "stream+cyclic+retime+prefetch+tb");
  EXPECT_EQ(Space::oc_of(tiled()), 0);
  EXPECT_EQ(Space::oc_name(0), "tile");
  EXPECT_EQ(Space::oc_name(9), "tile+block+tb");
  // The families declare the OCs; the tiled and streaming ones keep the ids traces recorded
  // (the flag formula of setting/oc.hpp), each once, and a setting is in its values' OC.
  std::set<int> ids;
  for (const OcEntry& e : oc_table()) {
    EXPECT_TRUE(ids.insert(e.oc->id).second) << e.oc->id;
    if (e.family->name() == "mma") {  // its own id and name after the flag ids (issue 47)
      EXPECT_EQ(e.oc->id, 49);
      EXPECT_EQ(e.oc->name, "mma");
      continue;
    }
    EXPECT_EQ(e.oc->id, oc_id(flags_of(*e.oc))) << e.oc->name;
    EXPECT_EQ(e.oc->name, flag_oc(flags_of(*e.oc)).name);
    Setting in = e.family->name() == "tiled" ? tiled() : streamed();
    for (const OcValue& v : e.oc->values)
      in[v.param] = v.value;
    in[Param::tdeg] = e.oc->temporal ? 2 : 1;
    EXPECT_EQ(Space::oc_of(in), e.oc->id) << e.oc->name;
    EXPECT_EQ(find_family(in), e.family) << e.oc->name;
  }
  // tiled: 3 merge kinds x tdeg but cyclic x fused; streaming: 24; tensor cores: 1
  EXPECT_EQ(ids.size(), 30u);
  EXPECT_EQ(find_oc(17), nullptr);
  // Retiming and prefetch need streaming: no family declares a tiled OC with them.
  Setting retimed = tiled();
  retimed[Param::retiming] = 1;
  EXPECT_EQ(Space::oc_of(retimed), -1);
  EXPECT_EQ(find_oc(oc_id(OcFlags{0, 0, 1, 0, 0})), nullptr);
  EXPECT_EQ(Space::oc_name(4), "oc4");
}

TEST(SpaceConstraints, BaseSettingsAreValid) {
  const Space space = space3d();
  EXPECT_EQ(space.violation(tiled()), std::nullopt);
  EXPECT_EQ(space.violation(streamed()), std::nullopt);
}

TEST(SpaceConstraints, TwoDimensionalPinsZ) {
  const Grid g{64, 64, 1};
  const Space space(typical_stencil("star2d1r"), g, {}, Space::default_values(2, g));
  Setting s = tiled();
  s[Param::tbz] = 1;
  s[Param::tby] = 4;
  ASSERT_TRUE(space.valid(s));
  s[Param::tbz] = 2;
  expect_rejected(space, s, "2-D stencil needs tbz = mfz = ufz = 1");
  s[Param::tbz] = 1;
  s[Param::streaming] = 1;
  s[Param::sd] = 2;
  s[Param::sb] = 8;
  expect_rejected(space, s, "2-D stencil");
}

TEST(SpaceConstraints, WithoutStreamingSdAndSbAreZero) {
  Setting s = tiled();
  s[Param::sd] = 1;
  expect_rejected(space3d(), s, "without streaming sd and sb must be 0");
  s = tiled();
  s[Param::sb] = 8;
  expect_rejected(space3d(), s, "without streaming sd and sb must be 0");
}

TEST(SpaceConstraints, RetimingNeedsStreaming) {
  Setting s = tiled();
  s[Param::retiming] = 1;
  expect_rejected(space3d(), s, "retiming=1 needs streaming=1");
}

TEST(SpaceConstraints, PrefetchNeedsStreaming) {
  Setting s = tiled();
  s[Param::prefetch] = 1;
  expect_rejected(space3d(), s, "prefetch=1 needs streaming=1");
}

TEST(SpaceConstraints, ValuesOutsideTheListsAreRejected) {
  auto v = Space::default_values(3, kGrid);
  v[index_of(Param::tdeg)] = {1, 2};
  const Space space(typical_stencil("star3d1r"), kGrid, {}, v);
  Setting s = tiled();
  s[Param::use_shared] = 1;
  s[Param::tdeg] = 4;
  expect_rejected(space, s, "tdeg=4 is not an allowed value; allowed: 1, 2");
  s = tiled();
  s[Param::tbx] = 12;
  expect_rejected(space, s, "tbx=12 is not an allowed value");
}

TEST(SpaceConstraints, StreamBlockFitsTheGridAlongSd) {
  Setting s = streamed();
  s[Param::sb] = 32;  // allowed (y extent 64) but z extent is 16
  expect_rejected(space3d(), s, "exceeds the grid extent 16 along the streaming dimension z");
}

TEST(SpaceConstraints, StreamingBlockExtentAlongSdIsOne) {
  Setting s = streamed();
  s[Param::tbz] = 2;
  s[Param::tby] = 2;
  expect_rejected(space3d(), s, "block extent tbz must be 1");
}

TEST(SpaceConstraints, ThreadsPerBlockWithinLimits) {
  Setting s = tiled();
  s[Param::merge] = static_cast<int>(MergeKind::block);
  s[Param::tbx] = 2;
  s[Param::tby] = 2;
  s[Param::tbz] = 4;
  for (const Param p : {Param::mfx, Param::mfy, Param::mfz})
    s[p] = 2;
  expect_rejected(space3d(), s, "tbx*tby*tbz = 16 threads; expected at least 32");
  s = tiled();
  s[Param::tbx] = 64;
  s[Param::tby] = 8;
  expect_rejected(space3d(), s, "has 2048 threads; the device allows at most 1024");
  DeviceLimits small;
  small.max_threads_per_block = 128;
  expect_rejected(space3d(small), tiled(), "the device allows at most 128");
}

// Found on H100/H200: 2x1x256 passed the thread-count check and failed at launch.
TEST(SpaceConstraints, BlockZWithinThePerAxisLimit) {
  const Grid grid{64, 64, 2048};
  const Space space(typical_stencil("star3d1r"), grid, DeviceLimits{},
                    Space::default_values(3, grid));
  Setting s = tiled();
  s[Param::tbx] = 2;
  s[Param::tby] = 1;
  s[Param::tbz] = 256;
  s[Param::merge] = static_cast<int>(MergeKind::block);
  s[Param::mfx] = 2;
  s[Param::mfy] = 4;
  expect_rejected(space, s, "block extent along z is 256 threads; the device allows at most 64");
  s[Param::tbz] = 64;
  s[Param::tbx] = 8;
  EXPECT_EQ(space.violation(s), std::nullopt);
}

// Default lists for grids near 2^31 points per axis (floor_pow2 overflowed and hung).
TEST(SpaceDefaults, HugeExtentsDoNotOverflow) {
  const auto v = Space::default_values(2, Grid{4, (1 << 30) + 5, 1});
  EXPECT_EQ(v[index_of(Param::sb)].back(), 1 << 20);
  const auto w = Space::default_values(2, Grid{4, 2147483647, 1});
  EXPECT_EQ(w[index_of(Param::sb)].back(), 1 << 20);
}

TEST(SpaceConstraints, MergeNoneHasUnitFactors) {
  Setting s = tiled();
  s[Param::mfx] = 2;
  expect_rejected(space3d(), s, "merge=none needs mfx = mfy = mfz = 1");
}

TEST(SpaceConstraints, MergingNeedsSomeFactor) {
  Setting s = tiled();
  s[Param::merge] = static_cast<int>(MergeKind::cyclic);
  expect_rejected(space3d(), s, "merge=cyclic needs a merge factor");
}

TEST(SpaceConstraints, NoMergingAlongTheStreamingDimension) {
  Setting s = streamed();
  s[Param::merge] = static_cast<int>(MergeKind::block);
  s[Param::mfz] = 2;
  expect_rejected(space3d(), s, "no merging along it: mfz must be 1");
}

TEST(SpaceConstraints, TileMustExceedTwiceTheRadius) {
  Setting s = tiled();
  s[Param::tbx] = 2;  // 2*4*4 = 32 threads, tile x = 2 = 2*radius
  // At tdeg 1 a tiled kernel takes any tile.
  EXPECT_TRUE(space3d().valid(s)) << *space3d().violation(s);
  // Fused steps need room beside their halo.
  s[Param::tdeg] = 2;
  s[Param::use_shared] = 1;
  expect_rejected(space3d(), s, "along x the tile tbx*mfx = 2 must exceed 2*radius = 2");
  // A merge factor makes the same block shape valid.
  s[Param::merge] = static_cast<int>(MergeKind::block);
  s[Param::mfx] = 2;
  EXPECT_TRUE(space3d().valid(s)) << *space3d().violation(s);
  // The naive setting is valid for every typical stencil (the search's generation 0 holds
  // it), the radius-4 box included; a streamed in-plane axis keeps the rule at tdeg 1.
  for (const char* name : {"box3d4r", "box3d3r", "star3d4r", "box2d4r"}) {
    const Stencil st = typical_stencil(name);
    const Grid g = st.dims() == 2 ? Grid{512, 512, 1} : Grid{128, 128, 128};
    const Space sp(st, g, {}, Space::default_values(st.dims(), g));
    EXPECT_TRUE(sp.valid(naive_setting(st.dims())))
        << name << ": " << *sp.violation(naive_setting(st.dims()));
  }
  const Space boxes(typical_stencil("star3d2r"), kGrid, {}, Space::default_values(3, kGrid));
  Setting along_z = streamed();
  along_z[Param::tby] = 8;  // 32 x 8 threads streaming along z
  ASSERT_TRUE(boxes.valid(along_z)) << *boxes.violation(along_z);
  along_z[Param::tby] = 2;
  along_z[Param::tbx] = 64;
  expect_rejected(boxes, along_z, "along y the tile tby*mfy = 2 must exceed 2*radius = 4");
  // An axis with radius 0 accepts a 1-wide tile (star3d1r has none; use a 2-point x stencil).
  const Stencil flat =
      Stencil::make("xline", 3, {{-1, 0, 0}, {0, 0, 0}, {1, 0, 0}}, {0.25, 0.5, 0.25});
  const Space line(flat, kGrid, {}, Space::default_values(3, kGrid));
  Setting t = tiled();
  t[Param::tbx] = 32;
  t[Param::tby] = 1;
  t[Param::tbz] = 1;
  EXPECT_TRUE(line.valid(t)) << *line.violation(t);
}

TEST(SpaceConstraints, UnrollingAlongTiledDimsDividesTheMergeFactor) {
  Setting s = tiled();
  s[Param::ufx] = 2;  // no merging: nothing to unroll
  expect_rejected(space3d(), s, "ufx=2 must divide mfx=1");
  s[Param::merge] = static_cast<int>(MergeKind::block);
  s[Param::mfx] = 2;
  s[Param::ufx] = 4;
  expect_rejected(space3d(), s, "ufx=4 must divide mfx=2");
  s[Param::ufx] = 2;
  EXPECT_TRUE(space3d().valid(s));
}

TEST(SpaceConstraints, StreamUnrollAtMostTheStreamBlock) {
  auto v = Space::default_values(3, kGrid);
  v[index_of(Param::sb)] = {2, 8};
  const Space space(typical_stencil("star3d1r"), kGrid, {}, v);
  Setting s = streamed();
  s[Param::sb] = 2;
  s[Param::ufz] = 4;
  expect_rejected(space, s, "ufz=4 exceeds sb=2");
  s[Param::ufz] = 2;
  EXPECT_TRUE(space.valid(s));
}

TEST(SpaceConstraints, TemporalBlockingNeedsSharedOrStreaming) {
  Setting s = tiled();
  s[Param::tdeg] = 2;
  expect_rejected(space3d(), s, "tdeg=2 (temporal blocking) needs use_shared=1 or streaming=1");
  s[Param::use_shared] = 1;
  EXPECT_TRUE(space3d().valid(s));
  Setting t = streamed();
  t[Param::tdeg] = 2;
  t[Param::tby] = 8;  // the streaming threads cover tile + 2 halos of 2 fused steps
  EXPECT_TRUE(space3d().valid(t));
}

// OC 17 (tile+cyclic+tb) counted valid settings but built only OC 9's kernels (the fused kernel
// reads no merge kind): such a setting is now not valid, and the same one with block merging
// is, with the same canonical setting (the kernel it would have built).
TEST(SpaceConstraints, FusedTiledStepsAreNotCyclicallyMerged) {
  const Space space = space3d();
  Setting s = tiled();
  s[Param::tdeg] = 2;
  s[Param::use_shared] = 1;
  s[Param::merge] = static_cast<int>(MergeKind::cyclic);
  s[Param::mfx] = 2;
  EXPECT_EQ(Space::oc_of(s), -1);
  expect_rejected(space, s, "merge=cyclic builds the kernel of merge=block");
  Setting block = s;
  block[Param::merge] = static_cast<int>(MergeKind::block);
  EXPECT_TRUE(space.valid(block)) << *space.violation(block);
  EXPECT_EQ(Space::oc_of(block), 9);
  EXPECT_EQ(canonical(space.shape(), s), canonical(space.shape(), block));
  // Without fused steps cyclic merging is its own kernel (OC 16).
  Setting one = s;
  one[Param::tdeg] = 1;
  EXPECT_TRUE(space.valid(one)) << *space.violation(one);
  EXPECT_EQ(Space::oc_of(one), 16);
  EXPECT_NE(canonical(space.shape(), one)[Param::merge], static_cast<int>(MergeKind::block));
  // No OC a space counts is without a kernel of its own.
  const Grid g{256, 256, 1};
  const Space flat(typical_stencil("star2d1r"), g, {}, Space::default_values(2, g));
  for (const OcCount& c : flat.count_per_oc(1)) {
    EXPECT_NE(c.oc, 17);
    EXPECT_GT(c.kernels, 0) << Space::oc_name(c.oc);
  }
}

TEST(SpaceConstraints, SharedMemoryWithinTheOptInLimit) {
  DeviceLimits limits;
  // star3d1r reach is 1 on each side: the 16x4x4 tile stages 18x6x6 doubles.
  limits.shared_per_block_optin = 18 * 6 * 6 * 8 - 1;
  Setting s = tiled();
  s[Param::use_shared] = 1;
  expect_rejected(space3d(limits), s, "needs 5184 B of shared memory per block");
  limits.shared_per_block_optin = 18 * 6 * 6 * 8;
  EXPECT_TRUE(space3d(limits).valid(s));
}

}  // namespace
}  // namespace isletune
