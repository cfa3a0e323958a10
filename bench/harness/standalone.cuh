// Shared helpers of the standalone benchmark programs (bench/mma/mma_stencil.cu,
// bench/mma/zcols.cu, bench/issue48/pc_star.cu): one translation unit each, built by nvcc
// -std=c++17 with the CUDA runtime alone. They include this header by a path relative to their
// own file ("../harness/standalone.cuh"), so it resolves from any working directory. Kernels
// cannot be inline: include it in one translation unit only.
//   CK(x)            checks a CUDA runtime call: file, line, call and error on stderr, exit 2 (a
//                    program that wants another message or status defines CK before this)
//   typical_box      the project's typical box stencil (src/stencil/typical.cpp): offsets in
//                    std::set<Offset> order, the same hash-based weights
//   reference_step   one naive step, offsets and coefficients read at run time from c_off /
//                    c_coef, the boundary rule of kernels/reference.cuh (a point whose whole
//                    stencil lies in the grid gets the weighted sum, any other keeps its input)
//   fill_random, fill_nan, compare: kernels/reference.cuh's isl_fill_random, isl_fill_nan and
//                    isl_compare with a run-time size (those are bound to the generated module's
//                    compile-time extents); compare_device sums compare's per-block partials
//   time_pingpong    median ms a step of ping-pong steps; best_ms: best of timed launches
//   peak_chains      body of a throughput micro-benchmark: 8 independent accumulator chains
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <tuple>
#include <vector>

#ifndef CK
#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(2);                                                                           \
    }                                                                                         \
  } while (0)
#endif

// ---------------------------------------------------------------------------------------
// The project's typical box stencil
// ---------------------------------------------------------------------------------------
struct Pt {
  int x, y, z;
  double c;
};

inline std::uint64_t mix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
inline std::uint64_t offset_hash(int x, int y, int z, std::uint64_t salt) {
  const auto part = [](int v) { return static_cast<std::uint64_t>(v + 64) & 0xFFFF; };
  return mix64((part(x) << 32) ^ (part(y) << 16) ^ part(z) ^ (salt << 48));
}
// typical_offsets(box, dims, order) + typical_coefficients: same order (std::set of (x, y, z)),
// same values (integer weights from the hash, summing to 2^50, all distinct; salt bumped
// otherwise). dims 2: z = 0.
inline std::vector<Pt> typical_box(int dims, int order) {
  std::set<std::tuple<int, int, int>> pts;
  const int zmax = dims == 3 ? order : 0;
  for (int x = -order; x <= order; ++x)
    for (int y = -order; y <= order; ++y)
      for (int z = -zmax; z <= zmax; ++z)
        pts.insert({x, y, z});
  std::vector<Pt> out;
  for (auto [x, y, z] : pts)
    out.push_back({x, y, z, 0.0});
  const unsigned __int128 total = static_cast<unsigned __int128>(1) << 50;
  const size_t n = out.size();
  for (std::uint64_t salt = 0;; ++salt) {
    std::vector<std::uint64_t> w(n), m(n);
    unsigned __int128 sum = 0, assigned = 0;
    for (size_t k = 0; k < n; ++k) {
      w[k] = (1ULL << 30) + (offset_hash(out[k].x, out[k].y, out[k].z, salt) & ((1ULL << 30) - 1));
      sum += w[k];
    }
    for (size_t k = 0; k < n; ++k) {
      m[k] = static_cast<std::uint64_t>(w[k] * total / sum);
      assigned += m[k];
    }
    for (size_t k = 0; assigned < total; ++k, ++assigned)
      ++m[k];
    if (std::set<std::uint64_t>(m.begin(), m.end()).size() != n)
      continue;
    for (size_t k = 0; k < n; ++k)
      out[k].c = static_cast<double>(m[k]) * 0x1.0p-50;
    return out;
  }
}

// ---------------------------------------------------------------------------------------
// Reference step and verification kernels (axes: x fastest, then y, then z; 2-D: nz = 1)
// ---------------------------------------------------------------------------------------
constexpr int kRefMaxPts = 729;  // box3d4r, the largest stencil of the programs
__constant__ int c_off[kRefMaxPts][3];
__constant__ double c_coef[kRefMaxPts];

// Extents, reach (largest negative / positive offset) per axis, points in c_off / c_coef.
struct Dims {
  int nx, ny, nz, xlo, xhi, ylo, yhi, zlo, zhi, npts;
};

__global__ void reference_step(const double* __restrict__ in, double* __restrict__ out, Dims d) {
  const long long cells = 1LL * d.nx * d.ny * d.nz;
  const long long g = blockIdx.x * 1LL * blockDim.x + threadIdx.x;
  if (g >= cells)
    return;
  const long long plane = 1LL * d.nx * d.ny;
  const int x = static_cast<int>(g % d.nx);
  const int y = static_cast<int>((g / d.nx) % d.ny);
  const int z = static_cast<int>(g / plane);
  const bool interior = x >= d.xlo && x < d.nx - d.xhi && y >= d.ylo && y < d.ny - d.yhi &&
                        z >= d.zlo && z < d.nz - d.zhi;
  if (!interior) {
    out[g] = in[g];
    return;
  }
  double sum = 0.0;
  for (int k = 0; k < d.npts; ++k)
    sum += c_coef[k] * in[g + c_off[k][2] * plane + 1LL * c_off[k][1] * d.nx + c_off[k][0]];
  out[g] = sum;
}

// Deterministic pseudo-random values in [0.5, 1.5) from (seed, index): never zero.
__global__ void fill_random(double* a, long long n, unsigned long long seed) {
  for (long long g = blockIdx.x * 1LL * blockDim.x + threadIdx.x; g < n;
       g += 1LL * gridDim.x * blockDim.x) {
    unsigned long long z = seed + 0x9E3779B97F4A7C15ULL * (g + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    a[g] = 0.5 + static_cast<double>(z >> 11) * 0x1.0p-53;
  }
}
// Poisons a buffer with quiet NaN.
__global__ void fill_nan(double* a, long long n) {
  for (long long g = blockIdx.x * 1LL * blockDim.x + threadIdx.x; g < n;
       g += 1LL * gridDim.x * blockDim.x)
    a[g] = __longlong_as_double(0x7ff8000000000000LL);
}
// Per-block partials: sum (o-r)^2, sum r^2, max |o-r|/max(|r|,1e-6), non-finite count.
// blockDim.x must be 256.
__global__ void compare(const double* __restrict__ o, const double* __restrict__ r, long long n,
                        double* partial) {
  __shared__ double sd[256], sr[256], sm[256], sn[256];
  double d2 = 0, r2 = 0, mx = 0, bad = 0;
  for (long long g = blockIdx.x * 1LL * blockDim.x + threadIdx.x; g < n;
       g += 1LL * gridDim.x * blockDim.x) {
    const double a = o[g], b = r[g];
    if (!isfinite(a)) {
      bad += 1;
      continue;
    }
    const double d = a - b;
    d2 += d * d;
    r2 += b * b;
    mx = fmax(mx, fabs(d) / fmax(fabs(b), 1e-6));
  }
  const int t = threadIdx.x;
  sd[t] = d2, sr[t] = r2, sm[t] = mx, sn[t] = bad;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (t < s) {
      sd[t] += sd[t + s];
      sr[t] += sr[t + s];
      sm[t] = fmax(sm[t], sm[t + s]);
      sn[t] += sn[t + s];
    }
    __syncthreads();
  }
  if (t == 0) {
    partial[4 * blockIdx.x + 0] = sd[0];
    partial[4 * blockIdx.x + 1] = sr[0];
    partial[4 * blockIdx.x + 2] = sm[0];
    partial[4 * blockIdx.x + 3] = sn[0];
  }
}

// compare's partials summed over its blocks (in block order): relative L2 = sqrt(d2 / r2).
struct Diff {
  double d2 = 0, r2 = 0, max_rel = 0, bad = 0;
};
// Compares n values of out against ref (partial: 4 doubles a block, `blocks` blocks).
inline Diff compare_device(const double* out, const double* ref, long long n, double* partial,
                           int blocks) {
  compare<<<blocks, 256>>>(out, ref, n, partial);
  CK(cudaGetLastError());
  std::vector<double> h(4 * blocks);
  CK(cudaMemcpy(h.data(), partial, h.size() * 8, cudaMemcpyDeviceToHost));
  Diff d;
  for (int b = 0; b < blocks; ++b) {
    d.d2 += h[4 * b], d.r2 += h[4 * b + 1];
    d.max_rel = std::max(d.max_rel, h[4 * b + 2]);
    d.bad += h[4 * b + 3];
  }
  return d;
}

// ---------------------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------------------
// Times `step(in, out)` ping-ponging p1/p2 from a copy of a0 (cells doubles): median ms a step
// over 5 runs of n steps, n chosen so that a run lasts about 40 ms, 2 <= n <= max_steps.
template <class F>
double time_pingpong(const double* a0, double* p1, double* p2, long long cells, int max_steps,
                     F&& step) {
  CK(cudaMemcpy(p1, a0, cells * 8, cudaMemcpyDeviceToDevice));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  step(p1, p2);  // warm-up
  CK(cudaEventRecord(e0));
  step(p2, p1);
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float one = 0;
  CK(cudaEventElapsedTime(&one, e0, e1));
  const int n = std::max(2, std::min(max_steps, static_cast<int>(40.0 / std::max(one, 1e-3f))));
  std::vector<double> runs;
  for (int r = 0; r < 5; ++r) {
    CK(cudaEventRecord(e0));
    for (int s = 0; s < n; ++s)
      (s % 2 == 0) ? step(p1, p2) : step(p2, p1);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    runs.push_back(ms / n);
  }
  CK(cudaGetLastError());
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

// launch() once untimed, then the best ms of `reps` timed launches (events e0, e1).
template <class F>
float best_ms(cudaEvent_t e0, cudaEvent_t e1, F&& launch, int reps = 3) {
  launch();
  CK(cudaDeviceSynchronize());
  float best = 1e30f;
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(e0));
    launch();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    best = std::min(best, ms);
  }
  return best;
}

// Peak micro-benchmark body: iters x 8 independent chains op(acc[c], a, b) on W-double
// accumulators (throughput only; the result is stored only to keep the chains alive).
template <int W, class Op>
__device__ __forceinline__ void peak_chains(double* out, int iters, Op op) {
  double acc[8][W] = {};
  const double a = 1.0 + threadIdx.x * 1e-9, b = 1.0 - threadIdx.x * 1e-9;
#pragma unroll 1
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int c = 0; c < 8; ++c)
      op(acc[c], a, b);
  double s = 0;
  for (int c = 0; c < 8; ++c) {
    double t = acc[c][0];  // s += acc[c][0] + acc[c][1] + ...
#pragma unroll
    for (int w = 1; w < W; ++w)
      t += acc[c][w];
    s += t;
  }
  if (s == 12345.678)
    out[0] = s;
}
