// The kernel plan: the generic part (block, halo, steps), the family's part (KernelFamily::plan),
// the launch limits, and the helpers the families' plan arithmetic shares.
#include "kernel/kernel_plan.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

#include "kernel/registry.hpp"

namespace isletune {
namespace {

long long ceil_div(long long a, long long b) {
  return (a + b - 1) / b;
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

StencilPlanes planes_of(const Stencil& stencil) {
  if (stencil.dims() != 3)
    return {};
  const StencilReach r = reach_of(stencil);
  std::map<int, std::set<std::pair<int, int>>> by_z;
  for (const Offset& o : stencil.offsets())
    by_z[o.z].insert({o.x, o.y});
  const int planes = r.lo[2] + r.hi[2] + 1;
  if (static_cast<int>(by_z.size()) != planes)
    return {};
  const auto& first = by_z.begin()->second;
  for (const auto& [z, plane] : by_z) {
    if (plane != first)
      return {};
  }
  return {planes, static_cast<int>(first.size())};
}

int ProblemShape::radius(std::size_t axis) const {
  return std::max(reach.lo[axis], reach.hi[axis]);
}

ProblemShape shape_of(const Stencil& stencil, const Grid& grid) {
  ProblemShape shape{reach_of(stencil), stencil.dims(), stencil.flops_per_cell(), grid};
  for (std::size_t axis = 1; axis < static_cast<std::size_t>(stencil.dims()); ++axis)
    shape.stream_live[axis] = stream_live(stencil, axis);
  shape.planes = planes_of(stencil);
  return shape;
}

ProblemShape on_device(const ProblemShape& shape, const DeviceLimits& limits) {
  ProblemShape on = shape;
  on.sm_count = limits.sm_count;
  on.shared_per_block = limits.shared_per_block_optin;
  return on;
}

Setting KernelFamily::one_step(const Setting& s) const {
  Setting one = s;
  one[Param::tdeg] = 1;
  return one;
}

void plan_tiles(KernelPlan& p, const ProblemShape& shape, const std::array<int, 3>& tile) {
  const std::array<long long, 3> extent{shape.grid.nx, shape.grid.ny, shape.grid.nz};
  for (std::size_t d = 0; d < 3; ++d) {
    if (static_cast<int>(d) >= shape.dims) {
      p.tile[d] = 1;
      p.loaded[d] = 1;
      p.grid[d] = 1;
      continue;
    }
    p.tile[d] = tile[d];
    p.loaded[d] = tile[d] + (shape.reach.lo[d] + shape.reach.hi[d]) * p.tdeg;
    p.grid[d] = ceil_div(extent[d], tile[d]);
  }
}

void plan_costs(KernelPlan& p) {
  double tile_cells = 1, loaded_cells = 1;
  for (std::size_t d = 0; d < 3; ++d) {
    tile_cells *= p.tile[d];
    loaded_cells *= p.loaded[d];
  }
  p.global_read_doubles = loaded_cells / tile_cells / p.tdeg;
  p.global_write_doubles = 1.0 / p.tdeg;
  double computed = 0;
  for (int level = 1; level <= p.tdeg; ++level) {
    double cells = 1;
    for (std::size_t d = 0; d < 3; ++d)
      cells *= p.tile[d] + (p.halo_lo[d] + p.halo_hi[d]) * (p.tdeg - level);
    computed += cells;
  }
  p.redundancy = computed / (tile_cells * p.tdeg);
}

KernelPlan make_plan(const KernelFamily& family, const ProblemShape& shape, const Setting& s) {
  KernelPlan p;
  p.family = &family;
  p.dims = shape.dims;
  p.tdeg = std::max(1, s[Param::tdeg]);
  p.steps_per_launch = p.tdeg;
  p.halo_lo = shape.reach.lo;
  p.halo_hi = shape.reach.hi;
  p.block = {s[Param::tbx], s[Param::tby], s[Param::tbz]};
  p.threads_per_block = p.block[0] * p.block[1] * p.block[2];
  p.flops_per_cell = shape.flops_per_cell;
  p.x_spread =
      static_cast<MergeKind>(s[Param::merge]) == MergeKind::block ? std::max(1, s[Param::mfx]) : 1;
  p.merged_points =
      std::max(1, s[Param::mfx]) * std::max(1, s[Param::mfy]) * std::max(1, s[Param::mfz]);
  p.constant_coefficients = s[Param::use_constant] != 0;
  family.plan(shape, s, p);
  p.cost_factor = family.cost_factor(s);
  return p;
}

KernelPlan make_plan(const ProblemShape& shape, const Setting& s) {
  const KernelFamily* family = find_family(s);
  if (!family)
    throw std::logic_error("make_plan: no kernel family builds " + canonical_key(s));
  return make_plan(*family, shape, s);
}

KernelPlan make_plan(const Stencil& stencil, const Grid& grid, const Setting& setting,
                     const DeviceLimits& limits) {
  return make_plan(on_device(shape_of(stencil, grid), limits), setting);
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

namespace {

// plan_ok's checks on a built plan (the block is checked before the plan is built).
bool launch_ok(const KernelPlan& p, const DeviceLimits& limits, std::string* why) {
  const int compute = limits.compute_major * 10 + limits.compute_minor;
  if (compute < p.min_compute) {
    if (why) {
      *why = "the " + std::string(p.family->name()) + " family needs compute capability " +
             std::to_string(p.min_compute / 10) + "." + std::to_string(p.min_compute % 10) +
             "; the device has " + std::to_string(limits.compute_major) + "." +
             std::to_string(limits.compute_minor) + ".";
    }
    return false;
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

// The family, or why none builds s.
const KernelFamily* family_or_why(const Setting& s, std::string* why) {
  const KernelFamily* f = find_family(s);
  if (!f && why)
    *why = "no kernel family builds this setting (" + canonical_key(s) + ").";
  return f;
}

}  // namespace

bool plan_ok(const ProblemShape& shape, const Setting& s, const DeviceLimits& limits,
             std::string* why) {
  const std::array<int, 3> block{s[Param::tbx], s[Param::tby], s[Param::tbz]};
  if (!block_fits(block, limits)) {
    if (why)
      *why = *block_violation(block, limits);
    return false;
  }
  const KernelFamily* family = family_or_why(s, why);
  if (!family)
    return false;
  return launch_ok(make_plan(*family, on_device(shape, limits), s), limits, why);
}

bool plan_ok(const KernelFamily& family, const ProblemShape& shape, const Setting& s,
             const DeviceLimits& limits, std::string* why) {
  const std::array<int, 3> block{s[Param::tbx], s[Param::tby], s[Param::tbz]};
  if (!block_fits(block, limits)) {
    if (why)
      *why = *block_violation(block, limits);
    return false;
  }
  return launch_ok(make_plan(family, on_device(shape, limits), s), limits, why);
}

std::variant<KernelPlan, std::string> plan_or_violation(const ProblemShape& shape, const Setting& s,
                                                        const DeviceLimits& limits) {
  std::string why;
  const std::array<int, 3> block{s[Param::tbx], s[Param::tby], s[Param::tbz]};
  if (!block_fits(block, limits))
    return *block_violation(block, limits);
  const KernelFamily* family = family_or_why(s, &why);
  if (!family)
    return why;
  KernelPlan p = make_plan(*family, on_device(shape, limits), s);
  if (!launch_ok(p, limits, &why))
    return why;
  return p;
}

std::optional<std::string> plan_violation(const Stencil& stencil, const Grid& grid,
                                          const Setting& setting, const DeviceLimits& limits) {
  std::string why;
  if (plan_ok(shape_of(stencil, grid), setting, limits, &why))
    return std::nullopt;
  return why;
}

}  // namespace isletune
