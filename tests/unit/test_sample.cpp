// Sampler and predictors: quota split, reward, floor, exhaustion, list mode, huge spaces,
// determinism and validation of the settings.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>
#include <unordered_set>

#include "common/error.hpp"
#include "kernel/kernel_plan.hpp"
#include "sample/predictor.hpp"
#include "sample/sampler.hpp"
#include "sample/setting_source.hpp"
#include "setting/oc.hpp"
#include "space/space.hpp"
#include "stencil/typical.hpp"

namespace isletune {
namespace {

// A setting of OC `oc` (inverse of the documented OC id formula) with `tag` in tbx/tby.
Setting setting_of_oc(int oc, long long tag) {
  Setting s;
  const int temporal = oc % 2;
  const int prefetch = (oc / 2) % 2;
  const int retiming = (oc / 4) % 2;
  const int merge = (oc / 8) % 3;
  const int streaming = oc / 24;
  s[Param::streaming] = streaming;
  s[Param::merge] = merge;
  s[Param::retiming] = retiming;
  s[Param::prefetch] = prefetch;
  s[Param::tdeg] = temporal ? 2 : 1;
  s[Param::tbx] = static_cast<int>(tag % 1000003);
  s[Param::tby] = static_cast<int>(tag / 1000003);
  for (const Param p : {Param::ufx, Param::ufy, Param::ufz})
    s[p] = 1;  // canonical (kernel/registry.hpp), as list sources hand out
  return s;
}

// A source with `count` settings per listed OC that draws with replacement from a
// value range it never enumerates (so "runs out" only by the exact count).
class FakeSource final : public SettingSource {
 public:
  FakeSource(std::vector<OcCount> counts) : counts_(std::move(counts)) {}
  std::vector<OcCount> count_per_oc(std::uint64_t) const override { return counts_; }
  std::optional<Setting> draw(int oc, Rng& rng) override {
    ++draws;
    for (const OcCount& c : counts_) {
      if (c.oc == oc) {
        return setting_of_oc(
            oc, static_cast<long long>(rng.below(static_cast<std::uint64_t>(c.count))));
      }
    }
    return std::nullopt;
  }
  long long draws = 0;

 private:
  std::vector<OcCount> counts_;
};

// Predicts OC `favoured` faster than every other OC.
class FavourOc final : public Predictor {
 public:
  explicit FavourOc(int favoured) : favoured_(favoured) {}
  double predict_ms(const Setting& s) const override {
    const int oc = ((((s[Param::streaming] * 3 + s[Param::merge]) * 2 + s[Param::retiming]) * 2 +
                     s[Param::prefetch]) *
                        2 +
                    (s[Param::tdeg] > 1 ? 1 : 0));
    return oc == favoured_ ? 1.0 : 2.0;
  }
  std::string name() const override { return "favour"; }

 private:
  int favoured_;
};

TEST(Sampler, TargetIsRatioOfSpaceCappedByMaxSamples) {
  FakeSource small({{0, 3000, true}, {5, 1000, true}});
  SamplerSettings s;
  s.sample_ratio = 0.1;
  const SampleResult r = sample(small, UniformPredictor{}, s, 1);
  EXPECT_EQ(r.target, 400);
  EXPECT_EQ(r.set.size(), 400u);

  FakeSource large({{0, 3e6, true}, {5, 1e6, true}});
  const SampleResult big = sample(large, UniformPredictor{}, s, 1);
  EXPECT_EQ(big.target, 4096);
  EXPECT_EQ(big.set.size(), 4096u);
  std::unordered_set<Setting, SettingHash> distinct(big.set.settings.begin(),
                                                    big.set.settings.end());
  EXPECT_EQ(distinct.size(), big.set.size());
}

TEST(Sampler, RewardedOcRatioRisesAndNoRatioDropsBelowFloor) {
  std::vector<OcCount> counts;
  for (const int oc : {0, 3, 8, 20, 24, 47})
    counts.push_back({oc, 1e6, true});
  FakeSource source(counts);
  SamplerSettings s;
  s.adjust = 0.02;
  s.floor = 0.01;
  s.round_ratio = 0.05;
  const SampleResult r = sample(source, FavourOc(20), s, 7);
  ASSERT_GE(r.rounds.size(), 10u);
  for (std::size_t i = 0; i < r.rounds.size(); ++i) {
    EXPECT_EQ(r.rounds[i].winner, 20) << "round " << i;
    for (const OcCount& c : counts)
      EXPECT_GE(r.rounds[i].ratios[c.oc], s.floor - 1e-12);
    double sum = 0;
    for (const double x : r.rounds[i].ratios)
      sum += x;
    EXPECT_NEAR(sum, 1.0, 1e-9);
    if (i + 1 < r.rounds.size()) {
      EXPECT_GE(r.rounds[i + 1].ratios[20], r.rounds[i].ratios[20]);
    }
  }
  EXPECT_GT(r.rounds.back().ratios[20], r.rounds.front().ratios[20] + 0.3);
  // Every losing OC ended on the floor, and the winner drew most of the last rounds.
  for (const OcCount& c : counts) {
    if (c.oc != 20) {
      EXPECT_NEAR(r.final_ratios[c.oc], s.floor, 1e-12);
    }
  }
  EXPECT_GT(r.rounds.back().drawn[20], r.rounds.front().drawn[20]);
}

TEST(Sampler, InitialRatiosFollowCountsAndSmallOcsAreLiftedToTheFloor) {
  FakeSource source({{1, 9e5, true}, {2, 1e5, true}, {3, 10, true}});
  SamplerSettings s;
  s.floor = 0.01;
  const SampleResult r = sample(source, UniformPredictor{}, s, 3);
  const auto& first = r.rounds.front().ratios;
  EXPECT_NEAR(first[3], s.floor, 1e-12);
  EXPECT_NEAR(first[1] / first[2], 9.0, 0.01);
}

TEST(Sampler, ExhaustedOcGetsRatioZeroAndItsQuotaMovesToOthers) {
  FakeSource source({{4, 5, true}, {6, 1e6, true}});
  SamplerSettings s;
  s.sample_ratio = 1.0;
  s.max_samples = 300;
  const SampleResult r = sample(source, FavourOc(4), s, 5);
  EXPECT_EQ(r.set.size(), 300u);
  EXPECT_EQ(std::count(r.set.oc.begin(), r.set.oc.end(), 4), 5);
  EXPECT_EQ(r.final_ratios[4], 0.0);
  EXPECT_NEAR(r.final_ratios[6], 1.0, 1e-12);
}

TEST(Sampler, ListModeDrawsOnlyListedSettings) {
  std::vector<Setting> listed;
  for (int i = 0; i < 120; ++i)
    listed.push_back(setting_of_oc(i % 3 == 0 ? 9 : 30, i));
  const std::set<Setting> allowed(listed.begin(), listed.end());
  listed.push_back(listed.front());  // a duplicate is ignored
  Setting twin = listed[1];          // streaming: use_shared is not read, the same kernel
  ASSERT_EQ(twin[Param::streaming], 1);
  twin[Param::use_shared] = 1;
  listed.push_back(twin);
  ListSource source(shape_of(typical_stencil("star2d1r"), Grid{256, 256, 1}), listed);
  SamplerSettings s;
  s.sample_ratio = 0.5;
  const SampleResult half = sample(source, UniformPredictor{}, s, 11);
  EXPECT_EQ(half.set.size(), 60u);
  for (std::size_t i = 0; i < half.set.size(); ++i) {
    EXPECT_TRUE(allowed.count(half.set.settings[i]));
    EXPECT_EQ(half.set.oc[i], half.set.settings[i][Param::streaming] == 1 ? 30 : 9);
  }
  ListSource again(shape_of(typical_stencil("star2d1r"), Grid{256, 256, 1}), listed);
  s.sample_ratio = 1.0;
  const SampleResult all = sample(again, UniformPredictor{}, s, 11);
  EXPECT_EQ(std::set<Setting>(all.set.settings.begin(), all.set.settings.end()), allowed);
}

TEST(Sampler, SameSeedSameSampleOtherSeedDiffers) {
  FakeSource a({{0, 1e5, true}, {7, 1e5, false}}), b({{0, 1e5, true}, {7, 1e5, false}}),
      c({{0, 1e5, true}, {7, 1e5, false}});
  SamplerSettings s;
  s.max_samples = 500;
  const SampleResult ra = sample(a, UniformPredictor{}, s, 9);
  const SampleResult rb = sample(b, UniformPredictor{}, s, 9);
  const SampleResult rc = sample(c, UniformPredictor{}, s, 10);
  EXPECT_EQ(ra.set.settings, rb.set.settings);
  EXPECT_NE(ra.set.settings, rc.set.settings);
  EXPECT_EQ(ra.set.estimated_ocs, std::vector<int>{7});
}

TEST(Sampler, BillionSettingSourceIsSampledWithoutEnumeration) {
  std::vector<OcCount> counts;
  for (int oc = 0; oc < kOcCount; oc += 5)
    counts.push_back({oc, 1e9, false});
  FakeSource source(counts);
  const SampleResult r = sample(source, UniformPredictor{}, SamplerSettings{}, 2);
  EXPECT_EQ(r.set.size(), 4096u);
  EXPECT_LT(source.draws, 4096 + 100);  // no draws beyond the few duplicates
}

TEST(Sampler, SettingsValidationNamesTheKey) {
  const auto message = [](SamplerSettings s) {
    try {
      s.validate();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  SamplerSettings s;
  EXPECT_EQ(message(s), "");
  s.sample_ratio = 0;
  EXPECT_NE(message(s).find("sample.sample_ratio"), std::string::npos);
  s = {};
  s.round_ratio = 1.5;
  EXPECT_NE(message(s).find("sample.round_ratio"), std::string::npos);
  s = {};
  s.floor = 0.01;
  s.adjust = 0.005;
  EXPECT_NE(message(s).find("sample.floor"), std::string::npos);
  s = {};
  s.max_samples = 0;
  EXPECT_NE(message(s).find("sample.max_samples"), std::string::npos);
}

// A tiled 2-D setting with a 32 x 32 output tile staged in shared memory.
Setting tiled_2d(int tbx, int tby, int mfy, int tdeg) {
  Setting s;
  s[Param::tbx] = tbx;
  s[Param::tby] = tby;
  s[Param::tbz] = 1;
  s[Param::mfx] = s[Param::mfz] = 1;
  s[Param::mfy] = mfy;
  s[Param::ufx] = s[Param::ufy] = s[Param::ufz] = 1;
  s[Param::use_shared] = 1;
  s[Param::tdeg] = tdeg;
  return s;
}

// A typical 2-D stencil by shape and order.
Stencil typical_2d(TypicalShape shape, int order) {
  std::vector<Offset> offsets = typical_offsets(shape, 2, order);
  std::vector<double> coefficients = typical_coefficients(offsets);
  return Stencil::make("typical", 2, std::move(offsets), std::move(coefficients));
}

TEST(Predictor, RooflineFollowsThePlansTrafficPerStepAcrossTdeg) {
  const Grid grid{8192, 8192, 1};
  const DeviceLimits limits;
  // star2d1r is memory bound: four fused steps on a 32 x 32 tile read the 40 x 40 region
  // once per launch (plan: 1600 / 1024 / 4 doubles per cell-step instead of 1156 / 1024),
  // with little redundancy, so the predicted time per step falls.
  const Stencil star = typical_2d(TypicalShape::star, 1);
  const RooflinePredictor star_model(star, grid, limits);
  const Setting one = tiled_2d(32, 8, 4, 1), four = tiled_2d(32, 8, 4, 4);
  const KernelPlan p1 = make_plan(star, grid, one, limits),
                   p4 = make_plan(star, grid, four, limits);
  ASSERT_LT(p4.global_read_doubles + p4.global_write_doubles,
            0.5 * (p1.global_read_doubles + p1.global_write_doubles));
  EXPECT_LT(star_model.predict_ms(four), 0.7 * star_model.predict_ms(one));
  // box2d4r on an 8 x 8 tile: four fused steps compute 7.5x the useful updates of 161 flops
  // each; the redundancy outweighs the saved traffic and tdeg 4 predicts slower.
  const Stencil box = typical_2d(TypicalShape::box, 4);
  const RooflinePredictor box_model(box, grid, limits);
  const Setting small_one = tiled_2d(8, 8, 1, 1), small_four = tiled_2d(8, 8, 1, 4);
  ASSERT_DOUBLE_EQ(make_plan(box, grid, small_four, limits).redundancy, 7.5);
  EXPECT_GT(box_model.predict_ms(small_four), box_model.predict_ms(small_one));
  // A setting the plan rejects (shared memory over the opt-in limit) predicts the worst.
  const Setting huge = tiled_2d(32, 32, 32, 8);
  ASSERT_TRUE(plan_violation(star, grid, huge, limits).has_value());
  EXPECT_EQ(star_model.predict_ms(huge), RooflinePredictor::kUnfit);
}

// The online model's plan features are the plan's numbers (order: RooflinePredictor's
// header): a tdeg-1 streaming setting with cp.async planes and a tdeg-4 one of star3d1r.
TEST(Predictor, RooflineFeaturesAreThePlansNumbers) {
  const Stencil st = typical_stencil("star3d1r");
  const Grid grid{128, 128, 128};
  const DeviceLimits limits;
  const RooflinePredictor p(st, grid, limits);
  ASSERT_EQ(p.feature_count(), RooflinePredictor::kFeatures);
  const auto key = setting_from_key(
      "streaming=1,merge=block,retiming=0,prefetch=1,tdeg=1,sd=1,sb=16,tbx=32,tby=1,tbz=8,"
      "mfx=1,mfy=1,mfz=4,ufx=1,ufy=2,ufz=1,use_shared=0,use_constant=0");
  ASSERT_TRUE(key.has_value());
  Setting s = *key;
  ASSERT_FALSE(plan_violation(st, grid, s, limits).has_value());
  const KernelPlan plan = make_plan(st, grid, s, limits);
  ASSERT_GT(plan.async_planes, 0);  // prefetch at tdeg 1: cp.async planes in flight
  const std::vector<double> f = p.features(s);
  ASSERT_EQ(f.size(), RooflinePredictor::kFeatures);
  EXPECT_DOUBLE_EQ(f[0], 0.0);  // log2(tdeg 1)
  EXPECT_DOUBLE_EQ(f[1], 0.0);
  EXPECT_NEAR(f[3], std::log(plan.redundancy), 1e-12);
  const long long threads = plan.threads_per_block;
  const long long blocks =
      std::min({static_cast<long long>(limits.max_blocks_per_sm),
                limits.max_threads_per_sm / threads, limits.shared_per_sm / plan.shared_bytes});
  EXPECT_NEAR(f[4], static_cast<double>(blocks * threads) / limits.max_threads_per_sm, 1e-12);
  EXPECT_NEAR(f[5], std::log2(static_cast<double>(threads)), 1e-12);
  EXPECT_NEAR(f[6], std::log2(1.0 + plan.shared_bytes / 1024.0), 1e-12);
  const double launched = static_cast<double>(plan.grid[0] * plan.grid[1] * plan.grid[2] * threads);
  EXPECT_NEAR(f[7], std::log2(launched / (limits.sm_count * blocks * threads)), 1e-12);
  EXPECT_DOUBLE_EQ(f[8], plan.async_planes);
  EXPECT_NEAR(f[9], std::log2(static_cast<double>(plan.stream_len)), 1e-12);
  EXPECT_NEAR(f[10],
              std::log2(static_cast<double>(plan.unroll[0] * plan.unroll[1] * plan.unroll[2])),
              1e-12);
  EXPECT_DOUBLE_EQ(f[11], 2.0);  // 4 merged points per thread
  // tdeg 4 without prefetch: no asynchronous planes, four steps per launch, less traffic
  // per step.
  Setting t = s;
  t[Param::tdeg] = 4;
  t[Param::prefetch] = 0;
  t[Param::merge] = static_cast<int>(MergeKind::none);
  t[Param::mfz] = 1;
  t[Param::tbx] = t[Param::tby] = 32;
  t[Param::tbz] = 1;
  t[Param::ufy] = 1;
  ASSERT_FALSE(plan_violation(st, grid, t, limits).has_value());
  const std::vector<double> g = p.features(t);
  EXPECT_DOUBLE_EQ(g[0], 2.0);
  EXPECT_DOUBLE_EQ(g[1], 4.0);
  EXPECT_DOUBLE_EQ(g[8], 0.0);
  EXPECT_DOUBLE_EQ(g[11], 0.0);
  EXPECT_LT(g[2], f[2]);  // bytes per cell-step fall with tdeg
  EXPECT_GT(g[3], f[3]);  // redundancy grows
  // A setting without a plan: every feature 0; the uniform predictor has none.
  Setting huge = t;
  huge[Param::tbx] = 2048;
  EXPECT_EQ(p.features(huge), std::vector<double>(RooflinePredictor::kFeatures, 0.0));
  EXPECT_EQ(UniformPredictor{}.feature_count(), 0u);
}

TEST(Predictor, RooflinePrefersBigTilesAndTemporalBlocking) {
  const Stencil st = Stencil::make(
      "star3d1r", 3,
      {{0, 0, 0}, {1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}},
      {0.4, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1});
  const RooflinePredictor p(st, Grid{512, 512, 512}, DeviceLimits{});
  Setting base;
  base[Param::tbx] = 32;
  base[Param::tby] = 4;
  base[Param::tbz] = 2;
  base[Param::mfx] = base[Param::mfy] = base[Param::mfz] = 1;
  base[Param::ufx] = base[Param::ufy] = base[Param::ufz] = 1;
  base[Param::tdeg] = 1;
  Setting tiny = base;
  tiny[Param::tbx] = 8;
  tiny[Param::tby] = 2;
  tiny[Param::tbz] = 2;
  EXPECT_LT(p.predict_ms(base), p.predict_ms(tiny));
  Setting shared = base;
  shared[Param::use_shared] = 1;
  Setting temporal = shared;
  temporal[Param::tdeg] = 2;
  EXPECT_LT(p.predict_ms(temporal), p.predict_ms(shared));
  Setting too_big = base;
  too_big[Param::tbx] = 2048;
  EXPECT_EQ(p.predict_ms(too_big), RooflinePredictor::kUnfit);
  // A 32 x 32 block streaming along z with shared memory is close to the memory bound of
  // 16 B per cell at 3 TB/s for 512^3 cells.
  Setting stream = base;
  stream[Param::streaming] = 1;
  stream[Param::sd] = 2;
  stream[Param::sb] = 64;
  stream[Param::tbx] = 32;
  stream[Param::tby] = 32;
  stream[Param::tbz] = 1;
  stream[Param::use_shared] = 1;
  const double floor_ms = 512.0 * 512 * 512 * 16 / 3e12 * 1e3;
  EXPECT_GT(p.predict_ms(stream), floor_ms);
  EXPECT_LT(p.predict_ms(stream), 1.3 * floor_ms);
  EXPECT_LT(p.predict_ms(stream), p.predict_ms(shared));
  // Block merging along x breaks coalescing; cyclic merging keeps it (H200 data: 2-3x).
  Setting block = base;
  block[Param::merge] = static_cast<int>(MergeKind::block);
  block[Param::mfx] = 4;
  Setting cyclic = block;
  cyclic[Param::merge] = static_cast<int>(MergeKind::cyclic);
  EXPECT_LT(p.predict_ms(cyclic), p.predict_ms(block));
  EXPECT_EQ(make_predictor("roofline", st, Grid{64, 64, 64}, DeviceLimits{})->name(), "roofline");
  EXPECT_THROW((void)make_predictor("mlp2", st, Grid{}, DeviceLimits{}), InputError);
}

// A compute-bound box issues loads and coefficient moves beside its multiply-adds. box3d2r one
// point per thread (a chunk without z points: the plane loop) loads each of its 5 planes' 5x5
// inputs and reads each of its 125 coefficients from the constant table once (250 instructions
// besides its 125 FP64 multiply-adds, which take two issue slots each); a 1x1x2 chunk unrolls
// over all planes: it loads its 5x5x6 footprint and moves 4 x 125 coefficient halves per two
// points (325 per point); a 1x4x4 register-tile chunk loads its 5x8x8 footprint and moves the
// coefficients once per 16 points (51.25 per point, below the multiply-adds' 124.5 spare
// slots), in 24 + 3 x 16 = 72 registers. Its loads through L1 (160 bytes per point) fit beside
// the multiply-adds (249 flops at one L1 byte per flop), and 3 blocks of 256 threads (37.5 %
// occupancy) saturate it: it predicts the flops / peak floor. One point per thread (the naive
// tile, 32 x 4 x 2) is bound by its 125 loads through L1 (1,000 bytes per point): 4.0x the
// floor (measured on the H100: 29.0 against 95.2 GCells/s, 3.3x;
// docs/studies/2026-11-25-box3d2r-fp64-roof-register-tiles.md).
TEST(Predictor, RooflineCountsTheIssueOfLoadsAndCoefficientMovesOfARegisterTile) {
  const Grid grid{512, 512, 512};
  const DeviceLimits limits;
  const Stencil box = typical_stencil("box3d2r");
  Setting one;
  one[Param::tbx] = 32;
  one[Param::tby] = 4;
  one[Param::tbz] = 2;
  one[Param::tdeg] = 1;
  one[Param::merge] = static_cast<int>(MergeKind::block);
  one[Param::mfx] = one[Param::ufx] = 1;
  one[Param::mfy] = one[Param::mfz] = 4;
  one[Param::ufy] = one[Param::ufz] = 1;
  Setting two = one, chunk = one, naive = one;
  two[Param::ufz] = 2;
  chunk[Param::ufy] = chunk[Param::ufz] = 4;
  naive[Param::mfy] = naive[Param::mfz] = 1;
  const KernelPlan p1 = make_plan(box, grid, one, limits), p2 = make_plan(box, grid, two, limits),
                   p16 = make_plan(box, grid, chunk, limits);
  ASSERT_EQ(p2.unroll, (std::array<int, 3>{1, 1, 2}));
  EXPECT_DOUBLE_EQ(p1.other_instructions, 5 * 25 + 125);
  EXPECT_DOUBLE_EQ(p2.other_instructions, (5 * 5 * 6 + 4 * 125) / 2.0);
  EXPECT_DOUBLE_EQ(p16.other_instructions, (5 * 8 * 8 + 4 * 125) / 16.0);
  EXPECT_DOUBLE_EQ(p1.loads_per_cell, 5 * 25);
  EXPECT_DOUBLE_EQ(p2.loads_per_cell, 5 * 5 * 6 / 2.0);
  EXPECT_DOUBLE_EQ(p16.loads_per_cell, 5 * 8 * 8 / 16.0);
  EXPECT_EQ(p16.registers, 72);
  const RooflinePredictor model(box, grid, limits),
      off(box, grid, limits, RooflinePredictor::IssueTerm::off);
  EXPECT_DOUBLE_EQ(model.predict_ms(chunk), off.predict_ms(chunk));  // the floor
  EXPECT_NEAR(model.predict_ms(naive) / model.predict_ms(chunk), 1000.0 / 249.0, 0.05);
  // Fewer inputs loaded per point predict faster, and every chunk short of the floor is bound
  // by more than its issue slots: 374.5 and 449.5 per 249 flops.
  EXPECT_GT(model.predict_ms(one), model.predict_ms(two));
  EXPECT_GT(model.predict_ms(two), model.predict_ms(chunk));
  EXPECT_GT(model.predict_ms(two) / model.predict_ms(chunk), (124.5 + 325) / 249.0);
  // A memory-bound star keeps the traffic term: the same register tile predicts the same time.
  const Stencil star = typical_stencil("star3d1r");
  const RooflinePredictor star_model(star, grid, limits);
  EXPECT_DOUBLE_EQ(star_model.predict_ms(one), star_model.predict_ms(chunk));
}

// The gate of the issue term: a plain step's flops per 16 bytes against
// kIssueTermRidgeFraction of fp64_gflops / memory_bandwidth_gbs, the boundary included.
TEST(Predictor, IssueTermActsFromAShareOfTheRidgePoint) {
  EXPECT_DOUBLE_EQ(plain_step_intensity(249), 249 / 16.0);
  DeviceLimits ten;  // ridge 10 flop/B
  ten.fp64_gflops = 1000;
  ten.memory_bandwidth_gbs = 100;
  const int at = static_cast<int>(std::ceil(16 * kIssueTermRidgeFraction * 10));
  EXPECT_TRUE(issue_term_applies(at, ten));
  EXPECT_FALSE(issue_term_applies(at - 1, ten));
  ten.memory_bandwidth_gbs = 50;  // twice the ridge: the same stencil is out
  EXPECT_FALSE(issue_term_applies(at, ten));
  // The recorded devices (tests/data): the compute-bound 3-D boxes are in, every stencil of
  // the replay datasets (and box3d1r) is out, on both.
  DeviceLimits h100, h200;
  h100.memory_bandwidth_gbs = 2990;
  h200.memory_bandwidth_gbs = 4209;
  for (const DeviceLimits& limits : {h100, h200, DeviceLimits{}}) {
    for (const char* name : {"box3d2r", "box3d3r", "box3d4r", "box2d4r", "box2d3r"})
      EXPECT_TRUE(issue_term_applies(typical_stencil(name).flops_per_cell(), limits)) << name;
    for (const char* name :
         {"star2d1r", "star2d2r", "box2d2r", "star3d1r", "box3d1r", "star3d4r", "cross3d3r"})
      EXPECT_FALSE(issue_term_applies(typical_stencil(name).flops_per_cell(), limits)) << name;
  }
}

// Below the gate the predictor is the traffic-and-flops roofline: on random settings of every
// OC of the replay datasets' problems (deep temporal and register chunks included) the gated
// prediction is the one without the issue term, bit for bit, while the ungated term would
// change some of them.
TEST(Predictor, MemoryBoundStencilsPredictAsWithoutTheIssueTerm) {
  struct Problem {
    const char* stencil;
    Grid grid;
  };
  for (const Problem& pr :
       {Problem{"star3d1r", {128, 128, 128}}, Problem{"box2d2r", {2048, 2048, 1}},
        Problem{"star2d2r", {2048, 2048, 1}}, Problem{"star2d1r", {8192, 8192, 1}}}) {
    const Stencil st = typical_stencil(pr.stencil);
    const DeviceLimits limits;
    const Space space(st, pr.grid, limits, Space::default_values(st.dims(), pr.grid));
    const RooflinePredictor gated(st, pr.grid, limits),
        off(st, pr.grid, limits, RooflinePredictor::IssueTerm::off),
        on(st, pr.grid, limits, RooflinePredictor::IssueTerm::on);
    Rng rng(5, 3);
    int compared = 0, changed = 0, chunked = 0;
    for (int oc = 0; oc < kOcCount; ++oc) {
      for (int i = 0; i < 25; ++i) {
        const auto s = space.random_in_oc(oc, rng, 2000);
        if (!s)
          break;
        EXPECT_EQ(gated.predict_ms(*s), off.predict_ms(*s))
            << pr.stencil << " " << canonical_key(*s);
        changed += on.predict_ms(*s) != off.predict_ms(*s);
        const auto& u = make_plan(st, pr.grid, *s, limits).unroll;
        chunked += u[0] * u[1] * u[2] > 1;
        ++compared;
      }
    }
    EXPECT_GT(compared, 500) << pr.stencil;
    EXPECT_GT(chunked, 50) << pr.stencil;
    EXPECT_GT(changed, 0) << pr.stencil;  // the test would see a gate that let the term in
  }
}

// Above the gate a register chunk pays: box3d3r's tdeg-1 tiled setting predicts faster with
// every doubling of its chunk (fewer distinct inputs per point: 196, 112, 70, 43.75 loads)
// until the 4x4 chunk reaches the flops / peak floor; without the issue term all chunks tie. A
// chunk without z points loops over the planes: one point loads 343 inputs, a 1x2x1 chunk 196,
// both more than the unrolled 2x4 chunk.
TEST(Predictor, ComputeBoundBoxPredictsFasterWithALargerRegisterChunk) {
  const Grid grid{512, 512, 512};
  const DeviceLimits limits;
  const Stencil box = typical_stencil("box3d3r");
  const RooflinePredictor gated(box, grid, limits),
      off(box, grid, limits, RooflinePredictor::IssueTerm::off);
  Setting s;
  s[Param::tbx] = 32;
  s[Param::tby] = 4;
  s[Param::tbz] = 2;
  s[Param::tdeg] = 1;
  s[Param::merge] = static_cast<int>(MergeKind::block);
  s[Param::mfx] = s[Param::ufx] = 1;
  s[Param::mfy] = s[Param::mfz] = 4;
  const std::vector<std::array<int, 2>> chunks{{1, 2}, {2, 2}, {2, 4}, {4, 4}, {1, 1}, {2, 1}};
  const std::vector<double> loads{196, 112, 70, 43.75, 343, 196};
  std::vector<double> predicted;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const auto [y, z] = chunks[i];
    Setting c = s;
    c[Param::ufy] = y;
    c[Param::ufz] = z;
    ASSERT_FALSE(plan_violation(box, grid, c, limits).has_value()) << canonical_key(c);
    const KernelPlan plan = make_plan(box, grid, c, limits);
    ASSERT_EQ(plan.unroll[1] * plan.unroll[2], y * z);  // box3d3r keeps 16-point chunks
    EXPECT_DOUBLE_EQ(plan.loads_per_cell, loads[i]) << y << "x" << z;
    predicted.push_back(gated.predict_ms(c));
    EXPECT_EQ(off.predict_ms(c), off.predict_ms(s)) << y << "x" << z;
  }
  EXPECT_GT(predicted[0], predicted[1]);
  EXPECT_GT(predicted[1], predicted[2]);
  EXPECT_GT(predicted[2], predicted[3]);
  EXPECT_GT(predicted[0], 1.75 * predicted[3]);
  EXPECT_DOUBLE_EQ(predicted[3], off.predict_ms(s));  // the flops / peak floor
  EXPECT_GT(predicted[4], predicted[5]);
  EXPECT_GT(predicted[5], predicted[2]);
}

// Over random tdeg-1 tiled settings of box3d3r 512^3 (the default space), the fastest
// predicted one unrolls a register chunk; without the issue term the best prediction is tied
// by settings of every chunk size, the one-point ones among them.
TEST(Predictor, ComputeBoundBoxBestTiledSettingHasARegisterChunk) {
  const Grid grid{512, 512, 512};
  const DeviceLimits limits;
  const Stencil box = typical_stencil("box3d3r");
  const Space space(box, grid, limits, Space::default_values(3, grid));
  const RooflinePredictor gated(box, grid, limits),
      off(box, grid, limits, RooflinePredictor::IssueTerm::off);
  Rng rng(9, 1);
  struct Best {
    double ms = RooflinePredictor::kUnfit;
    std::vector<int> chunks;  // unroll products of the settings at ms
  };
  Best with, without;
  const auto keep = [](Best& b, double ms, int chunk) {
    if (ms < b.ms)
      b = Best{ms, {}};
    if (ms == b.ms)
      b.chunks.push_back(chunk);
  };
  for (int oc = 0; oc < kOcCount; ++oc) {
    const OcFlags f = oc_flags(oc);
    if (f.streaming != 0 || f.temporal != 0)
      continue;
    for (int i = 0; i < 400; ++i) {
      const auto s = space.random_in_oc(oc, rng, 2000);
      if (!s)
        break;
      const auto& u = make_plan(box, grid, *s, limits).unroll;
      keep(with, gated.predict_ms(*s), u[0] * u[1] * u[2]);
      keep(without, off.predict_ms(*s), u[0] * u[1] * u[2]);
    }
  }
  ASSERT_FALSE(with.chunks.empty());
  EXPECT_EQ(std::count(with.chunks.begin(), with.chunks.end(), 1), 0);
  EXPECT_GT(without.chunks.size(), 1u);
  EXPECT_GT(std::count(without.chunks.begin(), without.chunks.end(), 1), 0);
}

TEST(Predictor, RankCorrelationOfKnownSeries) {
  const std::vector<double> a{1, 2, 3, 4, 5};
  const std::vector<double> up{10, 20, 30, 40, 50};
  const std::vector<double> down{5, 4, 3, 2, 1};
  const std::vector<double> tie{1, 1, 2, 2, 3};
  EXPECT_NEAR(rank_correlation(a, up), 1.0, 1e-12);
  EXPECT_NEAR(rank_correlation(a, down), -1.0, 1e-12);
  EXPECT_NEAR(rank_correlation(a, std::vector<double>{1, 3, 2, 5, 4}), 0.8, 1e-12);
  EXPECT_GT(rank_correlation(a, tie), 0.9);
  EXPECT_EQ(rank_correlation(a, std::vector<double>(5, 7.0)), 0.0);
}

TEST(Sampler, PaperUnitsAreAccepted) {
  SamplerSettings s;  // the defaults are the paper's AR = LR = 0.1 of a round
  EXPECT_NEAR(s.adjust, 0.1, 1e-12);
  EXPECT_NEAR(s.floor, 0.1, 1e-12);
  EXPECT_NO_THROW(s.validate());
  s.floor = 0.5;
  s.adjust = 0.5;
  EXPECT_NO_THROW(s.validate());
}

TEST(Sampler, UniformPredictorRewardsNoOcAndStaysStratified) {
  FakeSource source({{0, 1e6, true}, {5, 1e6, true}, {9, 2e6, true}});
  SamplerSettings s;
  s.sample_ratio = 1e-3;  // n = 4000, rounds of 400
  s.max_samples = 4000;
  const SampleResult r = sample(source, UniformPredictor{}, s, 5);
  ASSERT_GE(r.rounds.size(), 5u);
  std::array<int, kOcCount> total{};
  for (const SampleRound& round : r.rounds) {
    EXPECT_EQ(round.winner, -1);
    for (int oc = 0; oc < kOcCount; ++oc)
      total[oc] += round.drawn[oc];
  }
  EXPECT_NEAR(r.final_ratios[0], 0.25, 1e-9);
  EXPECT_NEAR(r.final_ratios[9], 0.5, 1e-9);
  EXPECT_NEAR(total[0], 1000, 1);
  EXPECT_NEAR(total[5], 1000, 1);
  EXPECT_NEAR(total[9], 2000, 1);
}

TEST(Sampler, SmallQuotasAreSharedAcrossRoundsNotGivenToTheLowestOc) {
  FakeSource source({{2, 1e6, true}, {7, 1e6, true}});
  SamplerSettings s;
  s.sample_ratio = 1.0;
  s.max_samples = 40;
  s.round_ratio = 0.025;  // one setting per round
  const SampleResult r = sample(source, UniformPredictor{}, s, 9);
  int first = 0, second = 0;
  for (const SampleRound& round : r.rounds) {
    first += round.drawn[2];
    second += round.drawn[7];
  }
  EXPECT_EQ(first + second, 40);
  EXPECT_LE(std::abs(first - second), 1);
}

// Predicts OCs 2 and 7 equally fast and every other OC slower.
class TwoFastOcs final : public Predictor {
 public:
  double predict_ms(const Setting& s) const override {
    const int merge = s[Param::merge];
    return merge == 0 && (s[Param::prefetch] == 1 || s[Param::retiming] == 1) ? 1.0 : 2.0;
  }
  std::string name() const override { return "two-fast"; }
};

TEST(Sampler, TiedBestPredictionsGoToARandomOc) {
  // OC 2 = prefetch, OC 4 = retiming (merge none): both predicted fastest.
  FakeSource source({{0, 1e6, true}, {2, 1e6, true}, {4, 1e6, true}});
  SamplerSettings s;
  s.sample_ratio = 1.0;
  s.max_samples = 600;
  s.round_ratio = 0.05;
  const SampleResult r = sample(source, TwoFastOcs{}, s, 13);
  int wins2 = 0, wins4 = 0;
  for (const SampleRound& round : r.rounds) {
    EXPECT_TRUE(round.winner == 2 || round.winner == 4) << round.winner;
    wins2 += round.winner == 2 ? 1 : 0;
    wins4 += round.winner == 4 ? 1 : 0;
  }
  EXPECT_GT(wins2, 2);
  EXPECT_GT(wins4, 2);
}

TEST(Sampler, FloorIsChosenPerActiveOc) {
  std::vector<OcCount> counts;
  for (int oc = 0; oc < kOcCount; ++oc)
    counts.push_back({oc, 1e6, true});
  FakeSource source(counts);
  SamplerSettings s;  // floor 0.1 cannot hold for 48 OCs: each keeps 0.5 / 48
  s.sample_ratio = 1.0;
  s.max_samples = 4800;
  const SampleResult r = sample(source, FavourOc(20), s, 3);
  ASSERT_GE(r.rounds.size(), 5u);
  for (const SampleRound& round : r.rounds) {
    double sum = 0;
    for (int oc = 0; oc < kOcCount; ++oc) {
      EXPECT_GE(round.ratios[oc], 0.5 / kOcCount - 1e-12);
      sum += round.ratios[oc];
    }
    EXPECT_NEAR(sum, 1.0, 1e-9);
  }
  EXPECT_NEAR(r.final_ratios[20], 0.5 + 0.5 / kOcCount, 1e-9);
}

}  // namespace
}  // namespace isletune

namespace isletune {
namespace {

// A compute-bound stencil's sample of the whole space gains the predictor's local optima around
// its best predicted settings: box3d2r 512^3 (the default space, about 4,000 of its settings
// sampled) gains valid settings predicted faster than every sampled one, each reached by single
// moves from a sampled start. A replay's recorded settings and a memory-bound stencil's sample are
// left as they were.
TEST(Sampler, ComputeBoundSampleGainsThePredictorsLocalOptima) {
  const DeviceLimits limits;
  const auto sampled = [&](const char* name, Grid grid) {
    const Stencil st = typical_stencil(name);
    // The CUDA-core families' register tiles: the tensor-core family (predicted faster still,
    // its 32 settings all sampled) is off.
    Space::Values values = Space::default_values(st.dims(), grid);
    values[index_of(Param::mma)] = {0};
    const Space space(st, grid, limits, values);
    const RooflinePredictor roofline(st, grid, limits);
    SpaceSource source(space);
    SampledSet set = sample(source, roofline, SamplerSettings{}, 11).set;
    return std::tuple{set, space, roofline};
  };
  auto [box, box_space, box_roofline] = sampled("box3d2r", Grid{512, 512, 512});
  const double best_sampled = *std::min_element(box.predicted_ms.begin(), box.predicted_ms.end());
  SampledSet refined = box;
  refine_sample(refined, box_space, box_roofline, /*whole_space=*/true);
  ASSERT_GT(refined.size(), box.size());
  ASSERT_LE(refined.size(), box.size() + kRefinedStarts);
  for (std::size_t i = box.size(); i < refined.size(); ++i) {
    const Setting& s = refined.settings[i];
    EXPECT_TRUE(box_space.valid(s)) << canonical_key(s);
    EXPECT_EQ(refined.oc[i], Space::oc_of(s));
    EXPECT_DOUBLE_EQ(refined.predicted_ms[i], box_roofline.predict_ms(s));
    EXPECT_LT(refined.predicted_ms[i], best_sampled) << canonical_key(s);
  }
  // Descent never ends above its start.
  const std::vector<Setting> starts{box.settings.front(), box.settings.back()};
  const std::vector<Setting> ends = refine_by_prediction(box_space, box_roofline, starts);
  ASSERT_FALSE(ends.empty());
  EXPECT_LE(box_roofline.predict_ms(ends[0]), box_roofline.predict_ms(starts[0]));
  EXPECT_LE(box_roofline.predict_ms(ends.back()), box_roofline.predict_ms(starts[1]));

  SampledSet recorded = box;
  refine_sample(recorded, box_space, box_roofline, /*whole_space=*/false);
  EXPECT_EQ(recorded.settings, box.settings);
  auto [star, star_space, star_roofline] = sampled("star3d1r", Grid{512, 512, 512});
  SampledSet star_refined = star;
  refine_sample(star_refined, star_space, star_roofline, /*whole_space=*/true);
  EXPECT_EQ(star_refined.settings, star.settings);
}

}  // namespace
}  // namespace isletune
