// A family's own parameters through the GA, the HDF5 trace and replay (issue 46), in the build
// with the template's tpl_px and its selector tpl_on appended (tests/axis/CMakeLists.txt: the
// core and the trace layer both built with ISLETUNE_TEST_TEMPLATE_AXIS):
//   - the GA's operators treat the appended parameters as any parameter (a gene each), and a
//     run over a sample holding the template's OC breeds children that take tpl_on and tpl_px
//     away from neutral which no setting of generation 0 had;
//   - a run resumed from its checkpoint's bytes continues as the uninterrupted run;
//   - the run's trace (the name-keyed `parameters` columns, docs/trace.md) reads back every
//     setting as evaluated, and replaying the trace gives the run's trajectory again;
//   - a dataset recorded without the parameters reads with them neutral.
// axis_replay.sh compares the two builds' replay of recorded datasets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include "ga/search.hpp"
#include "ga/variation.hpp"
#include "run/checkpoint.hpp"
#include "sample/predictor.hpp"
#include "sample/sampler.hpp"
#include "space/space.hpp"
#include "stencil/typical.hpp"
#include "test_ga_fakes.hpp"
#include "trace/reader.hpp"
#include "trace/replay_dataset.hpp"
#include "trace/run_writer.hpp"

namespace isletune {
namespace {

namespace fs = std::filesystem;
using testing::MemorySink;

static_assert(kParamCount == index_of(Param::tpl_px) + 2, "this build appends tpl_px and tpl_on");

const Grid kGrid{256, 256, 1};

const Stencil& stencil() {
  static const Stencil st = typical_stencil("star2d1r");
  return st;
}

// The registry's space with the template switched on (tpl_on 0 and 1), narrowed to the
// kernels of one step without streaming or merging: the tiled family's OC 0 and the
// template's OC 48, whose settings differ in the selector (and tpl_px), so a child that flips
// tpl_on finds its twin in the other family among the sampled settings.
const Space& space() {
  static const Space sp = [] {
    Space::Values values = Space::default_values(2, kGrid);
    values[index_of(Param::tpl_on)] = {0, 1};
    for (const Param p : {Param::streaming, Param::merge, Param::retiming, Param::prefetch})
      values[index_of(p)] = {0};
    values[index_of(Param::tdeg)] = {1};
    return Space(stencil(), kGrid, DeviceLimits{}, values);
  }();
  return sp;
}

// Up to 1,500 settings sampled from it (both OCs).
const SampledSet& sampled() {
  static const SampledSet set = [] {
    SpaceSource source(space());
    UniformPredictor predictor;
    SamplerSettings settings;
    settings.max_samples = 1500;
    return sample(source, predictor, settings, 3).set;
  }();
  return set;
}

// A time per setting: a pseudo-random base, the template's settings faster the more points a
// thread computes (so the GA has a reason to breed them), every setting measured and valid.
Measurement measurement_of(const Setting& s) {
  const double base = testing::random_landscape(5, 0.0)(s);
  const double ms = s[Param::tpl_on] == 1 ? base * 0.6 / s[Param::tpl_px] : base;
  Measurement m;
  m.status = Status::ok;
  m.median_ms = ms;
  m.times_ms = {ms, ms * 1.01};
  m.compile_ms = 150;
  m.verify_ms = 2;
  m.run_ms = 10 * ms;
  return m;
}

// The replay evaluator over every sampled setting's measurement (a recording of the whole
// sample): the runs below measure through it, as a replayed run does.
ReplayEvaluator whole_sample() {
  std::vector<RecordedMeasurement> pairs;
  for (const Setting& s : sampled().settings)
    pairs.push_back({s, measurement_of(s)});
  return ReplayEvaluator(space().shape(), pairs, DeviceLimits{}, "the axis test's sample");
}

GaSettings ga() {
  GaSettings g;
  g.encoding = Encoding::parameters;
  g.mutation_rate = 0.1;
  g.max_generations = 25;
  g.mcr_threshold = 0.95;
  return g;
}

// Writes to a TraceSink and keeps every record too.
class TeeSink final : public TraceSink {
 public:
  explicit TeeSink(TraceSink& other) : other_(other) {}
  void evaluation(const EvaluationRecord& r) override {
    rows.evaluation(r);
    other_.evaluation(r);
  }
  void generation(const GenerationRecord& r) override {
    rows.generation(r);
    other_.generation(r);
  }
  void migration(const MigrationRecord& r) override {
    rows.migration(r);
    other_.migration(r);
  }
  void flush() override { other_.flush(); }
  MemorySink rows;

 private:
  TraceSink& other_;
};

// What makes up a trajectory: the evaluation rows' generation, cell, setting, time, flags.
struct Row {
  int generation;
  int cell;
  std::string key;
  double median_ms;
  double wall_s;
  bool cached;
  bool migrant;
  auto operator<=>(const Row&) const = default;
};

std::vector<Row> rows_of(const std::vector<EvaluationRecord>& records, int from = 0) {
  std::vector<Row> out;
  for (const EvaluationRecord& r : records) {
    if (r.generation >= from) {
      out.push_back({r.generation, r.cell, canonical_key(r.setting), r.measurement.median_ms,
                     r.wall_s, r.cached, r.migrant});
    }
  }
  return out;
}

// A directory of this process's own (ctest may run the tests of this file side by side),
// removed with its files when the object goes.
struct TempDir {
  fs::path path = fs::temp_directory_path() /
                  ("isletune-axis-trace-" + std::to_string(static_cast<long long>(::getpid())));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

// One island over the sample, measured by `eval`, its rows written to `sink`.
SearchResult run(Evaluator& eval, TraceSink& sink, const SearchHooks& hooks = {},
                 const std::optional<SearchState>& resume = std::nullopt) {
  NoMigrator alone;
  LocalStopVote vote;
  return run_island(ga(), sampled(), eval, alone, vote, sink, 17, 0, hooks, resume);
}

// The run of the tests below, its rows written to a dataset file (as `isletune measure` writes
// one) and kept in memory, with its snapshots.
struct Recorded {
  TempDir dir;
  fs::path file = dir.path / "run.h5";
  MemorySink rows;
  std::vector<SearchState> snapshots;
  SearchResult result;

  Recorded() {
    RunTraceWriter ds = RunTraceWriter::create_dataset(file, {"axis test", 17, "", "0.1.0"});
    ds.write_config("grid: [256, 256]\n");
    ds.write_stencil(stencil());
    ds.write_space(space().all_values());
    RankTraceWriter rank = ds.inline_rank(0);
    TeeSink tee(rank);
    SearchHooks hooks;
    hooks.on_snapshot = [&](const SearchState& s) { snapshots.push_back(s); };
    ReplayEvaluator eval = whole_sample();
    result = run(eval, tee, hooks);
    rank.flush();
    ds.flush();
    rows = tee.rows;
  }
};

const Recorded& recorded() {
  static const Recorded r;
  return r;
}

TEST(TraceAxis, TheSampleHoldsTheTemplatesOcAndItsParametersAreGenesLikeAnyOther) {
  const SampledSet& set = sampled();
  std::set<int> px;
  for (std::size_t i = 0; i < set.size(); ++i) {
    if (set.oc[i] == 48)
      px.insert(set.settings[i][Param::tpl_px]);
  }
  ASSERT_EQ(px, (std::set<int>{1, 2, 4}));
  const Reindex alphabet(set.settings, Encoding::parameters);
  EXPECT_EQ(alphabet.alleles()[index_of(Param::tpl_on)], 2);
  EXPECT_EQ(alphabet.alleles()[index_of(Param::tpl_px)], 3);
  // Mutation at rate 1 moves every gene with a choice, the selector and the axis among them;
  // the decoded child is a sampled setting (repaired to the nearest one).
  Rng rng(2, 0);
  int selector_moved = 0, axis_moved = 0;
  for (std::size_t i = 0; i < set.size(); i += 7) {
    Genome g = alphabet.encode(set.settings[i]);
    const Genome before = g;
    (void)mutate(g, alphabet.alleles(), 1.0, rng);
    selector_moved += g[index_of(Param::tpl_on)] != before[index_of(Param::tpl_on)] ? 1 : 0;
    axis_moved += g[index_of(Param::tpl_px)] != before[index_of(Param::tpl_px)] ? 1 : 0;
    const Setting& child = alphabet.setting(alphabet.decode(g, rng));
    EXPECT_TRUE(space().valid(child)) << canonical_key(child);
  }
  EXPECT_GT(selector_moved, 0);
  EXPECT_GT(axis_moved, 0);
}

TEST(TraceAxis, TheGaBreedsSettingsWithTheAppendedParametersAwayFromNeutral) {
  const Recorded& r = recorded();
  std::set<Setting> first;
  for (const EvaluationRecord& e : r.rows.evaluations) {
    if (e.generation == 0)
      first.insert(e.setting);
  }
  int bred = 0;
  std::set<int> px;
  for (const EvaluationRecord& e : r.rows.evaluations) {
    if (e.generation == 0 || e.cached || e.migrant || first.count(e.setting))
      continue;
    EXPECT_EQ(find_family(e.setting) == find_family("template"), e.setting[Param::tpl_on] == 1);
    if (e.setting[Param::tpl_on] == 1 && e.setting[Param::tpl_px] != 1) {
      ++bred;
      px.insert(e.setting[Param::tpl_px]);
    }
  }
  std::printf("%d generations, %lld evaluations, %d template children bred with tpl_px 2 or 4\n",
              r.result.generations, static_cast<long long>(r.result.evaluations), bred);
  EXPECT_GT(r.result.generations, 3);
  EXPECT_GT(bred, 5) << "children of the template with tpl_px away from 1";
  EXPECT_EQ(px, (std::set<int>{2, 4}));
  // The landscape favours the template's widest points: the run ends on one.
  ASSERT_TRUE(r.result.best.has_value());
  EXPECT_EQ((*r.result.best)[Param::tpl_on], 1) << canonical_key(*r.result.best);
  EXPECT_EQ((*r.result.best)[Param::tpl_px], 4) << canonical_key(*r.result.best);
}

TEST(TraceAxis, AResumeFromTheCheckpointsBytesContinuesAsTheUninterruptedRun) {
  const Recorded& r = recorded();
  ASSERT_GE(r.snapshots.size(), 4u);
  for (const std::size_t k : {std::size_t{1}, r.snapshots.size() / 2}) {
    run::RankState state;
    state.search = r.snapshots[k];
    const run::RankCheckpoint back =
        run::decode_checkpoint(run::encode_checkpoint(run::RankCheckpoint{state, {}}));
    MemorySink rest;
    ReplayEvaluator eval = whole_sample();
    eval.resume_clock_s(back.current.search.elapsed_s);  // as the run's resume does
    const SearchResult resumed = run(eval, rest, {}, back.current.search);
    const int next = r.snapshots[k].generation + 1;
    const auto want = rows_of(r.rows.evaluations, next);
    bool away = false;
    for (const EvaluationRecord& e : rest.evaluations)
      away = away || e.setting[Param::tpl_px] != 1;
    EXPECT_TRUE(away) << "the resumed generations hold the template's points per thread";
    EXPECT_EQ(rows_of(rest.evaluations), want) << "resumed after generation " << next - 1;
    EXPECT_EQ(resumed.best, r.result.best);
    EXPECT_EQ(resumed.generations, r.result.generations);
    EXPECT_EQ(resumed.reason, r.result.reason);
  }
}

TEST(TraceAxis, TheTraceReadsBackEverySettingAndReplaysTheRunsTrajectory) {
  const Recorded& r = recorded();
  const TraceReader reader(r.file);
  const std::vector<EvaluationRecord> back = reader.evaluations(0);
  ASSERT_EQ(back.size(), r.rows.evaluations.size());
  int away = 0;
  for (std::size_t i = 0; i < back.size(); ++i) {
    EXPECT_EQ(back[i].setting, r.rows.evaluations[i].setting) << i;
    away += back[i].setting[Param::tpl_px] != 1 ? 1 : 0;
  }
  EXPECT_GT(away, 10);
  EXPECT_EQ(rows_of(back), rows_of(r.rows.evaluations));
  // The recorded space names the appended parameters, with their neutral values.
  std::vector<std::string> names;
  for (const auto& p : reader.space_parameters())
    names.push_back(p.name);
  ASSERT_EQ(names.size(), kParamCount);
  EXPECT_EQ(names[index_of(Param::tpl_px)], "tpl_px");
  EXPECT_EQ(names[index_of(Param::tpl_on)], "tpl_on");
  EXPECT_EQ(reader.space_neutral_values()[index_of(Param::tpl_px)], 1);
  EXPECT_EQ(reader.space_neutral_values()[index_of(Param::tpl_on)], 0);

  // Replaying the trace: only the run's measurements, keyed by their settings, answer the
  // same run again (a setting read back another way would not be found).
  ReplayEvaluator replay = load_replay(r.file);
  MemorySink again;
  const SearchResult result = run(replay, again);
  EXPECT_EQ(rows_of(again.evaluations), rows_of(r.rows.evaluations));
  EXPECT_EQ(result.best, r.result.best);
}

TEST(TraceAxis, ADatasetRecordedWithoutTheParametersReadsThemNeutral) {
  const fs::path file = fs::path(ISLETUNE_TEST_DATA) / "h200-star2d1r.h5";
  const TraceReader reader(file);
  const std::vector<EvaluationRecord> rows = reader.evaluations(0);
  ASSERT_GT(rows.size(), 1000u);
  for (const EvaluationRecord& e : rows) {
    EXPECT_EQ(e.setting[Param::tpl_px], 1);
    EXPECT_EQ(e.setting[Param::tpl_on], 0);
    EXPECT_EQ(canonical_key(e.setting).find("tpl_"), std::string::npos);
  }
  const ReplayEvaluator replay = load_replay(file);
  EXPECT_GT(replay.candidates().size(), 1000u);
  for (const Setting& s : replay.candidates())
    EXPECT_NE(oc_of(s), 48);
}

}  // namespace
}  // namespace isletune
