// The sampler on the real default 3-D space (billions of settings): it samples without
// enumerating, every sampled setting is valid and in the OC it is filed under.
#include <gtest/gtest.h>

#include <chrono>
#include <unordered_set>

#include "ga/search.hpp"
#include "sample/predictor.hpp"
#include "sample/sampler.hpp"
#include "sample/setting_source.hpp"
#include "space/space.hpp"
#include "test_ga_fakes.hpp"

namespace isletune {
namespace {

Stencil star3d1r() {
  return Stencil::make(
      "star3d1r", 3,
      {{0, 0, 0}, {1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}},
      {0.4, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1});
}

TEST(SamplerOnSpace, DefaultThreeDimensionalSpaceIsSampledWithoutEnumeration) {
  const Grid grid{512, 512, 512};
  const Stencil st = star3d1r();
  const Space space(st, grid, DeviceLimits{}, Space::default_values(3, grid));
  SpaceSource source(space);
  const RooflinePredictor roofline(st, grid, DeviceLimits{});
  const auto start = std::chrono::steady_clock::now();
  const SampleResult r = sample(source, roofline, SamplerSettings{}, 1);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("default 3-D space: %.3g settings in %zu OCs, %zu sampled in %zu rounds, %.2f s\n",
              r.space_size, r.counts.size(), r.set.size(), r.rounds.size(), seconds);
  // Distinct kernels (the sampler counts canonical settings): far beyond what the GA could
  // enumerate.
  EXPECT_GT(r.space_size, 1e6);
  EXPECT_LT(r.space_size, space.size(1));  // fewer kernels than valid settings
  EXPECT_EQ(r.target, 4096);
  EXPECT_EQ(r.set.size(), 4096u);
  EXPECT_FALSE(r.set.estimated_ocs.empty());
  std::unordered_set<Setting, SettingHash> distinct;
  for (std::size_t i = 0; i < r.set.size(); ++i) {
    const Setting& s = r.set.settings[i];
    ASSERT_TRUE(space.valid(s)) << *space.violation(s);
    ASSERT_TRUE(is_canonical(space.shape(), s)) << canonical_key(s);
    ASSERT_EQ(Space::oc_of(s), r.set.oc[i]);
    ASSERT_EQ(roofline.predict_ms(s), r.set.predicted_ms[i]);
    distinct.insert(s);
  }
  EXPECT_EQ(distinct.size(), r.set.size());
  for (const SampleRound& round : r.rounds) {
    for (const OcCount& c : r.counts)
      EXPECT_GE(
          round.ratios[c.oc],
          std::min(SamplerSettings{}.floor, 0.5 / static_cast<double>(r.counts.size())) - 1e-12);
  }
}

TEST(SamplerOnSpace, ListSourceFilesSettingsUnderSpaceOcIds) {
  const Grid grid{128, 128, 128};
  const Space space(star3d1r(), grid, DeviceLimits{}, Space::default_values(3, grid));
  Rng rng(4);
  std::vector<Setting> listed;
  for (const OcCount& c : space.count_per_oc(1)) {
    for (int i = 0; i < 3; ++i) {
      if (const auto s = space.random_in_oc(c.oc, rng))
        listed.push_back(*s);
    }
  }
  ListSource source(space.shape(), listed);
  SamplerSettings all;
  all.sample_ratio = 1.0;
  const SampleResult r = sample(source, UniformPredictor{}, all, 2);
  ASSERT_FALSE(r.set.empty());
  for (std::size_t i = 0; i < r.set.size(); ++i)
    EXPECT_EQ(r.set.oc[i], Space::oc_of(r.set.settings[i]));
}

TEST(SamplerOnSpace, SampledSpaceFeedsTheIslandGaInBothEncodings) {
  const Grid grid{256, 256, 256};
  const Stencil st = star3d1r();
  const Space space(st, grid, DeviceLimits{}, Space::default_values(3, grid));
  SpaceSource source(space);
  const RooflinePredictor roofline(st, grid, DeviceLimits{});
  SamplerSettings ss;
  ss.max_samples = 1024;
  const SampleResult sampled = sample(source, roofline, ss, 3);
  const std::unordered_set<Setting, SettingHash> allowed(sampled.set.settings.begin(),
                                                         sampled.set.settings.end());
  double best_sampled = 1e30;
  for (const double p : sampled.set.predicted_ms)
    best_sampled = std::min(best_sampled, p);
  // Defaults (MCR 0.5) and MCR 1.0 per encoding: every visited setting is sampled and the
  // reported best is the best measured. (Roofline times span orders of magnitude, so
  // fitness-proportional selection converges within a few generations; printed.)
  for (const Encoding enc : {Encoding::index, Encoding::parameters}) {
    for (const double mcr : {0.5, 1.0}) {
      GaSettings ga;
      ga.encoding = enc;
      ga.mcr_threshold = mcr;
      ga.max_evaluations = 300;
      testing::SyntheticEvaluator eval([&](const Setting& s) { return roofline.predict_ms(s); });
      testing::MemorySink sink;
      NoMigrator alone;
      LocalStopVote vote;
      const SearchResult r = run_island(ga, sampled.set, eval, alone, vote, sink, 5, 0);
      ASSERT_TRUE(r.best.has_value());
      double best_seen = 1e30;
      for (const auto& row : sink.evaluations) {
        ASSERT_TRUE(allowed.count(row.setting));
        best_seen = std::min(best_seen, row.measurement.median_ms);
      }
      EXPECT_EQ(r.best_measurement.median_ms, best_seen);
      std::printf(
          "%s, mcr %.1f: best %.4f ms after %lld measurements in %d generations "
          "(best of the 1024 sampled %.4f ms), stop %s\n",
          std::string(encoding_name(enc)).c_str(), mcr, r.best_measurement.median_ms,
          static_cast<long long>(r.evaluations), r.generations, best_sampled,
          stop_reason_name(r.reason));
    }
  }
}

}  // namespace
}  // namespace isletune
