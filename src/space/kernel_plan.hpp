// The kernel plan (pure core): from (stencil, grid, setting, device limits) one value saying
// which kernel family runs a setting, its tile and halo (x tdeg), launch geometry, dynamic
// shared-memory bytes, steps per launch and how leftover steps run, plus per-cell cost inputs
// for the predictor. The space's launch and shared-memory constraints, codegen, the worker,
// export, the benchmark and the predictor all read it; nothing recomputes these numbers.
// The agreed interface and the families as implemented: docs/kernel-plan.md.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "space/device_limits.hpp"
#include "space/setting.hpp"
#include "stencil/stencil.hpp"

namespace isletune {

enum class KernelFamily : std::uint8_t { tiled, streaming };  // temporal = tdeg > 1 on either

// Largest negative (lo) and positive (hi) offset per axis, both >= 0: the exact one-step halo.
struct StencilReach {
  std::array<int, 3> lo{};
  std::array<int, 3> hi{};
};
[[nodiscard]] StencilReach reach_of(const Stencil& stencil);

struct KernelPlan {
  KernelFamily family = KernelFamily::tiled;
  int dims = 2;
  int tdeg = 1;                             // steps fused per launch (1 = no temporal blocking)
  int steps_per_launch = 1;                 // = tdeg for the main kernel
  std::array<int, 3> block{1, 1, 1};        // threads per block (x, y, z)
  std::array<long long, 3> grid{1, 1, 1};   // blocks per axis
  std::array<int, 3> tile{1, 1, 1};         // OUTPUT points per block per axis
  std::array<int, 3> halo_lo{}, halo_hi{};  // one-step stencil reach per axis
  std::array<int, 3> loaded{1, 1, 1};       // input extent a block reads: tile + (lo+hi)*tdeg
  int stream_axis = -1;                     // -1 tiled, 1 = y, 2 = z
  long long stream_len = 0;    // points along stream_axis per block (sb, clipped to the extent
                               // and adjusted so that the launch fills whole waves of SMs)
  long long shared_bytes = 0;  // dynamic shared memory per block
  // Cost inputs per useful cell and time step (predictor, benchmark).
  double global_read_doubles = 1;   // incl. halo re-reads and temporal redundancy
  double global_write_doubles = 1;  // 1/tdeg
  double redundancy = 1;            // computed / useful cell-updates (>= 1)
  double flops_per_cell = 1;        // 2 * points - 1
  int threads_per_block = 1;

  // T steps run as main_launches(T) launches of the main kernel (tdeg steps each), then
  // tail_launches(T) launches of the one-step tail kernel.
  [[nodiscard]] long long main_launches(long long T) const { return T / steps_per_launch; }
  [[nodiscard]] long long tail_launches(long long T) const { return T % steps_per_launch; }
};

// Whether a block of this shape can launch (every axis within max_block_dim, at most
// max_threads_per_block threads).
[[nodiscard]] bool block_fits(const std::array<int, 3>& block, const DeviceLimits& limits);
// Why a block of this shape cannot launch (an axis over max_block_dim, more threads than
// max_threads_per_block), or nullopt. Also checked by plan_violation.
[[nodiscard]] std::optional<std::string> block_violation(const std::array<int, 3>& block,
                                                         const DeviceLimits& limits);

// Why no kernel can be planned for this setting on this device (block over a per-axis limit,
// grid over the grid limit, shared memory over the opt-in limit), or nullopt.
[[nodiscard]] std::optional<std::string> plan_violation(const Stencil& stencil, const Grid& grid,
                                                        const Setting& setting,
                                                        const DeviceLimits& limits);
// Same, for callers that keep the reach (the space checks millions of settings); `why` is
// filled only when given, so the fast path never allocates.
[[nodiscard]] bool plan_ok(const StencilReach& reach, int dims, int flops_per_cell,
                           const Grid& grid, const Setting& setting, const DeviceLimits& limits,
                           std::string* why);

// The plan. Precondition: plan_violation(...) is nullopt.
[[nodiscard]] KernelPlan make_plan(const Stencil& stencil, const Grid& grid, const Setting& setting,
                                   const DeviceLimits& limits);
// sm_count: streaming plans adjust the stream block so that the launch fills whole waves.
[[nodiscard]] KernelPlan make_plan(const StencilReach& reach, int dims, int flops_per_cell,
                                   const Grid& grid, const Setting& setting, int sm_count = 132);

}  // namespace isletune
