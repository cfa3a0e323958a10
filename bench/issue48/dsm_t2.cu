// Experiment (issue 48): two fused time steps of a 3-D star of radius R, the blocks of a thread
// block cluster passing level 1's edges to their neighbours with asynchronous distributed
// shared memory stores that signal the neighbour's own mbarrier, so no block ever waits at a
// cluster barrier.
//
// Why: star3d2r at tdeg 1 stops at 93 % of the per-step copy roofline (memory-bound), and the
// product's tdeg-2 kernels with overlapped tiles reach 0.84x of it (212-223 GCells/s on an H200,
// 64 x 32 covered plane, 66 % of the computed points stored). Clusters with neighbour stores
// were tried on 2026-11-25 (bench/harness/cluster_t2.cu, H100): they recompute less but a
// cluster barrier a plane cost 0.3-0.5 us and the kernel (one point a thread, 1,024 threads an
// SM) was latency-bound. The note that closed that study named what it would take:
// neighbour-only signalling (transaction-count barriers) instead of a cluster barrier, and a
// kernel that keeps several planes in flight. This is that kernel.
//
// Layout. Streaming along z (stream block of SB output planes, blockIdx.z). A block of 32 x TY
// threads owns BX x BY = 64 x TY*MY points of the x-y plane: thread (tx, ty) an x pair
// (2tx, 2tx + 1; shared memory read and written as double2) times MY rows. The blocks of a
// CX x CY cluster own adjacent regions; the cluster's outer band of PADA (>= R, even) columns
// and R rows is computed but not stored, so clusters overlap by 2 PADA x 2R (one step's reach
// a side, not two: level 1 is exact on every block's own region).
//
// Level 1 (one step of the input) needs the input's in-plane halo: every block loads its
// region plus the halo from global memory (16-byte cp.async, zero-filled outside the grid;
// the halo comes from the L2) into a ring of NB0 = PF + 1 + R planes. Level 2 needs level 1's
// in-plane halo: the neighbours' edge values, which each block sends to its neighbours as it
// produces them (st.async ... mbarrier::complete_tx::bytes into the neighbour's level-1 plane
// and on the neighbour's barrier of that plane's slot). A block expects a fixed count of bytes
// a plane (arrive.expect_tx, once a phase) and waits only on its own barrier. The level-1
// ring has NB1 = max(4, R + 2) slots: a sender writes slot i % NB1 in iteration i only after it
// has received the receiver's plane of iteration i - 2, so the receiver has finished
// iteration i - 3 and read the halo of slot i % NB1's previous plane (iteration i - NB1 + 1)
// long before; own-interior values are read for the boundary rule up to R + 1 iterations later.
//
// Iteration i (input plane p = z0 - 2R + i):
//   A. its copies landed (cp.async.wait_group, __syncthreads); copies of plane p + PF issued;
//   B. level 1: the in-plane sums of input plane p and its z terms into a register pipeline
//      of 2R + 1 partial sums a point (retiming); plane p - R is complete: written to the
//      level-1 slot i % NB1, edges sent to the neighbours;
//   C. level 2: wait for slot (i - 1) % NB1's halo (written in iteration i - 1: a whole B of
//      slack), the same pipeline on level-1 plane p - 1 - R; level-2 plane p - 1 - 2R complete:
//      stored if it is the cluster's output and the stream block's.
// Boundary rule (both levels, as kernels/reference.cuh): a point whose stencil leaves the grid
// keeps its value (read back from the input ring or level-1 ring, only where it applies).
//
// Stencil star3dNr: centre 0.5, c(axis, +-d) = 0.05 / (axis + 1) / d * (+d: 1, -d: 0.9), as
// bench/issue48/pc_star.cu. Verified against two steps of a naive kernel (max abs error), then
// timed (ping-pong, events); GCells/s per step; a copy kernel gives the per-step roofline.
//
//   nvcc -O3 -arch=sm_90 -std=c++17 -o dsm_t2 bench/issue48/dsm_t2.cu
//   dsm_t2 [NX NY NZ] [REPS] [FILTER]   NX even; FILTER: run only variants whose name has it
#ifndef DSM_HOST_SIM
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#endif

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#ifdef DSM_HOST_SIM
#include "../harness/host_sim.h"
namespace cg = sim_cg;
#else
#include "../harness/cuda_check.cuh"
#include "../harness/mbarrier.cuh"
namespace cg = cooperative_groups;
#endif

__host__ __device__ constexpr double coef(int axis, int d) {  // d != 0
  return 0.05 / (axis + 1) / (d < 0 ? -d : d) * (d > 0 ? 1.0 : 0.9);
}
constexpr double kCentre = 0.5;

#ifndef DSM_HOST_SIM
// ---------------------------------------------------------------------------------------------
// Reference: one step, every point one thread.
template <int R>
__global__ void naive(const double* __restrict__ in, double* __restrict__ out, int nx, int ny,
                      int nz) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x >= nx || y >= ny || z >= nz)
    return;
  const long long sy = nx, sz = 1LL * nx * ny, i = z * sz + y * sy + x;
  if (x < R || x >= nx - R || y < R || y >= ny - R || z < R || z >= nz - R) {
    out[i] = in[i];
    return;
  }
  double s = kCentre * in[i];
#pragma unroll
  for (int d = 1; d <= R; ++d)
    s += coef(0, -d) * in[i - d] + coef(0, d) * in[i + d] + coef(1, -d) * in[i - d * sy] +
         coef(1, d) * in[i + d * sy] + coef(2, -d) * in[i - d * sz] + coef(2, d) * in[i + d * sz];
  out[i] = s;
}

__global__ void copy(const double2* __restrict__ in, double2* __restrict__ out, long long n2) {
  for (long long i = blockIdx.x * 1LL * blockDim.x + threadIdx.x; i < n2;
       i += 1LL * gridDim.x * blockDim.x)
    out[i] = in[i];
}

#endif  // DSM_HOST_SIM

#ifdef DSM_HOST_SIM
constexpr unsigned long long kTimeoutNs = 30000000000ull;  // emulated threads are slow
#else
constexpr unsigned long long kTimeoutNs = 200000000ull;  // 0.2 s: a bookkeeping bug, not a hang
#endif
// Waits for the phase of parity `parity`; false (and the flag set) after kTimeoutNs, and at once
// once any thread has timed out (a broken variant then ends quickly instead of waiting out
// every plane).
__device__ __noinline__ bool wait_slow(uint32_t bar, uint32_t parity, int* flag) {
  const unsigned long long t0 = global_ns();
  for (;;) {
    for (int k = 0; k < 64; ++k)
      if (mbar_try_wait_cluster(bar, parity))
        return true;
    if (*reinterpret_cast<volatile int*>(flag) != 0)
      return false;
    if (global_ns() - t0 > kTimeoutNs) {
      atomicExch(flag, 1);
      return false;
    }
  }
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity, int* flag) {
  if (!mbar_try_wait_cluster(bar, parity))
    wait_slow(bar, parity, flag);
}
#ifndef DSM_HOST_SIM
// 16 bytes to a neighbour's shared memory, completing 16 bytes on its barrier.
__device__ __forceinline__ void st_async2(uint32_t remote, double2 v, uint32_t remote_bar) {
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f64 [%0], {%1, %2}, [%3];" ::"r"(
          remote),
      "d"(v.x), "d"(v.y), "r"(remote_bar)
      : "memory");
}
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool ok) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
               "r"(ok ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
#endif  // DSM_HOST_SIM
__device__ __forceinline__ double2 lds2(const double* p) {
  return *reinterpret_cast<const double2*>(p);
}
__device__ __forceinline__ void sts2(double* p, double2 v) {
  *reinterpret_cast<double2*>(p) = v;
}
// The boundary rule for a thread's pair: a point whose stencil leaves the grid (its row not
// ok_row, or its column not okx) keeps its value in the source plane at `src`, which is read
// only where that applies.
__device__ __forceinline__ double2 keep_outside(double2 val, const double* src, bool ok_row,
                                                const bool (&okx)[2]) {
  if (!(ok_row && okx[0] && okx[1])) {
    const double2 keep = lds2(src);
    if (!(ok_row && okx[0]))
      val.x = keep.x;
    if (!(ok_row && okx[1]))
      val.y = keep.y;
  }
  return val;
}
__device__ __forceinline__ double2 fma2(double c, double2 v, double2 a) {
  return make_double2(fma(c, v.x, a.x), fma(c, v.y, a.y));
}

// ---------------------------------------------------------------------------------------------
// The kernel's compile-time shape. PROBE (timing only, results wrong): 1, no waits for the
// neighbours' edges; 2, no waits and no sends (what the signalling costs).
template <int R_, int TY_, int MY_, int CX_, int CY_, int SB_, int PF_, int MINB_, int PROBE_ = 0,
          int PERSIST_ = 0>
struct Cfg {
  static constexpr int R = R_, TY = TY_, MY = MY_, CX = CX_, CY = CY_, SB = SB_, PF = PF_,
                       MINB = MINB_, PROBE = PROBE_, PERSIST = PERSIST_;
  static constexpr int TX = 32, THREADS = TX * TY;
  static constexpr int BX = 2 * TX, BY = TY * MY;  // a block's own region
  static constexpr int PADA = (R + 1) / 2 * 2;     // columns of halo a side (even)
  static constexpr int PITCH = BX + 2 * PADA, ROWS = BY + 2 * R;
  static constexpr int PLANE = ROWS * PITCH;         // doubles of one shared plane
  static constexpr int NB0 = PF + 1 + R;             // input ring
  static constexpr int NB1 = R + 2 > 4 ? R + 2 : 4;  // level-1 ring
  static constexpr int WX = CX * BX - 2 * PADA, WY = CY * BY - 2 * R;  // a cluster's outputs
  static constexpr int NIT = SB + 4 * R + 1;
  static constexpr int Q = 2 * R + 1;  // the retimed pipeline of a point
  static constexpr int XP = PADA / 2;  // pairs a side of a thread's pair
  static constexpr int SHARED = (NB0 + NB1) * PLANE * 8 + NB1 * 8;
  static_assert(WX > 0 && WY > 0 && WX % 2 == 0, "a cluster stores something, pairs aligned");
  static_assert(PF >= 1, "at least one plane in flight");
  static_assert(BY >= 2 * R && BX >= 2 * PADA, "an edge row or pair goes to one neighbour only");
};

// In-plane partial sums (centre term included) of a thread's MY pairs in a shared plane:
// `at` points at the thread's first pair.
template <class C>
__device__ __forceinline__ void inplane(const double* at, double2 (&s)[C::MY],
                                        double2 (&ctr)[C::MY]) {
  constexpr int R = C::R, MY = C::MY, XP = C::XP, PITCH = C::PITCH;
  double2 col[MY + 2 * R];  // the thread's pair column, rows -R .. MY - 1 + R
#pragma unroll
  for (int r = 0; r < MY + 2 * R; ++r)
    col[r] = lds2(at + (r - R) * PITCH);
#pragma unroll
  for (int v = 0; v < MY; ++v) {
    double2 w[2 * XP + 1];  // pairs -XP .. XP of the row; w[XP] is the thread's own
#pragma unroll
    for (int j = 0; j < 2 * XP + 1; ++j)
      w[j] = j == XP ? col[v + R] : lds2(at + v * PITCH + 2 * (j - XP));
    const auto val = [&](int c) {  // column c relative to the pair's first point
      const int k = c + 2 * XP;
      return (k & 1) ? w[k >> 1].y : w[k >> 1].x;
    };
    const double2 o = col[v + R];
    double sa = kCentre * o.x, sb = kCentre * o.y;
#pragma unroll
    for (int d = 1; d <= R; ++d) {
      sa = fma(coef(0, -d), val(-d), sa);
      sa = fma(coef(0, d), val(d), sa);
      sb = fma(coef(0, -d), val(1 - d), sb);
      sb = fma(coef(0, d), val(1 + d), sb);
      sa = fma(coef(1, -d), col[v + R - d].x, sa);
      sb = fma(coef(1, -d), col[v + R - d].y, sb);
      sa = fma(coef(1, d), col[v + R + d].x, sa);
      sb = fma(coef(1, d), col[v + R + d].y, sb);
    }
    s[v] = make_double2(sa, sb);
    ctr[v] = o;
  }
}

// Plane p's contributions to the retimed pipeline acc[k] (output plane p - R + k).
template <class C>
__device__ __forceinline__ void retime(double2 (&acc)[C::MY][C::Q], const double2 (&s)[C::MY],
                                       const double2 (&v)[C::MY]) {
  constexpr int R = C::R;
#pragma unroll
  for (int m = 0; m < C::MY; ++m) {
#pragma unroll
    for (int k = 0; k < 2 * R; ++k) {
      if (k == R) {
        acc[m][k].x += s[m].x;
        acc[m][k].y += s[m].y;
      } else {
        acc[m][k] = fma2(coef(2, R - k), v[m], acc[m][k]);
      }
    }
    acc[m][2 * R] = make_double2(coef(2, -R) * v[m].x, coef(2, -R) * v[m].y);
  }
}
template <class C>
__device__ __forceinline__ void shift(double2 (&acc)[C::MY][C::Q]) {
#pragma unroll
  for (int m = 0; m < C::MY; ++m)
#pragma unroll
    for (int k = 0; k + 1 < C::Q; ++k)
      acc[m][k] = acc[m][k + 1];
}

template <class C>
__global__ void __launch_bounds__(C::THREADS, C::MINB)
    t2(const double* __restrict__ in, double* __restrict__ out, int nx, int ny, int nz, int* flag,
       int nclusters) {
  constexpr int R = C::R, MY = C::MY, PITCH = C::PITCH, PLANE = C::PLANE, NB0 = C::NB0,
                NB1 = C::NB1, PF = C::PF, PADA = C::PADA, BX = C::BX, BY = C::BY;
#ifdef DSM_HOST_SIM
  double* smem = sim::tl_blk->smem.data();
#else
  extern __shared__ __align__(16) double smem[];
#endif
  double* ring0 = smem;                // [NB0][PLANE] input planes
  double* ring1 = smem + NB0 * PLANE;  // [NB1][PLANE] level-1 planes
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem + (NB0 + NB1) * PLANE);  // [NB1]
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 32 + tx;

  int bxi = 0, byi = 0;
  if constexpr (C::CX * C::CY > 1) {
    const dim3 ci = cg::this_cluster().block_index();
    bxi = static_cast<int>(ci.x);
    byi = static_cast<int>(ci.y);
  }
  const long long sz = 1LL * nx * ny;

  // Neighbours: -x, +x, -y, +y (cluster ranks; -1 at the cluster's edge).
  const auto rank_of = [](int bx, int by) { return bx + by * C::CX; };
  const int nb[4] = {
      bxi > 0 ? rank_of(bxi - 1, byi) : -1, bxi < C::CX - 1 ? rank_of(bxi + 1, byi) : -1,
      byi > 0 ? rank_of(bxi, byi - 1) : -1, byi < C::CY - 1 ? rank_of(bxi, byi + 1) : -1};
  // Bytes a plane from the neighbours: XP pairs of every row from each x neighbour, R rows of
  // 32 pairs from each y neighbour.
  const uint32_t expect = 16u * ((nb[0] >= 0) + (nb[1] >= 0)) * C::XP * BY +
                          16u * ((nb[2] >= 0) + (nb[3] >= 0)) * R * 32;
  if (tid == 0) {
    for (int s = 0; s < NB1; ++s) {
      mbar_init(smem_u32(bars + s), 1);
    }
    fence_mbarrier_init();
    for (int s = 0; s < NB1; ++s)
      mbar_arrive_expect_tx(smem_u32(bars + s), expect);
  }
  // Level-1 planes start zeroed (halo cells nobody sends stay finite).
  for (int k = tid; k < NB1 * PLANE; k += C::THREADS)
    ring1[k] = 0.0;
  if constexpr (C::CX * C::CY > 1)
    cg::this_cluster().sync();  // every block's barriers ready before anyone sends
  else
    __syncthreads();

  // Where this thread's edge values go: per pair row v, up to two destinations (an x and a
  // y neighbour); offsets within a level-1 plane of the neighbour.
  // x: pairs tx < XP go to -x's columns PADA + BX + 2 tx; tx >= 32 - XP to +x's PADA + 2 tx - BX.
  const bool to_mx = nb[0] >= 0 && tx < C::XP, to_px = nb[1] >= 0 && tx >= 32 - C::XP;
  const int own = (R + ty * MY) * PITCH + PADA + 2 * tx;  // the thread's first pair in a plane
  uint32_t rx = 0, rxbar = 0;  // the x neighbour's plane 0 and barrier 0 (cluster addresses)
  int rxoff = 0;
  if (to_mx || to_px) {
    const int r = to_mx ? nb[0] : nb[1];
    rx = map_rank(smem_u32(ring1), r);
    rxbar = map_rank(smem_u32(bars), r);
    rxoff = own + (to_mx ? BX : -BX);
  }
  uint32_t ry[MY], rybar[MY];  // per row: the y neighbour it goes to (0: none)
  int ryoff[MY];
#pragma unroll
  for (int v = 0; v < MY; ++v) {
    const int yl = ty * MY + v;
    const bool dn = nb[2] >= 0 && yl < R, up = nb[3] >= 0 && yl >= BY - R;
    ry[v] = rybar[v] = 0;
    ryoff[v] = 0;
    if (dn || up) {
      const int r = dn ? nb[2] : nb[3];
      ry[v] = map_rank(smem_u32(ring1), r);
      rybar[v] = map_rank(smem_u32(bars), r);
      ryoff[v] = own + v * PITCH + (dn ? BY : -BY) * PITCH;
    }
  }

  double2 acc1[MY][C::Q], acc2[MY][C::Q];
#pragma unroll
  for (int m = 0; m < MY; ++m)
#pragma unroll
    for (int k = 0; k < C::Q; ++k)
      acc1[m][k] = acc2[m][k] = make_double2(0.0, 0.0);

  int s0 = 0;           // input slot of this iteration's plane
  int s1 = 0;           // level-1 slot written this iteration
  uint32_t parity = 0;  // bit s: the parity of slot s's next phase to wait for
  // PERSIST: `nclusters` clusters (as many as fit at once) walk the tiles (cluster position,
  // stream block; x fastest) and carry their rings and barriers from one tile to the next, as
  // one long stream: slots and phases continue, and the first iteration of a tile waits for
  // the previous tile's last level-1 plane as every other iteration waits for its predecessor.
  // Otherwise one tile a cluster, from blockIdx.
  const int ntx = (nx + C::WX - 1) / C::WX, nty = (ny + C::WY - 1) / C::WY;
  const int ntiles = C::PERSIST ? ntx * nty * ((nz + C::SB - 1) / C::SB) : 1;
  const int step = C::PERSIST ? nclusters : 1;
  bool first = true;
  for (int tile = C::PERSIST ? static_cast<int>(blockIdx.x / C::CX) : 0; tile < ntiles;
       tile += step) {
    int tcx = static_cast<int>(blockIdx.x / C::CX), tcy = static_cast<int>(blockIdx.y / C::CY);
    int zb = static_cast<int>(blockIdx.z);
    if constexpr (C::PERSIST) {
      tcx = tile % ntx;
      tcy = (tile / ntx) % nty;
      zb = tile / (ntx * nty);
    }
    const int cx0 = tcx * C::WX, cy0 = tcy * C::WY;                   // the cluster's outputs start
    const int bx0 = cx0 - PADA + bxi * BX, by0 = cy0 - R + byi * BY;  // the block's region
    const int x = bx0 + 2 * tx, y0 = by0 + ty * MY;                   // the thread's first pair
    const int z0 = zb * C::SB;
    // Boundary rule per point (fixed for the stream) and what this thread stores.
    bool okx[2], oky[MY], store_row[MY];
    okx[0] = x >= R && x < nx - R;
    okx[1] = x + 1 >= R && x + 1 < nx - R;
    const bool store_x = x >= cx0 && x < cx0 + C::WX && x < nx;  // a pair: both or neither
#pragma unroll
    for (int v = 0; v < MY; ++v) {
      const int y = y0 + v;
      oky[v] = y >= R && y < ny - R;
      store_row[v] = store_x && y >= cy0 && y < cy0 + C::WY && y < ny;
    }

    // Input copies of plane p into slot `slot`: the block's rows by0 - R .. by0 + BY + R - 1,
    // pairs bx0 - PADA .. bx0 + BX + PADA - 1.
    constexpr int PAIRS = PITCH / 2, NCOPY = C::ROWS * PAIRS;
    const auto issue = [&](int p, int slot) {
      const uint32_t base = smem_u32(ring0 + slot * PLANE);
      const bool zin = p >= 0 && p < nz;
      for (int k = tid; k < NCOPY; k += C::THREADS) {
        const int row = k / PAIRS, pr = k - row * PAIRS;
        const int gy = by0 - R + row, gx = bx0 - PADA + 2 * pr;
        const bool ok = zin && gy >= 0 && gy < ny && gx >= 0 && gx < nx;
        const double* src = ok ? in + p * sz + 1LL * gy * nx + gx : in;
        cp_async16(base + 16u * k, src, ok);
      }
      cp_async_commit();
    };

    if (!first) {  // the previous tile's copies done and read by every thread
      cp_async_wait<0>();
      __syncthreads();
    }
    const int p0 = z0 - 2 * R;
#pragma unroll
    for (int j = 0; j < PF; ++j)
      issue(p0 + j, s0 + j < NB0 ? s0 + j : s0 + j - NB0);

#pragma unroll 1
    for (int i = 0; i < C::NIT; ++i) {
      const int p = p0 + i;
      // A. this plane's copies landed; the next plane's go out.
      cp_async_wait<PF - 1>();
      __syncthreads();
      {
        int sl = s0 + PF;
        sl -= sl >= NB0 ? NB0 : 0;
        issue(p + PF, sl);
      }
      // B. level 1: plane p's contributions; plane p - R complete.
      {
        double2 s[MY], c[MY];
        inplane<C>(ring0 + s0 * PLANE + own, s, c);
        retime<C>(acc1, s, c);
        const int l1 = p - R;
        const bool zok = l1 >= R && l1 < nz - R;
        int sc = s0 - R;  // the input slot of plane p - R (its centre, for the boundary rule)
        sc += sc < 0 ? NB0 : 0;
        double* dst = ring1 + s1 * PLANE + own;
#pragma unroll
        for (int v = 0; v < MY; ++v) {
          const double2 val =
              keep_outside(acc1[v][0], ring0 + sc * PLANE + own + v * PITCH, zok && oky[v], okx);
          sts2(dst + v * PITCH, val);
          if (C::PROBE != 2 && (to_mx || to_px))
            st_async2(rx + 8u * (s1 * PLANE + rxoff + v * PITCH), val, rxbar + 8u * s1);
          if (C::PROBE != 2 && ry[v])
            st_async2(ry[v] + 8u * (s1 * PLANE + ryoff[v]), val, rybar[v] + 8u * s1);
        }
        shift<C>(acc1);
      }
      // C. level 2 on the level-1 plane of iteration i - 1 (plane p - 1 - R), in slot sp.
      const int sp = s1 == 0 ? NB1 - 1 : s1 - 1;
      if (i > 0 || !first) {
        // A block without neighbours (expect 0) never uses its barriers: an arrival would
        // complete the next phase at once, and a thread still waiting for the previous one
        // would then see the parity it waits for again.
        if (C::PROBE == 0 && expect != 0) {
          mbar_wait(smem_u32(bars + sp), (parity >> sp) & 1u, flag);
          parity ^= 1u << sp;
          if (tid == 0)
            mbar_arrive_expect_tx(smem_u32(bars + sp), expect);  // its next phase
        }
      }
      if (i > 0) {
        double2 s[MY], c[MY];
        inplane<C>(ring1 + sp * PLANE + own, s, c);
        retime<C>(acc2, s, c);
        const int q = p - 1 - 2 * R;
        if (q >= z0 && q < z0 + C::SB && q < nz) {
          const bool zok = q >= R && q < nz - R;
          int sc = sp - R;  // the level-1 slot of plane q (its centre)
          sc += sc < 0 ? NB1 : 0;
#pragma unroll
          for (int v = 0; v < MY; ++v) {
            if (!store_row[v])
              continue;
            const double2 val =
                keep_outside(acc2[v][0], ring1 + sc * PLANE + own + v * PITCH, zok && oky[v], okx);
            *reinterpret_cast<double2*>(out + q * sz + 1LL * (y0 + v) * nx + x) = val;
          }
        }
        shift<C>(acc2);
      }
      s0 = s0 + 1 == NB0 ? 0 : s0 + 1;
      s1 = s1 + 1 == NB1 ? 0 : s1 + 1;
    }
    first = false;
  }
  // The last plane's halo must have arrived before this block may leave (and its neighbours'
  // sends into it are then done); no block leaves while a neighbour may still send.
  {
    int sp = s1 - 1;
    sp += sp < 0 ? NB1 : 0;
    // (A persistent cluster may have had no tile: then nothing was sent to it.)
    if (C::PROBE == 0 && expect != 0 && !first)
      mbar_wait(smem_u32(bars + sp), (parity >> sp) & 1u, flag);
  }
  cp_async_wait<0>();
  if constexpr (C::CX * C::CY > 1)
    cg::this_cluster().sync();
}

#ifndef DSM_HOST_SIM
// ---------------------------------------------------------------------------------------------
struct Grid {
  int nx, ny, nz;
  long long n() const { return 1LL * nx * ny * nz; }
};

template <class C>
struct Launch {
  cudaLaunchAttribute attr[1];
  cudaLaunchConfig_t cfg = {};
  explicit Launch(const Grid& g) {
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = C::CX;
    attr[0].val.clusterDim.y = C::CY;
    attr[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3(((g.nx + C::WX - 1) / C::WX) * C::CX, ((g.ny + C::WY - 1) / C::WY) * C::CY,
                       (g.nz + C::SB - 1) / C::SB);
    cfg.blockDim = dim3(32, C::TY, 1);
    cfg.dynamicSmemBytes = C::SHARED;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;
};

template <int R>
void naive_step(const Grid& g, const double* in, double* out) {
  const dim3 b(32, 4, 2), gr((g.nx + 31) / 32, (g.ny + 3) / 4, (g.nz + 1) / 2);
  naive<R><<<gr, b>>>(in, out, g.nx, g.ny, g.nz);
  CK(cudaGetLastError());
}

struct Bench {
  Grid g;
  int reps;
  const char* filter;
  double *d_in, *d_out, *d_tmp;
  int* d_flag;
  std::vector<double> ref;  // two naive steps of d_in
  double naive_gcells = 0, copy_gcells = 0;
};

template <class C>
void variant(Bench& b, const char* name) {
  if (b.filter && !std::strstr(name, b.filter))
    return;
  const auto k = t2<C>;
  if constexpr (C::CX * C::CY > 8)
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SHARED));
  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, k));
  Launch<C> l(b.g);
  int clusters = 0;
  CK(cudaOccupancyMaxActiveClusters(&clusters, k, &l.cfg));
  if (clusters == 0) {
    std::printf("%-28s does not fit (regs %d, shared %d B)\n", name, fa.numRegs, C::SHARED);
    return;
  }
  const int ncl = C::PERSIST ? clusters : 0;  // persistent: as many clusters as fit at once
  if (C::PERSIST)
    l.cfg.gridDim = dim3(clusters * C::CX, C::CY, 1);
  const Grid& g = b.g;
  CK(cudaMemset(b.d_out, 0, g.n() * sizeof(double)));
  CK(cudaMemset(b.d_flag, 0, sizeof(int)));
  CK(cudaLaunchKernelEx(&l.cfg, k, b.d_in, b.d_out, g.nx, g.ny, g.nz, b.d_flag, ncl));
  CK(cudaDeviceSynchronize());
  int flag = 0;
  CK(cudaMemcpy(&flag, b.d_flag, sizeof(int), cudaMemcpyDeviceToHost));
  std::vector<double> got(g.n());
  CK(cudaMemcpy(got.data(), b.d_out, g.n() * sizeof(double), cudaMemcpyDeviceToHost));
  double err = 0;
  long long bad = 0;
  for (long long i = 0; i < g.n(); ++i) {
    const double e = std::fabs(got[i] - b.ref[i]);
    if (!(e <= 1e-12))
      ++bad;
    err = std::fmax(err, e);
  }
  CK(cudaMemcpy(b.d_tmp, b.d_in, g.n() * sizeof(double), cudaMemcpyDeviceToDevice));
  const double ms = time_ms(
      [&](int r) {
        CK(cudaLaunchKernelEx(&l.cfg, k, r % 2 ? b.d_out : b.d_tmp, r % 2 ? b.d_tmp : b.d_out, g.nx,
                              g.ny, g.nz, b.d_flag, ncl));
      },
      b.reps);
  CK(cudaDeviceSynchronize());
  const double gcells = g.n() * 2.0 / (ms * 1e-3) / 1e9;
  const double computed = double(C::CX * C::BX) * (C::CY * C::BY) / (double(C::WX) * C::WY);
  std::printf(
      "%-28s regs %3d shared %6d B clusters/GPU %3d computed/stored %.3f  %s (max err %.1e, %lld "
      "bad%s)  %.4f ms  %6.1f GCells/s per step  %.2fx naive  %.3fx copy\n",
      name, fa.numRegs, C::SHARED, clusters, computed, bad == 0 && !flag ? "verified" : "WRONG",
      err, bad, flag ? ", timed out" : "", ms, gcells, gcells / b.naive_gcells,
      gcells / b.copy_gcells);
  std::fflush(stdout);
}

template <int R>
void run_radius(Bench& b);

int main(int argc, char** argv) {
  Bench b{};
  b.g = Grid{512, 512, 512};
  if (argc >= 4)
    b.g = Grid{std::atoi(argv[1]), std::atoi(argv[2]), std::atoi(argv[3])};
  b.reps = argc >= 5 ? std::atoi(argv[4]) : 20;
  b.filter = argc >= 6 ? argv[5] : nullptr;
  if (b.g.nx % 2) {
    std::printf("NX must be even (16-byte rows)\n");
    return 1;
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, grid %dx%dx%d, %d launches timed\n", prop.name, b.g.nx, b.g.ny, b.g.nz, b.reps);
  const Grid& g = b.g;
  std::vector<double> h(g.n());
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (double& v : h)
    v = u(rng);
  CK(cudaMalloc(&b.d_in, g.n() * sizeof(double)));
  CK(cudaMalloc(&b.d_tmp, g.n() * sizeof(double)));
  CK(cudaMalloc(&b.d_out, g.n() * sizeof(double)));
  CK(cudaMalloc(&b.d_flag, sizeof(int)));
  CK(cudaMemcpy(b.d_in, h.data(), g.n() * sizeof(double), cudaMemcpyHostToDevice));
  const double cms = time_ms(
      [&](int r) {
        copy<<<prop.multiProcessorCount * 8, 256>>>(
            reinterpret_cast<const double2*>(r % 2 ? b.d_out : b.d_tmp),
            reinterpret_cast<double2*>(r % 2 ? b.d_tmp : b.d_out), g.n() / 2);
      },
      b.reps);
  b.copy_gcells = g.n() / (cms * 1e-3) / 1e9;
  std::printf("copy: %.4f ms, %.1f GB/s, per-step roofline %.1f GCells/s\n", cms,
              g.n() * 16.0 / (cms * 1e-3) / 1e9, b.copy_gcells);
  const int radius = argc >= 7 ? std::atoi(argv[6]) : 2;
  if (radius == 2)
    run_radius<2>(b);
  else if (radius == 3)
    run_radius<3>(b);
  else if (radius == 4)
    run_radius<4>(b);
  return 0;
}

template <int R>
void run_radius(Bench& b) {
  const Grid& g = b.g;
  naive_step<R>(g, b.d_in, b.d_tmp);
  naive_step<R>(g, b.d_tmp, b.d_out);
  CK(cudaDeviceSynchronize());
  b.ref.resize(g.n());
  CK(cudaMemcpy(b.ref.data(), b.d_out, g.n() * sizeof(double), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(b.d_tmp, b.d_in, g.n() * sizeof(double), cudaMemcpyDeviceToDevice));
  const double nms = time_ms(
      [&](int r) { naive_step<R>(g, r % 2 ? b.d_out : b.d_tmp, r % 2 ? b.d_tmp : b.d_out); },
      b.reps);
  b.naive_gcells = g.n() / (nms * 1e-3) / 1e9;
  std::printf("star3d%dr naive: %.4f ms per step, %6.1f GCells/s\n", R, nms, b.naive_gcells);
  //            R  TY MY CX CY  SB PF MINB
  if constexpr (R == 2) {
    // Call 1 (H100, docs/bench/dsm-t2-2026-12-07/call1-*): 1 x 1 fastest (229.9), clusters
    // 132-204; the probes: the signalling costs ~5 %, the rest is the clusters' scheduling (30
    // of 2 x 4 fit: 240 of 264 block slots, 3 waves). Call 2 (call2-*): persistent 1 x 1 241.4,
    // persistent clusters 186-235 (1 x 4 without sends 248.9 against 223.1 with them).
    variant<Cfg<R, 8, 2, 1, 1, 256, 2, 2>>(b, "1x1 8x2 sb256");
    variant<Cfg<R, 8, 2, 1, 1, 256, 2, 2, 0, 1>>(b, "1x1 8x2 sb256 persist");
    variant<Cfg<R, 8, 2, 1, 1, 512, 2, 2, 0, 1>>(b, "1x1 8x2 sb512 persist");
    variant<Cfg<R, 8, 2, 1, 1, 256, 3, 2, 0, 1>>(b, "1x1 8x2 sb256 pf3 persist");
    variant<Cfg<R, 8, 1, 1, 1, 256, 2, 3, 0, 1>>(b, "1x1 8x1 sb256 persist");
    variant<Cfg<R, 16, 2, 1, 1, 128, 2, 1, 0, 1>>(b, "1x1 16x2 sb128 persist");
    variant<Cfg<R, 16, 2, 1, 1, 256, 2, 1, 0, 1>>(b, "1x1 16x2 sb256 persist");
    variant<Cfg<R, 16, 2, 1, 2, 128, 2, 1, 0, 1>>(b, "1x2 16x2 sb128 persist");
    variant<Cfg<R, 16, 2, 1, 2, 256, 2, 1, 0, 1>>(b, "1x2 16x2 sb256 persist");
    variant<Cfg<R, 8, 2, 1, 2, 256, 2, 2, 0, 1>>(b, "1x2 8x2 sb256 persist");
    variant<Cfg<R, 8, 2, 1, 4, 128, 2, 2, 0, 1>>(b, "1x4 8x2 sb128 persist");
  }
  if constexpr (R == 3) {
    variant<Cfg<R, 8, 2, 1, 1, 256, 2, 2>>(b, "1x1 8x2 sb256");
    variant<Cfg<R, 8, 2, 1, 1, 128, 2, 2, 0, 1>>(b, "1x1 8x2 sb128 persist");
    variant<Cfg<R, 8, 2, 1, 4, 128, 2, 2, 0, 1>>(b, "1x4 8x2 sb128 persist");
  }
  variant<Cfg<R, 16, 1, 2, 4, 256, 2, 1>>(b, "2x4 16x1 sb256");
  variant<Cfg<R, 16, 1, 1, 4, 128, 2, 1, 0, 1>>(b, "1x4 16x1 sb128 persist");
}
#endif  // DSM_HOST_SIM

#ifdef DSM_HOST_SIM
// ---------------------------------------------------------------------------------------------
// The kernel's own source on the host emulation (bench/harness/host_sim.h): every variant
// against two host steps of the reference on small grids whose clusters, stream blocks and
// grid edges are all partial. Output starts as NaN, so a point no block stores fails too.
//   g++ -std=c++20 -O2 -pthread -DDSM_HOST_SIM -x c++ -Wno-unknown-pragmas -o dsm_t2_sim
//       bench/issue48/dsm_t2.cu && SIM_COPY=late ./dsm_t2_sim
// (ctest: bench.dsm_t2_host.*, tests/bench/; SIM_SET=gpu: the device's shapes, about 3 min).
struct SimGrid {
  int nx, ny, nz;
  long long n() const { return 1LL * nx * ny * nz; }
};

template <int R>
void host_step(const SimGrid& g, const std::vector<double>& in, std::vector<double>& out) {
  const long long sy = g.nx, sz = 1LL * g.nx * g.ny;
  for (int z = 0; z < g.nz; ++z)
    for (int y = 0; y < g.ny; ++y)
      for (int x = 0; x < g.nx; ++x) {
        const long long i = z * sz + y * sy + x;
        if (x < R || x >= g.nx - R || y < R || y >= g.ny - R || z < R || z >= g.nz - R) {
          out[i] = in[i];
          continue;
        }
        double s = kCentre * in[i];
        for (int d = 1; d <= R; ++d)
          s += coef(0, -d) * in[i - d] + coef(0, d) * in[i + d] + coef(1, -d) * in[i - d * sy] +
               coef(1, d) * in[i + d * sy] + coef(2, -d) * in[i - d * sz] +
               coef(2, d) * in[i + d * sz];
        out[i] = s;
      }
}

int sim_failures = 0;

template <class C>
void sim_variant(const char* name, const SimGrid& g) {
  std::vector<double> in(g.n()), mid(g.n()), ref(g.n()), out(g.n(), std::nan(""));
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (double& v : in)
    v = u(rng);
  host_step<C::R>(g, in, mid);
  host_step<C::R>(g, mid, ref);
  int flag = 0;
  // Persistent variants: 3 clusters walk every tile (several tiles each), or (a grid of fewer
  // tiles than clusters) some have none.
  constexpr int kSimClusters = 3;
  const dim3 grid = C::PERSIST
                        ? dim3(kSimClusters * C::CX, C::CY, 1)
                        : dim3(((g.nx + C::WX - 1) / C::WX) * C::CX,
                               ((g.ny + C::WY - 1) / C::WY) * C::CY, (g.nz + C::SB - 1) / C::SB);
  sim::launch(grid, dim3(C::CX, C::CY, 1), dim3(32, C::TY, 1), C::SHARED, [&] {
    t2<C>(in.data(), out.data(), g.nx, g.ny, g.nz, &flag, C::PERSIST ? kSimClusters : 0);
  });
  double err = 0;
  long long bad = 0, first = -1;
  for (long long i = 0; i < g.n(); ++i) {
    const double e = std::fabs(out[i] - ref[i]);
    if (!(e <= 1e-12)) {
      if (first < 0)
        first = i;
      ++bad;
    } else {
      err = std::fmax(err, e);
    }
  }
  std::printf("star3d%dr %-26s grid %dx%dx%d: %s (max err %.1e, %lld bad", C::R, name, g.nx, g.ny,
              g.nz, bad == 0 && !flag ? "verified" : "WRONG", err, bad);
  if (first >= 0)
    std::printf(", first at x %lld y %lld z %lld: %g against %g", first % g.nx,
                (first / g.nx) % g.ny, first / (1LL * g.nx * g.ny), out[first], ref[first]);
  std::printf("%s)\n", flag ? ", timed out" : "");
  std::fflush(stdout);
  sim_failures += bad != 0 || flag;
}

int main() {
  if (const char* set = std::getenv("SIM_SET"); set && std::strcmp(set, "gpu") == 0) {
    // The device's radius-2 shapes (SB as there: one stream block) on a grid of several clusters.
    const SimGrid g{262, 134, 21};
    sim_variant<Cfg<2, 8, 2, 2, 4, 256, 2, 2>>("2x4 8x2 sb256", g);
    sim_variant<Cfg<2, 8, 2, 4, 4, 256, 3, 2>>("4x4 8x2 sb256 pf3", g);
    sim_variant<Cfg<2, 16, 2, 2, 2, 256, 2, 1>>("2x2 16x2 sb256", g);
    sim_variant<Cfg<2, 4, 2, 2, 8, 256, 2, 4>>("2x8 4x2 sb256", g);
    sim_variant<Cfg<3, 8, 1, 2, 8, 256, 2, 3>>("2x8 8x1 sb256", g);
    sim_variant<Cfg<4, 16, 1, 2, 4, 256, 2, 1>>("2x4 16x1 sb256", g);
    std::printf("%s\n", sim_failures ? "SOME VARIANTS FAILED" : "every variant verified");
    return sim_failures ? 1 : 0;
  }
  const SimGrid a{134, 46, 29}, b{70, 23, 40};
  //                R  TY MY CX CY  SB PF MINB
  sim_variant<Cfg<2, 4, 2, 1, 1, 16, 2, 1>>("1x1 4x2 sb16", a);
  sim_variant<Cfg<2, 4, 2, 2, 2, 16, 2, 1>>("2x2 4x2 sb16", a);
  sim_variant<Cfg<2, 4, 2, 2, 2, 8, 3, 1>>("2x2 4x2 sb8 pf3", b);
  sim_variant<Cfg<2, 4, 1, 2, 4, 16, 2, 1>>("2x4 4x1 sb16", a);
  sim_variant<Cfg<2, 8, 2, 2, 1, 32, 2, 1>>("2x1 8x2 sb32", a);
  sim_variant<Cfg<2, 4, 2, 2, 2, 8, 2, 1, 0, 1>>("2x2 4x2 sb8 persist", a);
  sim_variant<Cfg<2, 4, 2, 1, 1, 8, 2, 1, 0, 1>>("1x1 4x2 sb8 persist", b);
  sim_variant<Cfg<3, 8, 1, 1, 2, 8, 3, 1, 0, 1>>("1x2 8x1 sb8 pf3 persist", b);
  sim_variant<Cfg<2, 4, 2, 1, 2, 64, 2, 1, 0, 1>>("1x2 4x2 sb64 persist", SimGrid{60, 10, 9});
  sim_variant<Cfg<3, 8, 1, 2, 2, 16, 2, 1>>("2x2 8x1 sb16", a);
  sim_variant<Cfg<4, 8, 1, 2, 2, 16, 2, 1>>("2x2 8x1 sb16", b);
  std::printf("%s\n", sim_failures ? "SOME VARIANTS FAILED" : "every variant verified");
  return sim_failures ? 1 : 0;
}
#endif  // DSM_HOST_SIM
