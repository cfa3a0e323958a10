// Experiment (issue 19, star3d2r at tdeg 2): does a thread block cluster pay for 2.5-D temporal
// blocking? The product's streaming kernel at tdeg >= 2 uses overlapped tiles: every block
// recomputes a halo of r per fused step, so at r = 2, tdeg 2 a 32x32 covered plane yields 24x24
// outputs (1.78x the work) and the kernel is bound by its shared-memory reads
// (docs/studies/2026-11-25-star3d2r-tdeg2-clusters.md). Here the blocks of a CX x CY cluster cover
// adjacent 32x32 tiles and pass the edge rows and columns of every level to their neighbours'
// shared memory (distributed shared memory stores), so only the cluster's outer ring is recomputed:
// 2x4 blocks of 32x32 cover 64x128 points for 56x120 outputs (1.22x). One cluster barrier per
// input plane replaces the block barrier. CX = CY = 1 is the product's overlapped tile.
//
// Standalone: star3d2r (13 points, distinct coefficients per axis), streaming along z,
// retiming (per-plane partial sums in registers), one point per thread, 1024 threads.
// Verifies every variant against two steps of a naive kernel on the same grid (max abs
// error), then times naive and each variant (events around REPS back-to-back launches, one
// warm-up) and prints GCells/s per step.
//   nvcc -O3 -arch=sm_90 -std=c++17 -o cluster_t2 bench/harness/cluster_t2.cu
//   cluster_t2 [NX NY NZ] [REPS]
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "cuda_check.cuh"

namespace cg = cooperative_groups;

constexpr int R = 2;      // radius
constexpr int T = 2;      // fused steps
constexpr int H = R * T;  // halo of the fused steps
constexpr int BX = 32, BY = 32;
constexpr int PX = BX + 2 * R, PY = BY + 2 * R;  // a padded plane in shared memory
// Outputs of a cluster along an axis: its blocks' points less the halo on both sides.
__host__ __device__ constexpr int cluster_outputs(int blocks, int block_extent) {
  return blocks * block_extent - 2 * H;
}
// Dynamic shared memory of a block: two or (split barrier) three buffers of every level's plane.
constexpr int shared_bytes(bool split) {
  return (split ? 3 : 2) * T * PY * PX * static_cast<int>(sizeof(double));
}
constexpr double C0 = 0.61, CX1 = 0.06, CX2 = 0.02, CY1 = 0.05, CY2 = 0.015, CZ1 = 0.04, CZ2 = 0.01;

__global__ void naive(const double* __restrict__ in, double* __restrict__ out, int nx, int ny,
                      int nz) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x >= nx || y >= ny || z >= nz)
    return;
  const long long sx = 1, sy = nx, sz = 1LL * nx * ny, i = z * sz + y * sy + x;
  if (x < R || x >= nx - R || y < R || y >= ny - R || z < R || z >= nz - R) {
    out[i] = in[i];
    return;
  }
  out[i] = C0 * in[i] + CX1 * (in[i - sx] + in[i + sx]) + CX2 * (in[i - 2 * sx] + in[i + 2 * sx]) +
           CY1 * (in[i - sy] + in[i + sy]) + CY2 * (in[i - 2 * sy] + in[i + 2 * sy]) +
           CZ1 * (in[i - sz] + in[i + sz]) + CZ2 * (in[i - 2 * sz] + in[i + 2 * sz]);
}

// SPLIT (clusters only): the cluster barrier in two halves around each iteration's reads,
// with a third buffer per level: iteration i writes buffer i % 3 and reads what iteration
// i - 2 wrote, so it waits for phase i - 1 only after its reads, and the barrier's latency
// overlaps them (one more plane of delay per level).
//
// XSHFL: the x neighbours from the other lanes' registers (warp shuffles) instead of shared
// memory; a warp is one row of 32 points, and the lanes whose x neighbours the shuffles miss
// are in the halo that is recomputed anyway (their results are never stored).
//
// PROBE (timing only, results wrong): 1, no stores to the neighbours (the barriers alone);
// 2, the stores but block barriers instead of cluster barriers.
template <int CX, int CY, int SB, bool SPLIT, int PROBE = 0, bool XSHFL = false>
__global__ void __launch_bounds__(BX* BY, 1)
    t2(const double* __restrict__ in, double* __restrict__ out, int nx, int ny, int nz) {
  constexpr int NBUF = SPLIT ? 3 : 2, DELAY = SPLIT ? 2 : 1;
  constexpr int LV = PY * PX, BUF = T * LV;  // a level's plane; one buffer of every level
  extern __shared__ double buf[];            // [NBUF][T][PY][PX]
  cg::cluster_group cluster = cg::this_cluster();
  const int tx = threadIdx.x, ty = threadIdx.y;
  const dim3 ci = CX * CY > 1 ? cluster.block_index() : dim3(0, 0, 0);
  const int bxi = static_cast<int>(ci.x), byi = static_cast<int>(ci.y);
  constexpr int WX = cluster_outputs(CX, BX), WY = cluster_outputs(CY, BY);  // outputs per cluster
  const int cx0 = (blockIdx.x / CX) * WX, cy0 = (blockIdx.y / CY) * WY;
  const int x = cx0 - H + bxi * BX + tx, y = cy0 - H + byi * BY + ty;
  const bool in_xy = x >= 0 && x < nx && y >= 0 && y < ny;
  const bool col_ok = x >= R && x < nx - R && y >= R && y < ny - R;
  const bool out_xy = in_xy && x >= cx0 && x < cx0 + WX && y >= cy0 && y < cy0 + WY;
  const int z0 = blockIdx.z * SB;
  const long long sz = 1LL * nx * ny, g = 1LL * y * nx + x;

  for (int k = ty * BX + tx; k < NBUF * BUF; k += BX * BY)
    buf[k] = 0.0;
  // Neighbours' buffers (distributed shared memory), null at the cluster's edge.
  double* nb[4] = {nullptr, nullptr, nullptr, nullptr};  // -x, +x, -y, +y
  if constexpr (CX * CY > 1) {
    const auto rank = [](int bx, int by) { return static_cast<unsigned>(bx + by * CX); };
    if (bxi > 0)
      nb[0] = cluster.map_shared_rank(buf, rank(bxi - 1, byi));
    if (bxi < CX - 1)
      nb[1] = cluster.map_shared_rank(buf, rank(bxi + 1, byi));
    if (byi > 0)
      nb[2] = cluster.map_shared_rank(buf, rank(bxi, byi - 1));
    if (byi < CY - 1)
      nb[3] = cluster.map_shared_rank(buf, rank(bxi, byi + 1));
    cluster.sync();  // every block's buffers zeroed before anyone writes into them
  } else {
    __syncthreads();
  }
  // The edge rows/columns this thread passes on (fixed for the stream).
  const bool to_l = PROBE != 1 && tx < R && nb[0], to_r = PROBE != 1 && tx >= BX - R && nb[1];
  const bool to_d = PROBE != 1 && ty < R && nb[2], to_u = PROBE != 1 && ty >= BY - R && nb[3];
  const int own = (ty + R) * PX + tx + R;
  const auto put = [&](int at, double v) {
    buf[at + own] = v;
    if (to_l)
      nb[0][at + own + BX] = v;
    if (to_r)
      nb[1][at + own - BX] = v;
    if (to_d)
      nb[2][at + own + BY * PX] = v;
    if (to_u)
      nb[3][at + own - BY * PX] = v;
  };

  // cen[l][0]: level l's value at the thread's point in the plane read this iteration.
  double acc[T][5], cq[T][3], cen[T][DELAY];
#pragma unroll
  for (int l = 0; l < T; ++l) {
#pragma unroll
    for (int j = 0; j < DELAY; ++j)
      cen[l][j] = 0.0;
#pragma unroll
    for (int j = 0; j < 5; ++j)
      acc[l][j] = 0.0;
#pragma unroll
    for (int j = 0; j < 3; ++j)
      cq[l][j] = 0.0;
  }
  const auto produced = [&](int l, double v) {
#pragma unroll
    for (int j = 0; j + 1 < DELAY; ++j)
      cen[l][j] = cen[l][j + 1];
    cen[l][DELAY - 1] = v;
  };
  const auto load = [&](int z) { return in_xy && z >= 0 && z < nz ? in[z * sz + g] : 0.0; };
  constexpr int NIT = SB + H + 2 * DELAY + 4;
  double pre = load(z0 - H);
  int wb = 0, rb = NBUF - DELAY;  // buffers written / read this iteration
#pragma unroll 2
  for (int i = 0; i < NIT; ++i) {
    const int zin = z0 - H + i;
    const double nxt = load(zin + 1);
    // (A) the plane each source level produced DELAY iterations ago: in-plane partial sums.
#pragma unroll
    for (int l = 0; l < T; ++l) {
      const double* p = buf + rb * BUF + l * LV + own;
      const double v = cen[l][0];
      double xm1, xp1, xm2, xp2;
      if constexpr (XSHFL) {
        xm1 = __shfl_up_sync(0xffffffffu, v, 1);
        xp1 = __shfl_down_sync(0xffffffffu, v, 1);
        xm2 = __shfl_up_sync(0xffffffffu, v, 2);
        xp2 = __shfl_down_sync(0xffffffffu, v, 2);
      } else {
        xm1 = p[-1];
        xp1 = p[1];
        xm2 = p[-2];
        xp2 = p[2];
      }
      const double s = C0 * v + CX1 * (xm1 + xp1) + CX2 * (xm2 + xp2) + CY1 * (p[-PX] + p[PX]) +
                       CY2 * (p[-2 * PX] + p[2 * PX]);
      acc[l][0] += CZ2 * v;
      acc[l][1] += CZ1 * v;
      acc[l][2] += s;
      acc[l][3] += CZ1 * v;
      acc[l][4] = CZ2 * v;
      cq[l][0] = cq[l][1];
      cq[l][1] = cq[l][2];
      cq[l][2] = v;
    }
    if constexpr (SPLIT && PROBE != 2) {
      if (i > 0)
        cluster.barrier_wait();  // phase i - 1: the buffer written next is read by no one
    }
    // (B) level l + 1's plane zin - (DELAY + 2) (l + 1) is complete.
#pragma unroll
    for (int l = 0; l < T; ++l) {
      const int q = zin - (DELAY + 2) * (l + 1);
      const bool ok = col_ok && q >= R && q < nz - R;
      const double v = ok ? acc[l][0] : cq[l][0];
#pragma unroll
      for (int j = 0; j < 4; ++j)
        acc[l][j] = acc[l][j + 1];
      if (l + 1 < T) {
        produced(l + 1, v);
        put(wb * BUF + (l + 1) * LV, v);
      } else if (out_xy && q >= z0 && q < z0 + SB && q < nz) {
        out[q * sz + g] = v;
      }
    }
    // (C) level 0: this iteration's input plane.
    produced(0, pre);
    put(wb * BUF, pre);
    pre = nxt;
    if constexpr (PROBE == 2)
      __syncthreads();
    else if constexpr (SPLIT)
      cluster.barrier_arrive();
    else if constexpr (CX * CY > 1)
      cluster.sync();
    else
      __syncthreads();
    wb = wb + 1 == NBUF ? 0 : wb + 1;
    rb = rb + 1 == NBUF ? 0 : rb + 1;
  }
  if constexpr (SPLIT && PROBE != 2)
    cluster.barrier_wait();
  else if constexpr (CX * CY > 1)
    cluster.sync();  // no block leaves while a neighbour may still write into it
}

struct Grid {
  int nx, ny, nz;
  long long n() const { return 1LL * nx * ny * nz; }
};

// A variant's launch configuration: 32x32 blocks in CX x CY clusters over `grid`, its shared
// memory (the attribute lives beside the config that points at it).
template <int CX, int CY, bool SPLIT>
struct ClusterLaunch {
  cudaLaunchAttribute attr[1];
  cudaLaunchConfig_t cfg = {};
  explicit ClusterLaunch(dim3 grid) {
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = CX;
    attr[0].val.clusterDim.y = CY;
    attr[0].val.clusterDim.z = 1;
    cfg.gridDim = grid;
    cfg.blockDim = dim3(BX, BY, 1);
    cfg.dynamicSmemBytes = shared_bytes(SPLIT);
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  ClusterLaunch(const ClusterLaunch&) = delete;
  ClusterLaunch& operator=(const ClusterLaunch&) = delete;
};

// The kernel's attributes, once per variant (before its first launch).
template <int CX, int CY, int SB, bool SPLIT, int PROBE, bool XSHFL>
void prepare() {
  const auto k = t2<CX, CY, SB, SPLIT, PROBE, XSHFL>;
  if constexpr (CX * CY > 8)  // beyond the portable cluster size
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes(SPLIT)));
}

template <int CX, int CY, int SB, bool SPLIT, int PROBE, bool XSHFL>
void launch(const Grid& gr, const double* in, double* out) {
  constexpr int WX = cluster_outputs(CX, BX), WY = cluster_outputs(CY, BY);
  const ClusterLaunch<CX, CY, SPLIT> l(
      dim3(((gr.nx + WX - 1) / WX) * CX, ((gr.ny + WY - 1) / WY) * CY, (gr.nz + SB - 1) / SB));
  CK(cudaLaunchKernelEx(&l.cfg, t2<CX, CY, SB, SPLIT, PROBE, XSHFL>, in, out, gr.nx, gr.ny, gr.nz));
}

void naive_step(const Grid& gr, const double* in, double* out) {
  const dim3 b(32, 4, 2), g((gr.nx + 31) / 32, (gr.ny + 3) / 4, (gr.nz + 1) / 2);
  naive<<<g, b>>>(in, out, gr.nx, gr.ny, gr.nz);
  CK(cudaGetLastError());
}

template <int CX, int CY, int SB, bool SPLIT = false, int PROBE = 0, bool XSHFL = false>
void variant(const Grid& gr, double* d_in, double* d_out, const std::vector<double>& ref, int reps,
             double naive_gcells) {
  std::vector<double> got(gr.n());
  prepare<CX, CY, SB, SPLIT, PROBE, XSHFL>();
  CK(cudaMemset(d_out, 0, gr.n() * sizeof(double)));
  launch<CX, CY, SB, SPLIT, PROBE, XSHFL>(gr, d_in, d_out);
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(got.data(), d_out, gr.n() * sizeof(double), cudaMemcpyDeviceToHost));
  double err = 0;
  for (long long i = 0; i < gr.n(); ++i)
    err = std::fmax(err, std::fabs(got[i] - ref[i]));
  // Ping-pong on a copy so the verified input stays as it is.
  double* a = d_out;
  double* b = nullptr;
  CK(cudaMalloc(&b, gr.n() * sizeof(double)));
  CK(cudaMemcpy(a, d_in, gr.n() * sizeof(double), cudaMemcpyDeviceToDevice));
  const double ms = time_ms(
      [&](int r) { launch<CX, CY, SB, SPLIT, PROBE, XSHFL>(gr, r % 2 ? b : a, r % 2 ? a : b); },
      reps);
  CK(cudaFree(b));
  const double gcells = gr.n() * T / (ms * 1e-3) / 1e9;
  int clusters = 0;
  if constexpr (CX * CY > 1) {
    const ClusterLaunch<CX, CY, SPLIT> l(dim3(CX * 8, CY * 8, 1));
    CK(cudaOccupancyMaxActiveClusters(&clusters, t2<CX, CY, SB, SPLIT, PROBE, XSHFL>, &l.cfg));
  }
  constexpr int WX = cluster_outputs(CX, BX), WY = cluster_outputs(CY, BY);
  std::printf(
      "cluster %dx%d%s%s%s sb %3d: outputs %3dx%3d of %3dx%3d covered, max err %.2e, "
      "%.4f ms per launch, %6.1f GCells/s per step (%.2fx naive), active clusters %d\n",
      CX, CY, SPLIT ? " split" : "",
      PROBE == 1   ? " probe:no-stores"
      : PROBE == 2 ? " probe:block-barriers"
                   : "",
      XSHFL ? " x-shuffles" : "", SB, WX, WY, CX * BX, CY * BY, err, ms, gcells,
      gcells / naive_gcells, clusters);
  std::fflush(stdout);
}

int main(int argc, char** argv) {
  Grid gr{512, 512, 512};
  if (argc >= 4)
    gr = Grid{std::atoi(argv[1]), std::atoi(argv[2]), std::atoi(argv[3])};
  const int reps = argc >= 5 ? std::atoi(argv[4]) : 20;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, grid %dx%dx%d, %d launches timed\n", prop.name, gr.nx, gr.ny, gr.nz, reps);
  std::vector<double> h(gr.n());
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (double& v : h)
    v = u(rng);
  double *d_in, *d_tmp, *d_out;
  CK(cudaMalloc(&d_in, gr.n() * sizeof(double)));
  CK(cudaMalloc(&d_tmp, gr.n() * sizeof(double)));
  CK(cudaMalloc(&d_out, gr.n() * sizeof(double)));
  CK(cudaMemcpy(d_in, h.data(), gr.n() * sizeof(double), cudaMemcpyHostToDevice));
  naive_step(gr, d_in, d_tmp);
  naive_step(gr, d_tmp, d_out);
  CK(cudaDeviceSynchronize());
  std::vector<double> ref(gr.n());
  CK(cudaMemcpy(ref.data(), d_out, gr.n() * sizeof(double), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(d_tmp, d_in, gr.n() * sizeof(double), cudaMemcpyDeviceToDevice));
  const double nms =
      time_ms([&](int r) { naive_step(gr, r % 2 ? d_out : d_tmp, r % 2 ? d_tmp : d_out); }, reps);
  const double naive_gcells = gr.n() / (nms * 1e-3) / 1e9;
  std::printf("naive: %.4f ms per step, %6.1f GCells/s\n", nms, naive_gcells);
  variant<1, 1, 128>(gr, d_in, d_out, ref, reps, naive_gcells);
  variant<1, 1, 512>(gr, d_in, d_out, ref, reps, naive_gcells);
  variant<1, 1, 128, false, 0, true>(gr, d_in, d_out, ref, reps, naive_gcells);
  variant<1, 1, 512, false, 0, true>(gr, d_in, d_out, ref, reps, naive_gcells);
  variant<1, 2, 256, true>(gr, d_in, d_out, ref, reps, naive_gcells);
  variant<1, 2, 256, true, 0, true>(gr, d_in, d_out, ref, reps, naive_gcells);
  variant<2, 1, 128>(gr, d_in, d_out, ref, reps, naive_gcells);
  variant<2, 2, 128>(gr, d_in, d_out, ref, reps, naive_gcells);
  variant<2, 1, 128, true>(gr, d_in, d_out, ref, reps, naive_gcells);
  variant<2, 2, 128, true>(gr, d_in, d_out, ref, reps, naive_gcells);
  variant<2, 2, 256, true>(gr, d_in, d_out, ref, reps, naive_gcells);
  variant<2, 4, 128, true>(gr, d_in, d_out, ref, reps, naive_gcells);
  variant<4, 2, 128, true>(gr, d_in, d_out, ref, reps, naive_gcells);
  variant<4, 4, 128, true>(gr, d_in, d_out, ref, reps, naive_gcells);
  variant<2, 2, 256, true, 1>(gr, d_in, d_out, ref, reps, naive_gcells);
  variant<2, 2, 256, true, 2>(gr, d_in, d_out, ref, reps, naive_gcells);
  variant<2, 2, 256, false, 1>(gr, d_in, d_out, ref, reps, naive_gcells);
  return 0;
}
