// The "pair-tiled window" mapping of the DMMA prototype (issue 47, 2026-12-05 study,
// docs/studies/2026-12-05-dmma-pair-tiled-window.md); included by mma_stencil.cu.
//
// Same block im2col as dmma_step (n = the 8 points of a BX x BY x BS output block, m = 16
// blocks side by side along x, B = the constant coefficient operand, streaming along S with NP
// accumulator slots), with three changes that keep the issued MMA work at exactly
// points / window volume (no padding of any kind) while using the fastest instruction:
//  * The window plane (WXE x WYE positions) is tiled exactly by *descriptors*: pairs of
//    patches (two k4 chunks whose positions a lane finds side by side along x, so one 16-byte
//    shared load of each A row feeds both) and single patches:
//      3-D: P42 (a 4 x 2 region: lane q takes (2(q%2)+e, q/2), e = 0/1 the two patches),
//           P24 (2 x 4: (e, q)), S22 (a single 2 x 2 patch);
//      2-D (one row): P81 (8 x 1: (2q+e, 0)), S41 (a single 4 x 1 patch).
//    The k16 chunk of m16n8k16 takes two pairs, m16n8k8 one pair (or two singles), m16n8k4 a
//    single: a group of BS planes needs no zero patch (box3d2r: 4 k16 + 1 k8 a slot, box3d3r
//    8 k16, box3d4r 12 k16 + 1 k8, box2d4r 1 k16 + 1 k8, box2d2r 1 k16).
//  * B, in shared memory (CSM = 1) or registers, is laid out per slot, unit and lane as
//    [half][lane][2] so a lane's two coefficients of a pair are one 16-byte conflict-free load.
//  * The staged row pitch TXS is padded to 8 mod 16 doubles (the two rows of a P42 load fall
//    in different bank halves).
// K8 = 0 replaces each m16n8k8 by two m16n8k4 (same B layout), a check of the k8 fragment
// order and its rate.
// Measured and not kept (run 2 of the study, commit 82c7579): a persistent grid streaming equal
// shares of (tile, block step) pairs (L2 reuse of the halos lost: 24 % slower on box3d2r) and
// two groups a barrier (no gain).

// D (16x8) += A (16x8) * B (8x8), f64 (sm_90). Lane l: a0/a2 = A[l/4][k], a1/a3 = A[l/4+8][k],
// b0/b1 = B[k][l/4], for k = k(0, l%4) and k(1, l%4): the same k order as mma_k16 (the kernel
// relies on A and B sharing it; verification checks).
__device__ __forceinline__ void mma_k8(double (&d)[4], double a0, double a1, double a2, double a3,
                                       double b0, double b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a0), "d"(a1), "d"(a2), "d"(a3), "d"(b0), "d"(b1));
}

// Descriptor types of a window plane's tiling.
enum : int { kP81 = 0, kP42 = 1, kP24 = 2, kS22 = 3, kS41 = 4 };

// BX x BY x BS blocks (product 8, BX even); NB batches of 16 blocks a warp; WXW x WYW warps;
// TS output planes a CTA; STAGES ring depth; CSM coefficients in shared memory; MINB minimum
// resident CTAs; K8 m16n8k8 (1) or two m16n8k4 (0) for two-patch units.
template <class G, int BX_, int BY_, int BS_, int NB_, int WXW_, int WYW_, int TS_, int STAGES_,
          int CSM_, int MINB_ = 1, int K8_ = 1>
struct Cfg2 {
  using Geom = G;
  static constexpr int BX = BX_, BY = BY_, BS = BS_, NB = NB_, WXW = WXW_, WYW = WYW_, TS = TS_,
                       STAGES = STAGES_, CSM = CSM_, MINB = MINB_, K8 = K8_, MM = 16, ACC = 4;
  static_assert(BX * BY * BS == 8 && BX % 2 == 0, "8-point blocks, x pairs");
  static constexpr int WXE = BX + G::XLO + G::XHI, WYE = BY + G::YLO + G::YHI,
                       WSE = BS + G::SLO + G::SHI;
  static constexpr int WSP = round_up(WSE, BS), NP = WSP / BS;
  static constexpr bool TWOD = WYE == 1;
  static_assert(TWOD ? WXE % 4 == 0 : (WXE % 2 == 0 && WYE % 2 == 0),
                "window extents the tiling covers");
  // Window-plane tiling.
  static constexpr int NA = TWOD ? WXE / 8 : (WXE / 4) * (WYE / 2);  // P81 or P42 pairs
  static constexpr int WX4 = WXE / 4 * 4;
  static constexpr int NPAIR = TWOD ? NA : NA + (WXE % 4 ? WYE / 4 : 0);
  static constexpr int NSING = TWOD ? (WXE % 8) / 4 : ((WXE % 4 && WYE % 4) ? 1 : 0);
  __host__ __device__ static constexpr int dtype(int d) {
    return TWOD ? (d < NPAIR ? kP81 : kS41) : (d < NA ? kP42 : d < NPAIR ? kP24 : kS22);
  }
  __host__ __device__ static constexpr int ddx(int d) {
    return TWOD ? (d < NPAIR ? 8 * d : 8 * NPAIR + 4 * (d - NPAIR))
                : (d < NA ? 4 * (d % (WXE / 4)) : WX4);
  }
  __host__ __device__ static constexpr int ddy(int d) {
    return TWOD ? 0 : (d < NA ? 2 * (d / (WXE / 4)) : d < NPAIR ? 4 * (d - NA) : WYE - 2);
  }
  // Window position (x, y) of lane-quad index q's element e of descriptor d.
  static void pos(int d, int e, int q, int& x, int& y) {
    const int t = dtype(d);
    x = ddx(d), y = ddy(d);
    if (t == kP81)
      x += 2 * q + e;
    else if (t == kP42)
      x += 2 * (q % 2) + e, y += q / 2;
    else if (t == kP24)
      x += e, y += q;
    else if (t == kS22)
      x += q % 2, y += q / 2;
    else
      x += q;
  }
  // Units (one MMA each, per slot and batch) of a group of BS planes.
  static constexpr int NPR = BS * NPAIR, NSG = BS * NSING;
  static constexpr int N16P = NPR / 2, N8P = NPR % 2, N16S = NSG / 4, N8S = (NSG % 4) / 2,
                       N4S = NSG % 2;
  static constexpr int NU = N16P + N8P + N16S + N8S + N4S;
  __host__ __device__ static constexpr bool upair(int u) { return u < N16P + N8P; }
  __host__ __device__ static constexpr int ukind(int u) {
    return u < N16P                      ? 16
           : u < N16P + N8P              ? 8
           : u < N16P + N8P + N16S       ? 16
           : u < N16P + N8P + N16S + N8S ? 8
                                         : 4;
  }
  __host__ __device__ static constexpr int npatch(int u) {
    return ukind(u) == 16 ? 4 : ukind(u) == 8 ? 2 : 1;
  }
  // Doubles a lane holds for a unit: two a pair of patches (a single is padded to two).
  __host__ __device__ static constexpr int clampu(int v, int n) {
    return v < 0 ? 0 : v > n ? n : v;
  }
  __host__ __device__ static constexpr int ubase(int u) {
    return 4 * clampu(u, N16P) + 2 * clampu(u - N16P, N8P) + 4 * clampu(u - N16P - N8P, N16S) +
           2 * clampu(u - N16P - N8P - N16S, N8S) + 2 * clampu(u - N16P - N8P - N16S - N8S, N4S);
  }
  static constexpr int NBL = ubase(NU);  // doubles a lane a slot
  static constexpr int NCOEF = NP * NBL;
  // Item t of unit u: a pair index (pair units) or a single index.
  __host__ __device__ static constexpr int item(int u, int t) {
    return u < N16P                      ? 2 * u + t
           : u < N16P + N8P              ? NPR - 1
           : u < N16P + N8P + N16S       ? 4 * (u - N16P - N8P) + t
           : u < N16P + N8P + N16S + N8S ? 4 * N16S + t
                                         : 4 * N16S + 2 * N8S;
  }
  // Plane and descriptor of unit u's patch p (pair units: item p/2, element p%2).
  static void patch(int u, int p, int& i, int& d, int& e) {
    if (upair(u)) {
      const int pr = item(u, p / 2);
      i = pr / NPAIR, d = pr % NPAIR, e = p % 2;
    } else {
      const int sg = item(u, p);
      i = sg / (NSING > 0 ? NSING : 1), d = NPAIR + sg % (NSING > 0 ? NSING : 1), e = 0;
    }
  }
  static constexpr int WFX = NB * MM * BX;
  static constexpr int TX = WXW * WFX, TY = WYW * BY;
  static constexpr int TXN = TX + WXE - BX;  // staged columns
  static constexpr int TXS = TWOD ? round_up(TXN, 2) : TXN + ((8 - TXN % 16) + 16) % 16;
  static constexpr int TYS = TY + WYE - BY, PLANE_S = TXS * TYS;
  static constexpr int NWARPS = WXW * WYW, THREADS = 32 * NWARPS;
  static constexpr int RING = STAGES * BS * PLANE_S;
  static constexpr int SMEM = RING * 8 + (CSM ? NCOEF * 32 * 8 : 0);
  static constexpr int NSTEPS = TS / BS, NG = NSTEPS + NP - 1;
  static constexpr bool VEC2 = G::XLO % 2 == 0 && TXN % 2 == 0 && G::NX % 2 == 0;
  static_assert(G::NX % TX == 0 && G::NY % TY == 0 && G::NS % TS == 0 && TS % BS == 0,
                "the prototype needs tiles that divide the grid");
  static_assert(THREADS <= 1024, "block size");
};

template <class C>
__global__ void __launch_bounds__(C::THREADS, C::MINB)
    dmma2_step(const double* __restrict__ in, double* __restrict__ out,
               const double* __restrict__ coefg) {
  using G = typename C::Geom;
  extern __shared__ __align__(16) double smem[];
  double* ring = smem;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wxi = warp % C::WXW, wyi = warp / C::WXW;
  const int gq = lane >> 2, kq = lane & 3;
  const int x0 = blockIdx.x * C::TX, y0 = blockIdx.y * C::TY, s0 = blockIdx.z * C::TS;
  const int xw = wxi * C::WFX, yw = wyi * C::BY;

  // B: element t of a lane (t = slot * NBL + unit base + 2 half + e) at (t/2)*64 + 2 lane + t%2.
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
  // This lane's block origin in a staged plane and its offset in each descriptor type.
  const int lane_base = yw * C::TXS + xw + gq * C::BX;
  const int lo81 = 2 * kq, lo42 = 2 * (kq & 1) + (kq >> 1) * C::TXS, lo24 = kq * C::TXS,
            lo22 = (kq & 1) + (kq >> 1) * C::TXS, lo41 = kq;
  auto lane_off = [&](int t) {
    return t == kP81 ? lo81 : t == kP42 ? lo42 : t == kP24 ? lo24 : t == kS22 ? lo22 : lo41;
  };

  auto stage = [&](int gi) {
    double* dst = ring + (gi % C::STAGES) * C::BS * C::PLANE_S;
    for (int row = warp; row < C::BS * C::TYS; row += C::NWARPS) {
      const int i = row / C::TYS, ty = row - i * C::TYS;
      const int gs = s0 - G::SLO + gi * C::BS + i;
      const int gy = y0 - G::YLO + ty;
      const bool rin = gs >= 0 && gs < G::NS && gy >= 0 && gy < G::NY;
      if constexpr (C::VEC2) {
        for (int tx = 2 * lane; tx < C::TXN; tx += 64) {
          const int gx = x0 - G::XLO + tx;
          double* d = dst + i * C::PLANE_S + ty * C::TXS + tx;
          if (rin && gx >= 0 && gx < G::NX)
            copy_async16(d, in + (1LL * gs * G::PLANE + 1LL * gy * G::NX + gx));
          else
            d[0] = d[1] = 0.0;
        }
      } else {
        for (int tx = lane; tx < C::TXN; tx += 32) {
          const int gx = x0 - G::XLO + tx;
          double* d = dst + i * C::PLANE_S + ty * C::TXS + tx;
          if (rin && gx >= 0 && gx < G::NX)
            copy_async8(d, in + (1LL * gs * G::PLANE + 1LL * gy * G::NX + gx));
          else
            *d = 0.0;
        }
      }
    }
    cp_async_commit();
  };

  // Stores batch b's completed block step t (value select at the grid's edge).
  auto store = [&](const double(&v)[C::ACC], int b, int t) {
#pragma unroll
    for (int h = 0; h < C::ACC / 2; ++h) {
      const int m = b * C::MM + gq + 8 * h;
      const int n = 2 * kq;
      const int px = n % C::BX, py = (n / C::BX) % C::BY, ps = n / (C::BX * C::BY);
      const int gx = x0 + xw + m * C::BX + px, gy = y0 + yw + py, gs = s0 + t * C::BS + ps;
      const long long gidx = 1LL * gs * G::PLANE + 1LL * gy * G::NX + gx;
      double r0 = v[2 * h], r1 = v[2 * h + 1];
      const bool rowin = gy >= G::YLO && gy < G::NY - G::YHI && gs >= G::SLO && gs < G::NS - G::SHI;
      if (!(rowin && gx >= G::XLO && gx + 1 < G::NX - G::XHI)) {
        const bool i0 = rowin && gx >= G::XLO && gx < G::NX - G::XHI;
        const bool i1 = rowin && gx + 1 >= G::XLO && gx + 1 < G::NX - G::XHI;
        if (!i0)
          r0 = in[gidx];
        if (!i1)
          r1 = in[gidx + 1];
      }
      *reinterpret_cast<double2*>(out + gidx) = make_double2(r0, r1);
    }
  };

  double acc[C::NB][C::NP][C::ACC];
#pragma unroll
  for (int b = 0; b < C::NB; ++b)
#pragma unroll
    for (int j = 0; j < C::NP; ++j)
#pragma unroll
      for (int a = 0; a < C::ACC; ++a)
        acc[b][j][a] = 0.0;

#pragma unroll
  for (int gi = 0; gi < C::STAGES - 1; ++gi)
    stage(gi);

#pragma unroll 1
  for (int gi = 0; gi < C::NG; ++gi) {
    cp_async_wait<C::STAGES - 2>();
    __syncthreads();
    if (gi + C::STAGES - 1 < C::NG)
      stage(gi + C::STAGES - 1);
    else
      cp_async_commit();

    const double* base = ring + (gi % C::STAGES) * C::BS * C::PLANE_S + lane_base;
#pragma unroll
    for (int u = 0; u < C::NU; ++u) {
      constexpr int R8 = 8 * C::BX;  // row m + 8 of the batch
      double a[C::NB][8];
      if (C::upair(u)) {
#pragma unroll
        for (int t = 0; t < C::npatch(u) / 2; ++t) {
          const int pr = C::item(u, t), i = pr / C::NPAIR, d = pr % C::NPAIR;
          const int off = i * C::PLANE_S + C::ddy(d) * C::TXS + C::ddx(d) + lane_off(C::dtype(d));
#pragma unroll
          for (int b = 0; b < C::NB; ++b) {
            const double2 v0 = *reinterpret_cast<const double2*>(base + off + b * C::MM * C::BX);
            const double2 v1 =
                *reinterpret_cast<const double2*>(base + off + b * C::MM * C::BX + R8);
            a[b][4 * t] = v0.x;
            a[b][4 * t + 1] = v1.x;
            a[b][4 * t + 2] = v0.y;
            a[b][4 * t + 3] = v1.y;
          }
        }
      } else {
#pragma unroll
        for (int t = 0; t < C::npatch(u); ++t) {
          const int sg = C::item(u, t), i = sg / C::NSING, d = C::NPAIR + sg % C::NSING;
          const int off = i * C::PLANE_S + C::ddy(d) * C::TXS + C::ddx(d) + lane_off(C::dtype(d));
#pragma unroll
          for (int b = 0; b < C::NB; ++b) {
            a[b][2 * t] = base[off + b * C::MM * C::BX];
            a[b][2 * t + 1] = base[off + b * C::MM * C::BX + R8];
          }
        }
      }
#pragma unroll
      for (int j = 0; j < C::NP; ++j) {
        const int q = j * C::NBL + C::ubase(u);
        double w[4];
#pragma unroll
        for (int h = 0; h < (C::npatch(u) + 1) / 2; ++h) {
          if constexpr (C::CSM) {
            const double2 v = *reinterpret_cast<const double2*>(csm + (q + 2 * h) * 32);
            w[2 * h] = v.x;
            w[2 * h + 1] = v.y;
          } else {
            w[2 * h] = cr[C::CSM ? 0 : q + 2 * h];
            w[2 * h + 1] = cr[C::CSM ? 0 : q + 2 * h + 1];
          }
        }
#pragma unroll
        for (int b = 0; b < C::NB; ++b) {
          if (C::ukind(u) == 16) {
            mma_k16(acc[b][j], a[b], w[0], w[1], w[2], w[3]);
          } else if (C::ukind(u) == 8) {
            if constexpr (C::K8) {
              mma_k8(acc[b][j], a[b][0], a[b][1], a[b][2], a[b][3], w[0], w[1]);
            } else {
              mma_m16(acc[b][j], a[b][0], a[b][1], w[0]);
              mma_m16(acc[b][j], a[b][2], a[b][3], w[1]);
            }
          } else {
            mma_m16(acc[b][j], a[b][0], a[b][1], w[0]);
          }
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
        for (int a = 0; a < C::ACC; ++a)
          acc[b][j][a] = acc[b][j + 1][a];
#pragma unroll
      for (int a = 0; a < C::ACC; ++a)
        acc[b][C::NP - 1][a] = 0.0;
    }
  }
}
