// Part-1 stencil kernel template: one sweep (one time step) per launch over a tiled grid.
// Each thread block owns a tile of (TBX*MFX) x (TBY*MFY) x (TBZ*MFZ) points; each thread
// computes MFX*MFY*MFZ points, adjacent (MERGE = 1, block merging) or TB* apart (MERGE = 2,
// cyclic merging). The per-thread point loops are unrolled UF* ways (register blocking:
// unrolled points share the loads of their common neighbours). With SHARED = 1 the
// block first stages its input tile plus halo in dynamic shared memory.
//
// Semantics (ARCHITECTURE §3): a point whose every neighbour lies inside the grid gets the
// weighted sum; any other point keeps its input value. XLO/XHI (etc.) are the largest
// negative and positive offsets along each axis, so "interior" is exact for asymmetric
// stencils too. The grid extents are compile-time constants: every neighbour address is
// then a literal offset from the centre and the compiler shares loads between merged points.
//
// The Apply type is generated per stencil and setting: Apply::at<SY, SZ>(p) returns the
// weighted sum around p for row stride SY and plane stride SZ; Apply::block<...>(p, o)
// computes one unrolled chunk of merged points with each input loaded once (register
// blocking), its code emitted by codegen from the stencil's offsets and the chunk's shape. Part-2
// optimizations (streaming, retiming, prefetch, temporal blocking) get their own templates next to
// this one and reuse Apply.
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
__device__ __forceinline__ void part1_step(const double* __restrict__ in, double* __restrict__ out,
                                           double* smem) {
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

  // Step between a thread's merged points along each axis, and its first point.
  constexpr int DX = MERGE == 2 ? TBX : 1, DY = MERGE == 2 ? TBY : 1, DZ = MERGE == 2 ? TBZ : 1;
  const int lx0 = merged_index<TBX, MFX, MERGE>(threadIdx.x, 0);
  const int ly0 = merged_index<TBY, MFY, MERGE>(threadIdx.y, 0);
  const int lz0 = merged_index<TBZ, MFZ, MERGE>(threadIdx.z, 0);
  const int xa = x0 + lx0, ya = y0 + ly0, za = z0 + lz0;
  const int xb = xa + (MFX - 1) * DX, yb = ya + (MFY - 1) * DY, zb = za + (MFZ - 1) * DZ;

  if (xa >= XLO && xb < NX - XHI && ya >= YLO && yb < NY - YHI && za >= ZLO && zb < NZ - ZHI) {
    // Fast path, taken by every thread whose points are all interior: each input is one
    // base pointer plus compile-time constants, so the unrolled merged points share loads
    // (register blocking) and no bounds test sits between them.
    const long long g0 = za * PLANE + 1LL * ya * NX + xa;
    double* o = out + g0;
    const double* p;
    if constexpr (SHARED) {
      p = smem + ((lz0 + ZLO) * SYD + (ly0 + YLO)) * SXD + (lx0 + XLO);
    } else {
      p = in + g0;
    }
    constexpr long long SROW = SHARED ? SXD : NX;
    constexpr long long SPLANE = SHARED ? 1LL * SXD * SYD : PLANE;
    // Chunks of UFX x UFY x UFZ points; Apply::block computes one chunk, loading each input
    // it needs once and adding it into every point of the chunk that uses it.
#pragma unroll 1
    for (int cz = 0; cz < MFZ / UFZ; ++cz) {
#pragma unroll 1
      for (int cy = 0; cy < MFY / UFY; ++cy) {
#pragma unroll 1
        for (int cx = 0; cx < MFX / UFX; ++cx) {
          const int ux = cx * UFX * DX, uy = cy * UFY * DY, uz = cz * UFZ * DZ;
          Apply::template block<SROW, SPLANE, NX, PLANE>(p + (uz * SPLANE + uy * SROW + ux),
                                                         o + (uz * PLANE + 1LL * uy * NX + ux));
        }
      }
    }
    return;
  }

  // Edge path: points near the grid's edge or outside it, one at a time.
#pragma unroll 1
  for (int uz = 0; uz < MFZ; ++uz) {
    const int lz = merged_index<TBZ, MFZ, MERGE>(threadIdx.z, uz);
    const int z = z0 + lz;
    if (z >= NZ)
      continue;
#pragma unroll 1
    for (int uy = 0; uy < MFY; ++uy) {
      const int ly = merged_index<TBY, MFY, MERGE>(threadIdx.y, uy);
      const int y = y0 + ly;
      if (y >= NY)
        continue;
#pragma unroll 1
      for (int ux = 0; ux < MFX; ++ux) {
        const int lx = merged_index<TBX, MFX, MERGE>(threadIdx.x, ux);
        const int x = x0 + lx;
        if (x >= NX)
          continue;
        const long long g = z * PLANE + 1LL * y * NX + x;
        const bool interior =
            x >= XLO && x < NX - XHI && y >= YLO && y < NY - YHI && z >= ZLO && z < NZ - ZHI;
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
