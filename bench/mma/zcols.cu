// Standalone prototype for issue 47: box3d3r on the FP64 tensor cores (DMMA) with "the z-offsets
// as the MMA's columns" (docs/studies/2026-12-06-tensor-core-mapping-bounds.md, Addendum), against
// a plain CUDA-core reference, with verification and timing. Beyond the CUDA runtime it includes
// kernels/mma.cuh (cp.async and the f64 MMAs) and bench/harness/standalone.cuh (the typical
// stencil, reference step, verification and timing helpers), by paths relative to this file.
//   nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v -o zcols bench/mma/zcols.cu && ./zcols [csv]
// bench/mma/zcols_device.sh builds and runs it on the GPU machine (and ncu on the best variant).
// Environment: ZC_ONLY=<variant tag> runs that variant only (and naive), ZC_GRIDS=big|odd|both
// (default both), ZC_NCU=1 skips the timing (one verified launch a variant, for ncu).
//
// Stencil, coefficients, boundary rule: the project's box3d3r (src/stencil/typical.cpp: offsets in
// std::set<Offset> order, the same hash-based integer weights summing to 1; kernels/reference.cuh:
// a point whose whole stencil lies in the grid gets the weighted sum, any other keeps its input).
// GCells/s counts every grid point per step.
//
// The mapping. Stream z; input plane z is multiplied once: D[m][n] += A[m][k] B_z[k][n] with
//  * m  = 16 output positions x0 + m of a row y (m16n8k4 DMMA; lane l holds rows l/4, l/4 + 8);
//  * k  = the in-plane offset (dy, dx): 7 dy rows x 8 dx (dx = -3..4, the 8th with coefficient 0),
//         K = 56 = 14 k4 chunks, chunk c = 2 dyi + h holds dxi = 4h .. 4h + 3 (dxi = dx + 3);
//         A[m][k] = in[z][y + dy][x0 + m + dx], read from the plane staged in shared memory;
//  * n  = 8 output planes in flight: column n accumulates the output plane zo with
//         (zo - zs) mod 8 = n (zs = the CTA's first output plane);
//  * B_z[k][n] = c(dx, dy, z - zo) when |z - zo| <= 3, else 0. With t = (z - zs - n) mod 8
//         = (i - 3 - n) mod 8 for the CTA's input plane i = z - zs + 3, z - zo = dz(t) with
//         dz = t (t <= 3), t - 8 (t >= 5), none (t = 4: the column between two occupants). So the
//         8 matrices B_z are one table T[chunk][t][kq] (448 doubles in shared memory): lane
//         (gq = n, kq = k) reads T[c][(i - 3 - gq) & 7][kq], a permutation of 32 entries
//         (conflict-free), once a plane; every row the warp holds reuses it.
//  * After input plane i the column of zo = zs + i - 6 has had all 7 of its planes: its lanes
//    (kq = n / 2, accumulator element n % 2 and 2 + n % 2) store it (boundary points: the input)
//    and clear it; its next occupant, zo + 8, starts two planes later.
//  * A warp holds R rows y (R accumulators of 16 x 8); the A fragment of staged row s and half h
//    feeds every row j with dy row s - j in 0..6 (row reuse: 2 (R + 6) A fragments for 14 R MMAs).
//  * KK = 8 issues one m16n8k8 per dy row (two k4 chunks, the pairing of kernels/mma.cuh's
//    mma_k8) instead of two m16n8k4.
// Staging: the CTA owns a TX x TY tile (TX = 16 WX, TY = R WY) and TS output planes, i.e. TS + 6
// input planes, streamed through a cp.async ring of STAGES planes of (TX + 8) x (TY + 6) doubles
// (x from x0 - 4, y from y0 - 3; zeros outside the grid), one barrier a plane. 16-byte copies when
// NX is even, else 8-byte. Any grid extents (below 2^31 cells: 32-bit indices).
//
// Useful share (box3d3r): 343 multiply-adds a cell against 8 x 56 = 448 issued: 0.766 (block
// im2col, the current family: 343/512 = 0.67), times TS / (TS + 6) for the 6 planes a CTA reads
// before its first output plane (TS 128: 0.73). Roof: 2 x 448 = 896 issued flop a cell; at the
// datasheet 66.9 TFLOP/s that is 74.7 GCells/s (71.3 with TS 128), at the measured m16n8k4 peak
// 57.7 TFLOP/s 64.4 (61.5). The current tensor-core family reaches 48 GCells/s; issue 47's target
// is 60.
//
// Parameters (ZCfg): KK (4: m16n8k4, 8: m16n8k8), R rows a warp, WX x WY warps, STAGES ring
// planes, TS output planes a CTA (0: chosen at run time by choose_ts, against the wave
// quantisation), MINB minimum resident CTAs (__launch_bounds__ register cap). CSV columns:
// kCsvHeader; useful_share includes the TS / (TS + 6) factor, issued_tflops = useful / share.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../../kernels/mma.cuh"
#include "../harness/standalone.cuh"

constexpr int kRad = 3;                      // box3d3r
constexpr int kDiam = 2 * kRad + 1;          // 7
constexpr int kPts = kDiam * kDiam * kDiam;  // 343
constexpr int kTable = kDiam * 2 * 8 * 4;    // 7 dy x 2 halves x 8 t x 4 kq = 448 doubles

struct Grid {
  int nx, ny, nz;
  __host__ __device__ long long cells() const { return 1LL * nx * ny * nz; }
};

// Device helpers: cp.async and the f64 MMAs, the tensor-core family's (kernels/mma.cuh). Lane l
// (gq = l/4, kq = l%4) of mma_k4: a0 = A[gq][kq], a1 = A[gq+8][kq], b = B[kq][gq]; d0, d1 =
// D[gq][2kq, 2kq+1], d2, d3 = D[gq+8][2kq, 2kq+1]. mma_k8: two k4 patches; a0/a1 (rows gq, gq+8)
// and b0 belong to the first (k = kq), a2/a3 and b1 to the second (k = 4 + kq).
using isl::mma_k4;
using isl::mma_k8;

// ---------------------------------------------------------------------------------------
// Naive step (compile-time offsets); the reference step (run-time offset loop) and the
// verification kernels are standalone.cuh's
// ---------------------------------------------------------------------------------------
__constant__ double c_dense[kPts];  // [dz + 3][dy + 3][dx + 3]

// One thread a point, the offsets unrolled at compile time (the tuner's naive setting's shape;
// the grid extents are run-time here). Block 32 x 8, grid (ceil(nx/32), ceil(ny/8), nz).
__global__ void naive_step(const double* __restrict__ in, double* __restrict__ out, Grid g) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  const int z = blockIdx.z;
  if (x >= g.nx || y >= g.ny)
    return;
  const long long plane = 1LL * g.nx * g.ny;
  const long long i = z * plane + 1LL * y * g.nx + x;
  if (!(x >= kRad && x < g.nx - kRad && y >= kRad && y < g.ny - kRad && z >= kRad &&
        z < g.nz - kRad)) {
    out[i] = in[i];
    return;
  }
  double sum = 0.0;
#pragma unroll
  for (int dz = 0; dz < kDiam; ++dz)
#pragma unroll
    for (int dy = 0; dy < kDiam; ++dy)
#pragma unroll
      for (int dx = 0; dx < kDiam; ++dx)
        sum += c_dense[(dz * kDiam + dy) * kDiam + dx] *
               in[i + (dz - kRad) * plane + 1LL * (dy - kRad) * g.nx + (dx - kRad)];
  out[i] = sum;
}

// DMMA peaks (throughput only, 8 independent accumulators a warp).
__global__ void peak_k4(double* out, int iters) {
  peak_chains<4>(out, iters, [](double(&d)[4], double a, double b) { mma_k4(d, a, b, a); });
}
__global__ void peak_k8(double* out, int iters) {
  peak_chains<4>(out, iters,
                 [](double(&d)[4], double a, double b) { mma_k8(d, a, b, a, b, b, a); });
}

// ---------------------------------------------------------------------------------------
// The z-columns DMMA kernel
// ---------------------------------------------------------------------------------------
template <int KK_, int R_, int WX_, int WY_, int STAGES_, int TS_, int MINB_>
struct ZCfg {
  static constexpr int KK = KK_, R = R_, WX = WX_, WY = WY_, STAGES = STAGES_, TS = TS_,
                       MINB = MINB_;
  static_assert(KK == 4 || KK == 8, "m16n8k4 or m16n8k8");
  static_assert(STAGES >= 2 && STAGES <= 2 * kRad + 1, "ring depth");
  static constexpr int TX = 16 * WX, TY = R * WY;
  static constexpr int TXS = TX + 8;         // x0 - 4 .. x0 + TX + 3 (16-byte aligned pairs)
  static constexpr int TYS = TY + 2 * kRad;  // y0 - 3 .. y0 + TY + 2
  static constexpr int PLANE = TXS * TYS;    // doubles a staged plane
  static constexpr int RING = STAGES * PLANE;
  static constexpr int THREADS = 32 * WX * WY;
  static constexpr int SMEM = (RING + kTable) * 8;
  static_assert(THREADS <= 1024, "block size");
  static_assert(TS >= 0, "TS 0: chosen at run time (choose_ts)");
};

// Shared-memory table of the B fragments, both layouts 448 doubles (host: build_table):
//   KK 4: T[((dyi * 2 + h) * 8 + t) * 4 + kq]      (one LDS.64 a chunk, 32 consecutive doubles)
//   KK 8: T[((dyi * 8 + t) * 4 + kq) * 2 + h]      (one LDS.128 a dy row, both halves)
// entry = c(dx = 4h + kq - 3, dy = dyi - 3, dz(t)), 0 for dx = 4 or t = 4.
template <class C>
__global__ void __launch_bounds__(C::THREADS, C::MINB)
    zcols_step(const double* __restrict__ in, double* __restrict__ out,
               const double* __restrict__ table, Grid g, int ts) {
  constexpr int R = C::R, TXS = C::TXS, PLANE = C::PLANE, STAGES = C::STAGES;
  extern __shared__ __align__(16) double smem[];
  double* ring = smem;
  double* tab = smem + C::RING;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wx = warp % C::WX, wy = warp / C::WX;
  const int gq = lane >> 2, kq = lane & 3;
  const int x0 = blockIdx.x * C::TX, y0 = blockIdx.y * C::TY, zs = blockIdx.z * ts;
  const int nzo = min(ts, g.nz - zs);  // output planes of this CTA (>= 1)
  const int nin = nzo + 2 * kRad;      // input planes zs - 3 .. zs + nzo + 2
  const int plane = g.nx * g.ny;       // 32-bit indices: the host keeps the grid below 2^31 cells

  // The coefficient table; the first barrier of the plane loop orders it before every read.
  for (int e = tid; e < kTable; e += C::THREADS)
    tab[e] = table[e];

  // Stages input plane i (z = zs - 3 + i) into ring slot i % STAGES; zeros outside the grid.
  const bool vec2 = (g.nx & 1) == 0;
  auto stage = [&](int i) {
    double* dst = ring + (i % STAGES) * PLANE;
    const int z = zs - kRad + i;
    const bool zin = z >= 0 && z < g.nz;
    if (vec2) {
      // Pairs start at even x (x0 - 4 is even, NX even): wholly inside or outside the grid.
      constexpr int HP = TXS / 2;
      for (int e = tid; e < C::TYS * HP; e += C::THREADS) {
        const int ty = e / HP, tx = 2 * (e - ty * HP);
        const int gy = y0 - kRad + ty, gx = x0 - 4 + tx;
        double* d = dst + ty * TXS + tx;
        if (zin && gy >= 0 && gy < g.ny && gx >= 0 && gx < g.nx)
          isl::mma_copy16(d, in + (z * plane + gy * g.nx + gx));
        else
          *reinterpret_cast<double2*>(d) = make_double2(0.0, 0.0);
      }
    } else {
      for (int e = tid; e < PLANE; e += C::THREADS) {
        const int ty = e / TXS, tx = e - ty * TXS;
        const int gy = y0 - kRad + ty, gx = x0 - 4 + tx;
        double* d = dst + e;
        if (zin && gy >= 0 && gy < g.ny && gx >= 0 && gx < g.nx)
          isl::mma_copy8(d, in + (z * plane + gy * g.nx + gx));
        else
          *d = 0.0;
      }
    }
  };

  double acc[R][4];
#pragma unroll
  for (int j = 0; j < R; ++j)
#pragma unroll
    for (int a = 0; a < 4; ++a)
      acc[j][a] = 0.0;

  // This lane's A element in a staged plane: staged row wy R (+ s), column of x0 + 16 wx + gq
  // + dx with dx = kq - 3 (+ 4h), i.e. 16 wx + gq + kq + 1 (+ 4h; + 8 for row gq + 8).
  const int abase = wy * R * TXS + 16 * wx + gq + kq + 1;
  // The output position of this lane's rows (and x + 8).
  const int ox = x0 + 16 * wx + gq, oy0 = y0 + wy * R;

#pragma unroll
  for (int i = 0; i < STAGES - 1; ++i) {
    if (i < nin)
      stage(i);
    isl::mma_commit();
  }

#pragma unroll 1
  for (int i = 0; i < nin; ++i) {
    isl::mma_wait<STAGES - 2>();  // plane i has landed (this thread's copies) ...
    __syncthreads();              // ... everyone's; and slot (i - 1) % STAGES is free
    if (i + STAGES - 1 < nin)
      stage(i + STAGES - 1);
    isl::mma_commit();

    const double* pl = ring + (i % STAGES) * PLANE + abase;
    const int t = (i - kRad - gq) & 7;  // this lane's column n = gq at input plane i
    if constexpr (C::KK == 4) {
      const double* tb = tab + t * 4 + kq;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        double b[kDiam];
#pragma unroll
        for (int dyi = 0; dyi < kDiam; ++dyi)
          b[dyi] = tb[(dyi * 2 + h) * 32];
#pragma unroll
        for (int s = 0; s < R + 2 * kRad; ++s) {
          const double a0 = pl[s * TXS + 4 * h], a1 = pl[s * TXS + 4 * h + 8];
#pragma unroll
          for (int j = 0; j < R; ++j) {
            const int dyi = s - j;
            if (dyi >= 0 && dyi < kDiam)
              mma_k4(acc[j], a0, a1, b[dyi]);
          }
        }
      }
    } else {
      const double* tb = tab + (t * 4 + kq) * 2;
      double2 b[kDiam];
#pragma unroll
      for (int dyi = 0; dyi < kDiam; ++dyi)
        b[dyi] = *reinterpret_cast<const double2*>(tb + dyi * 64);
#pragma unroll
      for (int s = 0; s < R + 2 * kRad; ++s) {
        const double* p = pl + s * TXS;
        const double a0 = p[0], a1 = p[8], a2 = p[4], a3 = p[12];
#pragma unroll
        for (int j = 0; j < R; ++j) {
          const int dyi = s - j;
          if (dyi >= 0 && dyi < kDiam)
            mma_k8(acc[j], a0, a1, a2, a3, b[dyi].x, b[dyi].y);
        }
      }
    }

    // Column n of output plane zo = zs + i - 6 is complete: lanes kq = n / 2 hold it in elements
    // n % 2 (row gq) and 2 + n % 2 (row gq + 8). Stored when zo >= zs (i >= 6; zo < zs + nzo
    // always); cleared in every case (the columns of zo < zs collected planes before zs).
    const int n = (i - 2 * kRad) & 7;
    const bool mine = kq == (n >> 1), odd = n & 1;
    const int zo = zs + i - 2 * kRad;
    if (mine && i >= 2 * kRad) {
      const bool zint = zo >= kRad && zo < g.nz - kRad;
#pragma unroll
      for (int j = 0; j < R; ++j) {
        const int y = oy0 + j;
        if (y < g.ny) {
          const bool yzint = zint && y >= kRad && y < g.ny - kRad;
          const int o = zo * plane + y * g.nx + ox;
#pragma unroll
          for (int hh = 0; hh < 2; ++hh) {
            const int x = ox + 8 * hh;
            if (x < g.nx) {
              const double v = odd ? acc[j][2 * hh + 1] : acc[j][2 * hh];
              out[o + 8 * hh] = yzint && x >= kRad && x < g.nx - kRad ? v : in[o + 8 * hh];
            }
          }
        }
      }
    }
#pragma unroll
    for (int j = 0; j < R; ++j) {
      acc[j][0] = mine && !odd ? 0.0 : acc[j][0];
      acc[j][2] = mine && !odd ? 0.0 : acc[j][2];
      acc[j][1] = mine && odd ? 0.0 : acc[j][1];
      acc[j][3] = mine && odd ? 0.0 : acc[j][3];
    }
  }
  isl::mma_wait<0>();  // nothing in flight at exit (the last groups are empty)
}

// ---------------------------------------------------------------------------------------
// Host: the project's box3d3r (standalone.cuh's typical_box), tables, timing, verification
// ---------------------------------------------------------------------------------------
// dense[(dz + 3) * 49 + (dy + 3) * 7 + dx + 3]
static std::vector<double> dense_coefficients(const std::vector<Pt>& pts) {
  std::vector<double> d(kPts, 0.0);
  for (const Pt& p : pts)
    d[((p.z + kRad) * kDiam + p.y + kRad) * kDiam + p.x + kRad] = p.c;
  return d;
}

// The B table (see zcols_step): t -> dz = t (t <= 3), t - 8 (t >= 5), none (t = 4).
static std::vector<double> build_table(const std::vector<double>& dense, int kk) {
  std::vector<double> tab(kTable, 0.0);
  int nonzero = 0;
  for (int dyi = 0; dyi < kDiam; ++dyi)
    for (int h = 0; h < 2; ++h)
      for (int t = 0; t < 8; ++t)
        for (int kq = 0; kq < 4; ++kq) {
          const int dxi = 4 * h + kq;
          const int dz = t <= kRad ? t : t - 8;
          double v = 0.0;
          if (dxi < kDiam && dz >= -kRad && dz <= kRad)
            v = dense[((dz + kRad) * kDiam + dyi) * kDiam + dxi];
          nonzero += v != 0.0;
          const int idx =
              kk == 4 ? ((dyi * 2 + h) * 8 + t) * 4 + kq : ((dyi * 8 + t) * 4 + kq) * 2 + h;
          tab[idx] = v;
        }
  if (nonzero != kPts)
    std::printf("warning: %d non-zero table entries, expected %d\n", nonzero, kPts);
  return tab;
}

struct Ctx {
  std::vector<Pt> pts;
  std::vector<double> dense;
  Grid g{};
  std::string gname;
  double* a0 = nullptr;   // pristine input
  double* ref = nullptr;  // reference step of a0
  double* p1 = nullptr;   // ping
  double* p2 = nullptr;   // pong
  double* partial = nullptr;
  double* table4 = nullptr;
  double* table8 = nullptr;
  int compare_blocks = 1024;
  std::string gpu;
  FILE* csv = nullptr;
  bool ncu = false;
  const char* only = nullptr;
};

static void compare_to_ref(Ctx& c, const double* out, double& rel_l2, double& max_rel,
                           double& bad) {
  const Diff d = compare_device(out, c.ref, c.g.cells(), c.partial, c.compare_blocks);
  rel_l2 = std::sqrt(d.d2 / d.r2), max_rel = d.max_rel, bad = d.bad;
}

// Times `step(in, out)` ping-ponging p1/p2 from a0: median ms a step over 5 runs of n steps, n
// chosen so that a run lasts about 40 ms (at most 4000).
template <class F>
static double time_steps(Ctx& c, F&& step) {
  return time_pingpong(c.a0, c.p1, c.p2, c.g.cells(), 4000, step);
}

// Verifies one step from the pristine input into a NaN-poisoned buffer against the reference,
// then times it: ms a step (0 with ZC_NCU, no timing).
template <class F>
static double verify_and_time(Ctx& c, F&& step, double& rel, double& maxrel, double& bad) {
  fill_nan<<<1024, 256>>>(c.p2, c.g.cells());
  step(c.a0, c.p2);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  compare_to_ref(c, c.p2, rel, maxrel, bad);
  return c.ncu ? 0.0 : time_steps(c, step);
}

static const char* kCsvHeader =
    "name,params,grid,gpu,gcells_per_s,rel_l2,max_rel,nonfinite,verified,regs,spill_bytes,"
    "smem_bytes,threads,ms_per_step,useful_share,useful_tflops,issued_tflops";

// share: useful / issued multiply-adds (issued_tflops = useful_tflops / share).
static void emit(Ctx& c, const char* name, const std::string& params, double share, int regs,
                 int spill, int smem, int threads, double ms, double rel, double maxrel,
                 double bad) {
  const double gc = c.ncu ? 0.0 : c.g.cells() / (ms * 1e-3) / 1e9;
  const double useful = gc * 2.0 * kPts / 1e3;
  const bool ok = rel <= 1e-13 && bad == 0;
  std::printf(
      "%-8s %-14s %-60s regs %3d spill %4d smem %6d thr %4d %9.4f ms %7.2f GCells/s (%.1f useful, "
      "%.1f issued TFLOP/s) relL2 %.2e maxrel %.2e nonfinite %.0f %s\n",
      c.gname.c_str(), name, params.c_str(), regs, spill, smem, threads, ms, gc, useful,
      useful / share, rel, maxrel, bad, ok ? "ok" : "FAILED");
  std::fflush(stdout);
  if (c.csv) {
    std::fprintf(
        c.csv, "%s,\"%s\",%dx%dx%d,%s,%.3f,%.3e,%.3e,%.0f,%s,%d,%d,%d,%d,%.5f,%.4f,%.3f,%.3f\n",
        name, params.c_str(), c.g.nx, c.g.ny, c.g.nz, c.gpu.c_str(), gc, rel, maxrel, bad,
        ok ? "ok" : "failed", regs, spill, smem, threads, ms, share, useful, useful / share);
    std::fflush(c.csv);
  }
}

// Output planes a CTA when ZCfg::TS is 0: the z split whose waves (CTAs over resident slots,
// rounded up) times the planes a CTA reads (ts + 6) is smallest; CTAs of one kernel take equal
// times, so the last, partial wave costs a whole one.
static int choose_ts(int nz, long long tiles, int slots) {
  int best_ts = nz;
  double best = 1e300;
  for (int chunks = 1; chunks <= nz; ++chunks) {
    const int ts = (nz + chunks - 1) / chunks;
    if (ts < 16 && chunks > 1)
      break;
    const long long ctas = tiles * ((nz + ts - 1) / ts);
    const double cost = static_cast<double>((ctas + slots - 1) / slots) * (ts + 2 * kRad);
    if (cost < best * (1 - 1e-9))
      best = cost, best_ts = ts;
  }
  return best_ts;
}

template <class C>
static void run_zcols(Ctx& c, const char* tag) {
  if (c.only && std::strcmp(c.only, tag) != 0)
    return;
  auto kern = zcols_step<C>;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM));
  cudaFuncAttributes fa{};
  CK(cudaFuncGetAttributes(&fa, kern));
  int per_sm = 0, sms = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, C::THREADS, C::SMEM));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const Grid g = c.g;
  const long long tiles = 1LL * ((g.nx + C::TX - 1) / C::TX) * ((g.ny + C::TY - 1) / C::TY);
  const int ts = C::TS > 0 ? C::TS : choose_ts(g.nz, tiles, std::max(1, per_sm * sms));
  const dim3 grid((g.nx + C::TX - 1) / C::TX, (g.ny + C::TY - 1) / C::TY, (g.nz + ts - 1) / ts),
      block(C::THREADS);
  const double* table = C::KK == 4 ? c.table4 : c.table8;
  auto step = [&](const double* in, double* out) {
    kern<<<grid, block, C::SMEM>>>(in, out, table, g, ts);
  };
  double rel, maxrel, bad;
  const double ms = verify_and_time(c, step, rel, maxrel, bad);
  // Issued MMA multiply-adds a cell: 8 x 56 a plane, (nz + 6 x z-chunks) / nz planes a plane.
  const double planes = static_cast<double>(g.nz + 2 * kRad * grid.z) / g.nz;
  const double share = kPts / (8.0 * 56.0 * planes);
  char params[256];
  std::snprintf(params, sizeof params,
                "m16n8k%d rows %d warps %dx%d tile %dx%dx%d%s stages %d minb %d ctas/SM %d "
                "waves %.2f",
                C::KK, C::R, C::WX, C::WY, C::TX, C::TY, ts, C::TS > 0 ? "" : " (auto)", C::STAGES,
                C::MINB, per_sm, 1.0 * grid.x * grid.y * grid.z / std::max(1, per_sm * sms));
  emit(c, tag, params, share, fa.numRegs, static_cast<int>(fa.localSizeBytes), C::SMEM, C::THREADS,
       ms, rel, maxrel, bad);
}

static void run_naive(Ctx& c) {
  const Grid g = c.g;
  const dim3 block(32, 8), grid((g.nx + 31) / 32, (g.ny + 7) / 8, g.nz);
  auto step = [&](const double* in, double* out) { naive_step<<<grid, block>>>(in, out, g); };
  double rel, maxrel, bad;
  const double ms = verify_and_time(c, step, rel, maxrel, bad);
  cudaFuncAttributes fa{};
  CK(cudaFuncGetAttributes(&fa, naive_step));
  emit(c, "naive", "compile-time offsets one thread a point block 32x8", 1.0, fa.numRegs,
       static_cast<int>(fa.localSizeBytes), 0, 256, ms, rel, maxrel, bad);
}

static void run_peaks(Ctx& c) {
  int sms = 0, clk = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CK(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0));
  double* dummy;
  CK(cudaMalloc(&dummy, 8));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  const int iters = 128, blocks = sms * 8, threads = 256;  // ~0.15 s a launch
  auto timeit = [&](auto launch) { return best_ms(e0, e1, launch); };
  const double warps = 1.0 * blocks * threads / 32;
  float ms = timeit([&] { peak_k4<<<blocks, threads>>>(dummy, iters); });
  const double k4 = warps * iters * 8 * (2.0 * 16 * 8 * 4) / (ms * 1e-3) / 1e12;
  ms = timeit([&] { peak_k8<<<blocks, threads>>>(dummy, iters / 2); });
  const double k8 = warps * (iters / 2) * 8 * (2.0 * 16 * 8 * 8) / (ms * 1e-3) / 1e12;
  CK(cudaGetLastError());
  std::printf(
      "peaks: DMMA m16n8k4 %.1f TFLOP/s, m16n8k8 %.1f TFLOP/s (%d SMs, max SM clock %d MHz)"
      "; z-columns roof at the m16n8k4 peak %.1f GCells/s (896 issued flop a cell)\n",
      k4, k8, sms, clk / 1000, k4 * 1e3 / 896.0);
  if (c.csv) {
    std::fprintf(c.csv, "peak_dmma_m16n8k4,,,%s,,,,,,,,,,,,,%.3f\n", c.gpu.c_str(), k4);
    std::fprintf(c.csv, "peak_dmma_m16n8k8,,,%s,,,,,,,,,,,,,%.3f\n", c.gpu.c_str(), k8);
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaFree(dummy));
}

// ZCfg<KK, R, WX, WY, STAGES, TS (0: choose_ts), MINB>; the comments: ptxas's registers (nvcc
// 13.0, sm_90) and spill bytes (stores / loads) where it spills. STAGES 2 suffices in principle:
// a plane's copies have the whole previous plane's MMAs to land.
static void run_variants(Ctx& c) {
  run_zcols<ZCfg<4, 4, 4, 1, 4, 0, 5>>(c, "k4-r4-w4x1-b5");          // 86
  run_zcols<ZCfg<4, 4, 4, 2, 4, 0, 2>>(c, "k4-r4-w4x2-b2");          // 114
  run_zcols<ZCfg<4, 4, 4, 2, 4, 0, 3>>(c, "k4-r4-w4x2-b3");          // 80, spill 8 / 36
  run_zcols<ZCfg<4, 6, 4, 1, 4, 0, 3>>(c, "k4-r6-w4x1-b3");          // 167
  run_zcols<ZCfg<4, 7, 4, 1, 4, 0, 4>>(c, "k4-r7-w4x1-b4");          // 128, spill 8 / 8
  run_zcols<ZCfg<4, 8, 4, 1, 4, 0, 3>>(c, "k4-r8-w4x1-b3");          // 159
  run_zcols<ZCfg<4, 8, 4, 1, 4, 128, 3>>(c, "k4-r8-w4x1-b3-ts128");  // 159
  run_zcols<ZCfg<4, 8, 2, 2, 4, 0, 3>>(c, "k4-r8-w2x2-b3");          // 159
  run_zcols<ZCfg<4, 8, 4, 1, 2, 0, 4>>(c, "k4-r8-w4x1-b4-s2");       // 128, spill 8 / 8
  run_zcols<ZCfg<8, 4, 4, 1, 4, 0, 5>>(c, "k8-r4-w4x1-b5");          // 96, spill 8 / 36
  run_zcols<ZCfg<8, 4, 4, 2, 4, 0, 2>>(c, "k8-r4-w4x2-b2");          // 128, spill 4 / 4
}

int main(int argc, char** argv) {
  Ctx c;
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  c.gpu = prop.name;
  c.ncu = std::getenv("ZC_NCU") != nullptr;
  c.only = std::getenv("ZC_ONLY");
  const std::string grids = std::getenv("ZC_GRIDS") ? std::getenv("ZC_GRIDS") : "both";
  if (argc > 1) {
    c.csv = std::fopen(argv[1], "a");
    if (!c.csv) {
      std::fprintf(stderr, "cannot open %s\n", argv[1]);
      return 2;
    }
    std::fseek(c.csv, 0, SEEK_END);
    if (std::ftell(c.csv) == 0)
      std::fprintf(c.csv, "%s\n", kCsvHeader);
  }
  c.pts = typical_box(3, kRad);
  c.dense = dense_coefficients(c.pts);
  std::vector<int> off(3 * c.pts.size());
  std::vector<double> co(c.pts.size());
  double csum = 0;
  for (size_t k = 0; k < c.pts.size(); ++k) {
    off[3 * k] = c.pts[k].x, off[3 * k + 1] = c.pts[k].y, off[3 * k + 2] = c.pts[k].z;
    co[k] = c.pts[k].c;
    csum += co[k];
  }
  CK(cudaMemcpyToSymbol(c_off, off.data(), off.size() * sizeof(int)));
  CK(cudaMemcpyToSymbol(c_coef, co.data(), co.size() * 8));
  CK(cudaMemcpyToSymbol(c_dense, c.dense.data(), c.dense.size() * 8));
  for (int kk : {4, 8}) {
    const std::vector<double> t = build_table(c.dense, kk);
    double*& d = kk == 4 ? c.table4 : c.table8;
    CK(cudaMalloc(&d, t.size() * 8));
    CK(cudaMemcpy(d, t.data(), t.size() * 8, cudaMemcpyHostToDevice));
  }
  std::printf("box3d3r: %zu points, coefficient sum %.17g, GPU %s\n", c.pts.size(), csum,
              c.gpu.c_str());
  if (!c.ncu)
    run_peaks(c);

  const Grid big{512, 512, 512}, odd{203, 77, 61};  // the kernel's indices are 32-bit: < 2^31 cells
  std::vector<std::pair<std::string, Grid>> todo;
  if (grids == "big" || grids == "both")
    todo.push_back({"512^3", big});
  if (grids == "odd" || grids == "both")
    todo.push_back({"odd", odd});
  const size_t bytes = big.cells() * 8;  // the largest grid; smaller ones reuse the buffers
  CK(cudaMalloc(&c.a0, bytes));
  CK(cudaMalloc(&c.ref, bytes));
  CK(cudaMalloc(&c.p1, bytes));
  CK(cudaMalloc(&c.p2, bytes));
  CK(cudaMalloc(&c.partial, 4 * 8 * c.compare_blocks));
  for (const auto& [name, g] : todo) {
    c.g = g;
    c.gname = name;
    fill_random<<<4096, 256>>>(c.a0, g.cells(), 0x5eedULL);
    CK(cudaGetLastError());
    const Dims d{g.nx, g.ny, g.nz, kRad, kRad, kRad, kRad, kRad, kRad, kPts};
    reference_step<<<static_cast<unsigned>((g.cells() + 255) / 256), 256>>>(c.a0, c.ref, d);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    if (!c.ncu)
      run_naive(c);
    run_variants(c);
  }
  if (!c.ncu)
    run_peaks(c);  // again, GPU warm
  if (c.csv)
    std::fclose(c.csv);
  return 0;
}
