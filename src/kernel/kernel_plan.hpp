// The kernel plan (pure core): from (stencil, grid, setting, device limits) one value saying
// which kernel family runs a setting, its tile and halo (x tdeg), launch geometry, dynamic
// shared-memory bytes, steps per launch, plus per-cell cost inputs for the predictor. The
// generic part is filled here; the family's part by its KernelFamily::plan (src/kernel/<f>.cpp).
// The space's launch and shared-memory constraints, codegen, the worker, export, the benchmark
// and the predictor all read it; nothing recomputes these numbers. How T steps run as launches:
// kernel/launch_schedule.hpp. How to add a family: docs/kernel-plan.md.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "kernel/family.hpp"
#include "setting/device_limits.hpp"
#include "setting/setting.hpp"
#include "stencil/stencil.hpp"

namespace isletune {

// NVRTC cost of one unrolled chunk of the tiled family: its multiply-adds (chunk points x
// stencil points), weighted by the stencil's size (the compile time grows with the
// straight-line terms and with the distinct coefficients ptxas juggles). On the H100 host
// (2026-11-24, 12 settings compiled at once on 16 cores): box3d2r 2000 / 4000 terms 1.5-4 s,
// box3d3r 5488 terms 5-18 s, box3d4r 2916 terms 8 s and 5832 terms 10-26 s. A chunk is
// clipped to cost <= kMaxChunkCost: box3d2r keeps 32 points, box3d3r 16, box3d4r 4 (its
// fastest measured chunk); every stencil at most kMaxChunkPoints.
[[nodiscard]] constexpr double chunk_cost(long long chunk_points, long long stencil_points) {
  return static_cast<double>(chunk_points * stencil_points) *
         (1.0 + static_cast<double>(stencil_points) / 512.0);
}
inline constexpr double kMaxChunkCost = 9216;
// Points of one unrolled chunk, whatever the stencil: each keeps an accumulator (two registers)
// live across the chunk. In the recorded full-space datasets (H100, tests/data) no chunk of
// more than 32 points came within 2.2x of the optimum (2-D boxes and stars, star3d1r 128^3),
// and star3d1r's 8x8x8 chunks spilled at 255 registers and compiled for 11-30 s in NVRTC (one
// hit the 30-s limit), its 1-8 point chunks in a median 0.24 s.
inline constexpr long long kMaxChunkPoints = 32;
// Distinct inputs one unrolled chunk loads: per axis, `u` points `spacing` apart (block merging
// 1, cyclic merging the block's threads along the axis) each reading `width` consecutive inputs
// (the stencil's reach plus one); the union of those intervals, multiplied over the axes, at most
// every point's own `stencil_points` loads.
[[nodiscard]] constexpr double chunk_loads(const std::array<int, 3>& u,
                                           const std::array<int, 3>& spacing,
                                           const std::array<int, 3>& width,
                                           long long stencil_points) {
  double box = 1, points = 1;
  for (std::size_t d = 0; d < 3; ++d) {
    const long long n = u[d], step = spacing[d], w = width[d];
    box *= static_cast<double>(step >= w ? n * w : (n - 1) * step + w);
    points *= static_cast<double>(n);
  }
  return std::min(box, points * static_cast<double>(stencil_points));
}
// Distinct inputs of one unrolled chunk (chunk_loads), whatever its multiply-adds: inputs a chunk
// does not share between its points each feed one accumulator, and ptxas, hoisting their loads,
// runs out of registers and time. nvcc for sm_90 on the development host (2026-11-25), box3d3r,
// staged tiles: the block-merged 1x4x4 chunk (700 inputs, the fastest box3d3r tile measured)
// 63 registers, 2.0 s; cyclic chunks of 1,540-1,960 inputs (1x4x2 at 16x8x2 threads, 2x4x2 at
// 64x1x4, 4x1x4 at 256x2x1) 3.9-7.7 s, 64-128 registers, up to 13.9 KB of spill stores (10-32 s
// with NVRTC in a 120-s H100 tuning run, each 2-2.3x slower than the best tile); cyclic chunks
// of 896-1,001 inputs 1.8-2.9 s without spills (1x4x2 at 64x2x4: the run's second-best tile).
inline constexpr double kMaxChunkLoads = 1024;
// Stencil points from which the tiled family's register tile may loop over a stencil's z-planes
// at run time (StencilPlanes: boxes and prisms; tiled.cpp, plane_loop): one plane's multiply-adds
// in the code instead of all planes', the coefficients read by plane from `__constant__` memory,
// a chunk in x and y only. Its NVRTC cost is one plane's: chunk_cost(chunk points, plane points).
// It takes the chunks without z points, and every chunk of a stencil whose tile unrolled over all
// planes cannot hold kPlaneLoopChunk points. H100, 512^3 (docs/decisions.md#plane-loop):
// box3d2r's and box3d3r's best tiles keep z points unrolled (87.5 / 37.5 GCells/s against 80.3 /
// 34.4 looped), their chunks without z points run faster looped (80.3 / 34.4 against 75.9 /
// 31.1), box3d4r's looped 2x8 chunk 18.8 against 14.7 for its best (4-point) unrolled tile;
// compile 1-5 s looped against 2-25 s unrolled.
inline constexpr int kPlaneLoopPoints = 100;
inline constexpr long long kPlaneLoopChunk = 8;
// Registers per thread of a register tile of `chunk_points` points: two per accumulator, about one
// more per point for the inputs ptxas keeps in flight, and a fixed part (addresses, indices).
// ptxas on sm_90, the 3-D boxes' tdeg-1 tiles measured on the H100 (docs/bench narrow and
// families rows, 2026-11-25): 4 points 32-40 registers, 8 points 38-58, 16 points 48-80, 32
// points 80-128 (where the block leaves room; 1024-thread blocks are capped at 64).
[[nodiscard]] constexpr int tile_registers(long long chunk_points) {
  return static_cast<int>(std::min<long long>(255, 24 + 3 * chunk_points));
}

struct KernelPlan {
  const KernelFamily* family = nullptr;  // the family that builds the setting
  int dims = 2;
  int tdeg = 1;                             // steps fused per launch (1 = no temporal blocking)
  int steps_per_launch = 1;                 // = tdeg for the main kernel
  std::array<int, 3> block{1, 1, 1};        // threads per block (x, y, z)
  std::array<long long, 3> grid{1, 1, 1};   // blocks per axis
  std::array<int, 3> tile{1, 1, 1};         // OUTPUT points per block per axis
  std::array<int, 3> halo_lo{}, halo_hi{};  // one-step stencil reach per axis
  std::array<int, 3> loaded{1, 1, 1};       // input extent a block reads: tile + (lo+hi)*tdeg
  // Unroll per axis, as the family's canonical setting for this stencil carries it (the one
  // home of the clipping, KernelFamily::canonical). Tiled: merged points per unrolled chunk,
  // the setting's uf halved, x first, then the larger of y and z, while chunk_cost >
  // kMaxChunkCost or above kMaxChunkPoints.
  // Streaming: along stream_axis only, the stream loop's unroll (uf_sd halved while the unrolled
  // body exceeds its limit, src/kernel/streaming.cpp). {1, 1, 1} for families without unrolling.
  std::array<int, 3> unroll{1, 1, 1};
  int stream_axis = -1;      // -1 tiled, 1 = y, 2 = z
  long long stream_len = 0;  // points along stream_axis per block
  int async_planes = 0;      // streaming: input planes copied (cp.async) ahead of use
  // Streaming, the centre-queue kernel (tdeg 1 without retiming, src/kernel/streaming.cpp
  // centre_queue): the input planes behind the newest that stay in shared memory for their
  // in-plane neighbours (the stencil's StreamLive::lag); -1 for every other kernel.
  int centre_lag = -1;
  long long shared_bytes = 0;  // dynamic shared memory per block
  // Cost inputs per useful cell and time step (predictor, benchmark).
  double global_read_doubles = 1;   // incl. halo re-reads and temporal redundancy
  double global_write_doubles = 1;  // 1/tdeg
  // Doubles one global x access of a thread moves: 2 where the streaming family loads and
  // stores x-adjacent pairs as double2 (kernels/streaming.cuh, GVEC), else 1. A block-merged
  // thread's scalar accesses are mfx apart; pairs halve the spread (the predictor's coalescing).
  int x_vector = 1;
  double redundancy = 1;      // computed / useful cell-updates (>= 1)
  double flops_per_cell = 1;  // 2 * points - 1
  // FP64 flops per useful cell-step the family issues on the tensor cores (2 per multiply-add
  // of its MMAs, padding included), 0 for the CUDA-core families: the predictor's compute term
  // then runs at DeviceLimits::fp64_tensor_gflops instead of the vector peak.
  double tensor_flops_per_cell = 0;
  // The compute capability the kernel needs (major * 10 + minor; the tensor-core family's FP64
  // m16n8k16 is sm_90), 0 for none: the plan check refuses an older device.
  int min_compute = 0;
  // Issued instructions besides the multiply-adds per useful cell-step (input loads and the
  // moves of 64-bit coefficients into operands), redundancy included: what makes a
  // compute-bound kernel issue-bound (the predictor's compute term). 0 where the family does
  // not estimate it.
  double other_instructions = 0;
  // Distinct inputs a thread loads per useful cell-step (global loads through L1, or shared
  // reads) and the estimated registers per thread (tile_registers): the compute-bound
  // roofline's L1, L2 and register terms (sample/predictor.hpp). 0 where the family does not
  // estimate them.
  double loads_per_cell = 0;
  int registers = 0;
  // Doubles that pass the L1/shared-memory data path per useful cell-step (shared reads, bank
  // conflicts counted as repeats, shared stores, global loads and stores), redundancy
  // included: the roofline's L1 term (sample/predictor.hpp). 0 where the family does not
  // estimate it (the streaming family does).
  double l1_doubles = 0;
  int threads_per_block = 1;
  // What the predictor and the online model read of the kernel (never the setting itself):
  // the output points a thread's scalar global x accesses are spread over (block merging:
  // mfx contiguous points, else 1; x_vector pairs halve it), the points a thread computes per
  // level (mfx * mfy * mfz), whether the coefficients live in __constant__ memory, and the
  // family's factor on the roofline time for what the plan cannot see
  // (KernelFamily::cost_factor). make_plan fills the first three generically before the
  // family's plan (which may change them) and the factor after it.
  int x_spread = 1;
  int merged_points = 1;
  bool constant_coefficients = false;
  double cost_factor = 1;
};

// Moves per 64-bit literal coefficient into a multiply-add's operand, per group of points that
// share it (SASS of box3d2r's 16-point chunk on sm_90: 530 moves for its 125 coefficients).
inline constexpr double kCoefficientMoves = 4;

// Helpers for the families' plan arithmetic. plan_tiles: sets tile, loaded = tile +
// (lo + hi) * tdeg and blocks per axis from the output tile per axis (axes >= dims get 1).
void plan_tiles(KernelPlan& p, const ProblemShape& shape, const std::array<int, 3>& tile);
// plan_costs: the overlapped-tile cost model: each block reads its loaded region once per
// launch and writes its tile once; level L of a fused launch computes the region shrunk by L
// halos.
void plan_costs(KernelPlan& p);

// Whether a block of this shape can launch (every axis within max_block_dim, at most
// max_threads_per_block threads).
[[nodiscard]] bool block_fits(const std::array<int, 3>& block, const DeviceLimits& limits);
// Why a block of this shape cannot launch (an axis over max_block_dim, more threads than
// max_threads_per_block), or nullopt. Also checked by plan_violation.
[[nodiscard]] std::optional<std::string> block_violation(const std::array<int, 3>& block,
                                                         const DeviceLimits& limits);

// Why no kernel can be planned for this setting on this device (no family builds it, block
// over a per-axis limit, grid over the grid limit, shared memory over the opt-in limit), or
// nullopt.
[[nodiscard]] std::optional<std::string> plan_violation(const Stencil& stencil, const Grid& grid,
                                                        const Setting& setting,
                                                        const DeviceLimits& limits);
// Same, for callers that keep the shape (the space checks millions of settings); `why` is
// filled only when given, so the fast path never allocates.
[[nodiscard]] bool plan_ok(const ProblemShape& shape, const Setting& setting,
                           const DeviceLimits& limits, std::string* why);
// Same, with the family that builds the setting already looked up.
[[nodiscard]] bool plan_ok(const KernelFamily& family, const ProblemShape& shape,
                           const Setting& setting, const DeviceLimits& limits, std::string* why);

// The plan. Precondition: plan_violation(...) is nullopt.
[[nodiscard]] KernelPlan make_plan(const Stencil& stencil, const Grid& grid, const Setting& setting,
                                   const DeviceLimits& limits);
[[nodiscard]] KernelPlan make_plan(const ProblemShape& shape, const Setting& setting);
// The plan of `setting` by a given family (tests of a family not in the registry).
[[nodiscard]] KernelPlan make_plan(const KernelFamily& family, const ProblemShape& shape,
                                   const Setting& setting);
// The plan, or why there is none (plan_violation), building the plan once.
[[nodiscard]] std::variant<KernelPlan, std::string> plan_or_violation(const ProblemShape& shape,
                                                                      const Setting& setting,
                                                                      const DeviceLimits& limits);

}  // namespace isletune
