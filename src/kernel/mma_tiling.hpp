// The window tiling of the tensor-core family (kernels/mma.cuh, src/kernel/mma.cpp): which
// positions of a block's window each FP64 MMA takes, and the constant coefficient operand B.
// The one home of these facts: the family's code emission prints the tables the kernel reads,
// the coefficient table is built from them, and the unit tests emulate the MMAs with them.
//
// The mapping ("block im2col", docs/studies/2026-11-28-dmma-prototype.md and
// 2026-12-05-dmma-pair-tiled-window.md): one MMA computes D[m][n] += A[m][k] B[k][n] with
//  * n the 8 points of an output block of bx x by x bs points (x fastest; 2x2x2 in 3-D, 4x1x2
//    in 2-D), m one of 16 blocks side by side along x, k window positions of one plane;
//  * the block's window = the block grown by the stencil's reach per axis, rounded up so that
//    pairs of patches tile each window plane exactly (3-D: even extents; 2-D: x a multiple
//    of 4); the padded positions get zero coefficients;
//  * A the input at those positions (staged in shared memory), B the coefficient of the
//    position relative to the point n (zero outside the stencil);
//  * the kernel streams along its slowest axis s (z in 3-D, y in 2-D) bs planes (a group) at a
//    time; a window of wse planes spans np = ceil(wse / bs) groups, so each warp keeps np
//    accumulator slots and each A fragment feeds np MMAs.
// Kernel axes: x, y (the second in-plane axis; extent 1 in 2-D), s (the streamed one).
#pragma once

#include <array>
#include <vector>

#include "kernel/family.hpp"
#include "stencil/stencil.hpp"

namespace isletune {

// Descriptor types of a window plane's tiling. A pair holds two k4 patches whose positions a
// lane finds side by side along x (one 16-byte shared load of each A row feeds both):
// p81 an 8 x 1 run (lane quad q takes x = 2q + e), p42 a 4 x 2 region (x = 2(q % 2) + e,
// y = q / 2), p24 a 2 x 4 region (x = e, y = q); singles: s22 a 2 x 2 patch, s41 a 4 x 1 run.
enum class MmaDesc : int { p81 = 0, p42 = 1, p24 = 2, s22 = 3, s41 = 4 };

// One descriptor of a window plane: its type and the window position of its corner.
struct MmaDescriptor {
  MmaDesc type = MmaDesc::p42;
  int dx = 0;
  int dy = 0;
  [[nodiscard]] bool pair() const {
    return type == MmaDesc::p81 || type == MmaDesc::p42 || type == MmaDesc::p24;
  }
};

// One MMA a slot and batch issues per group: m16n8k16 (k = 16: two pairs or four singles),
// m16n8k8 (one pair or two singles) or m16n8k4 (one single). `items` are pair indices (pair
// units) or single indices into the group's pairs / singles (index = plane * per-plane count +
// descriptor); `base` is the unit's first double in a lane's coefficient row of a slot.
struct MmaUnit {
  int k = 16;
  bool pair = true;
  std::vector<int> items;
  int base = 0;
  // k4 patches the MMA takes (k / 4).
  [[nodiscard]] int patches() const { return k / 4; }
};

// One patch of a unit: the plane in the group, the descriptor and its element (0/1 of a pair).
struct MmaPatch {
  int plane = 0;
  int desc = 0;
  int element = 0;
};

struct MmaTiling {
  int dims = 3;
  std::array<int, 3> lo{}, hi{};           // the stencil's reach per kernel axis (x, y, s)
  std::array<int, 3> block{};              // bx, by, bs
  std::array<int, 3> window{};             // wxe, wye, wse (padded in x and y)
  int np = 1;                              // accumulator slots: ceil(wse / bs)
  std::vector<MmaDescriptor> descriptors;  // one window plane: pairs first, then singles
  int pairs = 0;                           // pairs per plane
  int singles = 0;                         // singles per plane
  std::vector<MmaUnit> units;              // per slot and group, in issue order
  int lane_doubles = 0;                    // a lane's coefficient doubles per slot (nbl)

  // Window position (x, y) of lane quad q's element e of descriptor d.
  [[nodiscard]] std::array<int, 2> position(int d, int e, int q) const;
  // Patch p of unit u.
  [[nodiscard]] MmaPatch patch(int u, int p) const;
  // Padded window volume (positions an output block's MMAs take, per point).
  [[nodiscard]] long long window_volume() const {
    return 1LL * window[0] * window[1] * np * block[2];
  }
  // Doubles of the coefficient table (np slots x lane_doubles x 32 lanes).
  [[nodiscard]] int table_doubles() const { return np * lane_doubles * 32; }
  // The coefficient table B in the kernel's layout: the two doubles of a lane's pair of patches
  // side by side (one 16-byte load), so patch p of unit u in slot j, lane l, sits at
  // [(j * lane_doubles + base(u) + 2 (p / 2)) * 32 + 2 l + p % 2]. Lane l's column is point
  // n = l / 4 of the block (x fastest), its row the window position position(d, e, l % 4) of
  // window plane (np - 1 - j) * bs + plane: slot j holds the block step whose window began
  // j groups before the newest plane. Zero where the offset is not in the stencil.
  [[nodiscard]] std::vector<double> coefficient_table(const Stencil& stencil) const;
};

// The stencil's reach in kernel axes (x, y, s): a 3-D stencil's as it is, a 2-D one's with y
// as the streamed axis s and an in-plane y of extent 0.
[[nodiscard]] StencilReach kernel_reach(const StencilReach& reach, int dims);
// The tiling for a stencil of this reach (grid axes) and dimension.
[[nodiscard]] MmaTiling mma_tiling(const StencilReach& reach, int dims);

}  // namespace isletune
