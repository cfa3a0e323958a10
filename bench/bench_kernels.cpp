// isletune-bench-kernels: the part-1 kernel benchmark. For each typical stencil at
// 8192^2 (2-D) / 512^3 (3-D), double precision, it measures the naive kernel (one point per
// thread, literal coefficients) and the best of N uniformly random valid part-1 settings
// (Space::random_setting over a narrowed part-1 space), next to the device-to-device copy
// bandwidth measured in the same run, and prints GCells/s, speed-up over naive and the
// fraction of the copy roofline (16 B per cell) or, for compute-bound stencils, of the FP64
// roof. --throughput measures tuning throughput (evaluations per minute, GPU-busy fraction)
// with a cold and then a warm cubin cache.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/rng.hpp"
#include "eval/cuda/codegen.hpp"
#include "eval/cuda/cuda_evaluator.hpp"
#include "space/space.hpp"
#include "stencil/typical.hpp"

namespace isletune::cuda {
namespace {

struct Options {
  std::vector<std::string> stencils = typical_names();
  int samples_2d = 32;
  int samples_3d = 16;
  int n2d = 8192;
  int n3d = 512;
  std::uint64_t seed = 2026;
  bool throughput = false;
  bool dry_run = false;  // sample settings only (no GPU)
  std::string throughput_stencil = "star3d2r";
  int throughput_batches = 4;
  int throughput_batch = 16;
};

// The part-1 space the benchmark searches: ARCHITECTURE §4 defaults narrowed to part 1 and
// to block and merge values that fit a 2-D/3-D tile.
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

int run_kernels(const Options& o) {
  std::printf("%-10s %8s %8s %6s %7s %9s  %s\n", "stencil", "naive", "best", "x", "roof%", "ok/N",
              "best setting (GCells/s; roof = copy BW/16 or FP64 peak/FPC)");
  double copy_gbs = 0;
  for (const std::string& name : o.stencils) {
    const Stencil st = typical_stencil(name);
    const Grid g = st.dims() == 2 ? Grid{o.n2d, o.n2d, 1} : Grid{o.n3d, o.n3d, o.n3d};
    const int n = st.dims() == 2 ? o.samples_2d : o.samples_3d;
    if (o.dry_run) {
      const Space space = part1_space(st, g, DeviceLimits{});
      const auto batch = random_settings(space, n, o.seed);
      std::printf("%-10s %zu settings sampled, e.g. %s\n", name.c_str(), batch.size(),
                  batch.empty() ? "-" : canonical_key(batch.front()).c_str());
      continue;
    }
    CudaEvaluator e(Problem{st, g, 48, 2, 10});
    if (copy_gbs == 0) {
      copy_gbs = e.environment().copy_bandwidth_gbs;
      std::printf(
          "# GPU %s (%s), driver %d, CUDA runtime %d, NVRTC %s, SM clock %d MHz, "
          "copy %.0f GB/s -> roofline %.1f GCells/s\n",
          e.environment().name.c_str(), e.environment().uuid.c_str(),
          e.environment().driver_version, e.environment().runtime_version,
          e.environment().nvrtc_version.c_str(), e.environment().sm_clock_mhz, copy_gbs,
          copy_gbs / 16);
    }
    const Space space = part1_space(st, g, e.limits());
    std::vector<Setting> batch{naive_setting(st.dims())};
    for (const Setting& s : random_settings(space, n, o.seed))
      batch.push_back(s);
    const auto t0 = std::chrono::steady_clock::now();
    const auto got = e.evaluate(batch);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::size_t best = 0;
    int ok = 0;
    for (std::size_t i = 1; i < got.size(); ++i) {
      ok += got[i].ok();
      if (gcells(g, got[i]) > gcells(g, got[best]))
        best = i;
    }
    const double naive = gcells(g, got[0]);
    const double top = gcells(g, got[best]);
    const double mem_roof = copy_gbs / 16;
    const double fp_roof = 33.5e3 / st.flops_per_cell();  // H100 FP64 vector peak, GFLOP/s
    const double roof = std::min(mem_roof, fp_roof);
    std::printf("%-10s %8.1f %8.1f %6.2f %6.0f%% %4d/%-4d  %s%s  [%.0f s]\n", name.c_str(), naive,
                top, naive > 0 ? top / naive : 0.0, 100 * top / roof, ok,
                static_cast<int>(batch.size() - 1),
                best == 0 ? "naive" : canonical_key(batch[best]).c_str(),
                fp_roof < mem_roof ? " (FP64-bound)" : "", wall);
    if (!got[0].ok())
      std::printf("  naive failed: %s\n", got[0].message.c_str());
    std::map<std::string, int> failures;
    for (const auto& m : got) {
      if (!m.ok())
        ++failures[std::string(status_name(m.status))];
    }
    for (const auto& [status, count] : failures)
      std::printf("  %d %s\n", count, status.c_str());
    std::fflush(stdout);
  }
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

// Usage: isletune-bench-kernels [--stencils a,b] [--samples2d N] [--samples3d N] [--n2d N]
//        [--n3d N] [--seed S] [--throughput] [--no-kernels] [--dry-run]
int main(int argc, char** argv) {
  using namespace isletune::cuda;
  Options o;
  bool kernels = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto next = [&]() -> std::string {
      if (i + 1 >= argc)
        throw isletune::InputError("option " + a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--stencils")
        o.stencils = split(next());
      else if (a == "--samples2d")
        o.samples_2d = std::stoi(next());
      else if (a == "--samples3d")
        o.samples_3d = std::stoi(next());
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
      else if (a == "--no-kernels")
        kernels = false;
      else if (a == "--dry-run")
        o.dry_run = true;
      else
        throw isletune::InputError("unknown option " + a);
    } catch (const std::logic_error& e) {
      std::fprintf(stderr, "isletune-bench-kernels: bad value for %s\n", a.c_str());
      return 2;
    }
  }
  try {
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
