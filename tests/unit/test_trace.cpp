// The HDF5 trace (docs/trace.md): every field written reads back exactly, tables grow
// across flushes, the reader follows external links, damaged or foreign files give one
// clear sentence, checkpoints survive, and a SIGKILLed writer keeps its flushed generations.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "common/error.hpp"
#include "kernel/registry.hpp"
#include "setting/oc.hpp"
#include "trace/reader.hpp"
#include "trace/run_writer.hpp"

namespace isletune {
namespace {

namespace fs = std::filesystem;

// A fresh empty directory per test under the system temp dir.
fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() /
                       ("isletune-test-trace-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// An evaluation record with every field set to something distinctive.
EvaluationRecord sample_evaluation(std::int64_t id, int generation, bool ok) {
  EvaluationRecord r;
  r.eval_id = id;
  r.generation = generation;
  r.cell = static_cast<int>(id % 16);
  r.genes = {1, 0, static_cast<int>(id), 1, 1};
  for (std::size_t i = 0; i < kParamCount; ++i)
    r.setting.values[i] = static_cast<int>(i + id);
  r.setting[Param::merge] = static_cast<int>(MergeKind::cyclic);
  Measurement& m = r.measurement;
  m.status = ok ? Status::ok : Status::wrong_result;
  m.median_ms = ok ? 0.125 + static_cast<double>(id) : std::numeric_limits<double>::quiet_NaN();
  m.times_ms = ok ? std::vector<double>{0.13, 0.125, 0.1251 + static_cast<double>(id)}
                  : std::vector<double>{};
  m.compile_ms = 812.5;
  m.verify_ms = 3.25;
  m.run_ms = 14.75;
  m.registers = 72;
  m.shared_bytes = 18432;
  m.occupancy = 0.625;
  m.error_l2 = ok ? 3e-16 : 2e-5;
  m.error_max = ok ? 1e-15 : 4e-5;
  m.message = ok ? "" : "max relative error 4e-05 > 1e-10";
  r.wall_s = 1.5 * static_cast<double>(id);
  r.cached = id % 3 == 0;
  r.migrant = id % 5 == 0;
  return r;
}

GenerationRecord sample_generation(int g) {
  return {g,  10.0 + g, 0.01 * g, 0.5 - 0.01 * g, 2.0 + g, 0.0625 * g, 16 - g,
          16, 3 * g,    0,        g == 2 ? 1 : 0};
}

// NaN-aware equality for doubles.
void expect_same(double a, double b) {
  if (std::isnan(a)) {
    EXPECT_TRUE(std::isnan(b));
  } else {
    EXPECT_EQ(a, b);
  }
}

void expect_same(const EvaluationRecord& a, const EvaluationRecord& b) {
  EXPECT_EQ(a.eval_id, b.eval_id);
  EXPECT_EQ(a.generation, b.generation);
  EXPECT_EQ(a.cell, b.cell);
  EXPECT_EQ(a.genes, b.genes);
  EXPECT_EQ(a.setting, b.setting);
  EXPECT_EQ(a.measurement.status, b.measurement.status);
  expect_same(a.measurement.median_ms, b.measurement.median_ms);
  EXPECT_EQ(a.measurement.times_ms, b.measurement.times_ms);
  EXPECT_EQ(a.measurement.compile_ms, b.measurement.compile_ms);
  EXPECT_EQ(a.measurement.verify_ms, b.measurement.verify_ms);
  EXPECT_EQ(a.measurement.run_ms, b.measurement.run_ms);
  EXPECT_EQ(a.measurement.registers, b.measurement.registers);
  EXPECT_EQ(a.measurement.shared_bytes, b.measurement.shared_bytes);
  EXPECT_EQ(a.measurement.occupancy, b.measurement.occupancy);
  expect_same(a.measurement.error_l2, b.measurement.error_l2);
  expect_same(a.measurement.error_max, b.measurement.error_max);
  EXPECT_EQ(a.measurement.message, b.measurement.message);
  EXPECT_EQ(a.wall_s, b.wall_s);
  EXPECT_EQ(a.cached, b.cached);
  EXPECT_EQ(a.migrant, b.migrant);
}

Stencil small_stencil() {
  return Stencil::make("star2d1r", 2, {{0, 0, 0}, {1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}},
                       {0.6, 0.1, 0.1, 0.1, 0.1});
}

// Writes a two-rank trace with every run-level part; returns the records written.
struct WrittenTrace {
  std::vector<EvaluationRecord> evaluations[2];
  std::vector<GenerationRecord> generations[2];
  std::vector<MigrationRecord> migrations[2];
  ResultInfo result;
  SampleData sample;
  Space::Values space;
};

WrittenTrace write_two_rank_trace(const fs::path& dir) {
  WrittenTrace w;
  RunTraceWriter run = RunTraceWriter::create_trace(dir, {"isletune run x.yaml", 42, "", "0.1.0"});
  run.write_config("stencil: star2d1r\ngrid: [64, 64]\n");
  run.write_stencil(small_stencil(), {{"order", 1}, {"nnz", 5}});
  for (std::size_t i = 0; i < kParamCount; ++i)
    w.space[i] = {1, 2, static_cast<int>(4 + i)};
  run.write_space(w.space);
  for (int i = 0; i < 3; ++i) {
    Setting s;
    s.values.fill(i);
    w.sample.settings.push_back(s);
    w.sample.oc.push_back(7 * i);
    w.sample.predicted.push_back(0.5 * i);
  }
  run.write_sample(w.sample);
  for (int r = 0; r < 2; ++r) {
    run.write_environment({r,
                           "node" + std::to_string(r),
                           "NVIDIA H100",
                           "GPU-1234-" + std::to_string(r),
                           132,
                           1980,
                           2619,
                           "550.54",
                           "12.4",
                           "Open MPI v4.1.4",
                           16 * r,
                           {}});
  }
  EnvironmentInfo with_limits;
  with_limits.rank = 2;
  with_limits.compile_cpus = "8-15";
  with_limits.node = "n2";
  with_limits.node_rank = 1;
  with_limits.node_ranks = 4;
  with_limits.gpu_device = "3";
  with_limits.limits = DeviceLimits{};
  with_limits.limits->name = "NVIDIA H200";
  with_limits.limits->shared_per_block_optin = 232447;
  with_limits.limits->memory_bandwidth_gbs = 4321.5;
  with_limits.limits->max_block_dim = {512, 256, 32};
  with_limits.limits->max_grid_dim = {1LL << 31, 1000, 7};
  run.write_environment(with_limits);
  run.link_ranks(2);
  for (int r = 0; r < 2; ++r) {
    RankTraceWriter rank = RankTraceWriter::create(dir, r);
    std::int64_t id = 0;
    for (int g = 0; g < 3; ++g) {
      for (int k = 0; k < 4; ++k) {
        w.evaluations[r].push_back(sample_evaluation(id++, g, k != 2));
        rank.evaluation(w.evaluations[r].back());
      }
      w.generations[r].push_back(sample_generation(g));
      rank.generation(w.generations[r].back());
      w.migrations[r].push_back({g, g % 2 == 0 ? 1 : -1, 1 - r, "key" + std::to_string(g), 0.25});
      rank.migration(w.migrations[r].back());
      rank.flush();
    }
  }
  w.result.best_key = canonical_key(w.evaluations[1][1].setting);
  w.result.best = w.evaluations[1][1].setting;
  w.result.best_rank = 1;
  w.result.median_ms = 1.125;
  w.result.gcells_per_s = 3.5;
  w.result.stop_reason = "mcr";
  w.result.generations = 3;
  w.result.evaluations = 24;
  w.result.wall_s = 99.5;
  w.result.source = "__global__ void k(double* out) {}\n";
  run.write_result(w.result);
  return w;
}

TEST(Trace, EveryFieldReadsBackExactlyThroughExternalLinks) {
  const fs::path dir = fresh_dir("roundtrip");
  const WrittenTrace w = write_two_rank_trace(dir);
  EXPECT_TRUE(fs::exists(dir / "rank-0000.h5"));
  EXPECT_TRUE(fs::exists(dir / "rank-0001.h5"));

  const TraceReader reader(dir);  // a directory opens its trace.h5
  EXPECT_EQ(reader.format(), kTraceFormat);
  EXPECT_EQ(reader.version(), 1);
  const RunInfo info = reader.run_info();
  EXPECT_EQ(info.command, "isletune run x.yaml");
  EXPECT_EQ(info.seed, 42u);
  EXPECT_EQ(info.created.size(), 27u);  // 2026-11-21T16:04:05.123456Z
  EXPECT_EQ(reader.config_yaml(), "stencil: star2d1r\ngrid: [64, 64]\n");

  const StencilInfo s = reader.stencil();
  EXPECT_EQ(s.name, "star2d1r");
  EXPECT_EQ(s.dims, 2);
  EXPECT_EQ(s.order, 1);
  EXPECT_EQ(s.shape, "star");
  EXPECT_EQ(s.offsets, small_stencil().offsets());
  EXPECT_EQ(s.coefficients, small_stencil().coefficients());
  ASSERT_EQ(s.features.size(), 2u);
  EXPECT_EQ(s.features[1].name, "nnz");
  EXPECT_EQ(s.features[1].value, 5.0);

  EXPECT_EQ(reader.space_values(), w.space);
  EXPECT_EQ(reader.space_parameters()[1].kind, "enum");
  // The neutral values and the OC table come from setting.hpp and oc.hpp, read back whole.
  const std::vector<int> neutral = reader.space_neutral_values();
  ASSERT_EQ(neutral.size(), kParamCount);
  for (std::size_t i = 0; i < kParamCount; ++i)
    EXPECT_EQ(neutral[i], neutral_value(param_at(i))) << reader.space_parameters()[i].name;
  // The OC table is the families' (kernel/registry.hpp): every declared OC by id, with its
  // rule, and the legacy flag columns that number the tiled and streaming families' OCs.
  const std::vector<OcInfo> ocs = reader.space_ocs();
  ASSERT_EQ(ocs.size(), oc_table().size());
  ASSERT_EQ(ocs.size(), 30u) << "tiled: 3 merge kinds x tdeg but cyclic x fused (OC 17); "
                                "streaming: 3 x 2 x 2 x 2; tensor cores: 1";
  for (std::size_t i = 0; i < ocs.size(); ++i) {
    const OcInfo& row = ocs[i];
    const Oc& oc = *oc_table()[i].oc;
    const OcFlags f = flags_of(oc);
    EXPECT_EQ(row, (OcInfo{oc.id, oc_name(oc.id), f.streaming, f.merge, f.retiming, f.prefetch,
                           f.temporal, oc.rule()}));
    if (oc.id < 48) {  // the flag OCs are numbered by their flags
      EXPECT_EQ(oc_id(OcFlags{row.streaming, row.merge, row.retiming, row.prefetch, row.temporal}),
                oc.id);
    }
  }
  const OcInfo& last_flag = ocs[ocs.size() - 2];
  EXPECT_EQ(last_flag.oc, 47);
  EXPECT_EQ(last_flag.rule, "streaming=1,merge=2,retiming=1,prefetch=1,tdeg>1");
  EXPECT_EQ(ocs.front().rule, "streaming=0,merge=0,retiming=0,prefetch=0,tdeg=1");
  EXPECT_EQ(last_flag.name, "stream+cyclic+retime+prefetch+tb");
  // The tensor-core family's OC after them: its own id and name, its selector in the rule.
  EXPECT_EQ(ocs.back().oc, 49);
  EXPECT_EQ(ocs.back().name, "mma");
  EXPECT_EQ(ocs.back().rule, "streaming=0,mma=1,tdeg=1");
  ASSERT_TRUE(reader.sample().has_value());
  EXPECT_EQ(*reader.sample(), w.sample);
  const auto env = reader.environment();
  ASSERT_EQ(env.size(), 3u);
  EXPECT_FALSE(env[0].limits.has_value());
  ASSERT_TRUE(env[2].limits.has_value());
  EXPECT_EQ(env[2].limits->name, "NVIDIA H200");
  EXPECT_EQ(env[2].limits->shared_per_block_optin, 232447);
  EXPECT_EQ(env[2].limits->memory_bandwidth_gbs, 4321.5);
  EXPECT_EQ(env[2].limits->max_threads_per_sm, DeviceLimits{}.max_threads_per_sm);
  EXPECT_EQ(env[2].limits->max_block_dim, (std::array<int, 3>{512, 256, 32}));
  EXPECT_EQ(env[2].limits->max_grid_dim, (std::array<long long, 3>{1LL << 31, 1000, 7}));
  EXPECT_EQ(env[1].gpu_uuid, "GPU-1234-1");
  EXPECT_EQ(env[1].mpi_library, "Open MPI v4.1.4");
  EXPECT_EQ(env[0].sm_clock_mhz, 1980);
  EXPECT_EQ(env[0].compile_threads, 0);
  EXPECT_EQ(env[1].compile_threads, 16);
  EXPECT_EQ(env[2].compile_cpus, "8-15");
  EXPECT_EQ(env[2].node, "n2");
  EXPECT_EQ(env[2].node_rank, 1);
  EXPECT_EQ(env[2].node_ranks, 4);
  EXPECT_EQ(env[2].gpu_device, "3");
  EXPECT_EQ(env[0].node_ranks, 0);

  EXPECT_EQ(reader.ranks(), (std::vector<int>{0, 1}));
  for (int r = 0; r < 2; ++r) {
    const auto evals = reader.evaluations(r);
    ASSERT_EQ(evals.size(), w.evaluations[r].size());
    for (std::size_t i = 0; i < evals.size(); ++i)
      expect_same(evals[i], w.evaluations[r][i]);
    const auto gens = reader.generations(r);
    ASSERT_EQ(gens.size(), 3u);
    EXPECT_EQ(gens[2].unique_genomes, 14);
    EXPECT_EQ(gens[2].mcr, 0.125);
    EXPECT_EQ(gens[1].wait_s, 0.01);
    EXPECT_EQ(gens[2].cache_hits, 6);
    EXPECT_EQ(gens[1].restart, 0);
    EXPECT_EQ(gens[2].restart, 1);
    const auto migs = reader.migrations(r);
    ASSERT_EQ(migs.size(), 3u);
    EXPECT_EQ(migs[1].direction, -1);
    EXPECT_EQ(migs[1].peer, 1 - r);
    EXPECT_EQ(migs[2].key, "key2");
  }
  const auto result = reader.result();
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->best_key, w.result.best_key);
  EXPECT_EQ(result->best, w.result.best);
  EXPECT_EQ(result->best_rank, 1);
  EXPECT_EQ(result->stop_reason, "mcr");
  EXPECT_EQ(result->evaluations, 24);
  EXPECT_EQ(result->source, w.result.source);
  fs::remove_all(dir);
}

// A trace written before /space/ocs had a rule column (all 48 flag rows, the phantom tiled
// retiming/prefetch ones among them) reads with each row's rule made from its flags, and
// every OC the families declare today is a row of it with the same name and rule.
TEST(Trace, OcTableWithoutRuleColumnReadsTheRuleOfItsFlags) {
  const TraceReader reader(std::filesystem::path(ISLETUNE_TEST_DATA) / "h100-full-star3d2r-512.h5");
  const std::vector<OcInfo> ocs = reader.space_ocs();
  ASSERT_EQ(ocs.size(), 48u);
  for (const OcInfo& row : ocs) {
    const Oc flags = flag_oc({row.streaming, row.merge, row.retiming, row.prefetch, row.temporal});
    EXPECT_EQ(row.rule, flags.rule()) << row.oc;
    EXPECT_EQ(row.name, flags.name) << row.oc;
  }
  EXPECT_EQ(ocs[17].rule, "streaming=0,merge=2,retiming=0,prefetch=0,tdeg>1");
  for (const OcEntry& e : oc_table()) {
    if (e.oc->id >= 48)  // an OC declared after the flag ids (the tensor cores', 49): no row
      continue;
    const OcInfo& row = ocs[static_cast<std::size_t>(e.oc->id)];
    EXPECT_EQ(row.name, e.oc->name);
    EXPECT_EQ(row.rule, e.oc->rule());
  }
}

TEST(Trace, TablesGrowAcrossFlushesAndUnflushedRowsAreNotVisible) {
  const fs::path dir = fresh_dir("grow");
  RunTraceWriter::create_trace(dir, {}).link_ranks(1);
  RankTraceWriter rank = RankTraceWriter::create(dir, 0);
  for (int g = 0; g < 5; ++g) {
    for (int k = 0; k < 100; ++k)
      rank.evaluation(sample_evaluation(g * 100 + k, g, true));
    rank.generation(sample_generation(g));
    rank.flush();
    EXPECT_EQ(TraceReader(dir).evaluations(0).size(), static_cast<std::size_t>(100 * (g + 1)));
  }
  rank.evaluation(sample_evaluation(500, 5, true));  // buffered, not flushed
  const auto evals = TraceReader(dir).evaluations(0);
  ASSERT_EQ(evals.size(), 500u);
  for (std::size_t i = 0; i < evals.size(); ++i)
    EXPECT_EQ(evals[i].eval_id, static_cast<long>(i));
  EXPECT_EQ(TraceReader(dir).generations(0).size(), 5u);
  fs::remove_all(dir);
}

// Rewrites the root `version` attribute of a file with the raw HDF5 API.
void set_version(const fs::path& file, int version) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t a = H5Aopen(f, "version", H5P_DEFAULT);
  ASSERT_GE(a, 0);
  H5Awrite(a, H5T_NATIVE_INT, &version);
  H5Aclose(a);
  H5Fclose(f);
}

// The InputError message of f(), or "" when it does not throw one.
template <typename F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Trace, AnotherVersionIsRejectedWithOneSentence) {
  const fs::path dir = fresh_dir("version");
  RunTraceWriter::create_trace(dir, {});
  set_version(dir / "trace.h5", 2);
  const std::string msg = input_error([&] { TraceReader reader(dir); });
  EXPECT_NE(msg.find((dir / "trace.h5").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("version 2 is not supported"), std::string::npos) << msg;
  EXPECT_NE(msg.find("reads version 1"), std::string::npos) << msg;
  fs::remove_all(dir);
}

TEST(Trace, MissingOrForeignFilesGiveOneSentence) {
  const fs::path dir = fresh_dir("foreign");
  EXPECT_NE(input_error([&] { TraceReader r(dir / "nope.h5"); }).find("no such trace"),
            std::string::npos);
  std::ofstream(dir / "text.h5") << "not hdf5 at all";
  EXPECT_NE(input_error([&] { TraceReader r(dir / "text.h5"); }).find("not an HDF5 file"),
            std::string::npos);
  RankTraceWriter::create(dir, 0).flush();
  EXPECT_NE(input_error([&] { TraceReader r(dir / "rank-0000.h5"); }).find("per-rank file"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(Trace, MissingAndTruncatedRankFilesAreReportedByName) {
  const fs::path dir = fresh_dir("ranks");
  RunTraceWriter::create_trace(dir, {}).link_ranks(3);
  {
    RankTraceWriter rank0 = RankTraceWriter::create(dir, 0);
    rank0.evaluation(sample_evaluation(0, 0, true));
    rank0.flush();
    RankTraceWriter rank2 = RankTraceWriter::create(dir, 2);
    for (int k = 0; k < 50; ++k)
      rank2.evaluation(sample_evaluation(k, 0, true));
  }
  fs::resize_file(dir / "rank-0002.h5", fs::file_size(dir / "rank-0002.h5") / 2);
  const TraceReader reader(dir);
  EXPECT_EQ(reader.evaluations(0).size(), 1u);
  const std::string missing = input_error([&] { (void)reader.evaluations(1); });
  EXPECT_NE(missing.find("rank-0001.h5"), std::string::npos) << missing;
  EXPECT_NE(missing.find("/ranks/0001"), std::string::npos) << missing;
  const std::string truncated = input_error([&] { (void)reader.generations(2); });
  EXPECT_NE(truncated.find("rank-0002.h5"), std::string::npos) << truncated;
  EXPECT_NE(truncated.find("truncated"), std::string::npos) << truncated;
  fs::remove_all(dir);
}

TEST(Trace, CheckpointBlobSurvivesAndAlternatesSlots) {
  const fs::path dir = fresh_dir("checkpoint");
  RunTraceWriter::create_trace(dir, {}).link_ranks(1);
  std::vector<std::uint8_t> blob(200000);
  for (std::size_t i = 0; i < blob.size(); ++i)
    blob[i] = static_cast<std::uint8_t>(i * 7 + 3);
  {
    RankTraceWriter rank = RankTraceWriter::create(dir, 0);
    EXPECT_FALSE(rank.read_checkpoint().has_value());
    rank.write_checkpoint(1, std::vector<std::uint8_t>{1, 2, 3});
    rank.write_checkpoint(2, blob);
    ASSERT_TRUE(rank.read_checkpoint().has_value());
    EXPECT_EQ(rank.read_checkpoint()->generation, 2);
    rank.write_checkpoint(3, std::vector<std::uint8_t>{9, 8});  // reuses slot 0, shrinks it
    EXPECT_EQ(rank.read_checkpoint()->bytes, (std::vector<std::uint8_t>{9, 8}));
    rank.write_checkpoint(4, blob);
  }
  const auto c = TraceReader(dir).checkpoint(0);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->generation, 4);
  EXPECT_EQ(c->bytes, blob);
  fs::remove_all(dir);
}

TEST(Trace, ReopenForResumeDropsRowsAfterTheCheckpoint) {
  const fs::path dir = fresh_dir("resume");
  RunTraceWriter::create_trace(dir, {}).link_ranks(1);
  {
    RankTraceWriter rank = RankTraceWriter::create(dir, 0);
    for (int g = 0; g < 4; ++g) {
      rank.evaluation(sample_evaluation(g, g, true));
      rank.generation(sample_generation(g));
      rank.flush();
    }
  }
  {
    RankTraceWriter rank = RankTraceWriter::reopen(dir, 0, 1);
    rank.evaluation(sample_evaluation(2, 2, false));
    rank.generation(sample_generation(2));
  }
  const TraceReader reader(dir);
  const auto evals = reader.evaluations(0);
  ASSERT_EQ(evals.size(), 3u);
  EXPECT_EQ(evals[2].measurement.status, Status::wrong_result);
  EXPECT_EQ(reader.generations(0).size(), 3u);
  fs::remove_all(dir);
}

TEST(Trace, DatasetKeepsRankTablesInlineInOneFile) {
  const fs::path dir = fresh_dir("dataset");
  const fs::path file = dir / "measured.h5";
  {
    RunTraceWriter ds = RunTraceWriter::create_dataset(file, {"isletune measure", 7, "", "0.1.0"});
    ds.write_stencil(small_stencil());
    RankTraceWriter rank = ds.inline_rank(0);
    for (int k = 0; k < 10; ++k)
      rank.evaluation(sample_evaluation(k, 0, k % 4 != 0));
    rank.flush();
  }
  EXPECT_FALSE(fs::exists(dir / "rank-0000.h5"));
  const TraceReader reader(file);
  EXPECT_TRUE(reader.is_dataset());
  EXPECT_EQ(reader.ranks(), std::vector<int>{0});
  const auto evals = reader.evaluations(0);
  ASSERT_EQ(evals.size(), 10u);
  expect_same(evals[4], sample_evaluation(4, 0, false));
  expect_same(evals[5], sample_evaluation(5, 0, true));
  fs::remove_all(dir);
}

TEST(Trace, H5dumpShowsTheSchema) {
  if (std::system("h5dump --version > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "h5dump not found";
  const fs::path dir = fresh_dir("h5dump");
  write_two_rank_trace(dir);
  const std::string cmd = "h5dump -H " + (dir / "trace.h5").string() + " 2>&1";
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::array<char, 4096> buf;
  while (fgets(buf.data(), buf.size(), pipe) != nullptr)
    out += buf.data();
  pclose(pipe);
  for (const char* name :
       {"DATASET \"evaluations\"", "DATASET \"generations\"", "DATASET \"migrations\"",
        "EXTERNAL_LINK \"0001\"", "\"median_ms\"", "H5T_VLEN", "GROUP \"result\"",
        "ATTRIBUTE \"yaml\"", "DATASET \"offsets\"", "GROUP \"rank_0001\""}) {
    EXPECT_NE(out.find(name), std::string::npos) << name << " not in:\n" << out;
  }
  fs::remove_all(dir);
}

// End-of-allocation address in a version-0 superblock (HDF5 file format spec, offset 40).
constexpr std::streamoff kEoaOffset = 40;

std::uint64_t read_eoa(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  in.seekg(kEoaOffset);
  std::uint64_t eoa = 0;
  in.read(reinterpret_cast<char*>(&eoa), sizeof eoa);
  return eoa;
}

TEST(Trace, ReaderRecoversWholeGenerationsFromAFlushCutShort) {
  // A kill during a flush can leave table metadata written but the superblock's end of
  // allocation not yet moved past the new data. Rebuild that state by restoring the
  // superblock's EOA from before the last flush: the reader must return a consistent
  // prefix of whole generations, not fail.
  const fs::path dir = fresh_dir("cutflush");
  RunTraceWriter::create_trace(dir, {}).link_ranks(1);
  const fs::path file = dir / "rank-0000.h5";
  std::uint64_t eoa_before_last_flush = 0;
  {
    RankTraceWriter rank = RankTraceWriter::create(dir, 0);
    for (int g = 0; g < 5; ++g) {
      // The last generation is large, so its flush must grow the file.
      for (int k = 0; k < (g < 4 ? 8 : 400); ++k) {
        rank.evaluation(sample_evaluation(g * 8 + k, g, true));
      }
      rank.generation(sample_generation(g));
      rank.migration({g, 1, 0, "k", 0.5});
      if (g == 4)
        eoa_before_last_flush = read_eoa(file);
      rank.flush();
    }
  }
  ASSERT_LT(eoa_before_last_flush, read_eoa(file));
  {
    std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(kEoaOffset);
    io.write(reinterpret_cast<const char*>(&eoa_before_last_flush), sizeof eoa_before_last_flush);
  }
  const TraceReader reader(dir);
  const auto gens = reader.generations(0);
  const auto evals = reader.evaluations(0);
  const auto migs = reader.migrations(0);
  ASSERT_GE(gens.size(), 1u);
  EXPECT_LT(gens.size(), 5u);  // the damaged last flush is not reported
  EXPECT_EQ(evals.size(), 8 * gens.size());
  EXPECT_EQ(migs.size(), gens.size());
  for (std::size_t i = 0; i < evals.size(); ++i) {
    expect_same(evals[i],
                sample_evaluation(static_cast<std::int64_t>(i), evals[i].generation, true));
  }
  fs::remove_all(dir);
}

TEST(Trace, SigkilledWriterKeepsEveryFlushedGeneration) {
  const fs::path dir = fresh_dir("kill");
  RunTraceWriter::create_trace(dir, {}).link_ranks(1);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    RankTraceWriter rank = RankTraceWriter::create(dir, 0);
    for (int g = 0; g < 5; ++g) {
      for (int k = 0; k < 8; ++k)
        rank.evaluation(sample_evaluation(g * 8 + k, g, true));
      rank.generation(sample_generation(g));
      rank.flush();
      rank.write_checkpoint(g, std::vector<std::uint8_t>(1000, static_cast<std::uint8_t>(g)));
    }
    // Half of generation 5 is buffered, not flushed, when the parent kills us.
    for (int k = 0; k < 4; ++k)
      rank.evaluation(sample_evaluation(40 + k, 5, true));
    const char done = 1;
    if (::write(ready[1], &done, 1) != 1)
      ::_exit(2);
    for (;;)
      ::pause();
  }
  ::close(ready[1]);
  char done = 0;
  ASSERT_EQ(::read(ready[0], &done, 1), 1);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(ready[0]);
  ASSERT_TRUE(WIFSIGNALED(status));

  const TraceReader reader(dir);
  const auto gens = reader.generations(0);
  ASSERT_EQ(gens.size(), 5u);
  const auto evals = reader.evaluations(0);
  EXPECT_EQ(evals.size(), 8 * gens.size());  // whole generations only
  for (std::size_t i = 0; i < gens.size(); ++i)
    EXPECT_EQ(gens[i].generation, static_cast<int>(i));
  const auto c = reader.checkpoint(0);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->generation, 4);
  EXPECT_EQ(c->bytes, std::vector<std::uint8_t>(1000, static_cast<std::uint8_t>(c->generation)));
  fs::remove_all(dir);
}

}  // namespace

// A rank file carries its run's trace.h5 `created` stamp, also across a resume's reopen; a
// rank file of another run (copied in) is refused by name instead of read as this run's.
TEST(Trace, RankFileOfAnotherRunIsRefusedByItsCreatedStamp) {
  const fs::path dir = fresh_dir("other-run");
  const fs::path other = fresh_dir("other-run-2");
  RunInfo mine;
  mine.created = "2026-11-23T10:00:00Z";
  RunTraceWriter::create_trace(dir, mine).link_ranks(1);
  {
    RankTraceWriter rank = RankTraceWriter::create(dir, 0, mine.created);
    rank.evaluation(sample_evaluation(0, 0, true));
    rank.flush();
  }
  EXPECT_EQ(TraceReader(dir).evaluations(0).size(), 1u);
  { (void)RankTraceWriter::reopen(dir, 0, 0); }  // resume keeps the stamp
  EXPECT_EQ(TraceReader(dir).evaluations(0).size(), 1u);
  {
    RankTraceWriter rank = RankTraceWriter::create(other, 0, "2026-11-23T11:00:00Z");
    rank.evaluation(sample_evaluation(0, 0, true));
    rank.flush();
  }
  fs::copy_file(other / "rank-0000.h5", dir / "rank-0000.h5", fs::copy_options::overwrite_existing);
  const TraceReader reader(dir);
  const std::string msg = input_error([&] { (void)reader.evaluations(0); });
  EXPECT_NE(msg.find("rank-0000.h5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("belongs to a run created"), std::string::npos) << msg;
  fs::remove_all(dir);
  fs::remove_all(other);
}

}  // namespace isletune
