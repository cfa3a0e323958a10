// Part-1 stencil kernel template: one sweep (one time step) per launch over a tiled grid.
// Each thread block owns a tile of (TBX*MFX) x (TBY*MFY) x (TBZ*MFZ) points; each thread
// computes MFX*MFY*MFZ points, adjacent (MERGE = 1, block merging) or TB* apart (MERGE = 2,
// cyclic merging). The per-thread point loops are unrolled UF* ways. With SHARED = 1 the
// block first stages its input tile plus halo in dynamic shared memory.
//
// Semantics (ARCHITECTURE §3): a point whose every neighbour lies inside the grid gets the
// weighted sum; any other point keeps its input value. XLO/XHI (etc.) are the largest
// negative and positive offsets along each axis, so "interior" is exact for asymmetric
// stencils too. The grid extents are compile-time constants: every neighbour address is
// then a literal offset from the centre and the compiler shares loads between merged points.
//
// The Apply type is generated per stencil; Apply::at<SY, SZ>(p) returns the weighted sum
// around p for row stride SY and plane stride SZ. Part-2 optimizations (streaming, retiming,
// prefetch, temporal blocking) get their own templates next to this one and reuse Apply.
#pragma once

namespace isl {

// Position along one axis of merged point u of thread t inside its tile.
template <int TB, int MF, int MERGE>
__device__ __forceinline__ int merged_index(int t, int u) {
  return MERGE == 1 ? t * MF + u : t + u * TB;
}

template <int TBX, int TBY, int TBZ, int MFX, int MFY, int MFZ, int UFX, int UFY, int UFZ,
          int MERGE, int SHARED, int NX, int NY, int NZ, int XLO, int XHI, int YLO, int YHI,
          int ZLO, int ZHI, class Apply>
__device__ __forceinline__ void part1_step(const double* __restrict__ in,
                                           double* __restrict__ out, double* smem) {
  constexpr int TX = TBX * MFX, TY = TBY * MFY, TZ = TBZ * MFZ;
  constexpr int SXD = TX + XLO + XHI, SYD = TY + YLO + YHI, SZD = TZ + ZLO + ZHI;
  constexpr long long PLANE = 1LL * NX * NY;
  const int x0 = blockIdx.x * TX, y0 = blockIdx.y * TY, z0 = blockIdx.z * TZ;

  if constexpr (SHARED) {
    // Stage the tile with its halo; rows along x so the loads are coalesced.
    for (int iz = threadIdx.z; iz < SZD; iz += TBZ) {
      const int gz = z0 - ZLO + iz;
      for (int iy = threadIdx.y; iy < SYD; iy += TBY) {
        const int gy = y0 - YLO + iy;
        const bool row_in = gz >= 0 && gz < NZ && gy >= 0 && gy < NY;
        for (int ix = threadIdx.x; ix < SXD; ix += TBX) {
          const int gx = x0 - XLO + ix;
          if (row_in && gx >= 0 && gx < NX) {
            smem[(iz * SYD + iy) * SXD + ix] = in[gz * PLANE + 1LL * gy * NX + gx];
          }
        }
      }
    }
    __syncthreads();
  }

#pragma unroll(UFZ)
  for (int uz = 0; uz < MFZ; ++uz) {
    const int lz = merged_index<TBZ, MFZ, MERGE>(threadIdx.z, uz);
    const int z = z0 + lz;
    if (z >= NZ) continue;
#pragma unroll(UFY)
    for (int uy = 0; uy < MFY; ++uy) {
      const int ly = merged_index<TBY, MFY, MERGE>(threadIdx.y, uy);
      const int y = y0 + ly;
      if (y >= NY) continue;
#pragma unroll(UFX)
      for (int ux = 0; ux < MFX; ++ux) {
        const int lx = merged_index<TBX, MFX, MERGE>(threadIdx.x, ux);
        const int x = x0 + lx;
        if (x >= NX) continue;
        const long long g = z * PLANE + 1LL * y * NX + x;
        const bool interior = x >= XLO && x < NX - XHI && y >= YLO && y < NY - YHI &&
                              z >= ZLO && z < NZ - ZHI;
        double v;
        if constexpr (SHARED) {
          const double* p = smem + ((lz + ZLO) * SYD + (ly + YLO)) * SXD + (lx + XLO);
          v = interior ? Apply::template at<SXD, SXD * SYD>(p) : *p;
        } else {
          const double* p = in + g;
          v = interior ? Apply::template at<NX, static_cast<int>(PLANE)>(p) : *p;
        }
        out[g] = v;
      }
    }
  }
}

}  // namespace isl
