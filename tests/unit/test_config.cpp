// The run configuration: examples load, to_yaml round-trips, defaults are filled in, and
// every kind of bad input is one sentence naming the file and the key path.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.hpp"
#include "config/config.hpp"

namespace isletune {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = ISLETUNE_SOURCE_DIR;
const fs::path kDataset = fs::path(ISLETUNE_TEST_DATA) / "synthetic-star2d1r.h5";

Config parse(const std::string& yaml) {
  return parse_config(yaml, "run.yaml", kSource);
}

// The message of the InputError that parsing `yaml` throws ("" when it does not throw).
std::string error_of(const std::string& yaml) {
  try {
    (void)parse(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// One sentence: names the file, ends with a period, no sentence break or newline inside.
void expect_one_sentence(const std::string& msg, const std::string& key) {
  ASSERT_FALSE(msg.empty()) << "expected an InputError for " << key;
  EXPECT_EQ(msg.rfind("run.yaml: ", 0), 0u) << msg;
  EXPECT_NE(msg.find(key), std::string::npos) << "key " << key << " not in: " << msg;
  EXPECT_EQ(msg.back(), '.') << msg;
  EXPECT_EQ(msg.find(". "), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

// A config that sets every key to something other than its default.
std::string everything_yaml() {
  return "stencil:\n"
         "  name: mine\n"
         "  dims: 3\n"
         "  points: [[0, 0, 0, 0.5], [1, 0, 0, 0.1], [-1, 0, 0, 0.1], [0, 0, 1, 0.15],\n"
         "           [0, 0, -1, 0.15]]\n"
         "grid: [64, 32, 16]\n"
         "steps: 24\nwarmup: 1\nrepeats: 5\n"
         "space:\n"
         "  merge: {values: [none, cyclic]}\n"
         "  tdeg: {remove: [12, 16]}\n"
         "  tbx: {add: [2]}\n"
         "  use_shared: {values: [true]}\n"
         "sampler: {predictor: uniform, sample_ratio: 0.25, max_samples: 100, round_ratio: 0.2,\n"
         "          adjust: 0.01, floor: 0.002}\n"
         "strategy: sampled-random\n"
         "ga: {population: 12, rows: 3, cols: 4, crossover_rate: 0.7, mutation_rate: 0.01,\n"
         "     encoding: parameters, gray: true, migration: {interval: 3, count: 2},\n"
         "     mcr_threshold: 0.75, model_trees: 12}\n"
         "budget: {max_generations: 7, max_evaluations: 900, time_budget_s: 12.5}\n"
         "evaluator: {backend: replay, dataset: tests/data/synthetic-star2d1r.h5,\n"
         "            timeout_s: 30, compile_timeout_s: 7.5, slow_factor: 0, race_factor: 1.5,\n"
         "            settle_spread: 0.02, full_verification: true,\n"
         "            compile_threads: 4, compile_scale: 0.6,\n"
         "            cache_dir: /tmp/cubins}\n"
         "seed: 18446744073709551615\n"
         "output: out/dir\n";
}

TEST(Config, EveryKeyIsReadIntoTheTypedConfig) {
  const Config c = parse(everything_yaml());
  EXPECT_EQ(c.stencil.source, StencilSource::points);
  EXPECT_EQ(c.stencil.name, "mine");
  EXPECT_EQ(c.dims(), 3);
  EXPECT_EQ(c.stencil.points.size(), 5u);
  EXPECT_EQ(c.grid, (Grid{64, 32, 16}));
  EXPECT_EQ(c.steps, 24);
  EXPECT_EQ(c.warmup, 1);
  EXPECT_EQ(c.repeats, 5);
  ASSERT_EQ(c.space.size(), 4u);  // ordered by parameter: merge, tdeg, tbx, use_shared
  EXPECT_EQ(c.space[0].param, Param::merge);
  EXPECT_EQ(*c.space[0].values, (std::vector<int>{0, 2}));
  EXPECT_EQ(c.space[1].remove, (std::vector<int>{12, 16}));
  EXPECT_EQ(*c.space[3].values, std::vector<int>{1});
  EXPECT_EQ(c.predictor, PredictorKind::uniform);
  EXPECT_EQ(c.sampler.sample_ratio, 0.25);
  EXPECT_EQ(c.sampler.max_samples, 100);
  EXPECT_EQ(c.sampler.floor, 0.002);
  EXPECT_EQ(c.strategy, Strategy::sampled_random);
  EXPECT_EQ(c.ga.population, 12);
  EXPECT_EQ(c.ga.encoding, Encoding::parameters);
  EXPECT_TRUE(c.ga.gray);
  EXPECT_EQ(c.ga.migration_interval, 3);
  EXPECT_EQ(c.ga.migration_count, 2);
  EXPECT_EQ(c.ga.model_trees, 12);
  EXPECT_EQ(c.ga.max_evaluations, 900);
  EXPECT_EQ(c.ga.time_budget_s, 12.5);
  EXPECT_EQ(c.evaluator.backend, Backend::replay);
  EXPECT_EQ(c.evaluator.dataset, kDataset.lexically_normal());  // resolved against the base
  EXPECT_EQ(c.evaluator.compile_threads, 4);
  EXPECT_EQ(c.evaluator.compile_scale, 0.6);
  EXPECT_EQ(c.evaluator.compile_timeout_s, 7.5);
  EXPECT_EQ(c.evaluator.slow_factor, 0);  // 0: every kernel verified and timed
  EXPECT_EQ(c.evaluator.race_factor, 1.5);
  EXPECT_EQ(c.evaluator.settle_spread, 0.02);
  EXPECT_TRUE(c.evaluator.full_verification);
  EXPECT_EQ(c.evaluator.cache_dir, "/tmp/cubins");
  EXPECT_EQ(c.seed, 18446744073709551615ULL);
  EXPECT_EQ(c.output, "out/dir");
  EXPECT_EQ(resolve_stencil(c).size(), 5);
}

TEST(Config, ToYamlRoundTripsToAnEqualConfig) {
  for (const std::string& yaml :
       {everything_yaml(), std::string("stencil: star2d1r\ngrid: [100, 200]\n")}) {
    const Config a = parse(yaml);
    const std::string text = to_yaml(a);
    const Config b = parse_config(text, "effective.yaml", "/nonexistent");  // paths are absolute
    EXPECT_TRUE(a == b) << text;
    EXPECT_EQ(to_yaml(b), text);
  }
  Config changed = parse(everything_yaml());
  changed.ga.mutation_rate = 0.02;
  EXPECT_FALSE(changed == parse(everything_yaml()));
}

TEST(Config, MinimalConfigGetsTheDocumentedDefaults) {
  const Config c = parse("stencil: box3d1r\ngrid: [32, 32, 32]\n");
  EXPECT_EQ(c.stencil.source, StencilSource::library);
  EXPECT_EQ(c.dims(), 3);
  EXPECT_EQ(c.steps, 48);
  EXPECT_EQ(c.strategy, Strategy::island_ga);
  EXPECT_EQ(c.predictor, PredictorKind::roofline);
  EXPECT_EQ(c.ga.population, 16);
  EXPECT_EQ(c.ga.model_trees, -1);  // the online model's own forest
  EXPECT_EQ(c.ga.crossover_rate, 0.8);
  EXPECT_EQ(c.ga.mcr_threshold, 0.9);  // the replay sweep's choice (docs/decisions.md#unique-cells)
  EXPECT_EQ(c.ga.mutation_rate, 0.05);
  EXPECT_EQ(c.ga.encoding, Encoding::parameters);
  EXPECT_EQ(c.sampler.sample_ratio, 1.0);
  EXPECT_EQ(c.sampler.adjust, 0.1);
  EXPECT_EQ(c.sampler.floor, 0.1);
  EXPECT_EQ(c.sampler.max_samples, 4096);
  EXPECT_EQ(c.evaluator.backend, Backend::cuda);
  EXPECT_EQ(c.evaluator.compile_timeout_s, 60);
  EXPECT_EQ(c.evaluator.slow_factor, kDefaultSlowFactor);
  EXPECT_EQ(c.evaluator.race_factor, 1.5);     // racing while another kernel waits
  EXPECT_EQ(c.evaluator.settle_spread, 0.01);  // settling while another kernel waits
  EXPECT_FALSE(c.evaluator.full_verification);
  EXPECT_EQ(kDefaultSlowFactor, 2);
  EXPECT_EQ(c.problem().stencil.size(), 27);
  EXPECT_EQ(space_values(c), Space::default_values(3, c.grid));
  // rows x cols alone set the population.
  EXPECT_EQ(parse("stencil: star2d1r\ngrid: [64, 64]\nga: {rows: 2, cols: 5}\n").ga.population, 10);
}

TEST(Config, ExamplesLoadAndRoundTrip) {
  int seen = 0;
  for (const auto& entry : fs::directory_iterator(kSource / "config/examples")) {
    if (entry.path().extension() != ".yaml")
      continue;
    ++seen;
    const Config c = load_config(entry.path());
    EXPECT_TRUE(c == parse_config(to_yaml(c), "again.yaml", "/")) << entry.path();
    EXPECT_NO_THROW((void)space_values(c)) << entry.path();
  }
  EXPECT_GE(seen, 3);
  const Config replay = load_config(kSource / "config/examples/replay-star2d1r.yaml");
  EXPECT_EQ(replay.evaluator.dataset, kDataset.lexically_normal());
  const Config big = load_config(kSource / "config/examples/star2d2r-8192.yaml");
  EXPECT_EQ(big.grid, (Grid{8192, 8192, 1}));
  EXPECT_EQ(space_values(big)[index_of(Param::tdeg)], (std::vector<int>{1, 2, 3, 4, 6, 8}));
}

// config/examples/star2d2r-8192.yaml says its values are the defaults unless a comment says
// "not the default": with exactly those keys (space, time_budget_s, max_generations, output)
// taken over, it
// is the minimal config of the same stencil and grid, key for key.
TEST(Config, ExampleClaimsOnlyTrueDefaults) {
  const fs::path path = kSource / "config/examples/star2d2r-8192.yaml";
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t marked = 0;
  for (std::size_t at = text.find("not the default"); at != std::string::npos;
       at = text.find("not the default", at + 1)) {
    ++marked;
  }
  EXPECT_EQ(marked, 5u) << "the test below takes over exactly the marked keys; update both";
  const Config example = load_config(path);
  Config defaults = parse("stencil: star2d2r\ngrid: [8192, 8192]\n");
  defaults.space = example.space;
  defaults.ga.time_budget_s = example.ga.time_budget_s;
  defaults.ga.max_generations = example.ga.max_generations;
  defaults.output = example.output;
  EXPECT_EQ(to_yaml(example), to_yaml(defaults));
}

TEST(Config, UnknownKeysNameThePathAndListTheAllowedOnes) {
  const std::string top = error_of("stencil: star2d1r\ngrid: [64, 64]\ngenerations: 5\n");
  expect_one_sentence(top, "generations");
  EXPECT_NE(top.find("line 3"), std::string::npos) << top;
  EXPECT_NE(top.find("budget"), std::string::npos) << top;  // the allowed keys are listed
  const std::string nested =
      error_of("stencil: star2d1r\ngrid: [64, 64]\nga:\n  migration: {every: 2}\n");
  expect_one_sentence(nested, "ga.migration.every");
  EXPECT_NE(nested.find("interval, count"), std::string::npos) << nested;
  expect_one_sentence(
      error_of("stencil: star2d1r\ngrid: [64, 64]\nspace: {blocksize: {add: [3]}}\n"),
      "space.blocksize");
}

TEST(Config, WrongTypesAreReportedWithTheValue) {
  const std::string msg = error_of("stencil: star2d1r\ngrid: [64, 64]\nga: {population: many}\n");
  expect_one_sentence(msg, "ga.population");
  EXPECT_NE(msg.find("'many'"), std::string::npos) << msg;
  expect_one_sentence(error_of("stencil: star2d1r\ngrid: [64, 64]\nga: {gray: 3}\n"), "ga.gray");
  expect_one_sentence(error_of("stencil: star2d1r\ngrid: [64, 64]\nsteps: [1, 2]\n"), "steps");
  expect_one_sentence(error_of("stencil: star2d1r\ngrid: [64, 64]\nstrategy: hill-climb\n"),
                      "strategy");
  expect_one_sentence(error_of("stencil: star2d1r\ngrid: [64, 64]\nseed: -3\n"), "seed");
  expect_one_sentence(
      error_of("stencil: star2d1r\ngrid: [64, 64]\nspace: {merge: {values: [diagonal]}}\n"),
      "space.merge.values[0]");
}

TEST(Config, OutOfRangeValuesAreReportedWithTheRange) {
  const std::string msg =
      error_of("stencil: star2d1r\ngrid: [64, 64]\nga:\n  migration: {interval: -1}\n");
  expect_one_sentence(msg, "ga.migration.interval");
  EXPECT_NE(msg.find(">= 0"), std::string::npos) << msg;
  expect_one_sentence(error_of("stencil: star2d1r\ngrid: [64, 64]\nga: {crossover_rate: 1.5}\n"),
                      "ga.crossover_rate");
  expect_one_sentence(error_of("stencil: star2d1r\ngrid: [64, 64]\nga: {population: 15}\n"),
                      "ga.population");
  expect_one_sentence(error_of("stencil: star2d1r\ngrid: [64, 64]\nga: {model_trees: 257}\n"),
                      "ga.model_trees");
  expect_one_sentence(error_of("stencil: star2d1r\ngrid: [64, 64]\nsampler: {floor: 0.5}\n"),
                      "sampler.floor");
  expect_one_sentence(error_of("stencil: star2d1r\ngrid: [64, 64]\nbudget: {max_generations: 0}\n"),
                      "budget");
  expect_one_sentence(error_of("stencil: star2d1r\ngrid: [64, 0]\n"), "grid[1]");
  // A slow factor below 1 would cut kernels as fast as the reference.
  for (const char* bad : {"0.5", "-1", "2e6"}) {
    const std::string slow = error_of(std::string("stencil: star2d1r\ngrid: [64, 64]\n") +
                                      "evaluator: {slow_factor: " + bad + "}\n");
    expect_one_sentence(slow, "evaluator.slow_factor");
    EXPECT_NE(slow.find("[1, 1e6], or 0"), std::string::npos) << slow;
  }
  EXPECT_EQ(error_of("stencil: star2d1r\ngrid: [64, 64]\nevaluator: {slow_factor: 1}\n"), "");
  // A race factor near 1 would stop the timing of kernels as fast as the best but for noise.
  for (const char* bad : {"1.05", "-1", "101", "fast"}) {
    const std::string race = error_of(std::string("stencil: star2d1r\ngrid: [64, 64]\n") +
                                      "evaluator: {race_factor: " + bad + "}\n");
    expect_one_sentence(race, "evaluator.race_factor");
    EXPECT_NE(race.find("[1.1, 100], or 0"), std::string::npos) << race;
  }
  EXPECT_EQ(error_of("stencil: star2d1r\ngrid: [64, 64]\nevaluator: {race_factor: 0}\n"), "");
  // A spread over a tenth would settle timings that noise dominates.
  for (const char* bad : {"0.2", "-0.01", "loose"}) {
    const std::string settle = error_of(std::string("stencil: star2d1r\ngrid: [64, 64]\n") +
                                        "evaluator: {settle_spread: " + bad + "}\n");
    expect_one_sentence(settle, "evaluator.settle_spread");
    EXPECT_NE(settle.find("[0, 0.1]"), std::string::npos) << settle;
  }
  EXPECT_EQ(error_of("stencil: star2d1r\ngrid: [64, 64]\nevaluator: {settle_spread: 0}\n"), "");
  // A compile scale is a replay knob: it must be a positive factor, and with the CUDA backend
  // (which compiles for real) anything but 1 is refused.
  for (const char* bad : {"0", "-1", "101", "quick"}) {
    const std::string scale =
        error_of(std::string("stencil: star2d1r\ngrid: [64, 64]\n") +
                 "evaluator: {backend: replay, dataset: tests/data/synthetic-star2d1r.h5, "
                 "compile_scale: " +
                 bad + "}\n");
    expect_one_sentence(scale, "evaluator.compile_scale");
    EXPECT_NE(scale.find("(0, 100]"), std::string::npos) << scale;
  }
  const std::string cuda_scale =
      error_of("stencil: star2d1r\ngrid: [64, 64]\nevaluator: {compile_scale: 0.5}\n");
  expect_one_sentence(cuda_scale, "evaluator.compile_scale");
  EXPECT_NE(cuda_scale.find("replay backend only"), std::string::npos) << cuda_scale;
  EXPECT_EQ(error_of("stencil: star2d1r\ngrid: [64, 64]\nevaluator: {compile_scale: 1}\n"), "");
  expect_one_sentence(error_of("stencil: star2d4r\ngrid: [64, 8]\n"), "grid[1]");
  expect_one_sentence(error_of("stencil: star2d1r\ngrid: [64, 64]\nspace: {tdeg: {remove: [5]}}\n"),
                      "space.tdeg.remove");
  expect_one_sentence(
      error_of("stencil: star2d1r\ngrid: [64, 64]\nspace: {use_shared: {remove: [0, 1]}}\n"),
      "space.use_shared");
  // No MCR stop and no generation limit, but an evaluation budget: accepted, since a
  // converged island restarts (after a generation that measured nothing new).
  EXPECT_EQ(error_of("stencil: star2d1r\ngrid: [64, 64]\nga: {mcr_threshold: 0}\n"
                     "budget: {max_generations: 0, max_evaluations: 100}\n"),
            "");
  EXPECT_EQ(
      error_of("stencil: star2d1r\ngrid: [64, 64]\nstrategy: random\n"
               "ga: {mcr_threshold: 0}\nbudget: {max_generations: 0, max_evaluations: 100}\n"),
      "");
}

TEST(Config, MalformedYamlNamesTheLine) {
  const std::string msg = error_of("stencil: star2d1r\ngrid: [64, 64\nsteps: 3\n");
  ASSERT_FALSE(msg.empty());
  EXPECT_EQ(msg.rfind("run.yaml: invalid YAML at line ", 0), 0u) << msg;
  EXPECT_EQ(msg.back(), '.');
  expect_one_sentence(error_of("- just\n- a list\n"), "must be a mapping");
  expect_one_sentence(error_of("grid: [64, 64]\n"), "stencil");
}

TEST(Config, GridMustMatchTheStencilDims) {
  const std::string msg = error_of("stencil: box3d1r\ngrid: [512, 512]\n");
  expect_one_sentence(msg, "grid");
  EXPECT_NE(msg.find("3-D"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[nx, ny, nz]"), std::string::npos) << msg;
  expect_one_sentence(
      error_of("stencil: {name: s, dims: 2, points: [[0, 0, 1]]}\ngrid: [8, 8, 8]\n"), "grid");
  expect_one_sentence(
      error_of("stencil: {name: s, dims: 2, points: [[0, 0, 0, 1]]}\ngrid: [8, 8]\n"),
      "stencil.points[0]");
  expect_one_sentence(error_of("stencil: hexagon2d1r\ngrid: [8, 8]\n"), "stencil");
}

TEST(Config, MissingDatasetIsReported) {
  const std::string msg = error_of(
      "stencil: star2d1r\ngrid: [64, 64]\nevaluator: {backend: replay, dataset: nope/data.h5}\n");
  expect_one_sentence(msg, "evaluator.dataset");
  EXPECT_NE(msg.find((kSource / "nope/data.h5").string()), std::string::npos) << msg;
  expect_one_sentence(error_of("stencil: star2d1r\ngrid: [64, 64]\nevaluator: {backend: replay}\n"),
                      "evaluator.dataset");
}

TEST(Config, CommandLineOverridesApplyAndRevalidate) {
  Config c =
      parse("stencil: star2d1r\ngrid: [64, 64]\nevaluator: {dataset: " + kDataset.string() + "}\n");
  apply_overrides(c, {"replay", fs::path("/tmp/run1"), 99});
  EXPECT_EQ(c.evaluator.backend, Backend::replay);
  EXPECT_EQ(c.output, "/tmp/run1");
  EXPECT_EQ(c.seed, 99u);
  EXPECT_THROW(apply_overrides(c, {"opencl", {}, {}}), InputError);

  Config no_dataset = parse("stencil: star2d1r\ngrid: [64, 64]\n");
  try {
    apply_overrides(no_dataset, {"replay", {}, {}});
    FAIL() << "replay without a dataset was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("evaluator.dataset"), std::string::npos) << e.what();
  }
}

TEST(Config, LoadConfigNamesTheFileAndResolvesRelativePaths) {
  const fs::path dir =
      fs::temp_directory_path() / ("isletune-test-config-" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::copy_file(kDataset, dir / "data.h5", fs::copy_options::overwrite_existing);
  std::ofstream(dir / "run.yaml") << "stencil: star2d1r\ngrid: [64, 64]\n"
                                     "evaluator: {backend: replay, dataset: data.h5}\n";
  EXPECT_EQ(load_config(dir / "run.yaml").evaluator.dataset, dir / "data.h5");
  std::ofstream(dir / "bad.yaml") << "stencil: star2d1r\ngrid: [64, 64]\nsteps: 0\n";
  try {
    (void)load_config(dir / "bad.yaml");
    FAIL() << "steps: 0 was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind((dir / "bad.yaml").string() + ": steps (line 3)", 0), 0u)
        << e.what();
  }
  EXPECT_THROW((void)load_config(dir / "missing.yaml"), InputError);
  fs::remove_all(dir);
}

TEST(Config, SpaceOverridesReplaceWidenAndNarrow) {
  Space::Values base;
  for (auto& v : base)
    v = {1, 2, 4};
  const std::vector<SpaceOverride> overrides = {
      {Param::tbx, std::vector<int>{8, 16}, {}, {}},
      {Param::tby, std::nullopt, {32, 1}, {2}},
  };
  const Space::Values out = apply_space_overrides(base, overrides, "run.yaml");
  EXPECT_EQ(out[index_of(Param::tbx)], (std::vector<int>{8, 16}));
  EXPECT_EQ(out[index_of(Param::tby)], (std::vector<int>{1, 4, 32}));
  EXPECT_EQ(out[index_of(Param::tbz)], (std::vector<int>{1, 2, 4}));
}

}  // namespace
}  // namespace isletune
