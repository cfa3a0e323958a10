// Standalone .cu generation for `isletune export`.
#include "eval/cuda/standalone.hpp"

#include <algorithm>
#include <sstream>

#include "common/version.hpp"

namespace isletune::cuda {
namespace {

// Drops `#pragma once` lines (the pieces are concatenated into one translation unit).
std::string without_pragma_once(const std::string& text) {
  std::istringstream in(text);
  std::string out, line;
  while (std::getline(in, line)) {
    if (line.rfind("#pragma once", 0) == 0)
      continue;
    out += line;
    out += '\n';
  }
  return out;
}

constexpr const char* kMain = R"MAIN(
// ---- driver: allocate, initialise, verify against the reference, time ----
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,              \
                   cudaGetErrorString(e_));                                           \
      std::exit(2);                                                                   \
    }                                                                                 \
  } while (0)

static double *g_in0, *g_a, *g_b, *g_partial;

// The tuned kernel's launches for `steps` steps: isl_launch_schedule's main launches (ISL_S
// steps each), then the leftover steps as one launch of the entry of their depth
// (isl_rest<r>) or, where the export has none (r = 1), one-step tail launches.
static long long tuned_launches(long long steps) {
  const IslLaunchSchedule plan = isl_launch_schedule(steps, ISL_S);
  return plan.main_launches + (isl_has_rest(plan.tail_launches) ? 1 : plan.tail_launches);
}

// Launch t of tuned_launches(steps).
static void launch_tuned(long long t, long long steps, const double* src, double* dst) {
  const IslLaunchSchedule plan = isl_launch_schedule(steps, ISL_S);
  if (t < plan.main_launches) {
    isl_kernel<<<dim3(ISL_GX, ISL_GY, ISL_GZ), dim3(ISL_BX, ISL_BY, ISL_BZ), ISL_SMEM>>>(src, dst);
    return;
  }
  if (isl_launch_rest(plan.tail_launches, src, dst))
    return;
#if ISL_HAS_TAIL
  isl_tail<<<dim3(ISL_TGX, ISL_TGY, ISL_TGZ), dim3(ISL_TBX, ISL_TBY, ISL_TBZ), ISL_TSMEM>>>(src, dst);
#endif
}

// Runs `steps` steps from the input into the NaN-poisoned ping-pong buffers; the tuned
// kernel follows tuned_launches.
static double* run(bool reference, int steps) {
  isl_fill_nan<<<2048, 256>>>(g_a);
  isl_fill_nan<<<2048, 256>>>(g_b);
  const double* src = g_in0;
  double* dst = g_a;
  const long long launches = reference ? steps : tuned_launches(steps);
  for (long long t = 0; t < launches; ++t) {
    if (reference) {
      isl_reference_step<<<(unsigned)((isl::kCells + 255) / 256), 256>>>(src, dst);
    } else {
      launch_tuned(t, steps, src, dst);
    }
    CHECK(cudaGetLastError());
    src = dst;
    dst = dst == g_a ? g_b : g_a;
  }
  CHECK(cudaDeviceSynchronize());
  return const_cast<double*>(src);
}

// Relative L2 and max relative error of out against ref; non-finite outputs counted.
static void compare(const double* out, const double* ref, double& l2, double& mx, double& bad) {
  isl_compare<<<1024, 256>>>(out, ref, g_partial);
  CHECK(cudaGetLastError());
  std::vector<double> h(4 * 1024);
  CHECK(cudaMemcpy(h.data(), g_partial, h.size() * 8, cudaMemcpyDeviceToHost));
  double d2 = 0, r2 = 0;
  mx = 0;
  bad = 0;
  for (int i = 0; i < 1024; ++i) {
    d2 += h[4 * i];
    r2 += h[4 * i + 1];
    mx = std::fmax(mx, h[4 * i + 2]);
    bad += h[4 * i + 3];
  }
  l2 = r2 > 0 ? std::sqrt(d2 / r2) : std::sqrt(d2);
}

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : ISL_STEPS;
  const size_t bytes = (size_t)isl::kCells * sizeof(double);
  double *ref_long, *ref_short;
  for (double** p : {&g_in0, &g_a, &g_b, &ref_long, &ref_short}) CHECK(cudaMalloc(p, bytes));
  CHECK(cudaMalloc(&g_partial, 4 * 1024 * sizeof(double)));
#if ISL_HAS_TAIL
  if (ISL_TSMEM > 48 * 1024) {
    CHECK(cudaFuncSetAttribute(isl_tail, cudaFuncAttributeMaxDynamicSharedMemorySize, ISL_TSMEM));
  }
#endif
  if (ISL_SMEM > 48 * 1024) {
    CHECK(cudaFuncSetAttribute(isl_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, ISL_SMEM));
  }
  CHECK(isl_rest_attributes());
  isl_fill_random<<<2048, 256>>>(g_in0, 20261121ULL);
  CHECK(cudaMemcpy(ref_long, run(true, 48), bytes, cudaMemcpyDeviceToDevice));
  CHECK(cudaMemcpy(ref_short, run(true, 7), bytes, cudaMemcpyDeviceToDevice));
  double l2 = 0, mx = 0, bad = 0, l2s = 0, mxs = 0, bads = 0;
  compare(run(false, 48), ref_long, l2, mx, bad);
  compare(run(false, 7), ref_short, l2s, mxs, bads);
  // Every leftover entry: ISL_S + r steps (one main launch, then the entry of depth r).
  for (int r = 2; r < ISL_S; ++r) {
    if (!isl_has_rest(r))
      continue;
    double l2r = 0, mxr = 0, badr = 0;
    CHECK(cudaMemcpy(ref_short, run(true, ISL_S + r), bytes, cudaMemcpyDeviceToDevice));
    compare(run(false, ISL_S + r), ref_short, l2r, mxr, badr);
    l2s = std::fmax(l2s, l2r);
    mxs = std::fmax(mxs, mxr);
    bads += badr;
  }
  const bool ok = bad + bads == 0 && std::fmax(l2, l2s) <= 1e-12 && std::fmax(mx, mxs) <= 1e-10;
  std::printf("verification (48 and 7 steps, and each leftover depth, vs the naive reference): "
              "%s, rel L2 %.3g, max rel %.3g, non-finite %.0f\n",
              ok ? "passed" : "FAILED", std::fmax(l2, l2s), std::fmax(mx, mxs), bad + bads);

  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  double* src = g_a;
  double* dst = g_b;
  const dim3 grid(ISL_GX, ISL_GY, ISL_GZ), block(ISL_BX, ISL_BY, ISL_BZ);
  for (int t = 0; t < 2; ++t) isl_kernel<<<grid, block, ISL_SMEM>>>(src, dst);
  CHECK(cudaEventRecord(e0));
  // Per-step time over the whole schedule.
  for (long long t = 0; t < tuned_launches(steps); ++t) {
    launch_tuned(t, steps, src, dst);
    double* tmp = src;
    src = dst;
    dst = tmp;
  }
  CHECK(cudaEventRecord(e1));
  CHECK(cudaEventSynchronize(e1));
  CHECK(cudaGetLastError());
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, e0, e1));
  const double per_step = ms / steps;
  const IslLaunchSchedule plan = isl_launch_schedule(steps, ISL_S);
  std::printf("%d steps (%lld launches of %d steps, %lld leftover steps%s): %.4f ms per step, "
              "%.1f GCells/s\n",
              steps, plan.main_launches, ISL_S, plan.tail_launches,
              plan.tail_launches == 0        ? ""
              : isl_has_rest(plan.tail_launches) ? " in one launch at their depth"
                                                 : " on the one-step tail",
              per_step, (double)isl::kCells / (per_step * 1e-3) / 1e9);
  return ok ? 0 : 1;
}
)MAIN";

// isl_has_rest, isl_launch_rest and isl_rest_attributes over the kernel's rest entries (the
// leftover steps of a run at their depth; codegen.hpp, generate_export_kernel).
std::string rest_launchers(const KernelSource& kernel) {
  std::ostringstream has, launch, attributes;
  for (const RestEntry& r : kernel.rest_entries) {
    const LaunchConfig& l = r.launch;
    has << "    case " << l.steps << ":\n";
    launch << "    case " << l.steps << ":\n      " << r.entry << "<<<dim3(" << l.grid[0] << ", "
           << l.grid[1] << ", " << l.grid[2] << "), dim3(" << l.block[0] << ", " << l.block[1]
           << ", " << l.block[2] << "), " << l.shared_bytes
           << ">>>(src, dst);\n      return true;\n";
    if (l.shared_bytes > 48 * 1024) {
      attributes << "  if (cudaError_t e = cudaFuncSetAttribute(" << r.entry
                 << ", cudaFuncAttributeMaxDynamicSharedMemorySize, " << l.shared_bytes
                 << "); e != cudaSuccess)\n    return e;\n";
    }
  }
  std::ostringstream s;
  s << "\n// ---- the leftover steps of a run: one launch at their depth ----\n"
    << "static bool isl_has_rest(long long depth) {\n  switch (depth) {\n"
    << has.str() << (kernel.rest_entries.empty() ? "" : "      return true;\n")
    << "    default:\n      return false;\n  }\n}\n\n"
    << "static bool isl_launch_rest(long long depth, const double* src, double* dst) {\n"
    << "  switch (depth) {\n"
    << launch.str()
    << "    default:\n      (void)src;\n      (void)dst;\n      return false;\n  }\n}\n\n"
    << "static cudaError_t isl_rest_attributes() {\n"
    << attributes.str() << "  return cudaSuccess;\n}\n";
  return s.str();
}

}  // namespace

int standalone_default_steps(int steps_per_launch) {
  const int per = std::max(1, steps_per_launch);
  return (kStandaloneSteps + per - 1) / per * per;
}

std::string write_standalone_cu(const Stencil& stencil, const Grid& grid,
                                const KernelSource& kernel, const StandaloneInfo& info, int steps) {
  if (steps <= 0)
    steps = standalone_default_steps(kernel.launch.steps);
  std::ostringstream s;
  s << "// Standalone kernel exported by isletune " << version() << ".\n"
    << "// Stencil " << stencil.name() << ", grid " << grid.nx << "x" << grid.ny << "x" << grid.nz
    << ", double precision.\n"
    << "// Setting: " << info.setting_key << "\n";
  if (info.recorded_ms > 0) {
    s << "// Recorded by the tuner: " << info.recorded_ms << " ms per step"
      << (info.recorded_on.empty() ? "" : " on " + info.recorded_on)
      << (info.replayed.empty() ? "" : " (" + info.replayed + ")") << ".\n";
  }
  s << "// Build: nvcc -arch=sm_90 -O3 -o best best.cu   Run: ./best [timed steps]\n"
    << "// Timed steps: " << steps << " by default, a multiple of the kernel's "
    << std::max(1, kernel.launch.steps) << " steps per launch;\n"
    << "// the leftover steps of another count run as one launch of the same kernel at their\n"
    << "// depth (isl_rest<r>; one-step tail launches where there is none).\n"
    << "// It verifies the kernel against a naive reference (48 and 7 steps and each leftover\n"
    << "// depth, random inputs) and prints the time per step and GCells/s; exit code 1 if\n"
    << "// verification fails.\n"
    << "#include <cuda_runtime.h>\n\n"
    << "#define ISL_BX " << kernel.launch.block[0] << "\n#define ISL_BY " << kernel.launch.block[1]
    << "\n#define ISL_BZ " << kernel.launch.block[2] << "\n#define ISL_GX " << kernel.launch.grid[0]
    << "\n#define ISL_GY " << kernel.launch.grid[1] << "\n#define ISL_GZ " << kernel.launch.grid[2]
    << "\n#define ISL_SMEM " << kernel.launch.shared_bytes << "\n#define ISL_STEPS " << steps
    << "\n#define ISL_S " << std::max(1, kernel.launch.steps) << "\n#define ISL_HAS_TAIL "
    << (kernel.tail_entry.empty() ? 0 : 1) << "\n#define ISL_TBX " << kernel.tail_launch.block[0]
    << "\n#define ISL_TBY " << kernel.tail_launch.block[1] << "\n#define ISL_TBZ "
    << kernel.tail_launch.block[2] << "\n#define ISL_TGX " << kernel.tail_launch.grid[0]
    << "\n#define ISL_TGY " << kernel.tail_launch.grid[1] << "\n#define ISL_TGZ "
    << kernel.tail_launch.grid[2] << "\n#define ISL_TSMEM " << kernel.tail_launch.shared_bytes
    << "\n\n// ---- the launch schedule ----\n"
    << without_pragma_once(std::string(kernel_template("launch_schedule.hpp")))
    << "\n// ---- the tuned kernel ----\n"
    << without_pragma_once(kernel.source) << "\n// ---- the naive reference ----\n"
    << without_pragma_once(generate_reference(stencil, grid)) << rest_launchers(kernel) << kMain;
  return s.str();
}

}  // namespace isletune::cuda
