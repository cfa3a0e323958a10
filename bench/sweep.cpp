// Replay sweep (docs/architecture.md, "The island GA": defaults are chosen by replay sweeps over
// recorded spaces): runs search variants x seeds on a recorded dataset, in process and without a
// GPU, and prints per variant how often the final best is the dataset's optimum, within
// 2 % and within 5 % of it, the median gap, the median number of measurements spent and
// the median number of measurements until the best seen was within 5 %.
//
//   isletune-sweep DATASET.h5 [--seeds N] [--rank] [VARIANT ...]
//   VARIANT = name[:key=value,key=value...]
//   keys: strategy (ga | random | sampled-random), encoding (index | parameters),
//         mutation, crossover, mcr, sample_ratio, max_samples, round_ratio, adjust, floor,
//         predictor (roofline | uniform), islands, unique (0/1: unique cells), share (0/1:
//         share measurements between islands), stop (all | any: every island or one
//         island reaching the MCR threshold stops all; all is the default),
//         candidates (children bred per cell, the online model picks one), picks (cells
//         per generation given the model's fastest unmeasured setting),
//         mcr_on (offspring | population), generations, evaluations (total over the
//         islands).
//   Unset keys take the library defaults (SamplerSettings, GaOperators, GaSettings), so
//   the variant named `default` with no keys is the shipped default.
//
// The islands are stepped in turn on one thread over the in-memory ring (the same Island,
// Migrator and sampler code as `isletune run`); every generation each island breeds and
// measures, then migration (every generation, the best individual plus, with share=1,
// every new measurement), then the stop rules. Replay answers from the recorded
// measurements; settings are drawn from the recorded ones only. --rank prints the
// roofline predictor's Spearman rank correlation with the recorded times.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "eval/replay/replay_evaluator.hpp"
#include "ga/ga_settings.hpp"
#include "ga/island.hpp"
#include "ga/memory_ring.hpp"
#include "sample/predictor.hpp"
#include "sample/sampler.hpp"
#include "sample/setting_source.hpp"
#include "trace/reader.hpp"

namespace isletune {
namespace {

// Drops every record: the sweep only needs the figures.
class NullSink final : public TraceSink {
 public:
  void evaluation(const EvaluationRecord&) override {}
  void generation(const GenerationRecord&) override {}
  void migration(const MigrationRecord&) override {}
  void flush() override {}
};

// Counts measurements and notes when the best seen first came within 5 % of `optimum`.
class Counting final : public Evaluator {
 public:
  Counting(Evaluator& inner, double optimum) : inner_(inner), optimum_(optimum) {}
  std::vector<Measurement> evaluate(std::span<const Setting> batch) override {
    std::vector<Measurement> out = inner_.evaluate(batch);
    for (const Measurement& m : out) {
      ++count;
      if (m.ok() && m.median_ms < best)
        best = m.median_ms;
      if (to_5pct < 0 && best <= optimum_ * 1.05)
        to_5pct = count;
    }
    return out;
  }
  [[nodiscard]] DeviceLimits limits() const override { return inner_.limits(); }
  [[nodiscard]] double clock_s() const override { return inner_.clock_s(); }
  [[nodiscard]] std::string name() const override { return "counting"; }

  long long count = 0;
  long long to_5pct = -1;
  double best = std::numeric_limits<double>::infinity();

 private:
  Evaluator& inner_;
  double optimum_;
};

struct Variant {
  std::string name;
  std::map<std::string, std::string> keys;
  [[nodiscard]] std::string get(const std::string& k, const std::string& fallback) const {
    const auto it = keys.find(k);
    return it == keys.end() ? fallback : it->second;
  }
  [[nodiscard]] double num(const std::string& k, double fallback) const {
    const auto it = keys.find(k);
    return it == keys.end() ? fallback : std::stod(it->second);
  }
};

// "name:key=value,key=value".
Variant parse_variant(const std::string& text) {
  Variant v;
  const auto colon = text.find(':');
  v.name = text.substr(0, colon);
  if (colon == std::string::npos)
    return v;
  std::stringstream in(text.substr(colon + 1));
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "variant '%s': expected key=value, got '%s'\n", text.c_str(),
                   item.c_str());
      std::exit(2);
    }
    v.keys[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return v;
}

struct Outcome {
  double best_ms = std::numeric_limits<double>::infinity();
  long long measured = 0;
  long long to_5pct = -1;
};

struct Problem {
  Stencil stencil;
  Grid grid;
  std::vector<Setting> candidates;
  double optimum = 0;
};

// One run of `v` with `seed`.
Outcome run_once(const Problem& p, const std::filesystem::path& dataset, const Variant& v,
                 std::uint64_t seed) {
  ReplayEvaluator replay = ReplayEvaluator::from_file(dataset);
  Counting eval(replay, p.optimum);
  NullSink sink;
  const std::string strategy = v.get("strategy", "ga");
  const GaSettings ga_defaults;
  const long long budget = static_cast<long long>(v.num("evaluations", 0));
  const int max_generations = static_cast<int>(v.num("generations", ga_defaults.max_generations));

  SamplerSettings ss;
  ss.sample_ratio = v.num("sample_ratio", ss.sample_ratio);
  ss.max_samples = static_cast<int>(v.num("max_samples", ss.max_samples));
  ss.round_ratio = v.num("round_ratio", ss.round_ratio);
  ss.adjust = v.num("adjust", ss.adjust);
  ss.floor = v.num("floor", ss.floor);
  const auto predictor =
      make_predictor(v.get("predictor", "roofline"), p.stencil, p.grid, replay.limits());

  Outcome out;
  if (strategy == "random" || strategy == "sampled-random") {
    std::vector<Setting> order;
    if (strategy == "random") {
      order = p.candidates;
    } else {
      ListSource source(p.candidates);
      order = sample(source, *predictor, ss, seed).set.settings;
    }
    Rng rng(seed, 0x52414e44);
    for (std::size_t i = order.size(); i > 1; --i)
      std::swap(order[i - 1], order[rng.below(i)]);
    const long long n = budget > 0
                            ? std::min<long long>(budget, static_cast<long long>(order.size()))
                            : static_cast<long long>(order.size());
    for (long long i = 0; i < n; ++i)
      (void)eval.evaluate(std::span<const Setting>(&order[static_cast<std::size_t>(i)], 1));
  } else {
    ListSource source(p.candidates);
    const SampledSet sampled = sample(source, *predictor, ss, seed).set;
    const Encoding enc =
        v.get("encoding", ga_defaults.encoding == Encoding::index ? "index" : "parameters") ==
                "index"
            ? Encoding::index
            : Encoding::parameters;
    const Reindex alphabet(sampled.settings, enc);
    const Torus torus(ga_defaults.rows, ga_defaults.cols);
    GaOperators ops;
    ops.crossover_rate = v.num("crossover", ga_defaults.crossover_rate);
    ops.mutation_rate = v.num("mutation", ga_defaults.mutation_rate);
    ops.unique_cells = v.num("unique", ops.unique_cells ? 1 : 0) != 0;
    ops.candidates = static_cast<int>(v.num("candidates", ops.candidates));
    ops.model_picks = static_cast<int>(v.num("picks", ops.model_picks));
    const double mcr = v.num("mcr", ga_defaults.mcr_threshold);
    const bool share = v.num("share", 1) != 0;
    const bool all = v.get("stop", "all") == "all";  // the product's rule (StopTally)
    const bool on_population = v.get("mcr_on", "offspring") == "population";
    const int islands = static_cast<int>(v.num("islands", 2));
    MemoryRing ring(islands);
    std::vector<Island> isl;
    for (int r = 0; r < islands; ++r)
      isl.emplace_back(alphabet, torus, ops, seed, static_cast<std::uint64_t>(r));
    for (int g = 0;; ++g) {
      for (Island& island : isl) {
        if (g == 0)
          island.initialize(eval, sink);
        else
          island.step(eval, sink);
      }
      if (islands > 1) {
        for (int r = 0; r < islands; ++r) {
          std::vector<Migrant> sent = isl[r].emigrants(ga_defaults.migration_count, r);
          if (!share)
            std::erase_if(sent, [](const Migrant& m) { return m.measurement_only; });
          ring.migrator(r).send(sent);
        }
        for (int r = 0; r < islands; ++r)
          isl[r].immigrate(ring.migrator(r).receive(), sink, 0);
      }
      int converged = 0;
      for (const Island& island : isl)
        converged += mcr > 0 && (on_population ? island.population_mcr() : island.mcr()) >= mcr;
      const bool stop_mcr = all ? converged == islands : converged > 0;
      if (stop_mcr || (max_generations > 0 && g >= max_generations) ||
          (budget > 0 && eval.count >= budget))
        break;
    }
  }
  out.best_ms = eval.best;
  out.measured = eval.count;
  out.to_5pct = eval.to_5pct;
  return out;
}

double median(std::vector<double> v) {
  if (v.empty())
    return std::nan("");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Spearman correlation of the roofline prediction with the recorded times.
void print_rank(const Problem& p, const std::filesystem::path& dataset) {
  ReplayEvaluator replay = ReplayEvaluator::from_file(dataset);
  const RooflinePredictor roofline(p.stencil, p.grid, replay.limits());
  const std::vector<Measurement> m = replay.evaluate(p.candidates);
  std::vector<double> predicted, times;
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (m[i].ok()) {
      predicted.push_back(roofline.predict_ms(p.candidates[i]));
      times.push_back(m[i].median_ms);
    }
  }
  std::printf("roofline rank correlation on %s: %.3f (%zu settings)\n", dataset.filename().c_str(),
              rank_correlation(predicted, times), times.size());
}

int main_sweep(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DATASET.h5 [--seeds N] [--rank] [VARIANT ...]\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dataset = argv[1];
  int seeds = 20;
  bool rank = false;
  std::vector<Variant> variants;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seeds" && i + 1 < argc)
      seeds = std::atoi(argv[++i]);
    else if (a == "--rank")
      rank = true;
    else
      variants.push_back(parse_variant(a));
  }
  const Config config =
      parse_config(TraceReader(dataset).config_yaml(), dataset.string(), dataset.parent_path());
  ReplayEvaluator replay = ReplayEvaluator::from_file(dataset);
  Problem p{resolve_stencil(config), config.grid, {}, std::numeric_limits<double>::infinity()};
  const Space space(p.stencil, p.grid, replay.limits(), space_values(config));
  for (const Setting& s : replay.candidates()) {
    if (space.valid(s))
      p.candidates.push_back(s);
  }
  for (const Measurement& m : replay.evaluate(p.candidates)) {
    if (m.ok())
      p.optimum = std::min(p.optimum, m.median_ms);
  }
  if (rank)
    print_rank(p, dataset);
  if (variants.empty())
    return 0;
  std::printf("dataset %s: %zu settings, optimum %.5f ms, %d seeds\n", dataset.filename().c_str(),
              p.candidates.size(), p.optimum, seeds);
  std::printf("%-28s %7s %7s %7s %9s %10s %10s\n", "variant", "optimum", "<=2%", "<=5%", "gap %",
              "measured", "to 5%");
  for (const Variant& v : variants) {
    int hit = 0, in2 = 0, in5 = 0;
    std::vector<double> gaps, measured, to5;
    for (int seed = 1; seed <= seeds; ++seed) {
      const Outcome o = run_once(p, dataset, v, static_cast<std::uint64_t>(seed));
      const double gap = o.best_ms / p.optimum - 1;
      hit += gap <= 1e-12 ? 1 : 0;
      in2 += gap <= 0.02 ? 1 : 0;
      in5 += gap <= 0.05 ? 1 : 0;
      gaps.push_back(100 * gap);
      measured.push_back(static_cast<double>(o.measured));
      to5.push_back(o.to_5pct < 0 ? std::numeric_limits<double>::infinity()
                                  : static_cast<double>(o.to_5pct));
    }
    std::printf("%-28s %4d/%-2d %4d/%-2d %4d/%-2d %9.2f %10.0f %10.0f\n", v.name.c_str(), hit,
                seeds, in2, seeds, in5, seeds, median(gaps), median(measured), median(to5));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace isletune

int main(int argc, char** argv) {
  try {
    return isletune::main_sweep(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "isletune-sweep: %s\n", e.what());
    return 1;
  }
}
