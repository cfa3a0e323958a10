// Tensor-core family: one step of the stencil on the FP64 tensor cores (DMMA, sm_80 and later),
// the "block im2col" mapping with the window tiled exactly by pairs of patches
// (src/kernel/mma_tiling.hpp says which window positions each MMA takes; the family's code
// emission, src/kernel/mma.cpp, prints its tables into the config struct C).
//
// Kernel axes: x (fast), y (the second in-plane axis; extent 1 in 2-D), s (the streamed,
// slowest axis: z in 3-D, y in 2-D). Each warp owns NB batches of 16 output blocks of
// BX x BY x BS points side by side along x; the CTA (WXW x WYW warps) owns a TX x TY tile and
// streams TS planes of it along s, BS planes (a group) at a time, through a cp.async ring of
// STAGES groups of the tile plus its window halo (TXN x TYS staged positions a plane, row
// pitch TXS). Per group a warp issues, for each unit u (one MMA), each of its NP accumulator
// slots and each batch, D += A B: A from the staged planes (two 16-byte loads for a pair of
// patches: rows m and m + 8 of the batch), B the constant coefficients (Apply::mma_b(), copied
// to shared memory when CSM, else held in registers). After a group slot 0 holds a complete
// block step: it is stored and the slots rotate.
//
// Semantics (as every family): a point whose every neighbour lies inside the grid gets the
// weighted sum; any other point keeps its input value (the sum over the zero-filled staging is
// discarded there). Any grid extents: tiles past the grid stage zeros and store nothing.
#pragma once

namespace isl {

#ifdef ISL_HOST_SIM
// The host emulation (bench/harness/host_sim.h, tests/sim): the same copies and MMAs without
// PTX.
__device__ __forceinline__ void mma_copy8(double* dst, const double* src) {
  cp_async8(dst, src, true);
}
__device__ __forceinline__ void mma_copy16(double* dst, const double* src) {
  cp_async16(dst, src);
}
__device__ __forceinline__ void mma_commit() {
  cp_async_commit();
}
template <int N>
__device__ __forceinline__ void mma_wait() {
  cp_async_wait<N>();
}
__device__ __forceinline__ void mma_k4(double (&d)[4], double a0, double a1, double b) {
  const double a[2] = {a0, a1};
  mma_f64<4>(d, a, &b);
}
__device__ __forceinline__ void mma_k8(double (&d)[4], double a0, double a1, double a2, double a3,
                                       double b0, double b1) {
  const double a[4] = {a0, a1, a2, a3}, b[2] = {b0, b1};
  mma_f64<8>(d, a, b);
}
__device__ __forceinline__ void mma_k16(double (&d)[4], const double (&a)[8], double b0, double b1,
                                        double b2, double b3) {
  const double b[4] = {b0, b1, b2, b3};
  mma_f64<16>(d, a, b);
}
#else
__device__ __forceinline__ void mma_copy8(double* dst, const double* src) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void mma_copy16(double* dst, const double* src) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void mma_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void mma_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// D (16x8) += A (16x4) B (4x8). Lane l: a0 = A[l/4][l%4], a1 = A[l/4+8][l%4], b = B[l%4][l/4].
__device__ __forceinline__ void mma_k4(double (&d)[4], double a0, double a1, double b) {
  asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
      "{%0,%1,%2,%3};\n"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a0), "d"(a1), "d"(b));
}
// D (16x8) += A (16x8) B (8x8): two k4 patches; lane l holds a0/a1 (rows l/4, l/4+8) and b0
// of the first, a2/a3 and b1 of the second (the same k order as mma_k16).
__device__ __forceinline__ void mma_k8(double (&d)[4], double a0, double a1, double a2, double a3,
                                       double b0, double b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a0), "d"(a1), "d"(a2), "d"(a3), "d"(b0), "d"(b1));
}
// D (16x8) += A (16x16) B (16x8): four k4 patches; patch p's a[2p] / a[2p+1] (rows l/4, l/4+8)
// and b_p. Verification checks that A and B share the k order.
__device__ __forceinline__ void mma_k16(double (&d)[4], const double (&a)[8], double b0, double b1,
                                        double b2, double b3) {
  asm("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, "
      "{%4,%5,%6,%7,%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3};\n"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
        "d"(b0), "d"(b1), "d"(b2), "d"(b3));
}
#endif

// A lane's offset inside descriptor type t (MmaDesc: 0 p81, 1 p42, 2 p24, 3 s22, 4 s41) for its
// quad index kq, at row pitch TXS.
template <int TXS>
__device__ __forceinline__ int mma_lane_offset(int t, int kq) {
  return t == 0   ? 2 * kq
         : t == 1 ? 2 * (kq & 1) + (kq >> 1) * TXS
         : t == 2 ? kq * TXS
         : t == 3 ? (kq & 1) + (kq >> 1) * TXS
                  : kq;
}

template <class C, class Apply>
__device__ __forceinline__ void mma_step(const double* __restrict__ in, double* __restrict__ out,
                                         double* smem) {
  constexpr int MM = 16, ACC = 4;
  double* ring = smem;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wxi = warp % C::WXW, wyi = warp / C::WXW;
  const int gq = lane >> 2, kq = lane & 3;
  const int x0 = blockIdx.x * C::TX;
  const int y0 = C::TWOD ? 0 : blockIdx.y * C::TY;
  const int s0 = (C::TWOD ? blockIdx.y : blockIdx.z) * C::TS;
  const int xw = wxi * C::WFX, yw = wyi * C::BY;
  const double* __restrict__ coefg = Apply::mma_b();

  // B: the table's double t of a lane (t = slot * NBL + unit base + 2 * half + element) at
  // (t / 2) * 64 + 2 * lane + t % 2.
  double cr[C::CSM ? 1 : C::NCOEF];
  const double* csm = smem + C::RING + 2 * lane;
  if constexpr (C::CSM) {
    // Copied once; the first barrier of the group loop orders it before every read.
    for (int e = threadIdx.x; e < C::NCOEF * 32; e += C::THREADS)
      smem[C::RING + e] = coefg[e];
  } else {
#pragma unroll
    for (int t = 0; t < C::NCOEF; t += 2) {
      const double2 v = __ldg(reinterpret_cast<const double2*>(coefg + (t / 2) * 64 + 2 * lane));
      cr[t] = v.x;
      cr[t + 1] = v.y;
    }
  }
  const int lane_base = yw * C::TXS + xw + gq * C::BX;

  auto stage = [&](int gi) {
    double* dst = ring + (gi % C::STAGES) * C::BS * C::PLANE_S;
    for (int row = warp; row < C::BS * C::TYS; row += C::NWARPS) {
      const int i = row / C::TYS, ty = row - i * C::TYS;
      const int gs = s0 - C::SLO + gi * C::BS + i;
      const int gy = y0 - C::YLO + ty;
      const bool rin = gs >= 0 && gs < C::NS && gy >= 0 && gy < C::NY;
      const long long rowg = 1LL * gs * C::PLANE + 1LL * gy * C::NX;
      if constexpr (C::VEC2) {
        for (int tx = 2 * lane; tx < C::TXN; tx += 64) {
          const int gx = x0 - C::XLO + tx;
          double* d = dst + i * C::PLANE_S + ty * C::TXS + tx;
          if (rin && gx >= 0 && gx < C::NX)
            mma_copy16(d, in + rowg + gx);
          else
            d[0] = d[1] = 0.0;
        }
      } else {
        for (int tx = lane; tx < C::TXN; tx += 32) {
          const int gx = x0 - C::XLO + tx;
          double* d = dst + i * C::PLANE_S + ty * C::TXS + tx;
          if (rin && gx >= 0 && gx < C::NX)
            mma_copy8(d, in + rowg + gx);
          else
            *d = 0.0;
        }
      }
    }
    mma_commit();
  };

  // Stores batch b's complete block step t (x pairs; the input where the sum does not apply).
  auto store = [&](const double(&v)[ACC], int b, int t) {
#pragma unroll
    for (int h = 0; h < ACC / 2; ++h) {
      const int m = b * MM + gq + 8 * h;
      const int n = 2 * kq;
      const int px = n % C::BX, py = (n / C::BX) % C::BY, ps = n / (C::BX * C::BY);
      const int gx = x0 + xw + m * C::BX + px, gy = y0 + yw + py, gs = s0 + t * C::BS + ps;
      if (gx >= C::NX || gy >= C::NY || gs >= C::NS)
        continue;
      const long long gidx = 1LL * gs * C::PLANE + 1LL * gy * C::NX + gx;
      double r0 = v[2 * h], r1 = v[2 * h + 1];
      const bool rowin = gy >= C::YLO && gy < C::NY - C::YHI && gs >= C::SLO && gs < C::NS - C::SHI;
      if (!(rowin && gx >= C::XLO && gx + 1 < C::NX - C::XHI)) {
        if (!(rowin && gx >= C::XLO && gx < C::NX - C::XHI))
          r0 = in[gidx];
        if (gx + 1 < C::NX && !(rowin && gx + 1 >= C::XLO && gx + 1 < C::NX - C::XHI))
          r1 = in[gidx + 1];
      }
      if constexpr (C::NX % 2 == 0) {
        *reinterpret_cast<double2*>(out + gidx) = make_double2(r0, r1);
      } else {
        out[gidx] = r0;
        if (gx + 1 < C::NX)
          out[gidx + 1] = r1;
      }
    }
  };

  double acc[C::NB][C::NP][ACC];
#pragma unroll
  for (int b = 0; b < C::NB; ++b)
#pragma unroll
    for (int j = 0; j < C::NP; ++j)
#pragma unroll
      for (int a = 0; a < ACC; ++a)
        acc[b][j][a] = 0.0;

#pragma unroll
  for (int gi = 0; gi < C::STAGES - 1; ++gi)
    stage(gi);

#pragma unroll 1
  for (int gi = 0; gi < C::NG; ++gi) {
    mma_wait<C::STAGES - 2>();
    __syncthreads();
    if (gi + C::STAGES - 1 < C::NG)
      stage(gi + C::STAGES - 1);
    else
      mma_commit();

    const double* base = ring + (gi % C::STAGES) * C::BS * C::PLANE_S + lane_base;
#pragma unroll
    for (int u = 0; u < C::NU; ++u) {
      constexpr int R8 = 8 * C::BX;  // row m + 8 of the batch
      double a[C::NB][8];
      if (C::upair(u)) {
#pragma unroll
        for (int t = 0; t < C::ukind(u) / 8; ++t) {
          const int off = C::item_offset(u, t) + mma_lane_offset<C::TXS>(C::item_type(u, t), kq);
#pragma unroll
          for (int b = 0; b < C::NB; ++b) {
            const double2 v0 = *reinterpret_cast<const double2*>(base + off + b * MM * C::BX);
            const double2 v1 = *reinterpret_cast<const double2*>(base + off + b * MM * C::BX + R8);
            a[b][4 * t] = v0.x;
            a[b][4 * t + 1] = v1.x;
            a[b][4 * t + 2] = v0.y;
            a[b][4 * t + 3] = v1.y;
          }
        }
      } else {
#pragma unroll
        for (int t = 0; t < C::ukind(u) / 4; ++t) {
          const int off = C::item_offset(u, t) + mma_lane_offset<C::TXS>(C::item_type(u, t), kq);
#pragma unroll
          for (int b = 0; b < C::NB; ++b) {
            a[b][2 * t] = base[off + b * MM * C::BX];
            a[b][2 * t + 1] = base[off + b * MM * C::BX + R8];
          }
        }
      }
#pragma unroll
      for (int j = 0; j < C::NP; ++j) {
        const int q = j * C::NBL + C::ubase(u);
        double w[4];
#pragma unroll
        for (int h = 0; h < (C::ukind(u) / 4 + 1) / 2; ++h) {
          if constexpr (C::CSM) {
            const double2 v = *reinterpret_cast<const double2*>(csm + (q + 2 * h) * 32);
            w[2 * h] = v.x;
            w[2 * h + 1] = v.y;
          } else {
            w[2 * h] = cr[q + 2 * h];
            w[2 * h + 1] = cr[q + 2 * h + 1];
          }
        }
#pragma unroll
        for (int b = 0; b < C::NB; ++b) {
          if (C::ukind(u) == 16)
            mma_k16(acc[b][j], a[b], w[0], w[1], w[2], w[3]);
          else if (C::ukind(u) == 8)
            mma_k8(acc[b][j], a[b][0], a[b][1], a[b][2], a[b][3], w[0], w[1]);
          else
            mma_k4(acc[b][j], a[b][0], a[b][1], w[0]);
        }
      }
    }
    // Slot 0 holds block step t, now complete.
    const int t = gi - C::NP + 1;
    if (t >= 0) {
#pragma unroll
      for (int b = 0; b < C::NB; ++b)
        store(acc[b][0], b, t);
    }
#pragma unroll
    for (int b = 0; b < C::NB; ++b) {
#pragma unroll
      for (int j = 0; j + 1 < C::NP; ++j)
#pragma unroll
        for (int a = 0; a < ACC; ++a)
          acc[b][j][a] = acc[b][j + 1][a];
#pragma unroll
      for (int a = 0; a < ACC; ++a)
        acc[b][C::NP - 1][a] = 0.0;
    }
  }
}

}  // namespace isl
