// Standalone .cu generation for `isletune export`.
#include "eval/cuda/standalone.hpp"

#include <algorithm>
#include <sstream>

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

// One launch of the tuned kernel: the main entry (ISL_S steps) or the one-step tail entry.
static void launch_tuned(bool tail, const double* src, double* dst) {
#if ISL_HAS_TAIL
  if (tail) {
    isl_tail<<<dim3(ISL_TGX, ISL_TGY, ISL_TGZ), dim3(ISL_TBX, ISL_TBY, ISL_TBZ), ISL_TSMEM>>>(src, dst);
    return;
  }
#endif
  (void)tail;
  isl_kernel<<<dim3(ISL_GX, ISL_GY, ISL_GZ), dim3(ISL_BX, ISL_BY, ISL_BZ), ISL_SMEM>>>(src, dst);
}

// Runs `steps` steps from the input into the NaN-poisoned ping-pong buffers; the tuned
// kernel follows isl_launch_schedule (main launches, then one-step tail launches).
static double* run(bool reference, int steps) {
  isl_fill_nan<<<2048, 256>>>(g_a);
  isl_fill_nan<<<2048, 256>>>(g_b);
  const double* src = g_in0;
  double* dst = g_a;
  const IslLaunchSchedule plan = isl_launch_schedule(steps, ISL_S);
  const long long launches = reference ? steps : plan.main_launches + plan.tail_launches;
  for (long long t = 0; t < launches; ++t) {
    if (reference) {
      isl_reference_step<<<(unsigned)((isl::kCells + 255) / 256), 256>>>(src, dst);
    } else {
      launch_tuned(t >= plan.main_launches, src, dst);
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
  isl_fill_random<<<2048, 256>>>(g_in0, 20261121ULL);
  CHECK(cudaMemcpy(ref_long, run(true, 48), bytes, cudaMemcpyDeviceToDevice));
  CHECK(cudaMemcpy(ref_short, run(true, 7), bytes, cudaMemcpyDeviceToDevice));
  double l2 = 0, mx = 0, bad = 0, l2s = 0, mxs = 0, bads = 0;
  compare(run(false, 48), ref_long, l2, mx, bad);
  compare(run(false, 7), ref_short, l2s, mxs, bads);
  const bool ok = bad + bads == 0 && std::fmax(l2, l2s) <= 1e-12 && std::fmax(mx, mxs) <= 1e-10;
  std::printf("verification (48 and 7 steps vs the naive reference): %s, rel L2 %.3g, "
              "max rel %.3g, non-finite %.0f\n",
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
  const IslLaunchSchedule timed = isl_launch_schedule(steps, ISL_S);
  for (long long t = 0; t < timed.main_launches + timed.tail_launches; ++t) {
    launch_tuned(t >= timed.main_launches, src, dst);
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
  std::printf("%d steps: %.4f ms per step, %.1f GCells/s\n", steps, per_step,
              (double)isl::kCells / (per_step * 1e-3) / 1e9);
  return ok ? 0 : 1;
}
)MAIN";

}  // namespace

std::string write_standalone_cu(const Stencil& stencil, const Grid& grid,
                                const KernelSource& kernel, const StandaloneInfo& info, int steps) {
  std::ostringstream s;
  s << "// Standalone kernel exported by isletune " << ISLETUNE_VERSION << ".\n"
    << "// Stencil " << stencil.name() << ", grid " << grid.nx << "x" << grid.ny << "x" << grid.nz
    << ", double precision.\n"
    << "// Setting: " << info.setting_key << "\n";
  if (info.recorded_ms > 0) {
    s << "// Recorded by the tuner: " << info.recorded_ms << " ms per step"
      << (info.recorded_on.empty() ? "" : " on " + info.recorded_on) << ".\n";
  }
  s << "// Build: nvcc -arch=sm_90 -O3 -o best best.cu   Run: ./best [timed steps]\n"
    << "// It verifies the kernel against a naive reference (48 and 7 steps, random inputs)\n"
    << "// and prints the time per step and GCells/s; exit code 1 if verification fails.\n"
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
    << without_pragma_once(generate_reference(stencil, grid)) << kMain;
  return s.str();
}

}  // namespace isletune::cuda
