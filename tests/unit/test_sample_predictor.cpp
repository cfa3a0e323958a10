// The roofline predictor against real measurements: on every recorded H200 dataset in
// tests/data its ranking of the recorded settings must correlate with the measured times
// (Spearman >= 0.5; docs/architecture.md, "The sampler": "measured rank correlation with real times
// is its test"). Prints the correlation per dataset.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <vector>

#include "config/config.hpp"
#include "eval/replay/replay_evaluator.hpp"
#include "sample/predictor.hpp"
#include "trace/reader.hpp"

namespace isletune {
namespace {

// Spearman correlation of the roofline prediction with the recorded times of `file`.
double roofline_rank_correlation(const std::filesystem::path& path) {
  const Config config =
      parse_config(TraceReader(path).config_yaml(), path.string(), path.parent_path());
  ReplayEvaluator replay = ReplayEvaluator::from_file(path);
  const RooflinePredictor roofline(resolve_stencil(config), config.grid, replay.limits());
  std::vector<Setting> settings = replay.candidates();
  const std::vector<Measurement> measured = replay.evaluate(settings);
  std::vector<double> predicted, times;
  for (std::size_t i = 0; i < settings.size(); ++i) {
    if (!measured[i].ok())
      continue;
    predicted.push_back(roofline.predict_ms(settings[i]));
    times.push_back(measured[i].median_ms);
  }
  return rank_correlation(predicted, times);
}

TEST(RooflineOnRecordedData, RanksSettingsLikeTheGpu) {
  int datasets = 0;
  for (const auto& entry : std::filesystem::directory_iterator(ISLETUNE_TEST_DATA)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".h5" || name.rfind("synthetic", 0) == 0)
      continue;
    const double rho = roofline_rank_correlation(entry.path());
    std::printf("roofline rank correlation on %s: %.3f\n", name.c_str(), rho);
    EXPECT_GE(rho, 0.5) << name;
    ++datasets;
  }
  EXPECT_GE(datasets, 2);
}

}  // namespace
}  // namespace isletune
