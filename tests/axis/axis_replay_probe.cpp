// Built twice (tests/axis/CMakeLists.txt): axis_replay_probe without the template's own
// parameters (the production core and trace layer) and axis_replay_probe_appended with them
// (ISLETUNE_TEST_TEMPLATE_AXIS).
//   axis_replay_probe replay DATASET SEED   replays DATASET as a replayed run does (its recorded
//                                           settings in the default space, sampled with the
//                                           roofline predictor, one island of the default GA)
//                                           and prints every evaluation row and the best
//   axis_replay_probe write FILE            (appended build only) writes a dataset of template
//                                           settings with tpl_px and tpl_on away from neutral
//   axis_replay_probe read FILE             prints the key of every evaluation row of FILE; a
//                                           file it cannot read: the sentence on stderr, exit 1
// axis_replay.sh compares the two builds.
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "ga/search.hpp"
#include "sample/predictor.hpp"
#include "sample/sampler.hpp"
#include "space/space.hpp"
#include "stencil/typical.hpp"
#include "trace/reader.hpp"
#include "trace/replay_dataset.hpp"
#include "trace/run_writer.hpp"

namespace isletune {
namespace {

// Prints every row as it comes.
class PrintSink final : public TraceSink {
 public:
  void evaluation(const EvaluationRecord& r) override {
    std::printf("e %d %d %s %.17g %.17g %d %d\n", r.generation, r.cell,
                canonical_key(r.setting).c_str(), r.measurement.median_ms, r.wall_s,
                r.cached ? 1 : 0, r.migrant ? 1 : 0);
  }
  void generation(const GenerationRecord& r) override {
    std::printf("g %d %.17g %.17g %d\n", r.generation, r.best_ms, r.wall_s, r.evaluations);
  }
  void migration(const MigrationRecord&) override {}
  void flush() override {}
};

int replay(const std::string& dataset, std::uint64_t seed) {
  const TraceReader reader(dataset);
  const StencilInfo info = reader.stencil();
  const Stencil stencil = Stencil::make(info.name, info.dims, info.offsets, info.coefficients);
  const Grid grid = recorded_problem(reader.config_yaml()).grid.value();
  ReplayEvaluator eval = load_replay(dataset);
  const Space space(stencil, grid, eval.limits(), Space::default_values(stencil.dims(), grid));
  std::vector<Setting> inside;
  for (const Setting& s : eval.candidates()) {
    if (space.valid(s))
      inside.push_back(s);
  }
  const auto predictor = make_predictor("roofline", stencil, grid, space.limits());
  ListSource source(space.shape(), inside);
  SamplerSettings sampler;
  SampledSet set = sample(source, *predictor, sampler, seed).set;
  std::printf("sampled %zu of %zu\n", set.size(), inside.size());
  GaSettings ga;
  ga.max_generations = 40;
  NoMigrator alone;
  LocalStopVote vote;
  PrintSink sink;
  const SearchResult r = run_island(ga, set, eval, alone, vote, sink, seed, 0);
  const std::string best = r.best ? canonical_key(*r.best) : "none";
  std::printf("best %s generations %d evaluations %lld\n", best.c_str(), r.generations,
              static_cast<long long>(r.evaluations));
  return 0;
}

#ifdef ISLETUNE_TEST_TEMPLATE_AXIS
int write(const std::string& file) {
  const Stencil stencil = typical_stencil("star2d1r");
  const Grid grid{256, 256, 1};
  Space::Values values = Space::default_values(2, grid);
  values[index_of(Param::tpl_on)] = {0, 1};
  const Space space(stencil, grid, DeviceLimits{}, values);
  RunTraceWriter ds = RunTraceWriter::create_dataset(file, {"axis probe", 1, "", "0.1.0"});
  ds.write_config("grid: [256, 256]\n");
  ds.write_stencil(stencil);
  ds.write_space(space.all_values());
  RankTraceWriter rank = ds.inline_rank(0);
  Rng rng(1, 0);
  for (int i = 0; i < 12; ++i) {
    EvaluationRecord r;
    r.eval_id = i;
    r.setting = *space.random_kernel_in_oc(i % 2 == 0 ? 48 : 0, rng);
    r.measurement.status = Status::ok;
    r.measurement.median_ms = 1.0 + i;
    r.measurement.times_ms = {1.0 + i};
    rank.evaluation(r);
  }
  rank.flush();
  ds.flush();
  return 0;
}
#endif

int read(const std::string& file) {
  try {
    const TraceReader reader(file);
    for (const EvaluationRecord& r : reader.evaluations(0))
      std::printf("%s\n", canonical_key(r.setting).c_str());
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace isletune

int main(int argc, char** argv) {
  const std::string mode = argc >= 3 ? argv[1] : "";
  if (mode == "replay" && argc == 4)
    return isletune::replay(argv[2], std::stoull(argv[3]));
#ifdef ISLETUNE_TEST_TEMPLATE_AXIS
  if (mode == "write")
    return isletune::write(argv[2]);
#endif
  if (mode == "read")
    return isletune::read(argv[2]);
  std::cerr << "usage: axis_replay_probe replay DATASET SEED | write FILE | read FILE\n";
  return 2;
}
