// Reference kernels: the naive stencil step every variant is verified against, and the
// helpers of the verification (random fill, NaN poison, error reduction). The generated
// reference module defines before this header: NX, NY, NZ (extents), XLO..ZHI (largest
// negative / positive offset per axis), NPTS, and the __constant__ arrays isl_ref_off
// (NPTS x 3 ints) and isl_ref_coef (NPTS doubles). The step reads offsets and coefficients
// at run time, one point per thread, so it shares no code path with the generated variants.
#pragma once

namespace isl {
constexpr long long kCells = 1LL * NX * NY * NZ;
constexpr long long kPlane = 1LL * NX * NY;
}  // namespace isl

// One naive time step with the boundary semantics of docs/architecture.md, "Stencils".
extern "C" __global__ void isl_reference_step(const double* __restrict__ in,
                                              double* __restrict__ out) {
  const long long g = blockIdx.x * 1LL * blockDim.x + threadIdx.x;
  if (g >= isl::kCells)
    return;
  const int x = static_cast<int>(g % NX);
  const int y = static_cast<int>((g / NX) % NY);
  const int z = static_cast<int>(g / isl::kPlane);
  const bool interior =
      x >= XLO && x < NX - XHI && y >= YLO && y < NY - YHI && z >= ZLO && z < NZ - ZHI;
  if (!interior) {
    out[g] = in[g];
    return;
  }
  double sum = 0.0;
  for (int k = 0; k < NPTS; ++k) {
    const long long n =
        g + isl_ref_off[k][2] * isl::kPlane + 1LL * isl_ref_off[k][1] * NX + isl_ref_off[k][0];
    sum += isl_ref_coef[k] * in[n];
  }
  out[g] = sum;
}

// Deterministic pseudo-random values in [0.5, 1.5) from (seed, index): never zero, so
// unwritten or mis-indexed outputs cannot hide.
extern "C" __global__ void isl_fill_random(double* __restrict__ a, unsigned long long seed) {
  for (long long g = blockIdx.x * 1LL * blockDim.x + threadIdx.x; g < isl::kCells;
       g += 1LL * gridDim.x * blockDim.x) {
    unsigned long long z = seed + 0x9E3779B97F4A7C15ULL * (g + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    a[g] = 0.5 + static_cast<double>(z >> 11) * 0x1.0p-53;
  }
}

// Poisons a buffer with quiet NaN.
extern "C" __global__ void isl_fill_nan(double* __restrict__ a) {
  for (long long g = blockIdx.x * 1LL * blockDim.x + threadIdx.x; g < isl::kCells;
       g += 1LL * gridDim.x * blockDim.x) {
    a[g] = __longlong_as_double(0x7ff8000000000000LL);
  }
}

// Per-block partial sums of the verification metrics, 4 doubles per block:
// sum (out-ref)^2, sum ref^2, max |out-ref| / max(|ref|, 1e-6), count of non-finite outputs.
// blockDim.x must be 256.
extern "C" __global__ void isl_compare(const double* __restrict__ out,
                                       const double* __restrict__ ref, double* partial) {
  __shared__ double s_d[256], s_r[256], s_m[256], s_n[256];
  double d2 = 0, r2 = 0, mx = 0, bad = 0;
  for (long long g = blockIdx.x * 1LL * blockDim.x + threadIdx.x; g < isl::kCells;
       g += 1LL * gridDim.x * blockDim.x) {
    const double o = out[g], r = ref[g];
    if (!isfinite(o)) {
      bad += 1;
      continue;
    }
    const double d = o - r;
    d2 += d * d;
    r2 += r * r;
    mx = fmax(mx, fabs(d) / fmax(fabs(r), 1e-6));
  }
  const int t = threadIdx.x;
  s_d[t] = d2;
  s_r[t] = r2;
  s_m[t] = mx;
  s_n[t] = bad;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (t < s) {
      s_d[t] += s_d[t + s];
      s_r[t] += s_r[t + s];
      s_m[t] = fmax(s_m[t], s_m[t + s]);
      s_n[t] += s_n[t + s];
    }
    __syncthreads();
  }
  if (t == 0) {
    partial[4 * blockIdx.x + 0] = s_d[0];
    partial[4 * blockIdx.x + 1] = s_r[0];
    partial[4 * blockIdx.x + 2] = s_m[0];
    partial[4 * blockIdx.x + 3] = s_n[0];
  }
}
