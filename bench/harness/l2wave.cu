// Experiment (issue 48, 3-D stars at tdeg 2): temporal blocking without redundant work, the
// intermediate level's halo passed between blocks through the L2.
//
// The product's streaming kernel at tdeg >= 2 uses overlapped tiles: each block recomputes a
// halo of r per fused step (star3d2r at tdeg 2, 32x32 threads: 1.78x the work), so on an H100/H200
// it stays below its own tdeg-1 kernel (docs/studies/2026-11-28-3d-high-order-stars.md); thread
// block clusters did not pay either (docs/studies/2026-11-25-star3d2r-tdeg2-clusters.md). Here
// every block owns a TX x TY column of the grid and streams it along z computing two steps at
// once, the second R planes behind the first (a wavefront): level 1 of plane z from the input
// (shared-memory plane with its halo, centre column in a register queue), level 2 of plane z - R
// from level 1. Level 2's in-plane halo belongs to the neighbouring blocks: each block writes the
// R-wide border strips of its level-1 plane to a ring of K planes in global memory (small enough
// to stay in the L2), publishes its progress, and reads its neighbours' strips once their progress
// says the plane is there. No point is computed twice; DRAM sees one read and one write a cell
// for two steps, the L2 the strips. The blocks wait on each other, so all must be resident: the
// kernel is launched cooperatively (the launch fails rather than deadlocks), and a wait that
// takes too long sets an error flag instead of hanging.
//
// Semantics as the product's (a point whose every neighbour lies inside the grid gets the
// weighted sum, any other keeps its value), per step. Verifies every variant against two steps
// of a naive kernel (max abs error; on a small odd grid also against the CPU), then times naive,
// the device copy and each variant; prints GCells/s per step.
//   nvcc -O3 -arch=sm_90 -std=c++17 -o l2wave bench/harness/l2wave.cu
//   l2wave [NX NY NZ] [REPS]
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "cuda_check.cuh"

constexpr int kMaxR = 4;
// Coefficients: centre, then per distance k = 1..R the x, y and z neighbours (both sides).
__constant__ double c_centre;
__constant__ double c_axis[3][kMaxR + 1];

template <int R>
__global__ void naive_step(const double* __restrict__ in, double* __restrict__ out, int nx, int ny,
                           int nz) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int z = blockIdx.z;
  if (x >= nx || y >= ny)
    return;
  const long long sx = 1, sy = nx, sz = 1LL * nx * ny;
  const long long i = z * sz + y * sy + x;
  if (x < R || x >= nx - R || y < R || y >= ny - R || z < R || z >= nz - R) {
    out[i] = in[i];
    return;
  }
  double v = c_centre * in[i];
#pragma unroll
  for (int k = 1; k <= R; ++k)
    v += c_axis[0][k] * (in[i - k * sx] + in[i + k * sx]) +
         c_axis[1][k] * (in[i - k * sy] + in[i + k * sy]) +
         c_axis[2][k] * (in[i - k * sz] + in[i + k * sz]);
  out[i] = v;
}

__device__ __forceinline__ int load_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_release(int* p, int v) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// TXT x TYT threads, MY points a thread along y (cyclic): a tile of TX = TXT by TY = TYT * MY.
// K: planes of the level-1 ring (>= 2R + 1 keeps a strip until every neighbour has read it).
template <int R, int TXT, int TYT, int MY, int K, int MINB, bool QREG>
__global__ void __launch_bounds__(TXT* TYT, MINB)
    wave2(const double* __restrict__ in, double* __restrict__ out, double* __restrict__ ring1,
          int* __restrict__ progress, int* __restrict__ error, int base, int nx, int ny, int nz,
          int tiles_x, int tiles_y) {
  constexpr int TX = TXT, TY = TYT * MY, SX = TX + 2 * R, SY = TY + 2 * R, PL = SX * SY;
  // QREG: the input's centre column in a register queue (R + 1 shared planes), else read from
  // 2R + 1 shared planes (fewer registers, more shared memory).
  constexpr int S0 = QREG ? R + 1 : 2 * R + 1, S1 = R + 1, Q = 2 * R + 1, NT = TXT * TYT;
  constexpr int QZ = QREG ? Q : 1;
  constexpr int PF = (PL + NT - 1) / NT;  // staged values a thread prefetches per plane
  extern __shared__ double smem[];
  double* s0 = smem;            // S0 input planes with halo
  double* s1 = smem + S0 * PL;  // S1 level-1 planes with halo

  const int tid = threadIdx.y * TXT + threadIdx.x;
  const int bx = blockIdx.x % tiles_x, by = blockIdx.x / tiles_x;
  const int x0 = bx * TX, y0 = by * TY;
  const long long plane = 1LL * nx * ny;
  const int b = static_cast<int>(blockIdx.x);
  // This thread's neighbour to wait on (threads 0-3: left, right, down, up; -1: none).
  const int nbr = tid == 0   ? (bx > 0 ? b - 1 : -1)
                  : tid == 1 ? (bx + 1 < tiles_x ? b + 1 : -1)
                  : tid == 2 ? (by > 0 ? b - tiles_x : -1)
                  : tid == 3 ? (by + 1 < tiles_y ? b + tiles_x : -1)
                             : -1;
  int seen = base;  // threads 0-3: their neighbour's progress last read

  const int gx = x0 + threadIdx.x;
  const bool xin = gx < nx, xint = gx >= R && gx < nx - R;
  double q0[MY][QZ] = {}, q1[MY][Q] = {};

  // The staged plane p (input with halo): thread tid's values e = tid + i * NT.
  double pf[PF];
  auto fetch = [&](int p) {
#pragma unroll
    for (int i = 0; i < PF; ++i) {
      const int e = tid + i * NT;
      const int sy = e / SX, sx = e - sy * SX;
      const int x = x0 - R + sx, y = y0 - R + sy;
      pf[i] = (e < PL && p < nz && x >= 0 && x < nx && y >= 0 && y < ny)
                  ? __ldg(in + p * plane + 1LL * y * nx + x)
                  : 0.0;
    }
  };
  auto put = [&](int p) {
    double* d = s0 + (p % S0) * PL;
#pragma unroll
    for (int i = 0; i < PF; ++i) {
      const int e = tid + i * NT;
      if (e < PL)
        d[e] = pf[i];
    }
  };

  // Prologue: planes 0 .. R-1 into the shared ring and the queue (their level-1 comes later).
  for (int p = 0; p < R; ++p) {
    fetch(p);
    put(p);
    __syncthreads();
    if constexpr (QREG) {
#pragma unroll
      for (int j = 0; j < MY; ++j) {
#pragma unroll
        for (int k = 0; k + 1 < Q; ++k)
          q0[j][k] = q0[j][k + 1];
        q0[j][Q - 1] = s0[(p % S0) * PL + (threadIdx.y + TYT * j + R) * SX + threadIdx.x + R];
      }
    }
    __syncthreads();
  }
  fetch(R);

  for (int z = 0; z < nz + R; ++z) {
    // Plane z + R into the ring (its slot held plane z - 1, read last iteration), next fetched.
    put(z + R);
    fetch(z + R + 1);
    __syncthreads();
    const int z2 = z - R;
    if (z < nz) {
      const double* p0 = s0 + (z % S0) * PL;
      const double* pn = s0 + ((z + R) % S0) * PL;
      double* l1 = s1 + (z % S1) * PL;
      double* r1 = ring1 + (z % K) * plane;
#pragma unroll
      for (int j = 0; j < MY; ++j) {
        const int ly = threadIdx.y + TYT * j, gy = y0 + ly;
        const int at = (ly + R) * SX + threadIdx.x + R;
        if constexpr (QREG) {
#pragma unroll
          for (int k = 0; k + 1 < Q; ++k)
            q0[j][k] = q0[j][k + 1];
          q0[j][Q - 1] = pn[at];
        }
        // Input of plane z + d at this point.
        auto col = [&](int d) {
          if constexpr (QREG)
            return q0[j][R + d];
          else
            return s0[((z + d + S0) % S0) * PL + at];
        };
        double v = col(0);
        if (xint && gy >= R && gy < ny - R && z >= R && z < nz - R) {
          const double* c = p0 + at;
          v = c_centre * v;
#pragma unroll
          for (int k = 1; k <= R; ++k)
            v += c_axis[0][k] * (c[-k] + c[k]) + c_axis[1][k] * (c[-k * SX] + c[k * SX]) +
                 c_axis[2][k] * (col(-k) + col(k));
        }
#pragma unroll
        for (int k = 0; k + 1 < Q; ++k)
          q1[j][k] = q1[j][k + 1];
        q1[j][Q - 1] = v;
        l1[(ly + R) * SX + threadIdx.x + R] = v;
        const bool border = threadIdx.x < R || threadIdx.x >= TX - R || ly < R || ly >= TY - R;
        if (border && xin && gy < ny)
          __stcg(r1 + 1LL * gy * nx + gx, v);
      }
    } else {
#pragma unroll
      for (int j = 0; j < MY; ++j) {
#pragma unroll
        for (int k = 0; k + 1 < Q; ++k)
          q1[j][k] = q1[j][k + 1];
        q1[j][Q - 1] = 0.0;
      }
    }
    // Publish level-1 plane z; then wait for the neighbours' plane z2.
    __syncthreads();
    if (tid == 0) {
      __threadfence();
      store_release(progress + blockIdx.x, base + z + 1);
    }
    if (z2 < 0)
      continue;
    if (nbr >= 0) {
      int s = seen;
      long long spins = 0;
      while (s < base + z2 + 1) {
        s = load_acquire(progress + nbr);
        if (++spins > (1LL << 22)) {
          atomicExch(error, 1);
          break;
        }
      }
      seen = s;
    }
    __syncthreads();
    // Level-1 halo strips of plane z2 from the neighbours.
    double* l1 = s1 + (z2 % S1) * PL;
    const double* r1 = ring1 + (z2 % K) * plane;
    for (int e = tid; e < 2 * R * TY; e += NT) {  // left and right strips
      const int ly = e / (2 * R), i = e - ly * (2 * R);
      const int sx = i < R ? i : TX + i;  // staged x: 0..R-1 and TX+R..TX+2R-1
      const int x = x0 - R + sx, y = y0 + ly;
      if (x >= 0 && x < nx && y < ny)
        l1[(ly + R) * SX + sx] = __ldcg(r1 + 1LL * y * nx + x);
    }
    for (int e = tid; e < 2 * R * TX; e += NT) {  // bottom and top strips
      const int i = e / TX, lx = e - i * TX;
      const int sy = i < R ? i : TY + i;
      const int x = x0 + lx, y = y0 - R + sy;
      if (x < nx && y >= 0 && y < ny)
        l1[sy * SX + lx + R] = __ldcg(r1 + 1LL * y * nx + x);
    }
    __syncthreads();
    const double* p1 = l1;
#pragma unroll
    for (int j = 0; j < MY; ++j) {
      const int ly = threadIdx.y + TYT * j, gy = y0 + ly;
      double v = q1[j][R];  // level 1 of plane z2 (the queue holds z2 - R .. z2 + R)
      if (xint && gy >= R && gy < ny - R && z2 >= R && z2 < nz - R) {
        const double* c = p1 + (ly + R) * SX + threadIdx.x + R;
        v = c_centre * v;
#pragma unroll
        for (int k = 1; k <= R; ++k)
          v += c_axis[0][k] * (c[-k] + c[k]) + c_axis[1][k] * (c[-k * SX] + c[k * SX]) +
               c_axis[2][k] * (q1[j][R - k] + q1[j][R + k]);
      }
      if (xin && gy < ny)
        out[z2 * plane + 1LL * gy * nx + gx] = v;
    }
  }
}

struct Grid {
  int nx, ny, nz;
  long long n() const { return 1LL * nx * ny * nz; }
};

template <int R>
void naive2(const double* a, double* tmp, double* b, Grid g) {
  dim3 blk(32, 8), grd((g.nx + 31) / 32, (g.ny + 7) / 8, g.nz);
  naive_step<R><<<grd, blk>>>(a, tmp, g.nx, g.ny, g.nz);
  naive_step<R><<<grd, blk>>>(tmp, b, g.nx, g.ny, g.nz);
}

void cpu_step(int R, const std::vector<double>& in, std::vector<double>& out, Grid g, double cc,
              const double (&ca)[3][kMaxR + 1]) {
  const long long sy = g.nx, sz = 1LL * g.nx * g.ny;
  for (int z = 0; z < g.nz; ++z)
    for (int y = 0; y < g.ny; ++y)
      for (int x = 0; x < g.nx; ++x) {
        const long long i = z * sz + y * sy + x;
        if (x < R || x >= g.nx - R || y < R || y >= g.ny - R || z < R || z >= g.nz - R) {
          out[i] = in[i];
          continue;
        }
        double v = cc * in[i];
        for (int k = 1; k <= R; ++k)
          v += ca[0][k] * (in[i - k] + in[i + k]) + ca[1][k] * (in[i - k * sy] + in[i + k * sy]) +
               ca[2][k] * (in[i - k * sz] + in[i + k * sz]);
        out[i] = v;
      }
}

template <int R, int TXT, int TYT, int MY, int K, int MINB, bool QREG>
struct Wave {
  static constexpr int TX = TXT, TY = TYT * MY;
  static size_t shared() {
    return sizeof(double) * ((QREG ? R + 1 : 2 * R + 1) + R + 1) * (TX + 2 * R) * (TY + 2 * R);
  }
  // Runs one fused launch (two steps) a -> b; returns false where the blocks cannot all be
  // resident or a wait timed out.
  static bool run(const double* a, double* b, double* ring, int* progress, int* error, int& base,
                  Grid g, const char** why) {
    auto k = wave2<R, TXT, TYT, MY, K, MINB, QREG>;
    const int tx = (g.nx + TX - 1) / TX, ty = (g.ny + TY - 1) / TY;
    int per_sm = 0, dev = 0, sms = 0;
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared()));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, TXT * TYT, shared()));
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    if (1LL * per_sm * sms < 1LL * tx * ty) {
      *why = "not every block resident";
      return false;
    }
    int nx = g.nx, ny = g.ny, nz = g.nz;
    void* args[] = {(void*)&a,     (void*)&b,    (void*)&ring, (void*)&progress,
                    (void*)&error, (void*)&base, &nx,          &ny,
                    &nz,           (void*)&tx,   (void*)&ty};
    CK(cudaLaunchCooperativeKernel((void*)k, dim3(tx * ty), dim3(TXT, TYT), args, shared(), 0));
    base += g.nz + R + 1;
    return true;
  }
  static int regs() {
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, wave2<R, TXT, TYT, MY, K, MINB, QREG>));
    return fa.numRegs;
  }
};

struct Buffers {
  double *a, *b, *t, *ref, *init, *ring;
  int *progress, *error;
  unsigned long long* maxerr;
};

// max |a - b| over n values (non-negative doubles order as their bit patterns).
__global__ void max_diff(const double* a, const double* b, long long n, unsigned long long* m) {
  double e = 0;
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x)
    e = fmax(e, fabs(a[i] - b[i]));
  atomicMax(m, __double_as_longlong(e));
}
double diff(Buffers& m, const double* a, const double* b, long long n) {
  CK(cudaMemset(m.maxerr, 0, 8));
  max_diff<<<1024, 256>>>(a, b, n, m.maxerr);
  unsigned long long v = 0;
  CK(cudaMemcpy(&v, m.maxerr, 8, cudaMemcpyDeviceToHost));
  double e;
  std::memcpy(&e, &v, 8);
  return e;
}

template <int R, int TXT, int TYT, int MY, int K, int MINB, bool QREG = true>
void variant(const char* name, Buffers& m, Grid g, int reps, double naive_gc, bool time_it,
             int& base) {
  using W = Wave<R, TXT, TYT, MY, K, MINB, QREG>;
  const long long n = g.n();
  CK(cudaMemcpy(m.a, m.init, n * 8, cudaMemcpyDeviceToDevice));
  CK(cudaMemset(m.b, 0, n * 8));
  CK(cudaMemset(m.error, 0, 4));
  const char* why = "";
  if (!W::run(m.a, m.b, m.ring, m.progress, m.error, base, g, &why)) {
    std::printf("%-28s R %d  tile %dx%d: skipped (%s)\n", name, R, W::TX, W::TY, why);
    return;
  }
  CK(cudaDeviceSynchronize());
  int err = 0;
  CK(cudaMemcpy(&err, m.error, 4, cudaMemcpyDeviceToHost));
  const double e = diff(m, m.b, m.ref, n);
  const bool ok = err == 0 && e <= 1e-13;
  std::printf("%-28s R %d  tile %dx%d  %3d regs  %5.1f KB  max err %.2e%s", name, R, W::TX, W::TY,
              W::regs(), W::shared() / 1024.0, e, ok ? "" : (err ? "  FAILED (wait)" : "  FAILED"));
  if (!ok || !time_it) {
    std::printf("\n");
    return;
  }
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  W::run(m.a, m.b, m.ring, m.progress, m.error, base, g, &why);
  CK(cudaEventRecord(e0));
  for (int r = 0; r < reps; ++r)
    W::run(r % 2 ? m.b : m.a, r % 2 ? m.a : m.b, m.ring, m.progress, m.error, base, g, &why);
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  CK(cudaMemcpy(&err, m.error, 4, cudaMemcpyDeviceToHost));
  const double gc = 2.0 * n * reps / (ms * 1e-3) / 1e9;
  std::printf("  %7.1f GCells/s per step (%.2fx naive)%s\n", gc, gc / naive_gc,
              err ? "  (a wait timed out)" : "");
}

template <int R>
double time_naive(Buffers& m, Grid g, int reps) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  naive2<R>(m.init, m.t, m.b, g);
  CK(cudaEventRecord(e0));
  for (int r = 0; r < reps; ++r)
    naive2<R>(m.init, m.t, m.b, g);
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  return 2.0 * g.n() * reps / (ms * 1e-3) / 1e9;
}

template <int R>
void set_coefficients(double& cc, double (&ca)[3][kMaxR + 1]) {
  cc = 0.4;
  for (int d = 0; d < 3; ++d)
    for (int k = 0; k <= kMaxR; ++k)
      ca[d][k] = k == 0 || k > R ? 0.0 : 0.1 / (k * (d + 2));
  CK(cudaMemcpyToSymbol(c_centre, &cc, sizeof cc));
  CK(cudaMemcpyToSymbol(c_axis, ca, sizeof ca));
}

template <int R>
bool cpu_check(Grid g, Buffers& m) {
  // Two steps on the CPU against the naive kernel on a small grid (the kernel checks come after).
  double cc, ca[3][kMaxR + 1];
  set_coefficients<R>(cc, ca);
  const long long n = g.n();
  std::vector<double> h(n), t(n), r(n), got(n);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  for (auto& v : h)
    v = u(rng);
  cpu_step(R, h, t, g, cc, ca);
  cpu_step(R, t, r, g, cc, ca);
  CK(cudaMemcpy(m.a, h.data(), n * 8, cudaMemcpyHostToDevice));
  naive2<R>(m.a, m.t, m.b, g);
  CK(cudaMemcpy(got.data(), m.b, n * 8, cudaMemcpyDeviceToHost));
  double e = 0;
  for (long long i = 0; i < n; ++i)
    e = std::fmax(e, std::fabs(got[i] - r[i]));
  std::printf("naive vs CPU, R %d, %dx%dx%d: max err %.2e\n", R, g.nx, g.ny, g.nz, e);
  return e < 1e-13;
}

template <int R>
void suite(Buffers& m, Grid g, int reps, bool time_it, int& base) {
  double cc, ca[3][kMaxR + 1];
  set_coefficients<R>(cc, ca);
  {
    std::vector<double> h(g.n());
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(-1, 1);
    for (auto& v : h)
      v = u(rng);
    CK(cudaMemcpy(m.init, h.data(), g.n() * 8, cudaMemcpyHostToDevice));
    naive2<R>(m.init, m.t, m.ref, g);
  }
  const double naive_gc = time_it ? time_naive<R>(m, g, reps) : 1.0;
  if (time_it)
    std::printf("naive R %d: %.1f GCells/s per step\n", R, naive_gc);
  if constexpr (R == 2) {
    variant<R, 32, 4, 4, 6, 4>("32x4 threads, 4 a thread", m, g, reps, naive_gc, time_it, base);
    variant<R, 32, 4, 4, 6, 4, false>("32x4, 4 a thread, z shared", m, g, reps, naive_gc, time_it,
                                      base);
    variant<R, 32, 8, 2, 6, 4, false>("32x8, 2 a thread, z shared", m, g, reps, naive_gc, time_it,
                                      base);
    variant<R, 32, 8, 2, 6, 4>("32x8 threads, 2 a thread", m, g, reps, naive_gc, time_it, base);
    variant<R, 64, 4, 2, 6, 4>("64x4 threads, 2 a thread", m, g, reps, naive_gc, time_it, base);
    variant<R, 32, 8, 4, 6, 2>("32x8 threads, 4 a thread", m, g, reps, naive_gc, time_it, base);
    variant<R, 64, 4, 4, 6, 2>("64x4 threads, 4 a thread", m, g, reps, naive_gc, time_it, base);
    variant<R, 32, 16, 2, 6, 2>("32x16 threads, 2 a thread", m, g, reps, naive_gc, time_it, base);
  } else {
    variant<R, 32, 4, 4, 2 * R + 2, 4>("32x4 threads, 4 a thread", m, g, reps, naive_gc, time_it,
                                       base);
    variant<R, 32, 8, 2, 2 * R + 2, 4>("32x8 threads, 2 a thread", m, g, reps, naive_gc, time_it,
                                       base);
    variant<R, 64, 4, 2, 2 * R + 2, 4>("64x4 threads, 2 a thread", m, g, reps, naive_gc, time_it,
                                       base);
  }
}

int main(int argc, char** argv) {
  Grid g{512, 512, 512};
  int reps = 10;
  if (argc >= 4)
    g = Grid{std::atoi(argv[1]), std::atoi(argv[2]), std::atoi(argv[3])};
  if (argc >= 5)
    reps = std::atoi(argv[4]);
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  std::printf("device %s, %d SMs, L2 %d MB\n", p.name, p.multiProcessorCount, p.l2CacheSize >> 20);
  Buffers m{};
  const long long n = g.n();
  const int rslots = 2 * kMaxR + 2;
  CK(cudaMalloc(&m.a, n * 8));
  CK(cudaMalloc(&m.b, n * 8));
  CK(cudaMalloc(&m.t, n * 8));
  CK(cudaMalloc(&m.ref, n * 8));
  CK(cudaMalloc(&m.init, n * 8));
  CK(cudaMalloc(&m.maxerr, 8));
  CK(cudaMalloc(&m.ring, 1LL * rslots * g.nx * g.ny * 8));
  CK(cudaMalloc(&m.progress, 1 << 20));
  CK(cudaMemset(m.progress, 0, 1 << 20));
  CK(cudaMalloc(&m.error, 4));
  int base = 0;
  // Small odd grid first: naive against the CPU, every variant against naive.
  {
    Grid s{101, 75, 37};
    for (int ok : {cpu_check<2>(s, m), cpu_check<3>(s, m), cpu_check<4>(s, m)})
      if (!ok)
        std::printf("naive kernel FAILED against the CPU\n");
    suite<2>(m, s, 1, false, base);
    suite<3>(m, s, 1, false, base);
    suite<4>(m, s, 1, false, base);
  }
  // The copy roofline of this GPU: one read and one write a cell.
  {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaMemcpy(m.b, m.a, n * 8, cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(e0));
    for (int r = 0; r < reps; ++r)
      CK(cudaMemcpy(m.b, m.a, n * 8, cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    std::printf("copy: %.1f GCells/s (%.0f GB/s)\n", 1.0 * n * reps / (ms * 1e-3) / 1e9,
                16.0 * n * reps / (ms * 1e-3) / 1e9);
  }
  suite<2>(m, g, reps, true, base);
  suite<3>(m, g, reps, true, base);
  suite<4>(m, g, reps, true, base);
  return 0;
}
