// The kernel plan: tile and halo x tdeg for asymmetric stencils, launch geometry covering the
// grid exactly once, shared bytes against hand counts, leftover steps, device limits, costs.
#include <gtest/gtest.h>

#include "kernel/kernel_plan.hpp"
#include "kernel/launch_schedule.hpp"
#include "sample/predictor.hpp"
#include "space/space.hpp"
#include "stencil/typical.hpp"

namespace isletune {
namespace {

// 2-D, reach x: lo 2 hi 1, y: lo 1 hi 3.
Stencil asym2d() {
  return Stencil::make("asym2d", 2, {{0, 0, 0}, {-2, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 3, 0}},
                       {0.3, 0.2, 0.2, 0.1, 0.2});
}

// 3-D, reach x: 1/0, y: 0/2, z: 2/1.
Stencil asym3d() {
  return Stencil::make("asym3d", 3, {{0, 0, 0}, {-1, 0, 0}, {0, 2, 0}, {0, 0, -2}, {0, 0, 1}},
                       {0.4, 0.1, 0.2, 0.2, 0.1});
}

Setting base(int tbx, int tby, int tbz) {
  Setting s;
  s[Param::tdeg] = 1;
  s[Param::tbx] = tbx;
  s[Param::tby] = tby;
  s[Param::tbz] = tbz;
  for (const Param p : {Param::mfx, Param::mfy, Param::mfz, Param::ufx, Param::ufy, Param::ufz})
    s[p] = 1;
  return s;
}

TEST(KernelPlan, ReachIsExactPerSide) {
  const StencilReach r = reach_of(asym3d());
  EXPECT_EQ(r.lo, (std::array<int, 3>{1, 0, 2}));
  EXPECT_EQ(r.hi, (std::array<int, 3>{0, 2, 1}));
}

TEST(KernelPlan, TiledTemporalLoadsHaloTimesTdeg) {
  Setting s = base(32, 4, 1);
  s[Param::merge] = static_cast<int>(MergeKind::block);
  s[Param::mfy] = 2;
  s[Param::tdeg] = 3;
  s[Param::use_shared] = 1;
  const KernelPlan p = make_plan(asym2d(), Grid{100, 50, 1}, s, DeviceLimits{});
  EXPECT_EQ(p.family->name(), "tiled");
  EXPECT_EQ(p.tile, (std::array<int, 3>{32, 8, 1}));
  EXPECT_EQ(p.halo_lo, (std::array<int, 3>{2, 1, 0}));
  EXPECT_EQ(p.halo_hi, (std::array<int, 3>{1, 3, 0}));
  EXPECT_EQ(p.loaded, (std::array<int, 3>{32 + 3 * 3, 8 + 4 * 3, 1}));
  EXPECT_EQ(p.shared_bytes, 2LL * 41 * 20 * 8);  // two ping-pong buffers
  EXPECT_EQ(p.grid, (std::array<long long, 3>{4, 7, 1}));
  EXPECT_EQ(p.steps_per_launch, 3);
  EXPECT_EQ(p.stream_axis, -1);
  EXPECT_DOUBLE_EQ(p.global_write_doubles, 1.0 / 3);
  EXPECT_DOUBLE_EQ(p.global_read_doubles, 41.0 * 20 / (32 * 8) / 3);
  // Levels compute (32+3*2)(8+4*2), (32+3)(8+4), 32*8 cells for 3*32*8 useful ones.
  EXPECT_DOUBLE_EQ(p.redundancy, (38.0 * 16 + 35.0 * 12 + 32.0 * 8) / (3 * 32 * 8));
  EXPECT_DOUBLE_EQ(p.flops_per_cell, 9);
}

TEST(KernelPlan, SingleStepTiledNeedsSharedOnlyWhenStaging) {
  Setting s = base(16, 8, 1);
  const Grid g{64, 64, 1};
  EXPECT_EQ(make_plan(asym2d(), g, s, DeviceLimits{}).shared_bytes, 0);
  s[Param::use_shared] = 1;
  const KernelPlan p = make_plan(asym2d(), g, s, DeviceLimits{});
  EXPECT_EQ(p.shared_bytes, (16LL + 3) * (8 + 4) * 8);
  EXPECT_DOUBLE_EQ(p.redundancy, 1.0);
  EXPECT_DOUBLE_EQ(p.global_write_doubles, 1.0);
}

// Streaming: the threads (tb * mf) cover the loaded in-plane extent, the output tile is that
// minus one halo per fused level; one padded plane per source level, double-buffered.
// A 32 x 8 streaming block along z of the asymmetric 3-D stencil on a 70 x 9 x 40 grid.
Setting asym_streaming(int tdeg) {
  Setting s = base(32, 8, 1);
  s[Param::streaming] = 1;
  s[Param::sd] = 2;
  s[Param::sb] = 64;
  s[Param::tdeg] = tdeg;
  return s;
}

// The facts the predictor and the online model read come from the plan (issue 46): the x
// spread of block merging, the points a thread computes, constant coefficients and the
// family's cost factor (retiming and prefetch each 0.95 in the streaming family).
TEST(KernelPlan, PredictorFactsAreFieldsOfThePlan) {
  const Grid grid{256, 256, 64};
  const DeviceLimits limits;
  Setting tiled = base(32, 4, 2);
  tiled[Param::merge] = static_cast<int>(MergeKind::block);
  tiled[Param::mfx] = 4;
  tiled[Param::mfy] = 2;
  tiled[Param::use_constant] = 1;
  const KernelPlan block = make_plan(asym3d(), grid, tiled, limits);
  EXPECT_EQ(block.x_spread, 4);
  EXPECT_EQ(block.merged_points, 8);
  EXPECT_TRUE(block.constant_coefficients);
  EXPECT_EQ(block.cost_factor, 1.0);
  tiled[Param::merge] = static_cast<int>(MergeKind::cyclic);
  tiled[Param::use_constant] = 0;
  const KernelPlan cyclic = make_plan(asym3d(), grid, tiled, limits);
  EXPECT_EQ(cyclic.x_spread, 1) << "cyclic merging keeps a warp's x accesses adjacent";
  EXPECT_EQ(cyclic.merged_points, 8);
  EXPECT_FALSE(cyclic.constant_coefficients);
  Setting stream = asym_streaming(1);
  EXPECT_EQ(make_plan(asym3d(), grid, stream, limits).cost_factor, 1.0);
  stream[Param::retiming] = 1;
  stream[Param::prefetch] = 1;
  EXPECT_DOUBLE_EQ(make_plan(asym3d(), grid, stream, limits).cost_factor, 0.95 * 0.95);
}

TEST(KernelPlan, StreamingThreadsCoverTheLoadedPlaneAndTheStreamIsClipped) {
  Setting s = asym_streaming(2);
  const Grid g{70, 9, 40};
  const KernelPlan p = make_plan(asym3d(), g, s, DeviceLimits{});
  EXPECT_EQ(p.family->name(), "streaming");
  EXPECT_EQ(p.stream_axis, 2);
  // sb clipped to the extent (40); not split in two, although 9 in-plane tiles would fill
  // more SMs twice: two stream blocks are sb = 32's kernel (balancing stays within
  // (2/3, 4/3) of sb's own count, so no two settings plan one kernel).
  EXPECT_EQ(p.stream_len, 40);
  EXPECT_EQ(p.loaded, (std::array<int, 3>{32, 8, 40 + 3 * 2}));
  EXPECT_EQ(p.tile, (std::array<int, 3>{32 - 1 * 2, 8 - 2 * 2, 40}));
  // 2 buffers x tdeg source levels x plane padded by one step's reach: (32+1) x (8+2).
  EXPECT_EQ(p.shared_bytes, 2LL * 2 * (33 * 10) * 8);
  EXPECT_EQ(p.grid, (std::array<long long, 3>{3, 3, 1}));  // 70/30, 9/4, 40/40
  s[Param::sb] = 32;
  const KernelPlan split = make_plan(asym3d(), g, s, DeviceLimits{});
  EXPECT_EQ(split.stream_len, 32);  // 2 stream blocks (40/32): the split is this setting's
  EXPECT_EQ(split.grid[2], 2);
  EXPECT_EQ(p.block, (std::array<int, 3>{32, 8, 1}));
}

// At tdeg 1 the threads cover the output tile and the block reads one step's reach around it
// (the ring): the whole covered plane is output; the shared plane is the same padded plane.
TEST(KernelPlan, StreamingAtTdegOneStoresTheWholeCoveredPlaneAndReadsTheRing) {
  Setting s = asym_streaming(1);
  const Grid g{70, 9, 40};
  const KernelPlan p = make_plan(asym3d(), g, s, DeviceLimits{});
  EXPECT_EQ(p.loaded, (std::array<int, 3>{32 + 1, 8 + 2, 40 + 3}));
  EXPECT_EQ(p.tile, (std::array<int, 3>{32, 8, 40}));
  EXPECT_EQ(p.grid, (std::array<long long, 3>{3, 2, 1}));  // 70/32, 9/8, 40/40
  // Without retiming the centre-queue kernel: the plane being read, the one being written and
  // the plane one (the z reach hi) behind the newest, whose in-plane neighbours it reads.
  EXPECT_EQ(p.centre_lag, 1);
  EXPECT_EQ(p.shared_bytes, 3LL * (33 * 10) * 8);
  // Every thread's point is output: no redundant compute beyond the pipeline fill.
  EXPECT_NEAR(p.redundancy, (40.0 + 4) / 40, 1e-12);
  // tdeg 2: overlapped tiles, the threads cover the loaded plane.
  const KernelPlan q = make_plan(asym3d(), g, asym_streaming(2), DeviceLimits{});
  EXPECT_EQ(q.loaded[0], 32);
  EXPECT_EQ(q.tile[0], 32 - 1 * 2);
  EXPECT_EQ(q.centre_lag, -1);
  EXPECT_EQ(q.shared_bytes, 2 * 2LL * (33 * 10) * 8);  // two levels, double-buffered
}

// Shared memory grows with tdeg x plane (not tdeg x (2r+1) x plane), so deep tdeg fits.
TEST(KernelPlan, StreamingSharedMemoryGrowsWithTdegTimesOnePlane) {
  const Stencil st = typical_stencil("star2d1r");
  Setting s = base(256, 1, 1);
  s[Param::streaming] = 1;
  s[Param::sd] = 1;
  s[Param::sb] = 256;
  const Grid g{8192, 8192, 1};
  s[Param::tdeg] = 1;  // the centre-queue kernel: one row more (its in-plane neighbours')
  EXPECT_EQ(make_plan(st, g, s, DeviceLimits{}).shared_bytes, 3LL * (256 + 2) * 8);
  const long long one = 2LL * (256 + 2) * 8;  // a level's row, double-buffered
  for (const int t : {2, 4, 8, 12, 16}) {
    s[Param::tdeg] = t;
    const KernelPlan p = make_plan(st, g, s, DeviceLimits{});
    EXPECT_EQ(p.shared_bytes, t * one) << t;
    EXPECT_EQ(p.tile[0], 256 - 2 * t) << t;
    EXPECT_FALSE(plan_violation(st, g, s, DeviceLimits{}).has_value()) << t;
    // Traffic per cell-step falls with tdeg.
    s[Param::tdeg] = t / 2;
    EXPECT_LT(p.global_read_doubles, make_plan(st, g, s, DeviceLimits{}).global_read_doubles);
  }
}

// Tiles that fill the GPU: 17 x-tiles x 32 stream blocks of 256 rows = 544 blocks are 4.1
// waves of 132 SMs; 31 stream blocks of 265 rows (527 blocks) fill 4 waves.
TEST(KernelPlan, StreamBlocksAreAdjustedToFillWholeWaves) {
  const Stencil st = typical_stencil("star2d1r");
  Setting s = base(512, 1, 1);
  s[Param::streaming] = 1;
  s[Param::sd] = 1;
  s[Param::sb] = 256;
  s[Param::tdeg] = 12;
  const KernelPlan p = make_plan(st, Grid{8192, 8192, 1}, s, DeviceLimits{});
  EXPECT_EQ(p.grid[0], 17);  // 8192 / (512 - 24)
  EXPECT_EQ(p.grid[1], 31);
  EXPECT_EQ(p.stream_len, 265);
  EXPECT_LE(p.grid[0] * p.grid[1], 4 * 132);
  EXPECT_GE(p.grid[1] * p.stream_len, 8192);
  // A launch that already fills its waves keeps sb.
  DeviceLimits sixteen;
  sixteen.sm_count = 16;
  s[Param::tdeg] = 1;
  s[Param::tbx] = 256;  // 8192 / 254 -> 33 x-tiles ... x 32 = 1056 = 66 waves of 16
  const KernelPlan q = make_plan(st, Grid{8192, 8192, 1}, s, sixteen);
  EXPECT_EQ(q.grid[0] * q.grid[1] % 16, 0);
  EXPECT_EQ(q.stream_len, 256);
}

TEST(KernelPlan, StreamingRulesNameTheHaloAndTheRegisterPipeline) {
  const Stencil st = typical_stencil("star2d1r");
  const Grid g{8192, 512, 1};
  const Space space(st, g, DeviceLimits{}, Space::default_values(2, g));
  Setting s = base(32, 1, 1);
  s[Param::streaming] = 1;
  s[Param::sd] = 1;
  s[Param::sb] = 64;
  s[Param::tdeg] = 16;  // 32 points, 32 consumed by the halo of 16 steps
  auto why = space.violation(s);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("leaves no output point"), std::string::npos) << *why;
  s[Param::tbx] = 1024;
  s[Param::merge] = static_cast<int>(MergeKind::cyclic);
  s[Param::mfx] = 8;  // 8 points x 16 levels x (3 planes + 2 neighbours x 2) doubles > 64 regs
  why = space.violation(s);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("8 points x 16 levels x 7 doubles = 1792 registers"), std::string::npos)
      << *why;
  s[Param::mfx] = 1;
  s[Param::merge] = static_cast<int>(MergeKind::none);
  s[Param::tbx] = 256;  // 2 x 16 x 7 + 8 = 232 registers of 255
  EXPECT_FALSE(space.violation(s).has_value()) << *space.violation(s);
}

// A streaming setting with retiming and prefetch (the fused levels' usual pipeline).
Setting retimed_stream(int tbx, int tby, int tbz, int sd, int sb, int tdeg) {
  Setting s = base(tbx, tby, tbz);
  s[Param::streaming] = 1;
  s[Param::sd] = sd;
  s[Param::sb] = sb;
  s[Param::retiming] = 1;
  s[Param::prefetch] = 1;
  s[Param::tdeg] = tdeg;
  return s;
}

// use_shared = 1 at tdeg >= 2 (the shared ring of the last level): the ring holds Q + 1 planes
// of level tdeg-1 (Q = planes a point reads along the stream), the other levels keep their
// double-buffered planes, and the register rule counts tdeg - 1 levels of pipeline. Block-merged
// x pairs pad a row to an even start and pitch (double2 accesses).
TEST(KernelPlan, SharedRingPlanesAndRegistersOfTheLastLevel) {
  const Stencil st = typical_stencil("star3d2r");
  const Grid g{512, 512, 512};
  const Space space(st, g, DeviceLimits{}, Space::default_values(3, g));
  Setting s = retimed_stream(32, 32, 1, 2, 128, 2);
  s[Param::merge] = static_cast<int>(MergeKind::cyclic);
  s[Param::mfy] = 2;  // 32 x 64 covered points: rows of 32 + 2 + 2, 64 + 4 rows
  const long long plane = (32 + 4) * (64 + 4) * 8;
  // 2 points x 2 levels x 8 live doubles x 2 + 8 = 72 registers > 64 of a 1024-thread block.
  const auto why = space.violation(s);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("2 points x 2 levels x 8 doubles = 64 registers"), std::string::npos) << *why;
  EXPECT_EQ(make_plan(st, g, s, DeviceLimits{}).shared_bytes, 2 * 2 * plane);
  s[Param::use_shared] = 1;  // one level of pipeline: 2 x 1 x 8 x 2 + 8 = 40
  EXPECT_FALSE(space.violation(s).has_value()) << *space.violation(s);
  // Level 0 double-buffered, the ring of 5 + 1 planes of level 1.
  EXPECT_EQ(make_plan(st, g, s, DeviceLimits{}).shared_bytes, (2 + 6) * plane);
  s[Param::tdeg] = 3;  // two register levels: 2 x 2 x 8 x 2 + 8 = 72 > 64
  EXPECT_TRUE(space.violation(s).has_value());
  s[Param::merge] = static_cast<int>(MergeKind::none);
  s[Param::mfy] = 1;  // 32 x 32 points, levels 0-1 double-buffered and the ring
  EXPECT_EQ(make_plan(st, g, s, DeviceLimits{}).shared_bytes, (4 + 6) * (36 * 36 * 8LL));
  // Block-merged x pairs of a stencil with an odd reach: the row starts at 2, not 1, and its
  // pitch 32 + 2 + 1 = 35 rounds up to 36 (star3d1r, 16 x 32 threads with mfx 2).
  const Stencil st1 = typical_stencil("star3d1r");
  s = retimed_stream(16, 32, 1, 2, 128, 2);
  s[Param::merge] = static_cast<int>(MergeKind::block);
  s[Param::mfx] = 2;
  EXPECT_EQ(make_plan(st1, g, s, DeviceLimits{}).shared_bytes, 2 * 2 * (36 * 34 * 8LL));
  s[Param::merge] = static_cast<int>(MergeKind::cyclic);  // no pairs: 32 + 1 + 1
  EXPECT_EQ(make_plan(st1, g, s, DeviceLimits{}).shared_bytes, 2 * 2 * (34 * 34 * 8LL));
}

// The streaming plan's L1 doubles per useful cell-step (the roofline's L1 term): per computed
// point and iteration the register levels' in-plane neighbours (8 for star3d2r), the ring
// level's 13 terms, bank-conflict repeats of block-merged x points (x pairs: a pair's union,
// 0.8 a point), tdeg shared stores, the load and the store; times redundancy / tdeg. The ring
// of one point per thread reads 5 more per point and predicts slower, as measured (128.9
// against 166.3 GCells/s,
// docs/studies/2026-11-27-star3d2r-shared-ring-x-pairs.md).
TEST(KernelPlan, StreamingL1DoublesCountSharedReadsConflictsAndTheRing) {
  const Stencil st = typical_stencil("star3d2r");
  const Grid g{512, 512, 512};
  const Setting s = retimed_stream(32, 32, 1, 2, 512, 2);
  const auto per_point = [&](const Setting& x) {
    const KernelPlan p = make_plan(st, g, x, DeviceLimits{});
    return p.l1_doubles * p.tdeg / p.redundancy;
  };
  EXPECT_DOUBLE_EQ(per_point(s), 8 * 2 + 2 + 2);
  Setting ring = s;
  ring[Param::use_shared] = 1;
  EXPECT_DOUBLE_EQ(per_point(ring), 8 + 13 + 2 + 2);
  const RooflinePredictor roofline(st, g, DeviceLimits{});
  EXPECT_GT(roofline.predict_ms(ring), roofline.predict_ms(s));
  // x pairs with the ring (families case 32): (8 + 13) x 0.8 + 4.
  Setting pairs = retimed_stream(32, 1, 16, 1, 128, 2);
  pairs[Param::merge] = static_cast<int>(MergeKind::block);
  pairs[Param::mfx] = 2;
  pairs[Param::mfz] = 2;
  pairs[Param::use_shared] = 1;
  EXPECT_DOUBLE_EQ(per_point(pairs), (8 + 13) * 0.8 + 4);
  // At tdeg 1 too (the input ring in a row padded to an even start): 8 x 0.8 + 1 + 2; cyclic
  // points read one double each without conflicts: 8 + 1 + 2.
  pairs[Param::tdeg] = 1;
  pairs[Param::use_shared] = 0;
  EXPECT_DOUBLE_EQ(per_point(pairs), 8 * 0.8 + 1 + 2);
  pairs[Param::merge] = static_cast<int>(MergeKind::cyclic);
  EXPECT_DOUBLE_EQ(per_point(pairs), 8 + 1 + 2);
}

// Global x pairs (KernelPlan::x_vector, the kernel's GVEC): 2 where block-merged x pairs start at
// even global indices: an even row, output tile and tile offset; then the roofline's coalescing
// counts a warp's loads over mfx / 2 sectors, not mfx. star3d2r at tdeg 2: offset 2 x 2 = 4 and
// tile 64 - 8 = 56, even; an odd row, or star3d1r at tdeg 3 (offset 3) load scalars.
TEST(KernelPlan, GlobalXPairsNeedEvenRowsTilesAndOffsets) {
  const Stencil st = typical_stencil("star3d2r");
  Setting s = retimed_stream(32, 1, 16, 1, 128, 2);
  s[Param::merge] = static_cast<int>(MergeKind::block);
  s[Param::mfx] = 2;
  s[Param::mfz] = 2;
  s[Param::use_shared] = 1;
  const Grid even{512, 512, 512};
  EXPECT_EQ(make_plan(st, even, s, DeviceLimits{}).x_vector, 2);
  EXPECT_EQ(make_plan(st, Grid{511, 512, 512}, s, DeviceLimits{}).x_vector, 1);
  const RooflinePredictor roofline(st, even, DeviceLimits{});
  const RooflinePredictor odd_row(st, Grid{511, 512, 512}, DeviceLimits{});
  EXPECT_LT(roofline.predict_ms(s), 0.75 * odd_row.predict_ms(s));
  Setting cyclic = s;  // no pairs
  cyclic[Param::merge] = static_cast<int>(MergeKind::cyclic);
  EXPECT_EQ(make_plan(st, even, cyclic, DeviceLimits{}).x_vector, 1);
  Setting one = s;  // tdeg 1: the input ring, its row padded to an even start: pairs too
  one[Param::tdeg] = 1;
  one[Param::use_shared] = 0;
  EXPECT_EQ(make_plan(st, even, one, DeviceLimits{}).x_vector, 2);
  const Stencil st1 = typical_stencil("star3d1r");
  Setting t3 = retimed_stream(16, 32, 1, 2, 128, 3);
  t3[Param::merge] = static_cast<int>(MergeKind::block);
  t3[Param::mfx] = 2;  // 32 covered, offset 3, tile 26
  EXPECT_EQ(make_plan(st1, even, t3, DeviceLimits{}).x_vector, 1);
  t3[Param::tdeg] = 2;  // offset 2, tile 28
  EXPECT_EQ(make_plan(st1, even, t3, DeviceLimits{}).x_vector, 2);
}

// Along every axis the blocks' tiles cover [0, extent) once: the last block starts inside
// the grid and reaches its end.
TEST(KernelPlan, LaunchCoversTheGridExactlyOnce) {
  const Stencil st = typical_stencil("box3d2r");
  for (const Grid g : {Grid{1, 1, 1}, Grid{7, 5, 3}, Grid{513, 130, 67}}) {
    for (const int streaming : {0, 1}) {
      // Streaming: the threads cover the loaded plane, so z needs more than 2 * 2 * tdeg.
      Setting s = base(32, streaming ? 1 : 4, streaming ? 16 : 2);
      s[Param::merge] = static_cast<int>(MergeKind::cyclic);
      s[Param::mfx] = 2;
      s[Param::streaming] = streaming;
      s[Param::sd] = streaming ? 1 : 0;
      s[Param::sb] = streaming ? 16 : 0;
      s[Param::tdeg] = 2;
      const KernelPlan p = make_plan(st, g, s, DeviceLimits{});
      const std::array<long long, 3> ext{g.nx, g.ny, g.nz};
      for (std::size_t d = 0; d < 3; ++d) {
        EXPECT_GE(p.grid[d] * p.tile[d], ext[d]) << d;
        EXPECT_LT((p.grid[d] - 1) * p.tile[d], ext[d]) << d;
      }
    }
  }
}

// The tiled chunk (the plan's unroll) keeps its NVRTC cost (chunk_cost: multiply-adds weighted
// by the stencil's size) within kMaxChunkCost: x is halved first, then the larger of y and z;
// the chunk still divides the merge factors; small stencils keep the setting's unroll. box3d4r,
// whose tile unrolled over all planes cannot hold kPlaneLoopChunk points, loops over its planes:
// the chunk has no z points and costs one plane's (81 points).
TEST(KernelPlan, TiledChunkIsClippedToTheUnrollLimit) {
  Setting s = base(32, 4, 1);
  s[Param::merge] = static_cast<int>(MergeKind::block);
  s[Param::mfx] = s[Param::ufx] = 2;
  s[Param::mfy] = s[Param::ufy] = 4;
  s[Param::mfz] = s[Param::ufz] = 8;
  const Grid g{512, 512, 512};
  const KernelPlan star = make_plan(typical_stencil("star3d1r"), g, s, DeviceLimits{});
  // 64 x 7 terms are within the cost limit, but 64 accumulators are not: 32 points at most.
  EXPECT_EQ(star.unroll, (std::array<int, 3>{1, 4, 8}));
  const KernelPlan b2 = make_plan(typical_stencil("box3d2r"), g, s, DeviceLimits{});
  EXPECT_EQ(b2.unroll, (std::array<int, 3>{1, 4, 8}));  // 32 x 125 = 4000 terms
  const KernelPlan b3 = make_plan(typical_stencil("box3d3r"), g, s, DeviceLimits{});
  EXPECT_EQ(b3.unroll, (std::array<int, 3>{1, 4, 4}));  // 16 x 343 = 5488
  const KernelPlan b4 = make_plan(typical_stencil("box3d4r"), g, s, DeviceLimits{});
  EXPECT_EQ(b4.unroll, (std::array<int, 3>{2, 4, 1}));  // plane loop: 8 x 81 = 648 per plane
  EXPECT_GT(chunk_cost(kPlaneLoopChunk, 729), kMaxChunkCost);
  EXPECT_LE(chunk_cost(kPlaneLoopChunk, 343), kMaxChunkCost);
  for (const KernelPlan& p : {star, b2, b3, b4}) {
    EXPECT_LE(p.unroll[0] * p.unroll[1] * p.unroll[2], kMaxChunkPoints);
    EXPECT_EQ(s[Param::mfx] % p.unroll[0], 0);
    EXPECT_EQ(s[Param::mfy] % p.unroll[1], 0);
    EXPECT_EQ(s[Param::mfz] % p.unroll[2], 0);
  }
  for (const KernelPlan& p : {b2, b3}) {
    const long long points = (static_cast<long long>(p.flops_per_cell) + 1) / 2;
    EXPECT_LE(chunk_cost(1LL * p.unroll[0] * p.unroll[1] * p.unroll[2], points), kMaxChunkCost);
  }
  EXPECT_LE(chunk_cost(1LL * b4.unroll[0] * b4.unroll[1], 81), kMaxChunkCost);
  // Doubling any axis of box3d2r's chunk would exceed the limit only past 32 points.
  EXPECT_LE(chunk_cost(32, 125), kMaxChunkCost);
  EXPECT_GT(chunk_cost(64, 125), kMaxChunkCost);
}

// A chunk's distinct inputs (chunk_loads): per axis the union of its points' reads, points
// `spacing` apart; a cyclic chunk whose points share no inputs loads every point's own, and the
// chunk is halved until it loads at most kMaxChunkLoads (box3d3r: 27-32 s NVRTC compiles and
// spills for such chunks of 1,540-1,960 inputs), while a block-merged one of the same uf keeps it.
TEST(KernelPlan, TiledChunkLoadsAreBoundedForChunksThatShareNoInputs) {
  // Block merging: 1 x (4 + 6) x (2 + 6) inputs of width 7; cyclic 8 apart along y (no overlap:
  // 4 x 7) and 2 apart along z (overlap: 2 + 7).
  EXPECT_EQ(chunk_loads({1, 4, 2}, {1, 1, 1}, {7, 7, 7}, 343), 7.0 * 10 * 8);
  EXPECT_EQ(chunk_loads({1, 4, 2}, {16, 8, 2}, {7, 7, 7}, 343), 7.0 * 28 * 9);
  // Never more than every point's own loads (a sparse stencil in its bounding box).
  EXPECT_EQ(chunk_loads({1, 4, 1}, {32, 32, 32}, {3, 3, 3}, 7), 4.0 * 7);

  const Grid g{512, 512, 512};
  const Stencil b3 = typical_stencil("box3d3r");
  Setting s = base(16, 8, 2);
  s[Param::use_shared] = 1;
  s[Param::mfy] = 8;
  s[Param::mfz] = 2;
  s[Param::ufy] = 4;
  s[Param::ufz] = 2;
  s[Param::merge] = static_cast<int>(MergeKind::block);
  EXPECT_EQ(make_plan(b3, g, s, DeviceLimits{}).unroll, (std::array<int, 3>{1, 4, 2}));
  s[Param::merge] = static_cast<int>(MergeKind::cyclic);
  const KernelPlan cyc = make_plan(b3, g, s, DeviceLimits{});
  EXPECT_EQ(cyc.unroll, (std::array<int, 3>{1, 2, 2}));  // 7 x 14 x 9 = 882 inputs
  EXPECT_GT(chunk_loads({1, 4, 2}, {16, 8, 2}, {7, 7, 7}, 343), kMaxChunkLoads);
  EXPECT_LE(chunk_loads(cyc.unroll, {16, 8, 2}, {7, 7, 7}, 343), kMaxChunkLoads);
  // Cyclic points 2 apart along y share most inputs: 7 x 13 x 11 = 1,001, kept.
  Setting t = base(64, 2, 4);
  t[Param::use_shared] = 1;
  t[Param::merge] = static_cast<int>(MergeKind::cyclic);
  t[Param::mfy] = t[Param::ufy] = 4;
  t[Param::mfz] = t[Param::ufz] = 2;
  EXPECT_EQ(make_plan(b3, g, t, DeviceLimits{}).unroll, (std::array<int, 3>{1, 4, 2}));
  // The plan's instructions beside the multiply-adds count the cyclic chunk's own loads.
  const KernelPlan blk = make_plan(
      b3, g,
      [&] {
        Setting b = s;
        b[Param::merge] = static_cast<int>(MergeKind::block);
        b[Param::ufy] = 2;
        return b;
      }(),
      DeviceLimits{});
  ASSERT_EQ(blk.unroll, cyc.unroll);
  EXPECT_NEAR(blk.other_instructions, (7.0 * 8 * 8 + kCoefficientMoves * 343) / 4, 1e-9);
  EXPECT_NEAR(cyc.other_instructions, (7.0 * 14 * 9 + kCoefficientMoves * 343) / 4, 1e-9);
}

TEST(KernelPlan, LeftoverStepsRunAsTailLaunches) {
  Setting s = base(32, 8, 1);
  s[Param::tdeg] = 4;
  s[Param::use_shared] = 1;
  const KernelPlan p = make_plan(asym2d(), Grid{64, 64, 1}, s, DeviceLimits{});
  ASSERT_EQ(p.steps_per_launch, 4);
  const auto at = [&](long long T) {
    const IslLaunchSchedule l = isl_launch_schedule(T, p.steps_per_launch);
    return std::array<long long, 2>{l.main_launches, l.tail_launches};
  };
  EXPECT_EQ(at(7), (std::array<long long, 2>{1, 3}));
  EXPECT_EQ(at(48), (std::array<long long, 2>{12, 0}));
  EXPECT_EQ(at(3), (std::array<long long, 2>{0, 3}));
  EXPECT_EQ(isl_launch_schedule(5, 1).main_launches, 5);
  EXPECT_EQ(isl_launch_schedule(5, 0).tail_launches, 0);  // a plan never has 0; treated as 1
}

TEST(KernelPlan, ViolationsNameTheLimit) {
  const DeviceLimits h100;
  Setting s = base(2, 1, 256);
  auto why = plan_violation(typical_stencil("star3d1r"), Grid{64, 64, 1024}, s, h100);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("along z is 256"), std::string::npos) << *why;
  s = base(32, 1, 1);  // 70000 rows of one-row tiles: over the 65535 blocks of grid y
  why = plan_violation(typical_stencil("star2d1r"), Grid{64, 70000, 1}, s, h100);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("70000 blocks along y"), std::string::npos) << *why;
  s = base(1024, 1, 1);
  s[Param::use_shared] = 1;
  s[Param::tdeg] = 16;  // 2 x (1024 + 8*16) x (1 + 8*16) doubles: far over 227 KB
  why = plan_violation(typical_stencil("star2d4r"), Grid{4096, 4096, 1}, s, h100);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("B of shared memory per block"), std::string::npos) << *why;
  s = base(32, 8, 1);
  EXPECT_EQ(plan_violation(typical_stencil("star2d4r"), Grid{4096, 4096, 1}, s, h100),
            std::nullopt);
}

// The space's shared-memory constraint is the plan's: a setting is admitted exactly when
// the plan's bytes fit.
TEST(KernelPlan, SpaceUsesThePlansSharedBytes) {
  const Stencil st = asym2d();
  const Grid g{256, 256, 1};
  Setting s = base(64, 8, 1);
  s[Param::tdeg] = 2;
  s[Param::use_shared] = 1;
  const long long bytes = make_plan(st, g, s, DeviceLimits{}).shared_bytes;
  DeviceLimits tight;
  tight.shared_per_block_optin = static_cast<int>(bytes);
  EXPECT_TRUE(Space(st, g, tight, Space::default_values(2, g)).valid(s));
  tight.shared_per_block_optin = static_cast<int>(bytes) - 1;
  EXPECT_FALSE(Space(st, g, tight, Space::default_values(2, g)).valid(s));
}

}  // namespace
}  // namespace isletune
