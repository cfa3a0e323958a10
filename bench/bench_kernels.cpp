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
  int samples_2d = 64;  // at most this many random settings per stencil
  int samples_3d = 64;
  double budget_s = 15;  // measuring time per stencil (batches stop once it is spent)
  int batch = 8;
  std::string csv;  // "" = docs/bench/kernels-<gpu>.csv
  int n2d = 8192;
  int n3d = 512;
  std::uint64_t seed = 2026;
  bool throughput = false;
  bool dry_run = false;  // sample settings only (no GPU)
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
      const std::string path =
          o.csv.empty() ? "docs/bench/kernels-" + slug(e.environment().name) + ".csv" : o.csv;
      std::filesystem::create_directories(std::filesystem::path(path).parent_path());
      csv = std::fopen(path.c_str(), "w");
      if (!csv)
        throw isletune::InputError("cannot write the CSV file " + path + ".");
      std::fprintf(csv,
                   "stencil,grid,naive_gcells,tuned_gcells,copy_gcells,fp64_roof_gcells,"
                   "flops_per_cell,evaluated,verified,budget_s,gpu,setting\n");
      std::printf("# CSV: %s\n", path.c_str());
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
    "       [--throughput-stencil NAME] [--no-kernels] [--dry-run] [--help]\n"
    "Naive vs tuned (best random settings of the default space within --budget-s seconds of\n"
    "measuring per stencil, default 15) vs copy GCells/s and the FP64 roof, for the typical\n"
    "stencils at 8192^2 / 512^3; rows also go to docs/bench/kernels-<gpu>.csv (--csv).\n";
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
      if (a == "--help" || a == "-h") {
        std::fputs(kUsage, stdout);
        return 0;
      }
      if (a == "--stencils")
        o.stencils = split(next());
      else if (a == "--samples2d")
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
