// Experiment (issue 48): a warp-specialised producer/consumer pipeline for 3-D high-order star
// stencils at one time step, without a block barrier in the stream loop.
//
// Hypothesis: star3d4r's tdeg-1 streaming kernels stop at 67 % of the copy roofline on an H200
// because they are latency-bound (172-184 registers, 8 warps an SM, one __syncthreads a plane;
// docs/studies/2026-11-28-3d-high-order-stars.md). Here the loads leave the compute warps
// altogether: one producer (an elected lane, or a dedicated warp) fills a ring of S shared-memory
// plane buffers with the bulk tensor copy engine, and the consumer warps synchronise with it only
// through mbarriers, slot by slot, so no warp waits at a block barrier for the others.
//
// 2.5-D streaming along z. A CTA owns a TX x TY tile of the x-y plane and the z range
// [zs, ze) (zb planes; z split over blockIdx.y); it walks the input planes pA .. pB-1
// (pA = max(zs - R, 0), pB = min(ze + R, NZ)), walk plane k into ring slot k % S.
//   Producer: for each plane, once the slot's "empty" mbarrier says every consumer warp released
//   the plane held there before (phase parity (k / S - 1) & 1), mbarrier.arrive.expect_tx on
//   the slot's "full" mbarrier with the box's byte count and one cp.async.bulk.tensor.3d of the
//   tile plus its halo (box P x ROWS x 1 at (x0 - PADL, y0 - R, plane); TMA zero-fills what
//   lies outside the grid, which only points that keep their input would read). PW = 1: a
//   dedicated producer warp (one elected lane) blocks on the empty barriers. PW = 0 (default):
//   lane 0 of consumer warp 0 produces without blocking: after each of its releases and while
//   it waits for a full barrier it issues, in order, every plane whose slot is free
//   (mbarrier.test_wait). A ninth warp costs the eight consumer warps registers: ptxas caps a
//   block per SM sub-partition, so 9 warps get 168 registers a thread where 8 get 255.
//   Consumers: thread (tx, ty) owns an x pair (read and written as double2) times PY rows.
//   Iteration i: (1) output plane z = pA + i - R gets every term but the newest plane's: the
//   z terms from the register column of its points (centres of planes z-R .. z+R-1), then the
//   in-plane terms row by row from slot (i - R) % S (the thread's own rows from registers);
//   (2) the warp releases plane i - LAG on its slot's empty barrier (__syncwarp, one arrive a
//   warp); (3) it waits on the full barrier of plane i (parity (i / S) & 1), reads its points'
//   centres into the column, adds the last z term, applies the boundary rule and stores.
//   Boundary planes of [zs, ze) are stored as copies when they arrive. A slot is held from its
//   load until LAG = R iterations later, so S >= R + 2 (S - R - 1 planes in flight ahead).
// UQ = 0 (default): the column shifts by register moves each plane; UQ = 1: the loop is
// unrolled 2R + 1 ways and the column indexed at compile time (no moves, but ptxas then keeps
// far more registers live: star3d4r with 2 x 2 points 180 against 126).
// ZS = 1: no register column; the z neighbours come from the ring too (LAG = 2R, S >= 2R + 2),
// so a thread holds a few doubles and many warps fit.
//
// Why TMA (tensor) and a fallback: one bulk tensor copy a plane moves the whole halo box with
// the edges zero-filled, with no per-element address arithmetic on any warp. It needs 16-byte
// global strides, so an odd NX cannot be described by a tensor map (nor copied with 16-byte
// aligned plain cp.async.bulk rows); on such a grid (and with --cpasync, or the _cpasync
// variant) the producer warp fills the slot with 8-byte cp.async instead (all 32 lanes,
// zero-filled outside the grid) and cp.async.mbarrier.arrive.noinc on the full barrier (count
// 32). Slot layout and consumers are the same, so the odd grid verifies the consumers' edges
// and the even grids verify the TMA path. The _bulk variants fill the slot without a tensor
// map, one 1-D cp.async.bulk a box row (mode 2, even NX): 0.70-0.75 x TMA with rows of about
// 70 doubles, 1.02 x with 136, on an H100
// (docs/studies/2026-12-07-bulk-rows-two-blocks-lap3d19-recording.md).
//
// Watchdog: every mbarrier wait gives up after kTimeoutNs of %globaltimer, sets a flag and the
// warp leaves the kernel, so a bookkeeping bug shows as a failed verification, not a hang.
//
// Stencil star3dNr: centre plus +-1..R along each axis (6R+1 points), coefficients
// c_centre = 0.5, c(axis, +-d) = 0.05 / (axis + 1) / d * (+d: 1, -d: 0.9). Boundary rule of
// kernels/reference.cuh: a point whose whole stencil lies in the grid gets the weighted sum,
// any other keeps its input.
//
//   nvcc -O3 -arch=sm_90 -std=c++17 -o pc_star bench/issue48/pc_star.cu
//   pc_star --list                       variant names, one a line
//   pc_star [--only A,B|all|baseline] [--grids 203x77x61,206x77x61,512x512x512] [--header]
//           [--ms 40] [--reps 5] [--cpasync] [--profile N]
// Every selected kernel is verified on every grid (one step from the same random input into a
// NaN-poisoned output against the plain reference kernel; the reference itself against the CPU
// on grids up to 8M cells) and timed on the largest grid (median of reps repeats of enough
// ping-pong steps for ms milliseconds), the device-to-device copy of that grid in the same run
// (16 bytes a cell). One CSV line per kernel and grid on stdout; progress on stderr.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#define CK(x)                                                                               \
  do {                                                                                      \
    cudaError_t e_ = (x);                                                                   \
    if (e_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "CUDA error %s at line %d\n", cudaGetErrorString(e_), __LINE__); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

// The reference step (run-time offsets in c_off / c_coef), random fill, NaN poison and the
// relative-L2 comparison (they use the CK above).
#include "../harness/mbarrier.cuh"
#include "../harness/standalone.cuh"

constexpr int kMaxR = 4;
constexpr int kMaxPts = 6 * kMaxR + 1;
constexpr unsigned long long kTimeoutNs = 500000000ULL;  // 0.5 s per mbarrier wait

__constant__ double c_centre;
__constant__ double c_plus[3][kMaxR + 1];   // c(axis, +d), d = 1..R
__constant__ double c_minus[3][kMaxR + 1];  // c(axis, -d)
static_assert(kMaxPts <= kRefMaxPts, "the reference kernel's run-time stencil (standalone.cuh)");

double coef(int axis, int d) {  // d != 0
  return 0.05 / (axis + 1) / std::abs(d) * (d > 0 ? 1.0 : 0.9);
}

// ---------------------------------------------------------------------------------------------
// PTX helpers: mbarrier (the rest in ../harness/mbarrier.cuh), bulk tensor copy, cp.async
__device__ __forceinline__ void fence_barrier_init() {
  fence_mbarrier_init();
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ bool mbar_test_wait(uint32_t bar, uint32_t parity) {  // non-blocking
  uint32_t ok;
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "mbarrier.test_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok != 0;
}
// One thread's wait for the phase of parity `parity` to complete; false after kTimeoutNs.
__device__ __noinline__ bool wait_one(uint32_t bar, uint32_t parity) {
  if (mbar_try_wait(bar, parity))
    return true;
  const unsigned long long t0 = global_ns();
  for (;;) {
    for (int k = 0; k < 64; ++k)
      if (mbar_try_wait(bar, parity))
        return true;
    if (global_ns() - t0 > kTimeoutNs)
      return false;
  }
}
// The whole warp waits; the answer is warp-uniform (false if any lane timed out).
__device__ __forceinline__ bool wait_warp(uint32_t bar, uint32_t parity) {
  bool ok = mbar_try_wait(bar, parity);
  if (!ok)
    ok = wait_one(bar, parity);
  return __all_sync(0xffffffffu, ok);
}
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap* map, int c0, int c1,
                                            int c2, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}
// One contiguous run of global memory into shared memory by the bulk copy engine (no tensor
// map): 16-byte aligned addresses, a multiple of 16 bytes; completes `bytes` on the mbarrier.
__device__ __forceinline__ void bulk_load(uint32_t dst, const double* src, uint32_t bytes,
                                          uint32_t bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(dst),
      "l"(src), "r"(bytes), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void cp_async8(uint32_t dst, const double* src, int bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(dst), "l"(src), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_arrive_noinc(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ double2 lds2(const double* p) {
  return *reinterpret_cast<const double2*>(p);
}

// ---------------------------------------------------------------------------------------------
// The producer/consumer kernel.
// PW = 1: a dedicated producer warp (the last one); PW = 0: lane 0 of consumer warp 0 is the
// producer (a register cap is set per SM sub-partition, so a ninth warp costs 8 consumer warps
// as much as a twelfth: 168 registers instead of 255).
// UQ = 1: the stream loop unrolled 2R+1 ways, the register column indexed at compile time (no
// moves); UQ = 0: one iteration a trip, the column shifted by register moves (2R doubles a
// point a plane). ptxas keeps far fewer registers live with UQ = 0 (star3d4r, 2 x 2 points:
// 126 against 180).
template <int R_, int TX_, int TY_, int PY_, int CW_, int S_, int MINB_, int ZS_, int PW_, int UQ_>
struct Cfg {
  static constexpr int R = R_, TX = TX_, TY = TY_, PY = PY_, CW = CW_, S = S_, MINB = MINB_,
                       ZS = ZS_, PW = PW_, UQ = ZS_ ? 0 : UQ_;
  static constexpr int TBX = TX / 2;             // consumer threads along x (one pair each)
  static constexpr int NCT = 32 * CW;            // consumer threads
  static constexpr int TBY = NCT / TBX;          // consumer threads along y (PY rows each)
  static constexpr int THREADS = NCT + 32 * PW;  // + the producer warp
  static constexpr int PADL = (R + 1) & ~1;      // left halo, even: pairs stay 16-byte aligned
  static constexpr int P = TX + 2 * PADL;        // shared row = TMA box width (even)
  static constexpr int ROWS = TY + 2 * R;        // box height
  static constexpr int SLOT = (P * ROWS + 15) / 16 * 16;  // doubles; slots 128-byte aligned
  static constexpr int Q = 2 * R + 1;                     // the register column of a point
  static constexpr int LAG = ZS ? 2 * R : R;  // plane k's slot is released at iteration k+LAG
  static constexpr uint32_t BOX_BYTES = P * ROWS * 8;
  static constexpr size_t SMEM = 128 + size_t(S) * SLOT * 8 + 2 * S * 8;
  static_assert(TX % 2 == 0 && TBX * TBY == NCT && TBY * PY == TY, "tile shape");
  static_assert(R >= 1 && R <= kMaxR, "radius");
  static_assert(P <= 256 && ROWS <= 256, "TMA box dimensions are at most 256");
  static_assert(S >= LAG + 2, "ring too shallow: no plane in flight ahead of the consumers");
  static_assert(BOX_BYTES < (1u << 20), "mbarrier tx-count");
};

template <class C>
__global__ void __launch_bounds__(C::THREADS, C::MINB)
    pc_star(const double* __restrict__ in, double* __restrict__ out,
            const __grid_constant__ CUtensorMap tmap, int nx, int ny, int nz, int zb, int tiles_x,
            int mode, int* err) {
  constexpr int R = C::R, P = C::P, S = C::S, Q = C::Q, PY = C::PY, PADL = C::PADL;
  constexpr int SLOT = C::SLOT, UF = C::UQ ? Q : 1;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t sbase = (raw + 127u) & ~127u;
  double* const ring = reinterpret_cast<double*>(smem_raw + (sbase - raw));
  const uint32_t full0 = sbase + S * SLOT * 8, empty0 = full0 + 8 * S;

  const int x0 = static_cast<int>(blockIdx.x % tiles_x) * C::TX;
  const int y0 = static_cast<int>(blockIdx.x / tiles_x) * C::TY;
  const int zs = static_cast<int>(blockIdx.y) * zb, ze = min(zs + zb, nz);
  const int pA = max(zs - R, 0), pB = min(ze + R, nz), K = pB - pA;

  if (threadIdx.x == 0) {
#pragma unroll 1
    for (int s = 0; s < S; ++s) {
      mbar_init(full0 + 8 * s, mode == 1 ? 32 : 1);
      mbar_init(empty0 + 8 * s, C::CW);
    }
    fence_barrier_init();
  }
  __syncthreads();  // the only block barrier: barriers initialised

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  // Fills slot s with walk plane k: TMA (lane 0 of the calling warp), 8-byte cp.async from
  // all 32 lanes of the calling warp (mode 1), or one 1-D bulk copy a row of the box clipped to
  // the grid, the rows spread over the calling warp's lanes (mode 2: no tensor map; an even nx
  // keeps every row 16-byte aligned; what the clip leaves out of the slot is stale and read
  // only by points that keep their input). The slot's empty phase is already complete.
  auto issue = [&](int k, int s) {
    if (mode == 0) {
      if (lane == 0) {
        mbar_arrive_expect_tx(full0 + 8 * s, C::BOX_BYTES);
        tma_load_3d(sbase + s * SLOT * 8, &tmap, x0 - PADL, y0 - R, pA + k, full0 + 8 * s);
      }
    } else if (mode == 2) {
      const int bx = x0 - PADL, by = y0 - R;
      const int xs = max(bx, 0), xe = min(bx + P, nx), ys = max(by, 0), ye = min(by + C::ROWS, ny);
      const uint32_t row_bytes = static_cast<uint32_t>(xe - xs) * 8;
      if (lane == 0)
        mbar_arrive_expect_tx(full0 + 8 * s, row_bytes * static_cast<uint32_t>(ye - ys));
      __syncwarp();  // the expected bytes are set before any row can complete
      const double* src = in + 1LL * (pA + k) * nx * ny + xs;
      const uint32_t dst = sbase + (s * SLOT + (xs - bx)) * 8;
      for (int gy = ys + lane; gy < ye; gy += 32)
        bulk_load(dst + (gy - by) * P * 8, src + 1LL * gy * nx, row_bytes, full0 + 8 * s);
    } else {
      const uint32_t dst = sbase + s * SLOT * 8;
      const double* src = in + 1LL * (pA + k) * nx * ny;
#pragma unroll 4
      for (int e = lane; e < P * C::ROWS; e += 32) {
        const int row = e / P, col = e - row * P;
        const int gx = x0 - PADL + col, gy = y0 - R + row;
        const bool ok = gx >= 0 && gx < nx && gy >= 0 && gy < ny;
        cp_async8(dst + 8 * e, ok ? src + 1LL * gy * nx + gx : in, ok ? 8 : 0);
      }
      cp_async_arrive_noinc(full0 + 8 * s);
    }
  };
  if (C::PW && warp == C::CW) {
    // ------------------------------------------------------------------ producer warp
    if (mode == 0 && lane != 0)
      return;
#pragma unroll 1
    for (int k = 0; k < K; ++k) {
      const int s = k % S, n = k / S;
      if (n > 0) {
        const bool ok = mode == 0 ? wait_one(empty0 + 8 * s, (n - 1) & 1)
                                  : wait_warp(empty0 + 8 * s, (n - 1) & 1);
        if (!ok) {
          if (lane == 0)
            atomicOr(err, 1);
          return;
        }
      }
      issue(k, s);
    }
    return;
  }
  // PW = 0: warp 0 also produces. pump() (warp-uniform) issues every plane whose slot is free,
  // in order, without blocking; warp 0 calls it after each release and while it waits.
  const bool prod = !C::PW && warp == 0;
  int nl = 0;  // next walk plane to load (warp 0)
  auto pump = [&]() {
    while (nl < K) {
      const int s = nl % S, n = nl / S;
      bool ready = n == 0 || mbar_test_wait(empty0 + 8 * s, (n - 1) & 1);
      ready = __shfl_sync(0xffffffffu, ready, 0);
      if (!ready)
        break;
      issue(nl, s);
      ++nl;
    }
  };
  // Warp 0's wait for the full barrier: pumps while it polls (the plane it waits for may be
  // the next to load). Warp-uniform answer; false after kTimeoutNs.
  auto wait_pump = [&](uint32_t bar, uint32_t parity) {
    unsigned long long t0 = 0;
    for (int it = 0;; ++it) {
      pump();
      if (__all_sync(0xffffffffu, mbar_test_wait(bar, parity)))
        return true;
      if ((it & 31) == 31) {
        int late = 0;
        if (lane == 0) {
          const unsigned long long now = global_ns();
          if (t0 == 0)
            t0 = now;
          late = now - t0 > kTimeoutNs;
        }
        if (__shfl_sync(0xffffffffu, late, 0))
          return false;
      }
    }
  };
  if (prod)
    pump();

  // -------------------------------------------------------------------- consumer warps
  const int t = threadIdx.x, tx = t % C::TBX, ty = t / C::TBX;
  const int gx = x0 + 2 * tx, gy0 = y0 + PY * ty;
  const long long plane = 1LL * nx * ny;
  const bool vec = (nx & 1) == 0;  // pairs start at even global indices: double2 stores
  const bool inx0 = gx < nx, inx1 = gx + 1 < nx;
  bool inrow[PY], colok[PY][2];
#pragma unroll
  for (int v = 0; v < PY; ++v) {
    const int y = gy0 + v;
    inrow[v] = y < ny;
    const bool yok = y >= R && y < ny - R;
#pragma unroll
    for (int u = 0; u < 2; ++u)
      colok[v][u] = yok && gx + u >= R && gx + u < nx - R;
  }
  const int sm0 = (PY * ty + R) * P + 2 * tx + PADL;  // even: 16-byte aligned pairs
  const int zlo = max(zs, R), zhi = min(ze, nz - R);  // planes that get the weighted sum

  auto store = [&](int z, const double(&val)[PY][2]) {
    double* o = out + z * plane + 1LL * gy0 * nx + gx;
#pragma unroll
    for (int v = 0; v < PY; ++v) {
      if (!inrow[v])
        continue;
      double* ov = o + 1LL * v * nx;
      if (vec) {
        if (inx0)
          *reinterpret_cast<double2*>(ov) = make_double2(val[v][0], val[v][1]);
      } else {
        if (inx0)
          ov[0] = val[v][0];
        if (inx1)
          ov[1] = val[v][1];
      }
    }
  };

  // Centres of the last Q planes. UQ: plane j in zq[j % Q]; else zq[Q - 1] is the newest.
  double zq[C::ZS ? 1 : Q][PY][2];
  // Index of plane k + o (o = -R .. R-1; k = i - R the output plane) in step (1) of unrolled
  // trip u, before plane i arrives.
  auto zi = [](int u, int o) { return C::UQ ? (u - R + o + 2 * Q) % Q : R + 1 + o; };
#pragma unroll
  for (int j = 0; j < (C::ZS ? 1 : Q); ++j)
#pragma unroll
    for (int v = 0; v < PY; ++v)
      zq[j][v][0] = zq[j][v][1] = 0.0;

#pragma unroll 1
  for (int ib = 0; ib < K; ib += UF) {
#pragma unroll
    for (int u = 0; u < UF; ++u) {
      const int i = ib + u;
      const int k = i - R, z = pA + k;
      const bool comp = z >= zlo && z < zhi;  // implies 0 <= k - R and i < K
      double acc[PY][2], cen[PY][2];
      // (1) output plane z from planes that arrived earlier: all terms but plane z + R.
      if (comp) {
        const double* sp = ring + (k % S) * SLOT + sm0;
        if constexpr (C::ZS) {
#pragma unroll
          for (int v = 0; v < PY; ++v) {
            const double2 c2 = lds2(sp + v * P);
            cen[v][0] = c2.x;
            cen[v][1] = c2.y;
          }
        } else {
#pragma unroll
          for (int v = 0; v < PY; ++v) {
            cen[v][0] = zq[zi(u, 0)][v][0];
            cen[v][1] = zq[zi(u, 0)][v][1];
          }
        }
        // The z terms first (no shared load waits for them), then the in-plane terms row by
        // row (rows -R .. PY-1+R of the thread's pair): a row's loads are used at once, so few
        // values are live at a time. Every shared access is an aligned pair.
#pragma unroll
        for (int v = 0; v < PY; ++v)
#pragma unroll
          for (int uu = 0; uu < 2; ++uu)
            acc[v][uu] = c_centre * cen[v][uu];
#pragma unroll
        for (int d = 1; d <= R; ++d) {
          double lo[PY][2], hi[PY][2];  // planes z - d and z + d (d < R; z + R comes in (3))
#pragma unroll
          for (int v = 0; v < PY; ++v) {
            if constexpr (C::ZS) {
              const double2 l2 = lds2(ring + ((k - d) % S) * SLOT + sm0 + v * P);
              lo[v][0] = l2.x;
              lo[v][1] = l2.y;
              if (d < R) {
                const double2 h2 = lds2(ring + ((k + d) % S) * SLOT + sm0 + v * P);
                hi[v][0] = h2.x;
                hi[v][1] = h2.y;
              }
            } else {
#pragma unroll
              for (int uu = 0; uu < 2; ++uu) {
                lo[v][uu] = zq[zi(u, -d)][v][uu];
                hi[v][uu] = zq[zi(u, d)][v][uu];
              }
            }
#pragma unroll
            for (int uu = 0; uu < 2; ++uu) {
              acc[v][uu] = fma(c_minus[2][d], lo[v][uu], acc[v][uu]);
              if (d < R)
                acc[v][uu] = fma(c_plus[2][d], hi[v][uu], acc[v][uu]);
            }
          }
        }
#pragma unroll
        for (int w = -R; w < PY + R; ++w) {
          double rc[2];  // row w at the thread's pair
          if (w >= 0 && w < PY) {
            rc[0] = cen[w][0];
            rc[1] = cen[w][1];
            // x neighbours of an own row: xv[PADL + e] = pair offset e, e = -PADL .. PADL + 1
            double xv[2 * PADL + 2];
#pragma unroll
            for (int j = 0; j < PADL; j += 2) {
              const double2 l2 = lds2(sp + w * P - PADL + j);
              const double2 r2 = lds2(sp + w * P + 2 + j);
              xv[j] = l2.x;
              xv[j + 1] = l2.y;
              xv[PADL + 2 + j] = r2.x;
              xv[PADL + 3 + j] = r2.y;
            }
            xv[PADL] = rc[0];
            xv[PADL + 1] = rc[1];
#pragma unroll
            for (int uu = 0; uu < 2; ++uu)
#pragma unroll
              for (int d = 1; d <= R; ++d) {
                acc[w][uu] = fma(c_plus[0][d], xv[PADL + uu + d], acc[w][uu]);
                acc[w][uu] = fma(c_minus[0][d], xv[PADL + uu - d], acc[w][uu]);
              }
          } else {
            const double2 r2 = lds2(sp + w * P);
            rc[0] = r2.x;
            rc[1] = r2.y;
          }
          // y terms: row w is row v + dd of output row v
#pragma unroll
          for (int v = 0; v < PY; ++v) {
            const int dd = w - v;
#pragma unroll
            for (int uu = 0; uu < 2; ++uu) {
              if (dd >= 1 && dd <= R)
                acc[v][uu] = fma(c_plus[1][dd], rc[uu], acc[v][uu]);
              else if (dd <= -1 && dd >= -R)
                acc[v][uu] = fma(c_minus[1][-dd], rc[uu], acc[v][uu]);
            }
          }
        }
      }
      // (2) release plane i - LAG: every read of its slot is done.
      {
        const int kr = i - C::LAG;
        if (kr >= 0 && kr < K) {
          __syncwarp();
          if (lane == 0)
            mbar_arrive(empty0 + 8 * (kr % S));
        }
        if (prod)
          pump();
      }
      // (3) the newest plane i.
      if (i < K) {
        const int s = i % S;
        if (!(prod ? wait_pump(full0 + 8 * s, (i / S) & 1)
                   : wait_warp(full0 + 8 * s, (i / S) & 1))) {
          if (lane == 0)
            atomicOr(err, 2);
          return;
        }
        const double* sn = ring + s * SLOT + sm0;
        double cn[PY][2];
#pragma unroll
        for (int v = 0; v < PY; ++v) {
          const double2 c2 = lds2(sn + v * P);
          cn[v][0] = c2.x;
          cn[v][1] = c2.y;
        }
        if constexpr (!C::ZS) {
#pragma unroll
          for (int v = 0; v < PY; ++v) {
            if constexpr (C::UQ) {
              zq[u][v][0] = cn[v][0];
              zq[u][v][1] = cn[v][1];
            } else {
#pragma unroll
              for (int j = 0; j + 1 < Q; ++j) {
                zq[j][v][0] = zq[j + 1][v][0];
                zq[j][v][1] = zq[j + 1][v][1];
              }
              zq[Q - 1][v][0] = cn[v][0];
              zq[Q - 1][v][1] = cn[v][1];
            }
          }
        }
        const int pl = pA + i;
        if (pl >= zs && pl < ze && (pl < zlo || pl >= zhi))
          store(pl, cn);  // a boundary plane keeps its input
        if (comp) {
#pragma unroll
          for (int v = 0; v < PY; ++v)
#pragma unroll
            for (int uu = 0; uu < 2; ++uu) {
              const double a = fma(c_plus[2][R], cn[v][uu], acc[v][uu]);
              acc[v][uu] = colok[v][uu] ? a : cen[v][uu];
            }
          store(z, acc);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Naive kernel (one thread a point, compile-time offsets); the plain reference (run-time
// offsets, as kernels/reference.cuh) is standalone.cuh's reference_step.
template <int R>
__global__ void naive_star(const double* __restrict__ in, double* __restrict__ out, int nx, int ny,
                           int nz) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int z = blockIdx.z;
  if (x >= nx || y >= ny)
    return;
  const long long sy = nx, sz = 1LL * nx * ny;
  const long long i = z * sz + y * sy + x;
  if (x < R || x >= nx - R || y < R || y >= ny - R || z < R || z >= nz - R) {
    out[i] = in[i];
    return;
  }
  double a = c_centre * in[i];
#pragma unroll
  for (int d = 1; d <= R; ++d) {
    a = fma(c_plus[0][d], in[i + d], a);
    a = fma(c_minus[0][d], in[i - d], a);
    a = fma(c_plus[1][d], in[i + d * sy], a);
    a = fma(c_minus[1][d], in[i - d * sy], a);
    a = fma(c_plus[2][d], in[i + d * sz], a);
    a = fma(c_minus[2][d], in[i - d * sz], a);
  }
  out[i] = a;
}

// ---------------------------------------------------------------------------------------------
// Host side.
struct Grid {
  int nx, ny, nz;
  long long cells() const { return 1LL * nx * ny * nz; }
  std::string str() const {
    return std::to_string(nx) + "x" + std::to_string(ny) + "x" + std::to_string(nz);
  }
};

static PFN_cuTensorMapEncodeTiled_v12000 g_encode = nullptr;
static bool g_force_cpasync = false;

struct Runner {
  std::string name;
  int r = 0;
  virtual ~Runner() = default;
  virtual std::string params() const = 0;
  virtual const char* producer(const Grid&) const { return "-"; }
  // Launches one step in -> out; false where it cannot run (a message on stderr).
  virtual bool launch(const double* in, double* out, const Grid& g, int* err) = 0;
  virtual void attrs(int& regs, int& local, long long& smem) = 0;
};

template <int R>
struct NaiveRunner : Runner {
  NaiveRunner() {
    name = "naive" + std::to_string(R);
    r = R;
  }
  std::string params() const override { return "32x8 threads; one a point"; }
  bool launch(const double* in, double* out, const Grid& g, int*) override {
    dim3 blk(32, 8), grd((g.nx + 31) / 32, (g.ny + 7) / 8, g.nz);
    naive_star<R><<<grd, blk>>>(in, out, g.nx, g.ny, g.nz);
    return cudaPeekAtLastError() == cudaSuccess;
  }
  void attrs(int& regs, int& local, long long& smem) override {
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, naive_star<R>));
    regs = fa.numRegs;
    local = static_cast<int>(fa.localSizeBytes);
    smem = static_cast<long long>(fa.sharedSizeBytes);
  }
};

void set_reference_stencil(int r) {
  int off[kMaxPts][3] = {};
  double cf[kMaxPts] = {};
  int n = 0;
  off[n][0] = off[n][1] = off[n][2] = 0;
  cf[n++] = 0.5;
  for (int axis = 0; axis < 3; ++axis)
    for (int d = -r; d <= r; ++d) {
      if (d == 0)
        continue;
      off[n][0] = off[n][1] = off[n][2] = 0;
      off[n][axis] = d;
      cf[n++] = coef(axis, d);
    }
  CK(cudaMemcpyToSymbol(c_off, off, sizeof off));
  CK(cudaMemcpyToSymbol(c_coef, cf, sizeof cf));
}

struct ReferenceRunner : Runner {
  explicit ReferenceRunner(int rr) {
    name = "reference" + std::to_string(rr);
    r = rr;
  }
  std::string params() const override { return "256 threads; run-time offsets"; }
  bool launch(const double* in, double* out, const Grid& g, int*) override {
    const Dims d{g.nx, g.ny, g.nz, r, r, r, r, r, r, 6 * r + 1};  // set_reference_stencil(r)
    reference_step<<<static_cast<unsigned>((g.cells() + 255) / 256), 256>>>(in, out, d);
    return cudaPeekAtLastError() == cudaSuccess;
  }
  void attrs(int& regs, int& local, long long& smem) override {
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, reference_step));
    regs = fa.numRegs;
    local = static_cast<int>(fa.localSizeBytes);
    smem = static_cast<long long>(fa.sharedSizeBytes);
  }
};

template <class C>
struct PcRunner : Runner {
  int zb;    // planes per CTA (0: the whole z extent)
  int prod;  // 0: TMA, 1: cp.async, 2: bulk rows (an odd nx takes cp.async)
  struct Map {
    const double* p;
    int nx, ny, nz;
    CUtensorMap m;
  };
  std::vector<Map> maps;
  bool attr_set = false;
  PcRunner(const char* n, int zb_, int prod_) : zb(zb_), prod(prod_) {
    name = n;
    r = C::R;
  }
  int mode(const Grid& g) const {
    return (g.nx % 2 != 0 || prod == 1 || g_force_cpasync) ? 1 : prod;
  }
  const char* producer(const Grid& g) const override {
    static const char* const names[] = {"tma", "cp.async", "bulk"};
    return names[mode(g)];
  }
  void ensure_attr() {
    if (!attr_set) {
      CK(cudaFuncSetAttribute(pc_star<C>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(C::SMEM)));
      attr_set = true;
    }
  }
  std::string params() const override {
    const_cast<PcRunner*>(this)->ensure_attr();
    char b[200];
    int bps = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, pc_star<C>, C::THREADS, C::SMEM));
    std::snprintf(b, sizeof b,
                  "tile %dx%d; pts 2x%d; cw %d; pw %d; S %d; minb %d; zs %d; uq %d; zb %d; bps %d",
                  C::TX, C::TY, C::PY, C::CW, C::PW, C::S, C::MINB, C::ZS, C::UQ, zb, bps);
    return b;
  }
  const CUtensorMap* map_for(const double* p, const Grid& g) {
    for (auto& m : maps)
      if (m.p == p && m.nx == g.nx && m.ny == g.ny && m.nz == g.nz)
        return &m.m;
    Map m{p, g.nx, g.ny, g.nz, {}};
    cuuint64_t dims[3] = {(cuuint64_t)g.nx, (cuuint64_t)g.ny, (cuuint64_t)g.nz};
    cuuint64_t strides[2] = {(cuuint64_t)g.nx * 8, (cuuint64_t)g.nx * g.ny * 8};
    cuuint32_t box[3] = {(cuuint32_t)C::P, (cuuint32_t)C::ROWS, 1};
    cuuint32_t estr[3] = {1, 1, 1};
    CUresult res =
        g_encode(&m.m, CU_TENSOR_MAP_DATA_TYPE_FLOAT64, 3, const_cast<double*>(p), dims, strides,
                 box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                 CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (res != CUDA_SUCCESS) {
      std::fprintf(stderr, "%s: cuTensorMapEncodeTiled failed (%d)\n", name.c_str(), (int)res);
      return nullptr;
    }
    maps.push_back(m);
    return &maps.back().m;
  }
  bool launch(const double* in, double* out, const Grid& g, int* err) override {
    ensure_attr();
    const int md = mode(g);
    CUtensorMap dummy;
    std::memset(&dummy, 0, sizeof dummy);
    const CUtensorMap* m = &dummy;
    if (md == 0 && !(m = map_for(in, g)))
      return false;
    const int z_per = zb > 0 ? std::min(zb, g.nz) : g.nz;
    const int tiles_x = (g.nx + C::TX - 1) / C::TX, tiles_y = (g.ny + C::TY - 1) / C::TY;
    dim3 grd(tiles_x * tiles_y, (g.nz + z_per - 1) / z_per);
    pc_star<C>
        <<<grd, C::THREADS, C::SMEM>>>(in, out, *m, g.nx, g.ny, g.nz, z_per, tiles_x, md, err);
    const cudaError_t e = cudaPeekAtLastError();
    if (e != cudaSuccess) {
      std::fprintf(stderr, "%s: launch failed: %s\n", name.c_str(), cudaGetErrorString(e));
      return false;
    }
    return true;
  }
  void attrs(int& regs, int& local, long long& smem) override {
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, pc_star<C>));
    regs = fa.numRegs;
    local = static_cast<int>(fa.localSizeBytes);
    smem = static_cast<long long>(fa.sharedSizeBytes) + static_cast<long long>(C::SMEM);
  }
};

// name, R, tile TX x TY, points per thread 2 x PY, consumer warps, ring depth S, min blocks
// per SM, z column in shared memory, producer warp (else lane 0 of warp 0), loop unrolled 2R+1
// ways, planes per CTA (0: all), producer (false: TMA, true: cp.async, 2: bulk rows).
#define PC(NAME, R, TX, TY, PY, CW, S, MINB, ZS, PW, UQ, ZB, PROD)                     \
  v.push_back(std::make_unique<PcRunner<Cfg<R, TX, TY, PY, CW, S, MINB, ZS, PW, UQ>>>( \
      NAME, ZB, static_cast<int>(PROD)))

std::vector<std::unique_ptr<Runner>> make_variants() {
  std::vector<std::unique_ptr<Runner>> v;
  // star3d4r
  PC("pc4_64x16_y2_w8_s8_b2", 4, 64, 16, 2, 8, 8, 2, 0, 0, 0, 0, false);
  PC("pc4_64x16_y2_w8_s6_b2", 4, 64, 16, 2, 8, 6, 2, 0, 0, 0, 0, false);
  PC("pc4_64x16_y2_w8_s8_b1_uq", 4, 64, 16, 2, 8, 8, 1, 0, 0, 1, 0, false);
  PC("pc4_64x16_y2_w8_s8_b1_pw", 4, 64, 16, 2, 8, 8, 1, 0, 1, 0, 0, false);
  PC("pc4_64x16_y2_w8_s8_b2_cpasync", 4, 64, 16, 2, 8, 8, 2, 0, 0, 0, 0, true);
  PC("pc4_64x16_y1_w16_s8", 4, 64, 16, 1, 16, 8, 1, 0, 0, 0, 0, false);
  PC("pc4_64x32_y2_w16_s7", 4, 64, 32, 2, 16, 7, 1, 0, 0, 0, 0, false);
  PC("pc4_64x32_y4_w8_s7", 4, 64, 32, 4, 8, 7, 1, 0, 0, 0, 0, false);
  PC("pc4_64x32_y4_w8_s7_zb256", 4, 64, 32, 4, 8, 7, 1, 0, 0, 0, 256, false);
  // the two best features of the first H100 run together: a producer warp, 2 x 4 points (with
  // 8 consumer warps the ninth caps the registers at 168 and the kernel spills: 4 warps)
  PC("pc4_64x16_y4_w4_s8_pw", 4, 64, 16, 4, 4, 8, 1, 0, 1, 0, 0, false);
  PC("pc4_128x16_y4_w8_s6", 4, 128, 16, 4, 8, 6, 1, 0, 0, 0, 0, false);
  PC("pc4_64x16_y1_w16_s10_zs", 4, 64, 16, 1, 16, 10, 1, 1, 0, 0, 0, false);
  // star3d3r
  PC("pc3_64x16_y2_w8_s7_b2", 3, 64, 16, 2, 8, 7, 2, 0, 0, 0, 0, false);
  PC("pc3_64x16_y1_w16_s7", 3, 64, 16, 1, 16, 7, 1, 0, 0, 0, 0, false);
  PC("pc3_64x32_y4_w8_s6", 3, 64, 32, 4, 8, 6, 1, 0, 0, 0, 0, false);
  PC("pc3_128x16_y4_w8_s6", 3, 128, 16, 4, 8, 6, 1, 0, 0, 0, 0, false);
  PC("pc3_128x16_y4_w8_s6_pw", 3, 128, 16, 4, 8, 6, 1, 0, 1, 0, 0, false);
  // star3d2r
  PC("pc2_64x16_y2_w8_s6_b2", 2, 64, 16, 2, 8, 6, 2, 0, 0, 0, 0, false);
  PC("pc2_64x16_y1_w16_s6_b2", 2, 64, 16, 1, 16, 6, 2, 0, 0, 0, 0, false);
  PC("pc2_64x32_y4_w8_s5", 2, 64, 32, 4, 8, 5, 1, 0, 0, 0, 0, false);
  PC("pc2_128x16_y4_w8_s5", 2, 128, 16, 4, 8, 5, 1, 0, 0, 0, 0, false);
  PC("pc2_128x16_y4_w8_s5_pw", 2, 128, 16, 4, 8, 5, 1, 0, 1, 0, 0, false);
  PC("pc2_64x32_y2_w16_s5", 2, 64, 32, 2, 16, 5, 1, 0, 0, 0, 0, false);
  // the best of each radius on the H200 (2026-12-07) with 1-D bulk copies a row, no tensor map
  PC("pc4_64x16_y2_w8_s8_b1_pw_bulk", 4, 64, 16, 2, 8, 8, 1, 0, 1, 0, 0, 2);
  PC("pc3_128x16_y4_w8_s6_pw_bulk", 3, 128, 16, 4, 8, 6, 1, 0, 1, 0, 0, 2);
  PC("pc2_64x32_y4_w8_s5_bulk", 2, 64, 32, 4, 8, 5, 1, 0, 0, 0, 0, 2);
  return v;
}

std::vector<std::unique_ptr<Runner>> make_baselines() {
  std::vector<std::unique_ptr<Runner>> v;
  v.push_back(std::make_unique<NaiveRunner<2>>());
  v.push_back(std::make_unique<NaiveRunner<3>>());
  v.push_back(std::make_unique<NaiveRunner<4>>());
  v.push_back(std::make_unique<ReferenceRunner>(2));
  v.push_back(std::make_unique<ReferenceRunner>(3));
  v.push_back(std::make_unique<ReferenceRunner>(4));
  return v;
}

struct Buffers {
  double *init = nullptr, *ref = nullptr, *out = nullptr, *tmp = nullptr, *partial = nullptr;
  int* err = nullptr;
};

struct Check {
  double rel_l2 = 0, max_rel = 0;
  long long nonfinite = 0;
};

Check compare_dev(const Buffers& b, const double* out, const double* ref, long long n) {
  const Diff d = compare_device(out, ref, n, b.partial, 1024);
  Check c;
  c.rel_l2 = d.r2 > 0 ? std::sqrt(d.d2 / d.r2) : 0.0;
  c.max_rel = d.max_rel;
  c.nonfinite = static_cast<long long>(d.bad);
  return c;
}

// One step of the stencil on the CPU (checks the reference kernel on small grids).
Check cpu_check(const Buffers& b, const Grid& g, int r) {
  const long long n = g.cells(), sy = g.nx, sz = 1LL * g.nx * g.ny;
  std::vector<double> in(n), ref(n);
  CK(cudaMemcpy(in.data(), b.init, n * 8, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(ref.data(), b.ref, n * 8, cudaMemcpyDeviceToHost));
  double d2 = 0, r2 = 0, mx = 0;
  long long bad = 0;
  for (int z = 0; z < g.nz; ++z)
    for (int y = 0; y < g.ny; ++y)
      for (int x = 0; x < g.nx; ++x) {
        const long long i = z * sz + y * sy + x;
        double v = in[i];
        if (x >= r && x < g.nx - r && y >= r && y < g.ny - r && z >= r && z < g.nz - r) {
          v = 0.5 * in[i];
          for (int d = 1; d <= r; ++d)
            v += coef(0, d) * in[i + d] + coef(0, -d) * in[i - d] + coef(1, d) * in[i + d * sy] +
                 coef(1, -d) * in[i - d * sy] + coef(2, d) * in[i + d * sz] +
                 coef(2, -d) * in[i - d * sz];
        }
        const double o = ref[i];
        if (!std::isfinite(o)) {
          ++bad;
          continue;
        }
        d2 += (o - v) * (o - v);
        r2 += v * v;
        mx = std::max(mx, std::fabs(o - v) / std::max(std::fabs(v), 1e-6));
      }
  Check c;
  c.rel_l2 = std::sqrt(d2 / r2);
  c.max_rel = mx;
  c.nonfinite = bad;
  return c;
}

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Opts {
  double ms = 40;
  int reps = 5;
  int profile = 0;
};

// Median seconds per step over reps repeats of enough steps for about ms milliseconds.
template <class Step>
double time_steps(Step&& step, const Opts& o, int* steps_out) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int w = 0; w < 2; ++w)
    step(w);
  CK(cudaEventRecord(e0));
  for (int w = 0; w < 4; ++w)
    step(w);
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  int n = static_cast<int>(std::ceil(o.ms / std::max(ms / 4.0, 1e-3)));
  n = std::max(4, std::min(n, 4000));
  n += n & 1;
  std::vector<float> per;
  for (int rep = 0; rep < o.reps; ++rep) {
    CK(cudaEventRecord(e0));
    for (int s = 0; s < n; ++s)
      step(s);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms, e0, e1));
    per.push_back(ms / n);
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  *steps_out = n;
  return median(per) * 1e-3;
}

void csv_row(const std::string& name, int r, const std::string& params, const Grid& g,
             const char* producer, double gc, double copy_gc, const Check& c, int regs, int local,
             long long smem, int steps, const char* status) {
  char gcs[32] = "", frac[32] = "";
  if (gc > 0) {
    std::snprintf(gcs, sizeof gcs, "%.2f", gc);
    if (copy_gc > 0)
      std::snprintf(frac, sizeof frac, "%.4f", gc / copy_gc);
  }
  std::printf("%s,%d,%s,%s,%s,%s,%s,%.3e,%.3e,%lld,%d,%d,%lld,%d,%s\n", name.c_str(), r,
              params.c_str(), g.str().c_str(), producer, gcs, frac, c.rel_l2, c.max_rel,
              c.nonfinite, regs, local, smem, steps, status);
  std::fflush(stdout);
}

int main(int argc, char** argv) {
  std::string only = "all", grids_s = "203x77x61,206x77x61,512x512x512";
  bool header = false, list = false;
  Opts o;
  for (int a = 1; a < argc; ++a) {
    const std::string s = argv[a];
    auto next = [&]() -> const char* {
      if (a + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", s.c_str());
        std::exit(2);
      }
      return argv[++a];
    };
    if (s == "--only")
      only = next();
    else if (s == "--grids")
      grids_s = next();
    else if (s == "--ms")
      o.ms = std::atof(next());
    else if (s == "--reps")
      o.reps = std::max(1, std::atoi(next()));
    else if (s == "--profile")
      o.profile = std::atoi(next());
    else if (s == "--cpasync")
      g_force_cpasync = true;
    else if (s == "--header")
      header = true;
    else if (s == "--list")
      list = true;
    else {
      std::fprintf(stderr, "unknown option %s\n", s.c_str());
      return 2;
    }
  }
  auto variants = make_variants();
  auto baselines = make_baselines();
  if (list) {
    for (auto& v : variants)
      std::printf("%s\n", v->name.c_str());
    return 0;
  }
  // Selection: "all", "baseline" (naive and reference kernels), or a comma list of names.
  std::vector<Runner*> sel;
  {
    std::vector<std::string> names;
    size_t p = 0;
    while (p <= only.size()) {
      const size_t q = only.find(',', p);
      names.push_back(only.substr(p, q == std::string::npos ? std::string::npos : q - p));
      if (q == std::string::npos)
        break;
      p = q + 1;
    }
    for (auto& n : names) {
      bool found = false;
      if (n == "baseline" || n == "all") {
        for (auto& b : baselines)
          sel.push_back(b.get());
        found = true;
      }
      if (n == "all") {
        for (auto& v : variants)
          sel.push_back(v.get());
        found = true;
      }
      for (auto& v : variants)
        if (v->name == n) {
          sel.push_back(v.get());
          found = true;
        }
      for (auto& b : baselines)
        if (b->name == n) {
          sel.push_back(b.get());
          found = true;
        }
      if (!found) {
        std::fprintf(stderr, "no kernel named %s (see --list)\n", n.c_str());
        return 2;
      }
    }
  }
  std::vector<Grid> grids;
  {
    size_t p = 0;
    while (p < grids_s.size()) {
      size_t q = grids_s.find(',', p);
      if (q == std::string::npos)
        q = grids_s.size();
      Grid g{};
      if (std::sscanf(grids_s.substr(p, q - p).c_str(), "%dx%dx%d", &g.nx, &g.ny, &g.nz) != 3 ||
          g.nx < 1 || g.ny < 1 || g.nz < 1) {
        std::fprintf(stderr, "bad grid %s\n", grids_s.substr(p, q - p).c_str());
        return 2;
      }
      grids.push_back(g);
      p = q + 1;
    }
  }
  if (header)
    std::printf(
        "name,radius,params,grid,producer,gcells_per_s,frac_copy,rel_l2,max_rel,nonfinite,regs,"
        "local_bytes,shared_bytes,steps,status\n");

  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::fprintf(stderr, "device %s, %d SMs, L2 %d MB, shared/block optin %zu\n", prop.name,
               prop.multiProcessorCount, prop.l2CacheSize >> 20, prop.sharedMemPerBlockOptin);
  {
    cudaDriverEntryPointQueryResult q;
    void* fn = nullptr;
    CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                        &q));
    if (q != cudaDriverEntryPointSuccess || !fn) {
      std::fprintf(stderr, "cuTensorMapEncodeTiled not found\n");
      return 1;
    }
    g_encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }
  {
    double pl[3][kMaxR + 1] = {}, mi[3][kMaxR + 1] = {}, cc = 0.5;
    for (int a = 0; a < 3; ++a)
      for (int d = 1; d <= kMaxR; ++d) {
        pl[a][d] = coef(a, d);
        mi[a][d] = coef(a, -d);
      }
    CK(cudaMemcpyToSymbol(c_centre, &cc, sizeof cc));
    CK(cudaMemcpyToSymbol(c_plus, pl, sizeof pl));
    CK(cudaMemcpyToSymbol(c_minus, mi, sizeof mi));
  }
  long long maxn = 0;
  size_t timed = 0;  // the largest grid is timed
  for (size_t i = 0; i < grids.size(); ++i)
    if (grids[i].cells() > maxn) {
      maxn = grids[i].cells();
      timed = i;
    }
  Buffers b;
  CK(cudaMalloc(&b.init, maxn * 8));
  CK(cudaMalloc(&b.ref, maxn * 8));
  CK(cudaMalloc(&b.out, maxn * 8));
  CK(cudaMalloc(&b.tmp, maxn * 8));
  CK(cudaMalloc(&b.partial, 4 * 1024 * 8));
  CK(cudaMalloc(&b.err, 4));

  int failures = 0;
  for (size_t gi = 0; gi < grids.size(); ++gi) {
    const Grid g = grids[gi];
    const long long n = g.cells();
    const bool time_it = gi == timed && o.profile == 0;
    fill_random<<<1024, 256>>>(b.init, n, 0x1234ULL + gi);
    CK(cudaGetLastError());
    double copy_gc = 0;
    if (time_it) {
      int steps = 0;
      const double t = time_steps(
          [&](int s) {
            CK(cudaMemcpyAsync(s & 1 ? b.out : b.tmp, s & 1 ? b.tmp : b.out, n * 8,
                               cudaMemcpyDeviceToDevice));
          },
          o, &steps);
      copy_gc = n / t * 1e-9;
      std::fprintf(stderr, "%s copy: %.1f GCells/s (%.0f GB/s)\n", g.str().c_str(), copy_gc,
                   16.0 * n / t * 1e-9);
      csv_row("copy", 0, "cudaMemcpy D2D; 16 B a cell", g, "-", copy_gc, copy_gc, Check{}, 0, 0, 0,
              steps, "ok");
    }
    int ref_r = -1;
    for (Runner* k : sel) {
      if (k->r != ref_r) {  // the reference result of this radius
        ref_r = k->r;
        set_reference_stencil(ref_r);
        ReferenceRunner rr(ref_r);
        rr.launch(b.init, b.ref, g, nullptr);
        CK(cudaDeviceSynchronize());
        if (n <= (8LL << 20)) {
          const Check c = cpu_check(b, g, ref_r);
          const bool ok = c.rel_l2 <= 1e-14 && c.nonfinite == 0;
          std::fprintf(stderr, "%s reference%d vs CPU: rel L2 %.2e max rel %.2e %s\n",
                       g.str().c_str(), ref_r, c.rel_l2, c.max_rel, ok ? "ok" : "FAILED");
          csv_row("cpu_vs_reference" + std::to_string(ref_r), ref_r,
                  "the reference kernel against the CPU", g, "-", 0, 0, c, 0, 0, 0, 0,
                  ok ? "ok" : "FAILED");
          if (!ok)
            ++failures;
        }
      }
      int regs = 0, local = 0;
      long long smem = 0;
      k->attrs(regs, local, smem);
      const std::string params = k->params();
      fill_nan<<<1024, 256>>>(b.out, n);
      CK(cudaMemset(b.err, 0, 4));
      CK(cudaDeviceSynchronize());
      if (!k->launch(b.init, b.out, g, b.err)) {
        csv_row(k->name, k->r, params, g, k->producer(g), 0, copy_gc, Check{}, regs, local, smem, 0,
                "launch_failed");
        ++failures;
        continue;
      }
      const cudaError_t se = cudaDeviceSynchronize();
      if (se != cudaSuccess) {
        std::fprintf(stderr, "%s: %s (the context is lost; stopping)\n", k->name.c_str(),
                     cudaGetErrorString(se));
        csv_row(k->name, k->r, params, g, k->producer(g), 0, copy_gc, Check{}, regs, local, smem, 0,
                "fault");
        return 1;
      }
      int err = 0;
      CK(cudaMemcpy(&err, b.err, 4, cudaMemcpyDeviceToHost));
      const Check c = compare_dev(b, b.out, b.ref, n);
      const bool ok = err == 0 && c.nonfinite == 0 && c.rel_l2 <= 1e-13;
      if (!ok)
        ++failures;
      if (o.profile > 0) {  // launches for a profiler; no timing
        for (int s = 0; s < o.profile; ++s)
          k->launch(s & 1 ? b.tmp : b.out, s & 1 ? b.out : b.tmp, g, b.err);
        CK(cudaDeviceSynchronize());
      }
      double gc = 0;
      int steps = 0;
      const char* status = ok ? "ok" : err ? "FAILED_watchdog" : "FAILED";
      if (ok && time_it) {
        // ping-pong from the verified output
        const double t = time_steps(
            [&](int s) { k->launch(s & 1 ? b.tmp : b.out, s & 1 ? b.out : b.tmp, g, b.err); }, o,
            &steps);
        CK(cudaMemcpy(&err, b.err, 4, cudaMemcpyDeviceToHost));
        gc = n / t * 1e-9;
        if (err) {
          status = "FAILED_watchdog_timing";
          ++failures;
        }
      }
      std::fprintf(stderr, "%-28s %s %-8s %s rel L2 %.2e max rel %.2e nonfinite %lld  %s\n",
                   k->name.c_str(), g.str().c_str(), k->producer(g), status, c.rel_l2, c.max_rel,
                   c.nonfinite, gc > 0 ? (std::to_string(gc) + " GCells/s").c_str() : "");
      csv_row(k->name, k->r, params, g, k->producer(g), gc, copy_gc, c, regs, local, smem, steps,
              status);
    }
  }
  return failures ? 3 : 0;
}
