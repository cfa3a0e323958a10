// Tiled kernel family (kernels/tiled.cuh): one step per launch with optional shared tile,
// merging and unrolling (tiled_step), or tdeg > 1 fused steps on overlapped tiles in two
// ping-pong shared buffers (tiled_temporal). Builds every setting with streaming = 0.
#include <algorithm>
#include <array>
#include <map>
#include <sstream>
#include <vector>

#include "kernel/emit.hpp"
#include "kernel/family.hpp"
#include "kernel/kernel_plan.hpp"

namespace isletune {
namespace {

std::optional<std::string> tiled_unsupported(const Setting& s) {
  if (s[Param::streaming] != 0)
    return "the tiled family does not stream (streaming = 1)";
  if (s[Param::tdeg] > 1 && s[Param::use_shared] == 0)
    return "tiled temporal blocking keeps its levels in shared memory (needs use_shared = 1)";
  return std::nullopt;
}

FamilyCode tiled_code(const KernelPlan& plan, const Setting& s, const Grid& grid,
                      std::string_view name) {
  std::ostringstream c;
  c << "struct " << name << " {\n"
    << constant("TBX", plan.block[0]) << constant("TBY", plan.block[1])
    << constant("TBZ", plan.block[2]) << constant("MFX", s[Param::mfx])
    << constant("MFY", s[Param::mfy]) << constant("MFZ", s[Param::mfz])
    << constant("UFX", plan.unroll[0]) << constant("UFY", plan.unroll[1])
    << constant("UFZ", plan.unroll[2]) << constant("MERGE", s[Param::merge])
    << constant("SHARED", plan.shared_bytes > 0 ? 1 : 0) << constant("NX", grid.nx)
    << constant("NY", grid.ny) << constant("NZ", grid.nz) << constant("XLO", plan.halo_lo[0])
    << constant("XHI", plan.halo_hi[0]) << constant("YLO", plan.halo_lo[1])
    << constant("YHI", plan.halo_hi[1]) << constant("ZLO", plan.halo_lo[2])
    << constant("ZHI", plan.halo_hi[2]) << constant("TDEG", plan.tdeg)
    << constant("TILEX", plan.tile[0]) << constant("TILEY", plan.tile[1])
    << constant("TILEZ", plan.tile[2]) << constant("LX", plan.loaded[0])
    << constant("LY", plan.loaded[1]) << constant("LZ", plan.loaded[2]) << "};\n";
  return {"tiled.cuh", plan.tdeg > 1 ? "tiled_temporal" : "tiled_step", c.str()};
}

// Apply::block: one chunk of plan.unroll merged points, `step` apart per axis (1 for block
// merging, the block extent for cyclic), as a register tile at compile-time offsets from one
// input pointer p and one output pointer o. Every input position the chunk needs is loaded
// once and multiply-added into each point of the chunk that uses it (one load feeds up to
// points-per-chunk FMAs). Inputs go in (x, y, z) order, x outermost: a coefficient (dx, dy,
// dz) is then used only while x' = x + dx and over about ufy rows, so only ~ufy * (2r+1)
// coefficients are live at once. Coefficients are literals or __constant__ values, and ptxas
// keeps a reused one in a register: in (z, y, x) order every coefficient stays live across
// the chunk's planes and a box of radius >= 2 spills. Each point is stored once complete.
// A point near the grid's edge stores its input value instead of the sum (isl::keep_sum; near:
// the thread has such points; x, y, z: global coordinates of the chunk's first point).
std::string block_function(const Stencil& stencil, const Setting& s, const KernelPlan& plan,
                           bool use_constant) {
  const bool cyclic = s[Param::merge] == static_cast<int>(MergeKind::cyclic);
  const std::array<int, 3> uf = plan.unroll;
  const std::array<int, 3> step{cyclic ? s[Param::tbx] : 1, cyclic ? s[Param::tby] : 1,
                                cyclic ? s[Param::tbz] : 1};
  struct Use {
    int point;
    int coef;
  };
  std::map<std::array<int, 3>, std::vector<Use>> inputs;  // key (x, y, z)
  std::vector<std::array<int, 3>> points;                 // (x, y, z) of each point
  for (int uz = 0; uz < uf[2]; ++uz) {
    for (int uy = 0; uy < uf[1]; ++uy) {
      for (int ux = 0; ux < uf[0]; ++ux) {
        const std::array<int, 3> pt{ux * step[0], uy * step[1], uz * step[2]};
        const int q = static_cast<int>(points.size());
        points.push_back(pt);
        for (int k = 0; k < stencil.size(); ++k) {
          const Offset& o = stencil.offsets()[k];
          inputs[{pt[0] + o.x, pt[1] + o.y, pt[2] + o.z}].push_back({q, k});
        }
      }
    }
  }
  // The input after which each point is complete.
  std::vector<int> last(points.size(), -1);
  {
    int i = 0;
    for (const auto& entry : inputs) {
      for (const Use& u : entry.second)
        last[static_cast<std::size_t>(u.point)] = i;
      ++i;
    }
  }
  std::ostringstream b;
  b << "  template <class C, long long SROW, long long SPLANE, long long OROW, long long OPLANE>\n"
    << "  static __device__ __forceinline__ void block(const double* __restrict__ p,\n"
    << "                                               double* __restrict__ o, bool near,\n"
    << "                                               int x, int y, int z) {\n";
  std::vector<bool> started(points.size(), false);
  int i = 0;
  for (const auto& [pos, uses] : inputs) {
    const std::string v = "v" + std::to_string(i);
    b << "    const double " << v << " = p[(" << pos[0] << ") + (" << pos[1] << ") * SROW + ("
      << pos[2] << ") * SPLANE];\n";
    for (const Use& u : uses) {
      const std::string c = coefficient(stencil, u.coef, use_constant);
      if (started[u.point]) {
        b << "    a" << u.point << " = fma(" << c << ", " << v << ", a" << u.point << ");\n";
      } else {
        b << "    double a" << u.point << " = " << c << " * " << v << ";\n";
      }
      started[u.point] = true;
    }
    // Stores of the points now complete:
    for (std::size_t q = 0; q < points.size(); ++q) {
      if (last[q] != i)
        continue;
      const auto& pt = points[q];
      b << "    o[(" << pt[0] << ") + (" << pt[1] << ") * OROW + (" << pt[2]
        << ") * OPLANE] = isl::keep_sum<C>(near, x + (" << pt[0] << "), y + (" << pt[1]
        << "), z + (" << pt[2] << ")) ? a" << q << " : isl::reload(p + ((" << pt[0] << ") + ("
        << pt[1] << ") * SROW + (" << pt[2] << ") * SPLANE));\n";
    }
    ++i;
  }
  b << "  }\n";
  return b.str();
}

// Rules: the streaming parameters keep their neutral values, and fused steps need the
// shared tile (the levels live there).
bool no_stream_form(const ProblemShape&, const Setting& s, std::string* why) {
  if (s[Param::sd] == 0 && s[Param::sb] == 0)
    return true;
  if (why) {
    *why = "without streaming sd and sb must be 0 (got sd=" + std::to_string(s[Param::sd]) +
           ", sb=" + std::to_string(s[Param::sb]) + ").";
  }
  return false;
}

bool no_retiming(const ProblemShape&, const Setting& s, std::string* why) {
  if (s[Param::retiming] == 0)
    return true;
  if (why)
    *why = "retiming=1 needs streaming=1 (retiming reorders the sum along sd).";
  return false;
}

bool no_prefetch(const ProblemShape&, const Setting& s, std::string* why) {
  if (s[Param::prefetch] == 0)
    return true;
  if (why)
    *why = "prefetch=1 needs streaming=1 (it prefetches the next plane along sd).";
  return false;
}

bool temporal_needs_staging(const ProblemShape&, const Setting& s, std::string* why) {
  if (s[Param::tdeg] <= 1 || s[Param::use_shared] != 0)
    return true;
  if (why) {
    *why = "tdeg=" + std::to_string(s[Param::tdeg]) +
           " (temporal blocking) needs use_shared=1 or streaming=1 to keep the "
           "intermediate steps on chip.";
  }
  return false;
}

// The unrolled chunk of tiled_step (KernelPlan::unroll): the setting's uf, halved while its
// chunk_cost > kMaxChunkCost (NVRTC time) or it holds more than kMaxChunkPoints points; x first
// (block-merged x points cost bank conflicts and keep more coefficients live), then the larger of y
// and z (a balanced chunk reuses more loads), y on a tie. Halving keeps mf a multiple of the chunk
// (mf % uf == 0 implies mf % (uf / 2) == 0) and the halved factor within the space's powers of two.
// Only Tiled::canonical calls it: the canonical setting carries the chunk, and the plan reads it
// from there, so settings whose uf clip to one chunk share one canonical setting and the main
// and the tail kernel (one IslApply) agree.
std::array<int, 3> chunk(const ProblemShape& shape, const Setting& s) {
  std::array<int, 3> u{std::max(1, s[Param::ufx]), std::max(1, s[Param::ufy]),
                       std::max(1, s[Param::ufz])};
  const long long points = (shape.flops_per_cell + 1) / 2;
  while (chunk_cost(1LL * u[0] * u[1] * u[2], points) > kMaxChunkCost ||
         1LL * u[0] * u[1] * u[2] > kMaxChunkPoints) {
    if (u[0] % 2 == 0)
      u[0] /= 2;
    else if (u[1] % 2 == 0 && (u[1] >= u[2] || u[2] % 2 != 0))
      u[1] /= 2;
    else if (u[2] % 2 == 0)
      u[2] /= 2;
    else
      break;  // odd factors: leave the chunk as the setting asks
  }
  return u;
}

class Tiled final : public KernelFamily {
 public:
  std::string_view name() const override { return "tiled"; }
  bool builds(const Setting& s) const override { return s[Param::streaming] == 0; }
  std::span<const FamilyRule> rules() const override { return kRules; }

  // Without streaming sd, sb, retiming and prefetch are not read. With fused steps
  // (tiled_temporal) the merge factors only set the tile, so the merge kind and the unroll
  // factors are not read: block merging and no unrolling stand for them (the one-step tail
  // is built from the canonical setting). The unroll factors are the chunk tiled_step really
  // unrolls for this stencil (chunk: a large stencil clips uf).
  Setting canonical(const ProblemShape& shape, const Setting& s) const override {
    Setting c = s;
    for (const Param p : {Param::sd, Param::sb, Param::retiming, Param::prefetch})
      c[p] = 0;
    if (c[Param::tdeg] > 1) {
      if (c[Param::merge] != static_cast<int>(MergeKind::none))
        c[Param::merge] = static_cast<int>(MergeKind::block);
      for (const Param p : {Param::ufx, Param::ufy, Param::ufz})
        c[p] = 1;
    }
    const std::array<int, 3> u = chunk(shape, c);
    for (std::size_t d = 0; d < 3; ++d) {
      if (u[d] != std::max(1, c[kUf[d]]))
        c[kUf[d]] = u[d];
    }
    return c;
  }

  void plan(const ProblemShape& shape, const Setting& s, KernelPlan& p) const override {
    plan_tiles(p, shape,
               {s[Param::tbx] * s[Param::mfx], s[Param::tby] * s[Param::mfy],
                s[Param::tbz] * s[Param::mfz]});
    // The staged tile (tdeg = 1, use_shared) or two ping-pong buffers of it for fused steps.
    const long long cells = 1LL * p.loaded[0] * p.loaded[1] * p.loaded[2];
    if (p.tdeg > 1)
      p.shared_bytes = 2 * cells * 8;
    else
      p.shared_bytes = s[Param::use_shared] != 0 ? cells * 8 : 0;
    plan_costs(p);
    // The chunk is the canonical setting's uf (fused steps read none: 1); the one-step tail
    // shares the main kernel's IslApply and is built from the canonical setting too.
    const Setting c = canonical(shape, s);
    p.unroll = {std::max(1, c[Param::ufx]), std::max(1, c[Param::ufy]), std::max(1, c[Param::ufz])};
    // Instructions beside the multiply-adds: a chunk of U points loads its footprint (at most
    // the box of its extent plus the reach, at most every point's own loads) once and moves
    // each coefficient into its operands once (kCoefficientMoves instructions); fused steps
    // compute point by point from shared memory.
    const double points = (shape.flops_per_cell + 1) / 2.0;
    if (p.tdeg > 1) {
      p.other_instructions = points * (1 + kCoefficientMoves) * p.redundancy;
    } else {
      double chunk = 1, box = 1;
      for (std::size_t d = 0; d < 3; ++d) {
        chunk *= p.unroll[d];
        box *= p.unroll[d] + shape.reach.lo[d] + shape.reach.hi[d];
      }
      p.other_instructions = (std::min(box, points * chunk) + kCoefficientMoves * points) / chunk;
    }
  }

  std::optional<std::string> unsupported(const Setting& s) const override {
    return tiled_unsupported(s);
  }
  std::string apply_member(const Stencil& stencil, const Setting& s,
                           const KernelPlan& plan) const override {
    return block_function(stencil, s, plan, s[Param::use_constant] == 1);
  }
  FamilyCode code(const KernelPlan& plan, const Setting& s, const Grid& grid,
                  std::string_view name) const override {
    return tiled_code(plan, s, grid, name);
  }

 private:
  static constexpr std::array<FamilyRule, 4> kRules = {
      FamilyRule{Param::sb, no_stream_form, true, "sd = 0 and sb = 0"},
      FamilyRule{Param::retiming, no_retiming, true, "retiming = 0 (it needs streaming)"},
      FamilyRule{Param::prefetch, no_prefetch, true, "prefetch = 0 (it needs streaming)"},
      FamilyRule{Param::use_shared, temporal_needs_staging, false,
                 "tdeg > 1 needs use_shared = 1 (the fused levels live in shared memory)"},
  };
};

}  // namespace

const KernelFamily& tiled_family() {
  static const Tiled family;
  return family;
}

}  // namespace isletune
