// Codegen and NVRTC tests that run without a GPU: generated sources for every typical
// stencil, and for a random valid setting of every OC of 2-D/3-D star, box, cross, order-6
// and asymmetric user stencils, compile to sm_90 cubins; the cubin cache key follows the
// source; the worker protocol round-trips; the CUDA evaluator on a machine without a
// driver fails with one clear sentence.
#include <gtest/gtest.h>

#ifdef ISLETUNE_CODEGEN_TESTS

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <variant>

#include "common/error.hpp"
#include "eval/cuda/codegen.hpp"
#include "eval/cuda/cuda_evaluator.hpp"
#include "eval/cuda/nvrtc_compiler.hpp"
#include "eval/cuda/worker_protocol.hpp"
#include "kernel/kernel_plan.hpp"
#include "space/space.hpp"
#include "stencil/typical.hpp"

namespace isletune::cuda {
namespace {

Grid grid_for(int dims) {
  return dims == 2 ? Grid{131, 67, 1} : Grid{67, 35, 19};
}

bool has(const KernelSource& k, const std::string& text) {
  return k.source.find(text) != std::string::npos;
}

// A streaming setting along sd with sb planes per stream block, one thread along sd and
// `across` threads along the other non-x axis (x keeps the naive setting's block).
Setting streaming_setting(int dims, int sd, int sb, int across) {
  Setting s = naive_setting(dims);
  s[Param::streaming] = 1;
  s[Param::sd] = sd;
  s[Param::sb] = sb;
  s[sd == 1 ? Param::tby : Param::tbz] = 1;
  if (dims == 3)
    s[sd == 1 ? Param::tbz : Param::tby] = across;
  return s;
}

// Part-1 setting of OC variant v (merge kind × shared × constant) with a shape per dims.
Setting variant(int dims, int v) {
  Setting s = naive_setting(dims);
  const int merge = v % 3;
  s[Param::merge] = merge;
  s[Param::use_shared] = (v / 3) % 2;
  s[Param::use_constant] = (v / 6) % 2;
  if (merge != 0) {
    s[Param::mfx] = merge == 2 ? 2 : 1;
    s[Param::mfy] = 2;
    s[Param::ufy] = 2;
    if (dims == 3) {
      s[Param::mfz] = 2;
      s[Param::ufz] = 1;
    }
  }
  return s;
}

struct Job {
  std::string name;
  KernelSource kernel;
};

// Compiles every job to an sm_90 cubin on two threads; each must compile.
void expect_all_compile(const std::vector<Job>& jobs) {
  const CubinCompiler compiler(90, "");
  std::vector<CompileResult> results(jobs.size());
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 2; ++t) {
    pool.emplace_back([&] {
      for (std::size_t i = next++; i < jobs.size(); i = next++) {
        results[i] = compiler.compile(jobs[i].kernel.source);
      }
    });
  }
  for (auto& t : pool)
    t.join();
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_TRUE(results[i].ok) << jobs[i].name << "\n" << results[i].log;
    EXPECT_GT(results[i].cubin.size(), 1000u) << jobs[i].name;
  }
}

TEST(Codegen, EveryTypicalStencilAndPart1OcCompilesWithNvrtc) {
  std::vector<Job> jobs;
  int v = 0;
  for (const std::string& name : typical_names()) {
    const Stencil st = typical_stencil(name);
    const Setting s = variant(st.dims(), v++ % 12);
    ASSERT_FALSE(unsupported_reason(st, grid_for(st.dims()), s).has_value()) << name;
    jobs.push_back({name + " " + canonical_key(s), generate_kernel(st, grid_for(st.dims()), s)});
  }
  const Stencil s3 = typical_stencil("box3d2r");
  KernelSource reference;
  reference.source = generate_reference(s3, grid_for(3));
  reference.entry = "";
  jobs.push_back({"reference", reference});
  expect_all_compile(jobs);
}

// Asymmetric offsets on every axis (3-D) and an order-6 2-D star with random coefficients.
Stencil asymmetric3d() {
  return Stencil::make(
      "asym3d", 3, {{0, 0, 0}, {-1, 0, 0}, {2, 0, 0}, {0, -2, 0}, {0, 1, 0}, {0, 0, 3}, {1, 1, -1}},
      {0.3, 0.1, 0.15, 0.1, 0.1, 0.15, 0.1});
}
Stencil order6_2d() {
  std::vector<Offset> off{{0, 0, 0}};
  std::vector<double> coef{0.2};
  for (int r = 1; r <= 6; ++r) {
    for (const Offset o : {Offset{r, 0, 0}, Offset{-r, 0, 0}, Offset{0, r, 0}, Offset{0, -r, 0}}) {
      off.push_back(o);
      coef.push_back(0.8 / 24 * (1.0 + 0.1 * r) / 1.35 * (o.x + o.y > 0 ? 1.1 : 0.9));
    }
  }
  return Stencil::make("star2d6r", 2, off, coef);
}

// Every OC that has valid settings, across stencils (one OC per stencil in turn, so a few
// dozen kernels): the setting drawn from the default space is supported and compiles.
TEST(Codegen, EveryOcOfTheDefaultSpaceCompilesWithNvrtc) {
  const std::vector<Stencil> stencils{typical_stencil("star2d1r"),
                                      typical_stencil("box3d1r"),
                                      typical_stencil("cross2d2r"),
                                      asymmetric3d(),
                                      order6_2d(),
                                      typical_stencil("star3d2r")};
  std::vector<Job> jobs;
  Rng rng(7, 11);
  int covered = 0;
  for (int oc = 0; oc < kOcCount; ++oc) {
    for (std::size_t k = 0; k < stencils.size(); ++k) {
      const Stencil& st = stencils[(static_cast<std::size_t>(oc) + k) % stencils.size()];
      const Grid g = grid_for(st.dims());
      const Space space(st, g, DeviceLimits{}, Space::default_values(st.dims(), g));
      const auto s = space.random_in_oc(oc, rng, 20000);
      if (!s)
        continue;
      const auto why = unsupported_reason(st, g, *s);
      ASSERT_FALSE(why.has_value()) << st.name() << " " << canonical_key(*s) << ": " << *why;
      const KernelSource kernel = generate_kernel(st, g, *s);
      EXPECT_EQ(kernel.launch.steps, (*s)[Param::tdeg]);
      EXPECT_EQ(kernel.tail_entry.empty(), (*s)[Param::tdeg] == 1);
      jobs.push_back({st.name() + " oc " + Space::oc_name(oc) + " " + canonical_key(*s), kernel});
      ++covered;
      break;
    }
  }
  // Every OC the families declare: tiled 5 (no OC 17, tile+cyclic+tb), streaming 24, the
  // tensor-core family's OC 49 (a box among the stencils).
  EXPECT_EQ(covered, 30);
  expect_all_compile(jobs);
}

TEST(Codegen, CoefficientsAreExactLiteralsOrConstantMemory) {
  const Stencil st = typical_stencil("star2d1r");
  Setting s = naive_setting(2);
  const std::string literal = generate_kernel(st, grid_for(2), s).source;
  char hex[64];
  std::snprintf(hex, sizeof hex, "(%a)", st.coefficients()[3]);
  EXPECT_NE(literal.find(hex), std::string::npos) << hex;  // bit-exact literal
  EXPECT_EQ(literal.find("__constant__"), std::string::npos);
  s[Param::use_constant] = 1;
  const std::string constant = generate_kernel(st, grid_for(2), s).source;
  EXPECT_NE(constant.find("__constant__ double isl_coef[5]"), std::string::npos);
  EXPECT_NE(constant.find("isl_coef[4] * p["), std::string::npos);
}

// A register-tiled chunk of a compute-bound box of identical z-planes (the plane loop): the
// code holds one plane's register tile (chunk x plane points fma calls, the planes in a loop
// that is not unrolled, the coefficients by plane in __constant__ memory), the chunk has no z
// points and stays within kMaxChunkCost at one plane's cost, each point is stored once; the
// kernel compiles with NVRTC.
TEST(Codegen, RegisterTileChunkOfABoxLoopsOverItsPlanesAndCompiles) {
  const Stencil st = typical_stencil("box3d4r");
  ASSERT_GE(st.size(), kPlaneLoopPoints);
  Setting s = naive_setting(3);
  s[Param::merge] = static_cast<int>(MergeKind::block);
  s[Param::tby] = 2;
  s[Param::mfy] = s[Param::ufy] = 8;
  s[Param::mfz] = s[Param::ufz] = 8;
  s[Param::use_shared] = 1;
  const Grid g = grid_for(3);
  ASSERT_FALSE(unsupported_reason(st, g, s).has_value());
  const KernelPlan plan = make_plan(st, g, s, DeviceLimits{});
  EXPECT_EQ(plan.unroll, (std::array<int, 3>{1, 8, 1}));
  const int chunk = plan.unroll[0] * plan.unroll[1] * plan.unroll[2];
  EXPECT_LE(chunk_cost(chunk, 81), kMaxChunkCost);
  const KernelSource k = generate_kernel(st, g, s);
  const auto count = [&](const std::string& what) {
    long long n = 0;
    for (auto at = k.source.find(what); at != std::string::npos; at = k.source.find(what, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count(" = fma("), 1LL * chunk * 81);
  EXPECT_EQ(count("isl::keep_sum<C>("), chunk);
  EXPECT_EQ(count("__constant__ double isl_plane_coef[729]"), 1);
  EXPECT_EQ(count("for (int k = 0; k < 9; ++k)"), 1);
  expect_all_compile({{"box3d4r register tile", k}});
}

// Below kPlaneLoopPoints (box3d2r) the chunk is unrolled over every plane: chunk x (points - 1)
// fma calls (the first use of each point is a multiply), z points share their loads.
TEST(Codegen, RegisterTileChunkOfASmallBoxIsUnrolledAndCompiles) {
  const Stencil st = typical_stencil("box3d1r");
  ASSERT_LT(st.size(), kPlaneLoopPoints);
  Setting s = naive_setting(3);
  s[Param::merge] = static_cast<int>(MergeKind::block);
  s[Param::tby] = 2;
  s[Param::mfy] = s[Param::ufy] = 4;
  s[Param::mfz] = s[Param::ufz] = 4;
  const Grid g = grid_for(3);
  ASSERT_FALSE(unsupported_reason(st, g, s).has_value());
  const KernelPlan plan = make_plan(st, g, s, DeviceLimits{});
  EXPECT_EQ(plan.unroll, (std::array<int, 3>{1, 4, 4}));
  const KernelSource k = generate_kernel(st, g, s);
  long long fmas = 0;
  for (auto at = k.source.find(" = fma("); at != std::string::npos;
       at = k.source.find(" = fma(", at + 1))
    ++fmas;
  EXPECT_EQ(fmas, 16LL * (st.size() - 1));
  EXPECT_EQ(k.source.find("isl_plane_coef"), std::string::npos);
  expect_all_compile({{"box3d1r register tile", k}});
}

TEST(Codegen, LaunchCoversOddGridsAndSharedTileIncludesHalo) {
  const Stencil st = typical_stencil("box3d2r");
  Setting s = variant(3, 4);  // block merge 1x2x2, shared
  s[Param::tbx] = 32;
  s[Param::tby] = 4;
  s[Param::tbz] = 2;
  const KernelSource k = generate_kernel(st, Grid{67, 35, 19}, s);
  EXPECT_EQ(k.launch.block, (std::array<int, 3>{32, 4, 2}));
  EXPECT_EQ(k.launch.grid,
            (std::array<long long, 3>{3, 5, 5}));  // ceil(67/32), ceil(35/8), ceil(19/4)
  EXPECT_EQ(k.launch.shared_bytes, 8 * (32 + 4) * (8 + 4) * (4 + 4));
}

TEST(Codegen, AsymmetricStencilUsesExactHaloPerSide) {
  const Stencil st = Stencil::make("asym", 2, {{0, 0, 0}, {3, 0, 0}, {0, -2, 0}}, {0.5, 0.3, 0.2});
  Setting s = naive_setting(2);
  s[Param::use_shared] = 1;
  const KernelSource k = generate_kernel(st, Grid{40, 40, 1}, s);
  EXPECT_EQ(k.launch.shared_bytes, 8 * (32 + 3) * (8 + 2));
  // The config struct carries the exact reach per side.
  for (const char* c : {"XLO = 0;", "XHI = 3;", "YLO = 2;", "YHI = 0;", "NX = 40;"})
    EXPECT_NE(k.source.find(std::string("static constexpr int ") + c), std::string::npos) << c;
}

TEST(Codegen, UnbuildableSettingsAreReportedNotGenerated) {
  const Stencil st = typical_stencil("star3d1r");
  Setting s = naive_setting(3);
  s[Param::streaming] = 1;
  auto why = unsupported_reason(st, grid_for(3), s);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("streaming"), std::string::npos);
  s = naive_setting(3);
  s[Param::tdeg] = 4;
  EXPECT_TRUE(unsupported_reason(st, grid_for(3), s).has_value());
  s = naive_setting(3);
  s[Param::merge] = 1;
  s[Param::mfx] = 2;
  s[Param::ufx] = 4;  // unroll beyond the merge factor
  EXPECT_TRUE(unsupported_reason(st, grid_for(3), s).has_value());
  s[Param::ufx] = 2;
  EXPECT_FALSE(unsupported_reason(st, grid_for(3), s).has_value());
  s = naive_setting(3);  // block z over the device's per-axis limit of 64
  s[Param::tbx] = 2;
  s[Param::tby] = 1;
  s[Param::tbz] = 128;
  why = unsupported_reason(st, Grid{64, 64, 512}, s);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("along z is 128"), std::string::npos) << *why;
}

// The register-pipeline rule counts the stencil's own live values (the kernel's LIVE_QUEUE /
// LIVE_RETIME, one home: stream_live) as doubles, two registers each: star3d3r's 55-value queue
// does not fit a 1024-thread block's 64 registers (measured: 23 GCells/s, naive 135), its
// 11 partial sums and centres do; the fastest measured star3d4r setting (8 points of 14 sums, 256
// threads) stays in the space.
TEST(Codegen, RegisterPipelineRuleCountsTheStencilsLiveDoublesInRegisters) {
  const Grid g{512, 512, 512};
  for (const char* name : {"star3d1r", "star3d3r", "box3d1r", "cross3d2r"}) {
    const Stencil st = typical_stencil(name);
    const ProblemShape shape = shape_of(st, g);
    const KernelSource queue = generate_kernel(st, g, streaming_setting(3, 2, 128, 8));
    EXPECT_NE(queue.source.find("LIVE_QUEUE = " + std::to_string(shape.stream_live[2].queue) + ";"),
              std::string::npos)
        << name;
    EXPECT_NE(
        queue.source.find(
            "LIVE_RETIME = " +
            std::to_string(shape.stream_live[2].sums + shape.stream_live[2].neighbours) + ";"),
        std::string::npos)
        << name;
  }
  const Stencil star3 = typical_stencil("star3d3r");
  EXPECT_EQ(shape_of(star3, g).stream_live[2].queue, 55);  // 7 planes + 12 neighbours x 4 planes
  EXPECT_EQ(shape_of(star3, g).stream_live[2].sums, 11);   // 7 partial sums + 4 centres
  EXPECT_EQ(shape_of(star3, g).stream_live[2].centre, 7);  // the centre-queue kernel's column
  Setting s = streaming_setting(3, 2, 128, 32);
  s[Param::prefetch] = 1;
  // At tdeg 1 without retiming the centre-queue kernel keeps 7 values: 2 x 7 + 8 = 22.
  EXPECT_FALSE(unsupported_reason(star3, g, s).has_value());
  s[Param::tdeg] = 2;  // the queue kernel of two levels: 2 x 2 x 55 + 8 registers
  const auto why = unsupported_reason(star3, g, s);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("2 levels x 55 doubles = 220 registers"), std::string::npos) << *why;
  EXPECT_NE(why->find("more than the 64"), std::string::npos) << *why;
  s[Param::tdeg] = 1;
  s[Param::retiming] = 1;  // 2 x 11 + 8 = 30 registers
  EXPECT_FALSE(unsupported_reason(star3, g, s).has_value());
  const Stencil star4 = typical_stencil("star3d4r");
  s[Param::tbx] = 128;
  s[Param::tby] = 2;
  s[Param::merge] = static_cast<int>(MergeKind::block);
  s[Param::mfy] = 8;
  s[Param::sb] = 512;
  EXPECT_FALSE(unsupported_reason(star4, g, s).has_value());  // 2 x 8 x 14 + 8 = 232 <= 255
  s[Param::tdeg] = 2;  // 456 registers (a 64 x 32-point tile keeps output after the halo)
  s[Param::tbx] = 64;
  s[Param::tby] = 4;
  const auto deeper = unsupported_reason(star4, g, s);
  ASSERT_TRUE(deeper.has_value());
  EXPECT_NE(deeper->find("register pipeline keeps 8 points x 2 levels x 14"), std::string::npos)
      << *deeper;
}

// The streaming kernel reads the ring of one reach around its covered plane only at tdeg 1
// (RING), and its output tile starts OA x OB points into the covered plane: 0 at tdeg 1, the
// low reach times tdeg beyond (an asymmetric stencil: x reach 1 / 0, z reach 2 / 1).
TEST(Codegen, StreamingReadsTheRingOnlyAtTdegOneAndOffsetsTheTileByTheLowReach) {
  const Stencil st = Stencil::make("asym", 3, {{0, 0, 0}, {-1, 0, 0}, {0, 0, -2}, {0, 0, 1}},
                                   {0.4, 0.2, 0.2, 0.2});
  Setting s = streaming_setting(3, 1, 8, 8);
  const KernelSource one = generate_kernel(st, grid_for(3), s);
  EXPECT_TRUE(has(one, "RING = 1;")) << one.source;
  EXPECT_TRUE(has(one, "OA = 0;"));
  EXPECT_TRUE(has(one, "OB = 0;"));
  s[Param::tdeg] = 2;
  const KernelSource two = generate_kernel(st, grid_for(3), s);
  EXPECT_TRUE(has(two, "RING = 0;"));
  EXPECT_TRUE(has(two, "OA = 2;"));
  EXPECT_TRUE(has(two, "OB = 4;"));
  EXPECT_FALSE(has(two, "RING = 1;"));  // the one-step tail is the plain kernel
}

TEST(Codegen, StreamingPrefetchCopiesPlanesAsynchronouslyAtTdegOneAndIntoRegistersBeyond) {
  // star3d1r streaming along z, 32 x 8 threads: the padded plane is (32+2) x (8+2). With
  // retiming (without it, at tdeg 1, the centre-queue kernel keeps more planes: below).
  const Stencil st = typical_stencil("star3d1r");
  Setting s = streaming_setting(3, 2, 8, 8);
  s[Param::retiming] = 1;
  const long long plane = 8LL * 34 * 10;
  const KernelSource none = generate_kernel(st, grid_for(3), s);
  EXPECT_TRUE(has(none, "PREFETCH = 0;"));
  EXPECT_TRUE(has(none, "ASYNC = 0;"));
  EXPECT_EQ(none.launch.shared_bytes, 2 * plane);
  s[Param::prefetch] = 1;
  const KernelSource one = generate_kernel(st, grid_for(3), s);
  EXPECT_TRUE(has(one, "PREFETCH = 0;"));
  EXPECT_TRUE(has(one, "ASYNC = 3;"));
  EXPECT_EQ(one.launch.shared_bytes, (3 + 2) * plane);  // three planes in flight, two in use
  s[Param::tdeg] = 2;
  const KernelSource two = generate_kernel(st, grid_for(3), s);
  EXPECT_TRUE(has(two, "PREFETCH = 1;"));
  EXPECT_TRUE(has(two, "ASYNC = 0;"));
  EXPECT_EQ(two.launch.shared_bytes, 2 * 2 * plane);
  EXPECT_EQ(two.tail_launch.shared_bytes, 0);  // the plain one-step tail stages nothing
  // A 2-D row: two rows ahead.
  Setting r = streaming_setting(2, 1, 8, 1);
  r[Param::prefetch] = 1;
  r[Param::retiming] = 1;
  const KernelSource row = generate_kernel(typical_stencil("star2d1r"), grid_for(2), r);
  EXPECT_TRUE(has(row, "ASYNC = 2;")) << row.source;
  // A row of 256 x 8 points (16.4 KB) under a 60 KB block limit: two rows ahead would need 4
  // buffers (65.6 KB), so one row ahead; with 40 KB none, and the register prefetch instead:
  // the setting stays buildable either way.
  r[Param::tbx] = 256;
  r[Param::mfx] = 8;
  r[Param::merge] = static_cast<int>(MergeKind::cyclic);
  const long long wide = 8LL * (2048 + 2);
  DeviceLimits limited;
  limited.shared_per_block_optin = 60 * 1024;
  const KernelSource big = generate_kernel(typical_stencil("star2d1r"), grid_for(2), r, limited);
  EXPECT_TRUE(has(big, "ASYNC = 1;"));
  EXPECT_TRUE(has(big, "PREFETCH = 0;"));
  EXPECT_EQ(big.launch.shared_bytes, (1 + 2) * wide);
  DeviceLimits small;
  small.shared_per_block_optin = 40 * 1024;
  const auto plan = codegen_plan(typical_stencil("star2d1r"), grid_for(2), r, small);
  ASSERT_TRUE(std::holds_alternative<KernelPlan>(plan));
  EXPECT_EQ(std::get<KernelPlan>(plan).async_planes, 0);
  EXPECT_EQ(std::get<KernelPlan>(plan).shared_bytes, 2 * wide);
}

// The centre-queue kernel (tdeg 1 without retiming, a stencil whose in-plane offsets lie in one
// plane): star3d4r keeps its 9-plane centre column a point (retiming: 9 sums + 5 centres), the
// input planes stay 4 planes behind the newest in shared memory (a 64 x 16 covered plane padded
// to 72 x 24 doubles), two blocks an SM fit with two planes ahead, and an x pair reads its
// in-plane neighbours with 12 aligned double2 loads (4 of its row, its own pair from the centre
// queue, one of each of 8 rows); star3d2r's pair with 6, as retiming's push_part2. Retiming,
// tdeg 2 and a box keep their kernels. Every variant compiles (pairs, scalar points, the
// register path without asynchronous copies, 2-D, an odd reach).
TEST(Codegen, CentreQueueKernelKeepsTheCentreColumnAndLaggedPlanes) {
  const Grid g{512, 512, 512};
  const Stencil star4 = typical_stencil("star3d4r");
  const ProblemShape shape = shape_of(star4, g);
  EXPECT_EQ(shape.stream_live[2].centre, 9);
  EXPECT_EQ(shape.stream_live[2].lag, 4);
  EXPECT_EQ(shape.stream_live[2].sums, 14);
  EXPECT_EQ(shape_of(typical_stencil("box3d1r"), g).stream_live[2].lag, -1);
  Setting s = streaming_setting(3, 2, 512, 8);
  s[Param::tbx] = 32;
  s[Param::merge] = static_cast<int>(MergeKind::block);
  s[Param::mfx] = 2;
  s[Param::mfy] = 2;
  s[Param::prefetch] = 1;
  ASSERT_FALSE(unsupported_reason(star4, g, s).has_value()) << *unsupported_reason(star4, g, s);
  const KernelSource k = generate_kernel(star4, g, s);
  EXPECT_TRUE(has(k, "CQ = 1;"));
  EXPECT_TRUE(has(k, "LAG = 4;"));
  EXPECT_TRUE(has(k, "LIVE_CENTRE = 9;"));
  EXPECT_TRUE(has(k, "ASYNC = 2;"));
  const long long plane = 72LL * 24 * 8;
  EXPECT_EQ(k.launch.shared_bytes, (2 + 2 + 4) * plane);
  const auto loads_in = [](const std::string& text, const std::string& function) {
    const auto from = text.find(function);
    const auto to = text.find("  }\n", from);
    int n = 0;
    for (auto at = text.find("const double2 v", from); at < to;
         at = text.find("const double2 v", at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(loads_in(k.source, "void lsum2("), 12);
  const Stencil star2 = typical_stencil("star3d2r");
  const KernelSource k2 = generate_kernel(star2, g, s);
  EXPECT_EQ(loads_in(k2.source, "void lsum2("), 6);
  EXPECT_EQ(loads_in(k2.source, "void lsum2("), loads_in(k2.source, "void push_part2("));
  std::vector<Job> jobs{{"star3d4r pairs", k}};
  Setting r = s;
  r[Param::retiming] = 1;
  const KernelSource retimed = generate_kernel(star4, g, r);
  EXPECT_TRUE(has(retimed, "CQ = 0;"));
  EXPECT_TRUE(has(retimed, "LAG = 0;"));
  EXPECT_EQ(retimed.launch.shared_bytes, (3 + 2) * plane);
  Setting box = s;
  box[Param::mfy] = 1;
  EXPECT_TRUE(has(generate_kernel(typical_stencil("box3d1r"), g, box), "CQ = 0;"));
  Setting deep = s;
  deep[Param::mfx] = deep[Param::mfy] = 1;
  deep[Param::merge] = static_cast<int>(MergeKind::none);
  deep[Param::tdeg] = 2;
  deep[Param::tbx] = 64;
  deep[Param::tby] = 16;
  const KernelSource two = generate_kernel(typical_stencil("star3d1r"), g, deep);
  EXPECT_TRUE(has(two, "CQ = 0;"));  // the main kernel; its one-step tail is the plain one
  EXPECT_FALSE(has(two, "CQ = 1;"));
  // Scalar points of an odd reach on the register path (no asynchronous copies): star3d3r's
  // 3 planes behind the newest and the two in use, rows of 3 + 64 + 3 doubles.
  Setting scalar = streaming_setting(3, 2, 16, 4);
  scalar[Param::tbx] = 64;
  const Stencil star3 = typical_stencil("star3d3r");
  const KernelSource sk = generate_kernel(star3, grid_for(3), scalar);
  EXPECT_TRUE(has(sk, "CQ = 1;"));
  EXPECT_TRUE(has(sk, "ASYNC = 0;"));
  EXPECT_EQ(sk.launch.shared_bytes, (2 + 3) * (70LL * 10 * 8));
  jobs.push_back({"star3d3r scalar registers", sk});
  Setting odd = s;
  odd[Param::sb] = 16;
  jobs.push_back({"star3d3r pairs", generate_kernel(star3, grid_for(3), odd)});
  Setting row = streaming_setting(2, 1, 64, 1);
  row[Param::tbx] = 128;
  row[Param::prefetch] = 1;
  const KernelSource rk = generate_kernel(typical_stencil("star2d2r"), grid_for(2), row);
  EXPECT_TRUE(has(rk, "CQ = 1;"));
  EXPECT_TRUE(has(rk, "LAG = 2;"));
  jobs.push_back({"star2d2r row", rk});
  expect_all_compile(jobs);
}

// A kernel of tdeg > 1 steps per launch ends on the plain one-step tail (kernels/one_step.cuh):
// 256 threads a block over the grid's cells, no shared memory, the family's IslApply; its own
// config struct holds the extents and the reach (an asymmetric stencil: x reach 1 / 0, z 2 / 1),
// for the streaming and the tiled temporal family alike, and every such source compiles.
// A tdeg-1 kernel has no tail.
TEST(Codegen, TemporalKernelsEndOnThePlainOneStepTail) {
  const Stencil st = typical_stencil("star3d1r");
  Setting s = streaming_setting(3, 2, 8, 16);
  s[Param::tdeg] = 4;
  ASSERT_FALSE(unsupported_reason(st, grid_for(3), s).has_value());
  const KernelSource k = generate_kernel(st, grid_for(3), s);
  EXPECT_EQ(k.launch.steps, 4);
  EXPECT_EQ(k.tail_launch.steps, 1);
  EXPECT_EQ(k.tail_entry, "isl_tail");
  // Output tiles (32-8) x (16-8): 67/24, 35/8; sb = 8 planes -> 3 stream blocks (balancing
  // stays within (2/3, 4/3) of that count: 4 planes per block is sb = 4's kernel).
  EXPECT_EQ(k.launch.grid, (std::array<long long, 3>{3, 5, 3}));
  EXPECT_EQ(k.launch.shared_bytes, 2 * 4 * 34 * 18 * 8);
  const Grid g = grid_for(3);
  EXPECT_EQ(k.tail_launch.shared_bytes, 0);
  EXPECT_EQ(k.tail_launch.block, (std::array<int, 3>{256, 1, 1}));
  EXPECT_EQ(k.tail_launch.grid, (std::array<long long, 3>{(g.cells() + 255) / 256, 1, 1}));
  EXPECT_NE(k.source.find("isl::stream_step<IslMain, IslApply>"), std::string::npos);
  EXPECT_EQ(k.source.find("<IslTail, IslApply>(in, out, isl_smem)"), std::string::npos);
  EXPECT_NE(k.source.find("isl::one_step<IslTail, IslApply>(in, out)"), std::string::npos);
  // The family's template once (the tail adds none of it) and the plain step once.
  const auto count = [](const std::string& text, const std::string& what) {
    int n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count(k.source, "__device__ __forceinline__ void one_step("), 1);
  EXPECT_EQ(count(k.source, "__global__"), 2);
  std::vector<Job> jobs{{"star3d1r streaming tdeg 4", k}};

  const Stencil asym = Stencil::make("asym", 3, {{0, 0, 0}, {-1, 0, 0}, {0, 0, -2}, {0, 0, 1}},
                                     {0.4, 0.2, 0.2, 0.2});
  Setting tiled = naive_setting(3);
  tiled[Param::tdeg] = 2;
  tiled[Param::use_shared] = 1;
  tiled[Param::use_constant] = 1;
  ASSERT_FALSE(unsupported_reason(asym, g, tiled).has_value())
      << *unsupported_reason(asym, g, tiled);
  const KernelSource t = generate_kernel(asym, g, tiled);
  EXPECT_EQ(t.tail_entry, "isl_tail");
  EXPECT_EQ(t.tail_launch.shared_bytes, 0);
  for (const char* reach : {"XLO = 1;", "XHI = 0;", "YLO = 0;", "YHI = 0;", "ZLO = 2;", "ZHI = 1;"})
    EXPECT_TRUE(has(t, reach)) << reach;
  jobs.push_back({"asym tiled tdeg 2, constant memory", t});
  s[Param::tdeg] = 1;
  EXPECT_TRUE(generate_kernel(st, g, s).tail_entry.empty());
  expect_all_compile(jobs);
}

// The tail's grid-stride loop covers a grid of more cells than its blocks have threads.
TEST(Codegen, ThePlainTailLaunchIsBoundedAndCoversEveryGrid) {
  EXPECT_EQ(one_step_launch(Grid{1, 1, 1}).grid[0], 1);
  EXPECT_EQ(one_step_launch(Grid{257, 1, 1}).grid[0], 2);
  const LaunchConfig huge = one_step_launch(Grid{1 << 15, 1 << 15, 1 << 8});
  EXPECT_EQ(huge.grid[0], kOneStepMaxBlocks);
  EXPECT_EQ(huge.steps, 1);
}

// The exported program's kernel: besides the main (tdeg steps) and one-step tail entries, an
// entry of the same family at every depth 2 .. tdeg-1 (each launch advancing that many steps,
// the same block as the main entry, its own halo), so leftover steps of any count run as one
// launch of the tuned kernel; all of it compiles. The worker's kernel has none of them.
TEST(Codegen, ExportKernelHasTheSameKernelAtEverySmallerDepth) {
  const Stencil st3 = typical_stencil("star3d1r");
  Setting streaming = streaming_setting(3, 2, 8, 16);
  streaming[Param::tdeg] = 4;
  const Stencil st2 = typical_stencil("box2d1r");
  Setting tiled = naive_setting(2);
  tiled[Param::tdeg] = 3;
  tiled[Param::use_shared] = 1;
  std::vector<Job> jobs;
  for (const auto& [st, s] : {std::pair{st3, streaming}, std::pair{st2, tiled}}) {
    const Grid g = grid_for(st.dims());
    ASSERT_FALSE(unsupported_reason(st, g, s).has_value()) << canonical_key(s);
    const KernelSource k = generate_export_kernel(st, g, s);
    EXPECT_TRUE(generate_kernel(st, g, s).rest_entries.empty());
    const int depth = s[Param::tdeg];
    ASSERT_EQ(k.launch.steps, depth);
    ASSERT_EQ(k.rest_entries.size(), static_cast<std::size_t>(depth - 2)) << canonical_key(s);
    for (int d = 2; d < depth; ++d) {
      const RestEntry& r = k.rest_entries[static_cast<std::size_t>(d - 2)];
      EXPECT_EQ(r.entry, "isl_rest" + std::to_string(d));
      EXPECT_EQ(r.launch.steps, d);
      EXPECT_EQ(r.launch.block, k.launch.block);
      EXPECT_GT(r.launch.shared_bytes, k.tail_launch.shared_bytes);
      EXPECT_LT(r.launch.shared_bytes, k.launch.shared_bytes);
      EXPECT_TRUE(has(k, "extern \"C\" __global__ void")) << r.entry;
      EXPECT_TRUE(has(k, r.entry + "(const double*")) << r.entry;
    }
    jobs.push_back({st.name() + " export " + canonical_key(s), k});
  }
  expect_all_compile(jobs);
}

// The register queue keeps an in-plane neighbour only from the slot where it arrives down to
// the oldest slot that reads it: for star2d1r streaming along y the x-neighbours are read at
// the centre slot 1 only, so they live in slots 1 and 2 (mask 6), the centre in all three.
TEST(Codegen, StreamingQueueKeepsNeighboursFromArrivalToLastUse) {
  const Stencil st = typical_stencil("star2d1r");
  Setting s = streaming_setting(2, 1, 64, 1);
  s[Param::tbx] = 64;
  s[Param::tdeg] = 2;
  const KernelSource k = generate_kernel(st, grid_for(2), s);
  // Centre (m = 0): all three slots shift; the newest is the thread's own value.
  EXPECT_NE(k.source.find("w[0][p][0] = w[1][p][0];"), std::string::npos);
  EXPECT_NE(k.source.find("w[2][p][0] = own;"), std::string::npos);
  // x-neighbours (m = 1, 2): loaded into slot 2, kept in slot 1, never in slot 0.
  for (const std::string m : {"1", "2"}) {
    EXPECT_NE(k.source.find("w[1][p][" + m + "] = w[2][p][" + m + "];"), std::string::npos);
    EXPECT_NE(k.source.find("w[2][p][" + m + "] = src["), std::string::npos);
    EXPECT_EQ(k.source.find("w[0][p][" + m + "]"), std::string::npos);
  }
}

TEST(CubinCache, KeyChangesWithSourceOptionsVersionAndArch) {
  const std::vector<std::string> opts{"--gpu-architecture=sm_90", "-std=c++17"};
  const std::string k = cubin_cache_key("src", opts, "13.0", 90);
  EXPECT_EQ(k, cubin_cache_key("src", opts, "13.0", 90));
  EXPECT_NE(k, cubin_cache_key("src ", opts, "13.0", 90));
  EXPECT_NE(k, cubin_cache_key("src", {"-std=c++17"}, "13.0", 90));
  EXPECT_NE(k, cubin_cache_key("src", opts, "13.1", 90));
  EXPECT_NE(k, cubin_cache_key("src", opts, "13.0", 100));
  EXPECT_EQ(k.size(), 16u);
}

// Settings that build the same kernel (use_shared and the in-plane unroll factors unread while
// streaming) share one cubin: the key ignores the `// setting` comment that tells them apart.
TEST(CubinCache, KeyIgnoresCommentLinesSoEquivalentSettingsShareACubin) {
  const Stencil st = typical_stencil("star2d1r");
  Setting a = naive_setting(2);
  a[Param::streaming] = 1;
  a[Param::sd] = 1;
  a[Param::sb] = 16;
  a[Param::tby] = 1;
  a[Param::tbx] = 64;
  a[Param::merge] = static_cast<int>(MergeKind::block);
  a[Param::mfx] = 2;
  Setting b = a;
  b[Param::use_shared] = 1;
  b[Param::ufx] = 2;
  ASSERT_FALSE(unsupported_reason(st, grid_for(2), a).has_value());
  ASSERT_FALSE(unsupported_reason(st, grid_for(2), b).has_value());
  const std::string sa = generate_kernel(st, grid_for(2), a).source;
  const std::string sb = generate_kernel(st, grid_for(2), b).source;
  EXPECT_NE(sa, sb);  // the comments name each setting
  const CubinCompiler compiler(90, "");
  EXPECT_EQ(compiler.key(sa), compiler.key(sb));
  Setting c = a;
  c[Param::use_constant] = 1;  // read: another kernel
  EXPECT_NE(compiler.key(sa), compiler.key(generate_kernel(st, grid_for(2), c).source));
}

TEST(CubinCache, SecondCompileOfTheSameSourceIsACacheHit) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("isletune-cubins-" + std::to_string(::getpid()));
  const CubinCompiler compiler(90, dir.string());
  const std::string src = "extern \"C\" __global__ void k(double* a) { a[threadIdx.x] = 1.0; }\n";
  const CompileResult first = compiler.compile(src);
  const CompileResult second = compiler.compile(src);
  ASSERT_TRUE(first.ok) << first.log;
  EXPECT_FALSE(first.cached);
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(first.cubin, second.cubin);
  EXPECT_TRUE(compiler.compile("// another setting\n" + src).cached);  // comments are no key
  const CompileResult other =
      compiler.compile("extern \"C\" __global__ void k(double* a) { a[threadIdx.x] = 2.0; }\n");
  EXPECT_FALSE(other.cached);
  const CompileResult broken = compiler.compile("this is not CUDA");
  EXPECT_FALSE(broken.ok);
  EXPECT_FALSE(broken.log.empty());
  std::filesystem::remove_all(dir);
}

TEST(WorkerProtocol, MessagesRoundTripAndReadsTimeOut) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  Channel a(sv[0], sv[0]), b(sv[1], sv[1]);
  Message m{"result", {}};
  m.set("status", "ok").set("median_ms", 0.25).set("blob", std::string("a\nb\0c .\n", 9));
  ASSERT_TRUE(a.send(m));
  Message got;
  ASSERT_EQ(b.receive(got, 1.0), Channel::Read::ok);
  EXPECT_EQ(got.kind, "result");
  EXPECT_EQ(got.get("status"), "ok");
  EXPECT_DOUBLE_EQ(got.number("median_ms"), 0.25);
  EXPECT_EQ(got.get("blob"), std::string("a\nb\0c .\n", 9));
  EXPECT_EQ(b.receive(got, 0.01), Channel::Read::timeout);
  ::close(sv[0]);
  EXPECT_EQ(b.receive(got, 1.0), Channel::Read::closed);
  ::close(sv[1]);
}

TEST(CudaEvaluator, WithoutDriverFailsWithOneClearSentence) {
  Problem p{typical_stencil("star2d1r"), Grid{64, 64, 1}};
  CudaOptions o;
  o.worker_path = ISLETUNE_WORKER_PATH;
  try {
    CudaEvaluator e(p, o);
    GTEST_SKIP() << "a GPU is present (" << e.limits().name
                 << "): the no-driver path cannot be tested";
  } catch (const InputError& err) {
    const std::string what = err.what();
    EXPECT_NE(what.find("needs an NVIDIA GPU"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(CudaEvaluator, MissingWorkerFailsWithOneClearSentence) {
  Problem p{typical_stencil("star2d1r"), Grid{64, 64, 1}};
  CudaOptions o;
  o.worker_path = "/nonexistent/isletune-worker";
  try {
    CudaEvaluator e(p, o);
    FAIL() << "a missing worker must throw";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("/nonexistent/isletune-worker"), std::string::npos);
  }
}

}  // namespace
}  // namespace isletune::cuda

#else

TEST(Codegen, SkippedWithoutCuda) {
  GTEST_SKIP() << "built without the CUDA toolkit";
}

#endif
