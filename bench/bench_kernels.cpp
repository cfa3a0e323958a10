// isletune-bench-kernels: the kernel benchmark. For each typical stencil at 8192^2 (2-D) /
// 512^3 (3-D), double precision, it measures the naive kernel (one point per thread, literal
// coefficients) and the best of uniformly random valid settings of the whole default space
// (every family: tiled, streaming, temporal blocking), drawn in batches until a time budget
// per stencil is spent, next to the device-to-device copy bandwidth measured in the same run.
// It prints GCells/s per time step for naive, tuned and copy (copy BW / 16 B per cell), the
// FP64 roof (FP64 peak / flops per cell, mul and add counted separately: 2*points-1), and
// writes the rows as CSV (docs/bench/kernels-<gpu>.csv). --throughput measures tuning throughput
// (evaluations per minute, GPU-busy fraction) with a cold and then a warm cubin cache.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/rng.hpp"
#include "eval/cuda/codegen.hpp"
#include "eval/cuda/cuda_evaluator.hpp"
#include "kernel/kernel_plan.hpp"
#include "kernel/registry.hpp"
#include "space/space.hpp"
#include "stencil/typical.hpp"

namespace isletune::cuda {
namespace {

struct Options {
  std::vector<std::string> stencils = typical_names();
  int samples_2d = 64;  // at most this many random settings per stencil
  int samples_3d = 64;
  double budget_s = 15;  // measuring time per stencil (batches stop once it is spent)
  int batch = 8;
  std::string csv;  // "" = docs/bench/kernels-<gpu>.csv
  int n2d = 8192;
  int n3d = 512;
  std::uint64_t seed = 2026;
  bool throughput = false;
  bool families = false;               // --families: hand-picked settings per family x tdeg
  int family_case = -1;                // --case I: only hand-picked case I (and naive)
  std::vector<int> family_cases_only;  // --cases I,J,...: naive and only these cases
  std::string family;                  // --family NAME: only the cases of that family (and naive)
  std::string source_key;              // --source KEY: print the generated kernel (no GPU)
  bool dry_run = false;                // sample settings only (no GPU)
  std::string throughput_stencil = "star3d2r";
  int throughput_batches = 4;
  int throughput_batch = 16;
};

// The part-1 space the benchmark searches: docs/architecture.md, "The search space" defaults
// narrowed to part 1 and to block and merge values that fit a 2-D/3-D tile.
Space part1_space(const Stencil& st, const Grid& g, const DeviceLimits& limits) {
  Space::Values v = Space::default_values(st.dims(), g);
  v[index_of(Param::streaming)] = {0};
  v[index_of(Param::retiming)] = {0};
  v[index_of(Param::prefetch)] = {0};
  v[index_of(Param::tdeg)] = {1};
  v[index_of(Param::tbx)] = {32, 64, 128, 256};
  v[index_of(Param::tby)] = {1, 2, 4, 8, 16};
  if (st.dims() == 3)
    v[index_of(Param::tbz)] = {1, 2, 4, 8};
  v[index_of(Param::mfx)] = {1, 2};
  v[index_of(Param::ufx)] = {1, 2};
  for (Param p : {Param::mfy, Param::ufy})
    v[index_of(p)] = {1, 2, 4};
  if (st.dims() == 3) {
    for (Param p : {Param::mfz, Param::ufz})
      v[index_of(p)] = {1, 2, 4};
  }
  return Space(st, g, limits, v);
}

// N distinct uniformly random valid settings.
std::vector<Setting> random_settings(const Space& space, int n, std::uint64_t seed) {
  Rng rng(seed, 7);
  std::vector<Setting> out;
  std::set<Setting> seen;
  for (int tries = 0; static_cast<int>(out.size()) < n && tries < 50 * n; ++tries) {
    auto s = space.random_setting(rng);
    if (!s)
      break;
    if (seen.insert(*s).second)
      out.push_back(*s);
  }
  return out;
}

double gcells(const Grid& g, const Measurement& m) {
  return m.ok() ? gcells_per_s(g, m.median_ms) : 0.0;
}

// "NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3".
std::string slug(const std::string& name) {
  std::string out;
  for (const char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-')
    out.pop_back();
  return out;
}

// Opens the CSV (`csv`, or docs/bench/<kind>-<gpu>.csv) with its header line and names it.
std::FILE* open_csv(const std::string& csv, const char* kind, const std::string& gpu,
                    const char* header) {
  const std::string path =
      csv.empty() ? "docs/bench/" + std::string(kind) + "-" + slug(gpu) + ".csv" : csv;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f)
    throw isletune::InputError("cannot write the CSV file " + path + ".");
  std::fprintf(f, "%s\n", header);
  std::printf("# CSV: %s\n", path.c_str());
  return f;
}

int run_kernels(const Options& o) {
  std::printf("%-10s %14s %8s %8s %6s %8s %9s %5s %7s  %s\n", "stencil", "grid", "naive", "tuned",
              "x", "copy", "fp64roof", "fpc", "ok/N", "tuned setting (GCells/s per step)");
  double copy_gbs = 0;
  std::FILE* csv = nullptr;
  for (const std::string& name : o.stencils) {
    const Stencil st = typical_stencil(name);
    const Grid g = st.dims() == 2 ? Grid{o.n2d, o.n2d, 1} : Grid{o.n3d, o.n3d, o.n3d};
    const int n = st.dims() == 2 ? o.samples_2d : o.samples_3d;
    if (o.dry_run) {
      const Space space(st, g, DeviceLimits{}, Space::default_values(st.dims(), g));
      const auto batch = random_settings(space, n, o.seed);
      std::printf("%-10s %zu settings sampled, e.g. %s\n", name.c_str(), batch.size(),
                  batch.empty() ? "-" : canonical_key(batch.front()).c_str());
      continue;
    }
    CudaOptions co;
    co.min_rep_ms = 5;
    co.slow_factor = 0;  // the benchmark verifies and times every case, the slowest included
    CudaEvaluator e(Problem{st, g, 48, 1, 5}, co);
    if (copy_gbs == 0) {
      copy_gbs = e.environment().copy_bandwidth_gbs;
      std::printf(
          "# GPU %s (%s), driver %d, CUDA runtime %d, NVRTC %s, SM clock %d MHz, "
          "copy %.0f GB/s -> %.1f GCells/s; FP64 peak %.0f GFLOP/s; budget %.0f s per stencil\n",
          e.environment().name.c_str(), e.environment().uuid.c_str(),
          e.environment().driver_version, e.environment().runtime_version,
          e.environment().nvrtc_version.c_str(), e.environment().sm_clock_mhz, copy_gbs,
          copy_gbs / 16, e.limits().fp64_gflops, o.budget_s);
      csv = open_csv(o.csv, "kernels", e.environment().name,
                     "stencil,grid,naive_gcells,tuned_gcells,copy_gcells,fp64_roof_gcells,"
                     "flops_per_cell,evaluated,verified,budget_s,gpu,setting");
    }
    const Space space(st, g, e.limits(), Space::default_values(st.dims(), g));
    // A seed per stencil, so stencils of the same dimension do not share one sample.
    const auto candidates = random_settings(space, n, o.seed ^ std::hash<std::string>{}(name));
    const auto t0 = std::chrono::steady_clock::now();
    const Measurement naive_m = e.evaluate(std::vector<Setting>{naive_setting(st.dims())})[0];
    const double naive = gcells(g, naive_m);
    double top = 0;
    Setting top_setting;
    int ok = 0, evaluated = 0;
    std::map<std::string, int> failures;
    for (std::size_t i = 0; i < candidates.size(); i += static_cast<std::size_t>(o.batch)) {
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >=
          o.budget_s)
        break;
      const std::size_t end = std::min(candidates.size(), i + static_cast<std::size_t>(o.batch));
      const std::vector<Setting> batch(candidates.begin() + static_cast<long>(i),
                                       candidates.begin() + static_cast<long>(end));
      const auto got = e.evaluate(batch);
      for (std::size_t k = 0; k < got.size(); ++k) {
        ++evaluated;
        if (!got[k].ok()) {
          ++failures[std::string(status_name(got[k].status))];
          continue;
        }
        ++ok;
        if (gcells(g, got[k]) > top) {
          top = gcells(g, got[k]);
          top_setting = batch[k];
        }
      }
    }
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double copy = copy_gbs / 16;
    const double fp_roof = e.limits().fp64_gflops / st.flops_per_cell();
    const std::string grid_text =
        std::to_string(g.nx) + "x" + std::to_string(g.ny) + "x" + std::to_string(g.nz);
    const std::string key = top > 0 ? canonical_key(top_setting) : "-";
    std::printf("%-10s %14s %8.1f %8.1f %6.2f %8.1f %9.1f %5d %3d/%-3d  %s  [%.0f s]\n",
                name.c_str(), grid_text.c_str(), naive, top, naive > 0 ? top / naive : 0.0, copy,
                fp_roof, st.flops_per_cell(), ok, evaluated, key.c_str(), wall);
    if (!naive_m.ok())
      std::printf("  naive failed: %s\n", naive_m.message.c_str());
    for (const auto& [status, count] : failures)
      std::printf("  %d %s\n", count, status.c_str());
    std::fprintf(csv, "%s,%s,%.2f,%.2f,%.2f,%.2f,%d,%d,%d,%.0f,\"%s\",\"%s\"\n", name.c_str(),
                 grid_text.c_str(), naive, top, copy, fp_roof, st.flops_per_cell(), evaluated, ok,
                 o.budget_s, e.environment().name.c_str(), key.c_str());
    std::fflush(csv);
    std::fflush(stdout);
  }
  if (csv)
    std::fclose(csv);
  return 0;
}

// --families: the short loop for kernel work. For each stencil a small fixed list of
// hand-picked settings per family x tdeg (no search), each verified and timed by the
// evaluator, printed as GCells/s per step next to naive, copy and the EBISU figure of
// ebisu_figure below (H100, 8192^2 / 512^3 only), and written as CSV rows
// (docs/bench/families-<gpu>.csv) as each stencil finishes.
struct FamilyCase {
  std::string family;
  int tdeg;
  std::string fields;  // "name=value" pairs over naive_setting(dims)
};

// Settings as "name=value" pairs (space-separated) applied over the naive setting.
Setting setting_from_fields(int dims, const std::string& fields) {
  Setting s = naive_setting(dims);
  std::stringstream in(fields);
  for (std::string item; in >> item;) {
    const auto eq = item.find('=');
    const auto p = eq == std::string::npos ? std::nullopt : param_from_name(item.substr(0, eq));
    if (!p)
      throw isletune::InputError("family setting field '" + item + "' is not name=value.");
    const std::string value = item.substr(eq + 1);
    if (*p == Param::merge) {
      const auto m = merge_from_name(value);
      if (!m)
        throw isletune::InputError("family setting field '" + item + "': unknown merge kind.");
      s[*p] = static_cast<int>(*m);
    } else {
      s[*p] = std::stoi(value);
    }
  }
  return s;
}

// The hand-picked list. Streaming: stream along y (2-D) / z (3-D), cyclic merge along x,
// stream blocks chosen so that the tile count fills the 132 SMs of an H100.
std::vector<FamilyCase> family_cases(int dims) {
  const auto st = [](const char* fields) {
    return std::string("streaming=1 sd=1 tby=1 prefetch=1 ") + fields;
  };
  if (dims == 2) {
    return {
        {"tiled", 1, "tbx=64 tby=4 merge=block mfy=4 ufy=4 use_shared=0"},
        {"tiled", 2, "tbx=64 tby=8 use_shared=1"},
        {"tiled", 4, "tbx=64 tby=8 merge=block mfx=2 mfy=2 use_shared=1"},
        {"tiled", 8, "tbx=64 tby=8 merge=block mfx=2 mfy=2 use_shared=1"},
        {"streaming", 1, st("sb=512 tbx=256 merge=cyclic mfx=2")},
        {"streaming", 1, st("sb=256 tbx=512")},
        {"streaming", 2, st("sb=512 tbx=256 merge=cyclic mfx=2")},
        {"streaming", 2, st("sb=256 tbx=256 retiming=1")},
        {"streaming", 4, st("sb=256 tbx=512")},
        {"streaming", 4, st("sb=512 tbx=256 merge=cyclic mfx=2 retiming=1")},
        {"streaming", 4, st("sb=256 tbx=256 retiming=1")},
        {"streaming", 8, st("sb=256 tbx=256")},
        {"streaming", 8, st("sb=256 tbx=512")},
        {"streaming", 8, st("sb=256 tbx=256 retiming=1")},
        {"streaming", 12, st("sb=256 tbx=256 retiming=1")},
        {"streaming", 12, st("sb=256 tbx=512 retiming=1")},
        {"streaming", 12, st("sb=256 tbx=256")},
        {"streaming", 16, st("sb=256 tbx=256 retiming=1")},
        {"streaming", 16, st("sb=512 tbx=512 retiming=1")},
        // The best settings of the 120-s tuning runs
        // (docs/studies/2026-11-24-typical-stencils-tuner-120s-h100.md): a longer stream block, the
        // stream loop unrolled twice, coefficients in constant memory.
        {"streaming", 8, st("sb=1024 tbx=256 retiming=1 ufy=2 use_constant=1")},
        {"streaming", 12, st("sb=1024 tbx=256 retiming=1 ufy=2 use_constant=1")},
    };
  }
  const auto s3 = [](const char* fields) {
    return std::string("streaming=1 sd=2 tbz=1 prefetch=1 ") + fields;
  };
  return {
      {"tiled", 1, "tbx=32 tby=4 tbz=2"},
      {"tiled", 2, "tbx=32 tby=8 tbz=4 use_shared=1"},
      {"tiled", 4, "tbx=32 tby=8 tbz=4 use_shared=1"},
      {"streaming", 1, s3("sb=128 tbx=64 tby=8 merge=cyclic mfy=2")},
      {"streaming", 1, s3("sb=128 tbx=32 tby=32")},
      {"streaming", 1, s3("sb=128 tbx=64 tby=16")},
      {"streaming", 1, s3("sb=128 tbx=64 tby=8 merge=cyclic mfy=2 prefetch=0")},
      {"streaming", 1, "streaming=1 sd=1 sb=128 tbx=64 tby=1 tbz=8 merge=cyclic mfz=2 prefetch=1"},
      {"streaming", 2, s3("sb=256 tbx=128 tby=4 merge=cyclic mfy=4 retiming=1")},
      {"streaming", 2, s3("sb=256 tbx=64 tby=8 merge=cyclic mfy=2 retiming=1")},
      {"streaming", 3, s3("sb=256 tbx=128 tby=4 merge=cyclic mfy=4 retiming=1")},
      {"streaming", 4, s3("sb=256 tbx=64 tby=4 merge=cyclic mfy=4 retiming=1")},
      // The best settings of the 120-s tuning runs
      // (docs/studies/2026-11-24-typical-stencils-tuner-120s-h100.md): a 32x32-thread plane without
      // merging along z (star3d1r t4: 324 GCells/s), streaming along y with a cyclic z tile
      // (box3d1r t2), a 32-deep y-z plane unrolled twice (star3d2r t2).
      {"streaming", 2, s3("sb=128 tbx=32 tby=32 retiming=1")},
      {"streaming", 3, s3("sb=128 tbx=32 tby=32 retiming=1")},
      {"streaming", 4, s3("sb=128 tbx=32 tby=32 retiming=1")},
      {"streaming", 2,
       "streaming=1 sd=1 sb=128 tbx=32 tby=1 tbz=8 merge=cyclic mfz=8 retiming=1 prefetch=1 "
       "use_constant=1"},
      {"streaming", 2,
       "streaming=1 sd=1 sb=512 tbx=32 tby=1 tbz=32 ufy=2 retiming=1 prefetch=1 use_constant=1"},
      // Longer stream blocks (less pipeline fill) and, with the input ring, two points per
      // thread along y on a 32x32 covered plane.
      {"streaming", 1, s3("sb=256 tbx=32 tby=32")},
      {"streaming", 1, s3("sb=256 tbx=32 tby=16 merge=cyclic mfy=2")},
      {"streaming", 2, s3("sb=256 tbx=32 tby=16 merge=cyclic mfy=2 retiming=1")},
      {"streaming", 2, s3("sb=256 tbx=32 tby=32 retiming=1")},
      {"streaming", 4, s3("sb=256 tbx=32 tby=32 retiming=1")},
      // tdeg 1 with more loads in flight per thread: more points per thread, and the plane
      // loop unrolled (the prefetched plane is then consumed an iteration later, not moved).
      {"streaming", 1, s3("sb=128 tbx=64 tby=8 merge=cyclic mfy=2 ufz=2")},
      {"streaming", 1, s3("sb=128 tbx=64 tby=8 merge=cyclic mfy=2 ufz=4")},
      {"streaming", 1, s3("sb=128 tbx=64 tby=4 merge=cyclic mfy=4")},
      {"streaming", 1, s3("sb=128 tbx=64 tby=4 merge=cyclic mfy=4 ufz=2")},
      {"streaming", 1, s3("sb=128 tbx=32 tby=8 merge=cyclic mfy=4 ufz=2")},
      {"streaming", 1, s3("sb=128 tbx=128 tby=4 merge=cyclic mfy=2 ufz=2")},
      // tdeg 1 with retiming and 2-8 points per thread along y: the fastest settings of narrowed
      // spaces measured exhaustively or at random
      // (docs/studies/2026-11-24-register-pipeline-rule-retiming.md): star3d4r, star3d3r, star3d2r;
      // a stencil's live queue beyond r = 2 does not fit.
      {"streaming", 1, s3("sb=512 tbx=128 tby=2 merge=block mfy=8 retiming=1")},
      {"streaming", 1, s3("sb=128 tbx=64 tby=8 merge=cyclic mfy=4 retiming=1")},
      {"streaming", 1, s3("sb=128 tbx=64 tby=2 merge=block mfy=4 ufz=8 retiming=1")},
      {"streaming", 1, s3("sb=512 tbx=32 tby=8 merge=block mfy=4 ufz=8 retiming=1")},
      // tdeg 2 with the last level from the shared ring (use_shared=1): a 2x2 register tile
      // per thread in a 64 x 32 covered plane
      // (docs/studies/2026-11-27-star3d2r-shared-ring-x-pairs.md).
      {"streaming", 2,
       "streaming=1 sd=1 sb=128 tbx=32 tby=1 tbz=16 merge=block mfx=2 mfz=2 retiming=1 "
       "prefetch=1 use_shared=1 use_constant=1"},
      // tdeg 1 with x pairs (block mfx even: 16-byte shared reads, an even row start): the best
      // tdeg-1 settings of star3d2r and star3d4r among 200 random ones on the H100
      // (docs/benchmarks.md, "Streaming at tdeg 1 against naive"), then 4-8 points per thread on
      // 128-512 threads.
      {"streaming", 1, s3("sb=128 tbx=64 tby=4 merge=block mfx=2 mfy=2 ufz=2")},
      {"streaming", 1,
       s3("sb=128 tbx=16 tby=16 merge=block mfx=2 mfy=2 ufz=2 retiming=1 use_constant=1")},
      {"streaming", 1, s3("sb=512 tbx=32 tby=8 merge=block mfx=2 mfy=2 ufz=8 retiming=1")},
      {"streaming", 1, s3("sb=256 tbx=32 tby=8 merge=block mfx=2 mfy=4 ufz=2 retiming=1")},
      {"streaming", 1, s3("sb=256 tbx=32 tby=4 merge=block mfx=4 mfy=2 ufz=2 retiming=1")},
      {"streaming", 1,
       s3("sb=256 tbx=64 tby=4 merge=block mfx=2 mfy=2 ufz=4 retiming=1 use_constant=1")},
      // x pairs on larger covered planes (less of the input ring per point), 512-1024 threads.
      {"streaming", 1, s3("sb=256 tbx=32 tby=16 merge=block mfx=2 ufz=2 retiming=1")},
      {"streaming", 1, s3("sb=256 tbx=64 tby=8 merge=block mfx=2 ufz=2 retiming=1")},
      {"streaming", 1, s3("sb=256 tbx=32 tby=32 merge=block mfx=2 ufz=2 retiming=1")},
      // tdeg 1 without retiming: for the stars the centre-queue kernel (2r + 1 values a point,
      // the in-plane neighbours read from the lagged input plane in shared memory; 42-44 are
      // cases 35, 36 and 41 without retiming), then more points or threads per block.
      {"streaming", 1, s3("sb=512 tbx=32 tby=8 merge=block mfx=2 mfy=2 ufz=8")},
      {"streaming", 1, s3("sb=256 tbx=32 tby=8 merge=block mfx=2 mfy=4 ufz=2")},
      {"streaming", 1, s3("sb=256 tbx=32 tby=32 merge=block mfx=2 ufz=2")},
      {"streaming", 1, s3("sb=256 tbx=32 tby=16 merge=block mfx=2 mfy=2 ufz=2")},
      {"streaming", 1, s3("sb=256 tbx=64 tby=8 merge=block mfx=2 mfy=2 ufz=2")},
      {"streaming", 1, s3("sb=512 tbx=32 tby=8 merge=block mfx=2 mfy=4 ufz=4")},
      {"streaming", 1, s3("sb=256 tbx=64 tby=4 merge=block mfx=2 mfy=2 ufz=4 use_constant=1")},
      {"streaming", 1, s3("sb=256 tbx=32 tby=16 merge=block mfx=2 mfy=4 ufz=2")},
  };
}

// Register-tile cases of the tiled family for stencils with >= 25 points (boxes of radius >= 2
// in 2-D and >= 1 in 3-D, where the multiply-adds, not DRAM, bind): block merging along y
// (and z) so that each thread computes a column chunk of points and every loaded input feeds
// the chunk's FMAs (Apply::block), x unmerged for coalesced rows, staged tile or not. The
// last case of each list is the best setting found by random search before the register
// tile (docs/studies/2026-11-21-part1-kernels-vs-naive-and-copy.md).
std::vector<FamilyCase> register_tile_cases(const Stencil& st) {
  if (st.size() < 25)
    return {};
  if (st.dims() == 2) {
    return {
        {"tiled", 1, "tbx=64 tby=4 merge=block mfy=8 ufy=8 use_shared=1"},
        {"tiled", 1, "tbx=64 tby=4 merge=block mfy=8 ufy=8 use_shared=0"},
        {"tiled", 1, "tbx=128 tby=4 merge=block mfy=8 ufy=8 use_shared=0"},
        {"tiled", 1, "tbx=32 tby=4 merge=block mfy=8 ufy=8 use_shared=0"},
        {"tiled", 1, "tbx=64 tby=4 merge=block mfy=8 ufy=8 use_shared=1 use_constant=1"},
        {"tiled", 1, "tbx=64 tby=4 merge=block mfy=4 ufy=4 use_shared=1"},
    };
  }
  return {
      {"tiled", 1, "tbx=32 tby=4 tbz=1 merge=block mfy=4 ufy=4 mfz=8 ufz=8 use_shared=1"},
      {"tiled", 1, "tbx=32 tby=4 tbz=1 merge=block mfy=4 ufy=4 mfz=8 ufz=8 use_shared=0"},
      {"tiled", 1, "tbx=32 tby=4 tbz=2 merge=block mfy=4 ufy=4 mfz=4 ufz=4 use_shared=1"},
      {"tiled", 1, "tbx=32 tby=4 tbz=2 merge=block mfy=4 ufy=4 mfz=4 ufz=4 use_shared=0"},
      {"tiled", 1, "tbx=32 tby=8 tbz=1 merge=block mfy=2 ufy=2 mfz=8 ufz=8 use_shared=1"},
      {"tiled", 1, "tbx=32 tby=8 tbz=1 merge=block mfy=2 ufy=2 mfz=8 ufz=8 use_shared=0"},
      {"tiled", 1, "tbx=32 tby=2 tbz=4 merge=block mfy=4 ufy=4 mfz=4 ufz=4 use_shared=1"},
      {"tiled", 1, "tbx=32 tby=4 tbz=4 merge=block mfy=2 ufy=2 mfz=2 ufz=2 use_shared=1"},
      {"tiled", 1,
       "tbx=32 tby=4 tbz=2 merge=block mfy=4 ufy=4 mfz=4 ufz=4 use_shared=1 "
       "use_constant=1"},
      {"tiled", 1,
       "tbx=32 tby=2 tbz=8 merge=block mfx=2 ufx=2 mfy=4 ufy=1 mfz=4 ufz=4 "
       "use_shared=0"},
      // Chunks in x and y (the plane loop of the boxes of >= kPlaneLoopPoints points loops over
      // the z-planes, so its chunk has no z points), tiles the space admits up to radius 4.
      {"tiled", 1, "tbx=32 tby=2 tbz=8 merge=block mfy=8 ufy=8 mfz=2 use_shared=0"},
      {"tiled", 1, "tbx=32 tby=2 tbz=8 merge=block mfx=2 ufx=2 mfy=8 ufy=8 mfz=2 use_shared=0"},
      {"tiled", 1, "tbx=32 tby=2 tbz=4 merge=block mfx=2 ufx=2 mfy=8 ufy=8 mfz=4 use_shared=0"},
      {"tiled", 1, "tbx=32 tby=4 tbz=4 merge=block mfx=2 ufx=2 mfy=4 ufy=4 mfz=4 use_shared=0"},
      {"tiled", 1, "tbx=64 tby=2 tbz=8 merge=block mfy=8 ufy=8 mfz=2 use_shared=0"},
      {"tiled", 1, "tbx=32 tby=2 tbz=8 merge=block mfx=4 ufx=4 mfy=8 ufy=8 mfz=2 use_shared=0"},
      {"tiled", 1, "tbx=32 tby=2 tbz=8 merge=block mfy=8 ufy=8 mfz=2 use_shared=1"},
      {"tiled", 1, "tbx=32 tby=4 tbz=4 merge=cyclic mfx=2 ufx=2 mfy=4 ufy=4 mfz=4 use_shared=0"},
      // The fastest box3d2r chunks of an exhaustive narrow space
      // (docs/studies/2026-11-25-box3d2r-fp64-roof-register-tiles.md): global loads, 32 x 2 x 4
      // threads.
      {"tiled", 1, "tbx=32 tby=2 tbz=4 merge=block mfy=4 ufy=4 mfz=4 ufz=4 use_shared=0"},
      {"tiled", 1, "tbx=32 tby=2 tbz=4 merge=block mfy=8 ufy=8 mfz=2 ufz=2 use_shared=0"},
  };
}

// Tensor-core cases (issue 47) for the stencils its rule admits (boxes; the family's own
// parameters over its held base parameters): the prototype's best variants per box
// (docs/studies/2026-12-05-dmma-pair-tiled-window.md: box3d2r nb 2 x 4 warps minb 3, box3d3r
// and box3d4r nb 1 x 8 warps minb 2, box2d4r nb 1 x 4 warps minb 4, box2d2r coefficients in
// registers), then their neighbours.
std::vector<FamilyCase> mma_cases(const Stencil& st) {
  const ProblemShape shape = shape_of(st, st.dims() == 2 ? Grid{64, 64, 1} : Grid{64, 64, 64});
  Setting probe = setting_from_fields(st.dims(), "mma=1 tbx=32 tby=1 tbz=1");
  probe = canonical(shape, probe);
  const KernelFamily* f = find_family(probe);
  for (const FamilyRule& rule : f ? f->rules() : std::span<const FamilyRule>{}) {
    if (!rule.check(shape, probe, nullptr))
      return {};
  }
  const auto m = [](const char* fields) {
    return std::string("mma=1 tbx=32 tby=1 tbz=1 ") + fields;
  };
  if (st.dims() == 2) {
    return {
        {"mma", 1, m("mma_nb=1 mma_warps=4 mma_minb=4")},
        {"mma", 1, m("mma_nb=1 mma_warps=4 mma_creg=1 mma_minb=1")},
        {"mma", 1, m("mma_nb=2 mma_warps=4 mma_minb=2")},
        {"mma", 1, m("mma_nb=1 mma_warps=8 mma_minb=2")},
    };
  }
  return {
      {"mma", 1, m("mma_nb=2 mma_warps=4 mma_minb=3")},
      {"mma", 1, m("mma_nb=1 mma_warps=8 mma_minb=2")},
      {"mma", 1, m("mma_nb=1 mma_warps=4 mma_minb=4")},
      {"mma", 1, m("mma_nb=2 mma_warps=4 mma_creg=1 mma_minb=1")},
      {"mma", 1, m("mma_nb=1 mma_warps=16 mma_minb=1")},
      {"mma", 1, m("mma_nb=2 mma_warps=8 mma_minb=1")},
  };
}

// EBISU (the public code of ICS'23, built for sm_90 with a driver of its own) as measured on an
// H100 80GB HBM3 on 2026-11-21, before isletune's kernels (cited in
// docs/studies/2026-11-24-typical-stencils-tuner-120s-h100.md): 2-D at 8192^2; 3-D at
// 512x256x1024, the cells of 512^3, which its 3-D code cannot tile. Only at 8192^2 / 512^3.
double ebisu_figure(const std::string& stencil, const Grid& g) {
  static const std::map<std::string, double> k2 = {
      {"star2d1r", 610}, {"box2d1r", 428}, {"star2d2r", 400}};
  static const std::map<std::string, double> k3 = {{"star3d1r", 307}, {"box3d1r", 171}};
  const auto& table = g.nz == 1 ? k2 : k3;
  const bool anchor_grid = g.nz == 1 ? g.nx == 8192 && g.ny == 8192 : g.nx == 512 && g.nz == 512;
  const auto it = table.find(stencil);
  return anchor_grid && it != table.end() ? it->second : 0.0;
}

int run_families(const Options& o) {
  std::FILE* csv = nullptr;
  double copy_gbs = 0;
  for (const std::string& name : o.stencils) {
    const Stencil st = typical_stencil(name);
    const Grid g = st.dims() == 2 ? Grid{o.n2d, o.n2d, 1} : Grid{o.n3d, o.n3d, o.n3d};
    CudaOptions co;
    co.min_rep_ms = 5;
    co.slow_factor = 0;  // the benchmark verifies and times every case, the slowest included
    CudaEvaluator e(Problem{st, g, 48, 1, 5}, co);
    if (!csv) {
      copy_gbs = e.environment().copy_bandwidth_gbs;
      std::printf(
          "# GPU %s, driver %d, NVRTC %s, SM clock %d MHz, copy %.0f GB/s -> %.1f GCells/s\n",
          e.environment().name.c_str(), e.environment().driver_version,
          e.environment().nvrtc_version.c_str(), e.environment().sm_clock_mhz, copy_gbs,
          copy_gbs / 16);
      csv = open_csv(o.csv, "families", e.environment().name,
                     "stencil,grid,family,tdeg,gcells,naive_gcells,copy_gcells,ebisu_gcells,"
                     "status,compile_ms,registers,shared_bytes,occupancy,error_l2,gpu,setting");
      std::printf("%-9s %-12s %-10s %4s %8s %7s %6s %6s %6s %5s %7s  %s\n", "stencil", "grid",
                  "family", "tdeg", "GCells/s", "xnaive", "naive", "copy", "ebisu", "regs",
                  "comp_ms", "setting / status");
    }
    // With --case only that setting runs (its kernel is then the only isl_kernel launched,
    // for a profiler); naive is 0 in the row.
    std::vector<Setting> batch;
    std::vector<FamilyCase> cases;
    if (o.family_case < 0) {
      batch.push_back(naive_setting(st.dims()));
      cases.push_back({"naive", 1, ""});
    }
    auto all = family_cases(st.dims());
    for (const FamilyCase& c : register_tile_cases(st))
      all.push_back(c);
    for (const FamilyCase& c : mma_cases(st))
      all.push_back(c);
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (o.family_case >= 0 && static_cast<int>(i) != o.family_case)
        continue;
      if (!o.family_cases_only.empty() &&
          std::find(o.family_cases_only.begin(), o.family_cases_only.end(), static_cast<int>(i)) ==
              o.family_cases_only.end())
        continue;
      if (!o.family.empty() && all[i].family != o.family)
        continue;
      const FamilyCase& c = all[i];
      cases.push_back(c);
      batch.push_back(setting_from_fields(st.dims(), c.fields));
      batch.back()[Param::tdeg] = c.tdeg;
    }
    const auto got = e.evaluate(batch);
    const double naive = o.family_case < 0 ? gcells(g, got[0]) : 0.0;
    const double copy = copy_gbs / 16;
    const double ebisu = ebisu_figure(name, g);
    const std::string grid_text =
        std::to_string(g.nx) + "x" + std::to_string(g.ny) + "x" + std::to_string(g.nz);
    for (std::size_t i = 0; i < got.size(); ++i) {
      const Measurement& m = got[i];
      const double v = gcells(g, m);
      std::printf("%-9s %-12s %-10s %4d %8.1f %7.2f %6.1f %6.1f %6.0f %5d %7.0f  %s%s%s\n",
                  name.c_str(), grid_text.c_str(), cases[i].family.c_str(), cases[i].tdeg, v,
                  naive > 0 ? v / naive : 0.0, naive, copy, ebisu, m.registers, m.compile_ms,
                  cases[i].fields.c_str(), m.ok() ? "" : "  -> ", m.ok() ? "" : m.message.c_str());
      std::fprintf(csv, "%s,%s,%s,%d,%.2f,%.2f,%.2f,%.0f,%s,%.0f,%d,%d,%.3f,%.3g,\"%s\",\"%s\"\n",
                   name.c_str(), grid_text.c_str(), cases[i].family.c_str(), cases[i].tdeg, v,
                   naive, copy, ebisu, std::string(status_name(m.status)).c_str(), m.compile_ms,
                   m.registers, m.shared_bytes, m.occupancy, m.error_l2,
                   e.environment().name.c_str(), canonical_key(batch[i]).c_str());
    }
    std::fflush(csv);
    std::fflush(stdout);
  }
  if (csv)
    std::fclose(csv);
  return 0;
}

// --source KEY: the generated kernel source of one setting (canonical key or name=value
// fields over the naive setting) for the first --stencils entry; no GPU needed.
int print_source(const Options& o) {
  const Stencil st = typical_stencil(o.stencils.front());
  const Grid g = st.dims() == 2 ? Grid{o.n2d, o.n2d, 1} : Grid{o.n3d, o.n3d, o.n3d};
  std::string fields = o.source_key;
  for (char& c : fields) {
    if (c == ',')
      c = ' ';
  }
  const Setting s = setting_from_fields(st.dims(), fields);
  if (const auto why = unsupported_reason(st, g, s, DeviceLimits{}))
    throw isletune::InputError("the setting cannot be built: " + *why);
  const KernelSource k = generate_kernel(st, g, s, DeviceLimits{});
  std::fputs(k.source.c_str(), stdout);
  std::fprintf(stderr, "main: block %dx%dx%d grid %lldx%lldx%lld shared %d B\n", k.launch.block[0],
               k.launch.block[1], k.launch.block[2], k.launch.grid[0], k.launch.grid[1],
               k.launch.grid[2], k.launch.shared_bytes);
  return 0;
}

// Evaluations per minute and GPU-busy fraction (verify + timing time over wall time), first
// with an empty cubin cache, then again with the cache warm (a fresh worker, same settings).
int run_throughput(const Options& o) {
  const Stencil st = typical_stencil(o.throughput_stencil);
  const Grid g = st.dims() == 2 ? Grid{o.n2d, o.n2d, 1} : Grid{o.n3d, o.n3d, o.n3d};
  const auto dir = std::filesystem::temp_directory_path() /
                   ("isletune-bench-cache-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ::setenv("ISLETUNE_CACHE_DIR", dir.c_str(), 1);
  std::vector<Setting> settings;
  for (const char* phase : {"cold", "warm"}) {
    CudaEvaluator e(Problem{st, g, 48, 2, 10});
    if (settings.empty()) {
      settings = random_settings(part1_space(st, g, e.limits()),
                                 o.throughput_batches * o.throughput_batch, o.seed + 1);
    }
    double busy_ms = 0, compile_ms = 0;
    int ok = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t b = 0; b < settings.size(); b += o.throughput_batch) {
      const std::size_t end = std::min(settings.size(), b + o.throughput_batch);
      const auto got = e.evaluate(std::span<const Setting>(settings.data() + b, end - b));
      for (const auto& m : got) {
        busy_ms += m.verify_ms + m.run_ms;
        compile_ms += m.compile_ms;
        ok += m.ok();
      }
    }
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf(
        "throughput %s cache: %s %dx%dx%d, %zu evaluations (%d ok) in %.1f s = %.0f "
        "evaluations/min, GPU-busy %.0f%%, compile+load %.0f ms total\n",
        phase, o.throughput_stencil.c_str(), g.nx, g.ny, g.nz, settings.size(), ok, wall,
        60.0 * settings.size() / wall, 100 * busy_ms / 1e3 / wall, compile_ms);
    std::fflush(stdout);
  }
  std::filesystem::remove_all(dir);
  return 0;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty())
      out.push_back(item);
  }
  return out;
}

}  // namespace
}  // namespace isletune::cuda

constexpr const char* kUsage =
    "Usage: isletune-bench-kernels [--stencils a,b] [--budget-s S] [--samples2d N] "
    "[--samples3d N]\n"
    "       [--batch N] [--n2d N] [--n3d N] [--seed S] [--csv PATH] [--throughput]\n"
    "       [--throughput-stencil NAME] [--no-kernels] [--dry-run] [--families]\n"
    "       [--source name=value,...] [--help]\n"
    "Naive vs tuned (best random settings of the default space within --budget-s seconds of\n"
    "measuring per stencil, default 15) vs copy GCells/s and the FP64 roof, for the typical\n"
    "stencils at 8192^2 / 512^3; rows also go to docs/bench/kernels-<gpu>.csv (--csv).\n"
    "--families: hand-picked settings per family x tdeg (default stencils: the five anchors\n"
    "star2d1r box2d1r star2d2r star3d1r box3d1r), verified and timed, next to naive, copy and\n"
    "EBISU; rows go to docs/bench/families-<gpu>.csv (--csv).\n"
    "--case I: only the I-th hand-picked setting (from 0), without naive.\n"
    "--cases I,J,...: naive and only these hand-picked settings.\n"
    "--family NAME: only the hand-picked settings of that family (tiled, streaming, mma).\n"
    "--source FIELDS: print the generated kernel of one setting for the first stencil.\n";
int main(int argc, char** argv) {
  using namespace isletune::cuda;
  Options o;
  bool kernels = true;
  bool stencils_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto next = [&]() -> std::string {
      if (i + 1 >= argc)
        throw isletune::InputError("option " + a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--help" || a == "-h") {
        std::fputs(kUsage, stdout);
        return 0;
      }
      if (a == "--stencils") {
        o.stencils = split(next());
        stencils_given = true;
      } else if (a == "--samples2d")
        o.samples_2d = std::stoi(next());
      else if (a == "--samples3d")
        o.samples_3d = std::stoi(next());
      else if (a == "--budget-s")
        o.budget_s = std::stod(next());
      else if (a == "--batch")
        o.batch = std::max(1, std::stoi(next()));
      else if (a == "--csv")
        o.csv = next();
      else if (a == "--n2d")
        o.n2d = std::stoi(next());
      else if (a == "--n3d")
        o.n3d = std::stoi(next());
      else if (a == "--seed")
        o.seed = std::stoull(next());
      else if (a == "--throughput")
        o.throughput = true;
      else if (a == "--throughput-stencil")
        o.throughput_stencil = next();
      else if (a == "--families")
        o.families = true;
      else if (a == "--case")
        o.family_case = std::stoi(next());
      else if (a == "--cases") {
        for (const std::string& c : split(next()))
          o.family_cases_only.push_back(std::stoi(c));
      } else if (a == "--family")
        o.family = next();
      else if (a == "--source")
        o.source_key = next();
      else if (a == "--no-kernels")
        kernels = false;
      else if (a == "--dry-run")
        o.dry_run = true;
      else {
        std::fprintf(stderr, "isletune-bench-kernels: unknown option %s\n%s", a.c_str(), kUsage);
        return 2;
      }
    } catch (const std::exception&) {
      std::fprintf(stderr, "isletune-bench-kernels: option %s needs a valid value\n%s", a.c_str(),
                   kUsage);
      return 2;
    }
  }
  try {
    if (!o.source_key.empty())
      return print_source(o);
    if (o.families) {
      if (!stencils_given)
        o.stencils = {"star2d1r", "box2d1r", "star2d2r", "star3d1r", "box3d1r"};
      return run_families(o);
    }
    if (kernels)
      run_kernels(o);
    if (o.throughput && !o.dry_run)
      run_throughput(o);
  } catch (const isletune::InputError& e) {
    std::fprintf(stderr, "isletune-bench-kernels: %s\n", e.what());
    return 1;
  }
  return 0;
}
