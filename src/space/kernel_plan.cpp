// The kernel plan: tile, halo, launch geometry, shared memory and per-cell costs of a setting.
#include "space/kernel_plan.hpp"

#include <algorithm>

namespace isletune {
namespace {

constexpr std::array<char, 3> kAxis = {'x', 'y', 'z'};
constexpr std::array<Param, 3> kTb = {Param::tbx, Param::tby, Param::tbz};
constexpr std::array<Param, 3> kMf = {Param::mfx, Param::mfy, Param::mfz};

long long ceil_div(long long a, long long b) {
  return (a + b - 1) / b;
}

// Tiles that fill the GPU: the number of stream blocks (sb planes each, from the setting) is
// adjusted so that the whole launch fills whole waves of sm_count blocks, without halving or
// doubling the stream block. Candidates: sb's own count and the counts that end exactly at
// the wave below and above; the score is wave efficiency x the share of the stream loop that
// is not pipeline fill (tdeg * (lo + hi + 1) iterations).
void balance_stream_blocks(KernelPlan& p, const std::array<long long, 3>& extent, int sm_count) {
  const auto a = static_cast<std::size_t>(p.stream_axis);
  long long inplane = 1;
  for (std::size_t d = 0; d < 3; ++d) {
    if (d != a)
      inplane *= p.grid[d];
  }
  const long long unit = std::max(1, sm_count);
  const long long ns = p.grid[a];
  const long long fill = 1LL * p.tdeg * (p.halo_lo[a] + p.halo_hi[a] + 1);
  const auto score = [&](long long count) {
    const long long len = ceil_div(extent[a], count);
    const long long blocks = inplane * ceil_div(extent[a], len);
    const double waves = static_cast<double>(ceil_div(blocks, unit));
    return static_cast<double>(blocks) / (waves * unit) * static_cast<double>(len) /
           static_cast<double>(len + fill);
  };
  long long best = ns;
  double best_score = score(ns);
  const long long k_lo = inplane * ns / unit;
  for (const long long k : {k_lo, k_lo + 1}) {
    const long long count = std::clamp(k * unit / inplane, std::max(1LL, (ns + 1) / 2), 2 * ns);
    if (count != ns && score(count) > best_score + 1e-9) {
      best = count;
      best_score = score(count);
    }
  }
  if (best == ns)
    return;
  p.stream_len = ceil_div(extent[a], best);
  p.tile[a] = static_cast<int>(p.stream_len);
  p.loaded[a] = p.tile[a] + (p.halo_lo[a] + p.halo_hi[a]) * p.tdeg;
  p.grid[a] = ceil_div(extent[a], p.stream_len);
}

}  // namespace

StencilReach reach_of(const Stencil& stencil) {
  StencilReach r;
  for (const Offset& o : stencil.offsets()) {
    const std::array<int, 3> v{o.x, o.y, o.z};
    for (std::size_t a = 0; a < 3; ++a) {
      r.lo[a] = std::max(r.lo[a], -v[a]);
      r.hi[a] = std::max(r.hi[a], v[a]);
    }
  }
  return r;
}

KernelPlan make_plan(const StencilReach& reach, int dims, int flops_per_cell, const Grid& grid,
                     const Setting& s, int sm_count) {
  KernelPlan p;
  const bool streaming = s[Param::streaming] != 0;
  p.family = streaming ? KernelFamily::streaming : KernelFamily::tiled;
  p.dims = dims;
  p.tdeg = std::max(1, s[Param::tdeg]);
  p.steps_per_launch = p.tdeg;
  p.stream_axis = streaming ? s[Param::sd] : -1;
  p.halo_lo = reach.lo;
  p.halo_hi = reach.hi;
  const std::array<long long, 3> extent{grid.nx, grid.ny, grid.nz};
  for (std::size_t d = 0; d < 3; ++d) {
    p.block[d] = s[kTb[d]];
    if (static_cast<int>(d) >= dims) {
      p.tile[d] = 1;
      p.loaded[d] = 1;
      p.grid[d] = 1;
      continue;
    }
    const int halo = (reach.lo[d] + reach.hi[d]) * p.tdeg;
    if (static_cast<int>(d) == p.stream_axis) {
      p.stream_len = std::min<long long>(std::max(1, s[Param::sb]), extent[d]);
      p.tile[d] = static_cast<int>(p.stream_len);
      p.loaded[d] = p.tile[d] + halo;
    } else if (streaming) {
      // The threads (tb * mf points) cover the loaded plane; the output tile is what is
      // left after one halo per fused level (may be < 1: plan_ok rejects the setting).
      p.loaded[d] = s[kTb[d]] * s[kMf[d]];
      p.tile[d] = p.loaded[d] - halo;
    } else {
      p.tile[d] = s[kTb[d]] * s[kMf[d]];
      p.loaded[d] = p.tile[d] + halo;
    }
    p.grid[d] = ceil_div(extent[d], std::max(1, p.tile[d]));
  }
  if (streaming && p.stream_axis >= 0 && p.stream_axis < dims)
    balance_stream_blocks(p, extent, sm_count);
  p.threads_per_block = p.block[0] * p.block[1] * p.block[2];
  p.flops_per_cell = flops_per_cell;

  // Shared memory: the one home of this number (codegen sizes its buffers from the same
  // loaded extents). Tiled: the staged tile (tdeg = 1, use_shared) or two ping-pong
  // buffers of the tile for fused steps. Streaming: see below.
  double tile_cells = 1, loaded_cells = 1;
  for (std::size_t d = 0; d < 3; ++d) {
    tile_cells *= p.tile[d];
    loaded_cells *= p.loaded[d];
  }
  if (p.family == KernelFamily::tiled) {
    const long long cells = 1LL * p.loaded[0] * p.loaded[1] * p.loaded[2];
    if (p.tdeg > 1)
      p.shared_bytes = 2 * cells * 8;
    else
      p.shared_bytes = s[Param::use_shared] != 0 ? cells * 8 : 0;
    // Costs per useful cell-step: each block reads its loaded region once per launch and
    // writes its tile once; level L of a fused launch computes the region shrunk by L halos.
    p.global_read_doubles = loaded_cells / tile_cells / p.tdeg;
    double computed = 0;
    for (int level = 1; level <= p.tdeg; ++level) {
      double cells = 1;
      for (std::size_t d = 0; d < 3; ++d)
        cells *= p.tile[d] + (reach.lo[d] + reach.hi[d]) * (p.tdeg - level);
      computed += cells;
    }
    p.redundancy = computed / (tile_cells * p.tdeg);
  } else {
    // Streaming: one padded in-plane plane (loaded + one-step reach per in-plane axis) per
    // source level 0..tdeg-1, double-buffered; the stream axis lives in registers.
    const auto a = static_cast<std::size_t>(p.stream_axis);
    long long plane = 1;
    double loaded_plane = 1, tile_plane = 1;
    for (std::size_t d = 0; d < 3; ++d) {
      if (d == a)
        continue;
      plane *= p.loaded[d] + (static_cast<int>(d) < dims ? reach.lo[d] + reach.hi[d] : 0);
      loaded_plane *= p.loaded[d];
      tile_plane *= std::max(1, p.tile[d]);
    }
    p.shared_bytes = 2LL * p.tdeg * plane * 8;
    // Each block reads its loaded plane over stream_len + halo planes and, in a skewed
    // pipeline, computes every level on the whole loaded plane for stream_len + tdeg *
    // (lo + hi + 1) iterations.
    const double len = static_cast<double>(p.stream_len);
    const int q = reach.lo[a] + reach.hi[a] + 1;
    p.global_read_doubles = loaded_plane * (len + (q - 1) * p.tdeg) / (tile_plane * len) / p.tdeg;
    p.redundancy = loaded_plane * (len + 1.0 * q * p.tdeg) / (tile_plane * len);
  }
  p.global_write_doubles = 1.0 / p.tdeg;
  return p;
}

KernelPlan make_plan(const Stencil& stencil, const Grid& grid, const Setting& setting,
                     const DeviceLimits& limits) {
  return make_plan(reach_of(stencil), stencil.dims(), stencil.flops_per_cell(), grid, setting,
                   limits.sm_count);
}

bool block_fits(const std::array<int, 3>& block, const DeviceLimits& limits) {
  return block[0] <= limits.max_block_dim[0] && block[1] <= limits.max_block_dim[1] &&
         block[2] <= limits.max_block_dim[2] &&
         1LL * block[0] * block[1] * block[2] <= limits.max_threads_per_block;
}

std::optional<std::string> block_violation(const std::array<int, 3>& block,
                                           const DeviceLimits& limits) {
  for (std::size_t d = 0; d < 3; ++d) {
    if (block[d] > limits.max_block_dim[d]) {
      return "the block extent along " + std::string(1, kAxis[d]) + " is " +
             std::to_string(block[d]) + " threads; the device allows at most " +
             std::to_string(limits.max_block_dim[d]) + ".";
    }
  }
  const long long threads = 1LL * block[0] * block[1] * block[2];
  if (threads > limits.max_threads_per_block) {
    return "the block has " + std::to_string(threads) + " threads; the device allows at most " +
           std::to_string(limits.max_threads_per_block) + ".";
  }
  return std::nullopt;
}

bool plan_ok(const StencilReach& reach, int dims, int flops_per_cell, const Grid& grid,
             const Setting& s, const DeviceLimits& limits, std::string* why) {
  const std::array<int, 3> block{s[Param::tbx], s[Param::tby], s[Param::tbz]};
  if (!block_fits(block, limits)) {
    if (why)
      *why = *block_violation(block, limits);
    return false;
  }
  const KernelPlan p = make_plan(reach, dims, flops_per_cell, grid, s, limits.sm_count);
  for (std::size_t d = 0; d < 3; ++d) {
    if (p.tile[d] < 1) {
      if (why) {
        *why = "along " + std::string(1, kAxis[d]) + " the streaming tile " +
               std::string(param_name(kTb[d])) + "*" + std::string(param_name(kMf[d])) + " = " +
               std::to_string(p.loaded[d]) + " leaves no output point after the halo of " +
               std::to_string(p.tdeg) + " fused steps (" + std::to_string(p.loaded[d] - p.tile[d]) +
               " points).";
      }
      return false;
    }
  }
  if (p.family == KernelFamily::streaming) {
    const auto a = static_cast<std::size_t>(p.stream_axis);
    long long points = 1;  // merged points per thread (a register tile)
    for (std::size_t d = 0; d < 3; ++d) {
      if (d != a)
        points *= s[kMf[d]];
    }
    const long long values = points * p.tdeg * (reach.lo[a] + reach.hi[a] + 1);
    const long long regs = std::min<long long>(255, 65536 / std::max(1, p.threads_per_block));
    if (values > regs) {
      if (why) {
        *why = "the streaming register pipeline holds " + std::to_string(points) + " points x " +
               std::to_string(p.tdeg) + " levels x " +
               std::to_string(reach.lo[a] + reach.hi[a] + 1) +
               " planes = " + std::to_string(values) + " values per thread, more than the " +
               std::to_string(regs) + " registers a thread of a " +
               std::to_string(p.threads_per_block) + "-thread block may use.";
      }
      return false;
    }
  }
  for (std::size_t d = 0; d < 3; ++d) {
    if (p.grid[d] > limits.max_grid_dim[d]) {
      if (why) {
        *why = "the launch needs " + std::to_string(p.grid[d]) + " blocks along " +
               std::string(1, kAxis[d]) + "; the device allows at most " +
               std::to_string(limits.max_grid_dim[d]) + ".";
      }
      return false;
    }
  }
  if (p.shared_bytes > limits.shared_per_block_optin) {
    if (why) {
      *why = "the kernel plan needs " + std::to_string(p.shared_bytes) +
             " B of shared memory per block; the device opt-in limit is " +
             std::to_string(limits.shared_per_block_optin) + " B.";
    }
    return false;
  }
  return true;
}

std::optional<std::string> plan_violation(const Stencil& stencil, const Grid& grid,
                                          const Setting& setting, const DeviceLimits& limits) {
  std::string why;
  if (plan_ok(reach_of(stencil), stencil.dims(), stencil.flops_per_cell(), grid, setting, limits,
              &why))
    return std::nullopt;
  return why;
}

}  // namespace isletune
