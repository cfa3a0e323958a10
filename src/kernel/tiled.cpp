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

// Whether the register tile of tiled_step loops over the stencil's z-planes at run time: a 3-D
// stencil of identical planes (StencilPlanes) with at least kPlaneLoopPoints points whose chunk
// (as unrolled over every plane, after chunk's clipping) has no z points, or cannot hold
// kPlaneLoopChunk points within kMaxChunkCost (a tile unrolled over all planes then shares too
// few loads: box3d4r's 4-point tiles ran at 14.7 GCells/s, the plane loop at 18.8).
bool plane_loop(const StencilPlanes& planes, long long points, const std::array<int, 3>& chunk) {
  return planes.planes > 1 && points >= kPlaneLoopPoints &&
         (chunk[2] == 1 || chunk_cost(kPlaneLoopChunk, points) > kMaxChunkCost);
}

// Whether the plan's IslApply loops over the stencil's planes (codegen's side of plane_loop).
bool loops_over_planes(const Stencil& stencil, const KernelPlan& plan) {
  return plane_loop(planes_of(stencil), stencil.size(), plan.unroll);
}

// The in-plane offsets (x, y) of a stencil of identical planes, in the order the plane loop's
// coefficient table and its code use, and the index of each offset in the stencil.
std::map<std::array<int, 2>, std::vector<int>> plane_offsets(const Stencil& stencil) {
  std::map<std::array<int, 2>, std::vector<int>> by_xy;  // (x, y) -> stencil index per plane
  std::map<std::array<int, 3>, int> index;
  for (int k = 0; k < stencil.size(); ++k) {
    const Offset& o = stencil.offsets()[static_cast<std::size_t>(k)];
    index[{o.z, o.x, o.y}] = k;
  }
  for (const auto& [zxy, k] : index)  // z ascending: each (x, y) lists its planes in order
    by_xy[{zxy[1], zxy[2]}].push_back(k);
  return by_xy;
}

// `__constant__ double isl_plane_coef[planes][plane points]`: plane k (z = -ZLO + k), the
// in-plane offsets in plane_offsets order.
std::string plane_table(const Stencil& stencil) {
  const auto by_xy = plane_offsets(stencil);
  const std::size_t planes = by_xy.begin()->second.size();
  std::ostringstream t;
  t << "__constant__ double isl_plane_coef[" << planes * by_xy.size() << "] = {";
  bool first = true;
  for (std::size_t k = 0; k < planes; ++k) {
    for (const auto& [xy, ks] : by_xy) {
      t << (first ? "" : ", ")
        << exact_literal(stencil.coefficients()[static_cast<std::size_t>(ks[k])]);
      first = false;
    }
  }
  t << "};\n";
  return t.str();
}

// Apply::block for a stencil of identical z-planes (plane_loop): one chunk of plan.unroll
// points in x and y, the stencil's planes in a loop that is not unrolled. Each iteration is one
// plane's register tile (every input of the chunk's in-plane footprint loaded once and
// multiply-added into each point that uses it, x outermost as in block_function), its
// coefficients read from isl_plane_coef at the iteration's plane (uniform across the warp: one
// constant load feeds the chunk's points). The points are stored after the last plane.
std::string plane_block_function(const Stencil& stencil, const Setting& s, const KernelPlan& plan) {
  const bool cyclic = s[Param::merge] == static_cast<int>(MergeKind::cyclic);
  const std::array<int, 3> uf = plan.unroll;
  const std::array<int, 2> step{cyclic ? s[Param::tbx] : 1, cyclic ? s[Param::tby] : 1};
  const auto by_xy = plane_offsets(stencil);
  struct Use {
    int point;
    int coef;  // index in the plane's coefficient row
  };
  std::map<std::array<int, 2>, std::vector<Use>> inputs;  // key (x, y)
  std::vector<std::array<int, 2>> points;
  for (int uy = 0; uy < uf[1]; ++uy) {
    for (int ux = 0; ux < uf[0]; ++ux) {
      const std::array<int, 2> pt{ux * step[0], uy * step[1]};
      const int q = static_cast<int>(points.size());
      points.push_back(pt);
      int j = 0;
      for (const auto& entry : by_xy) {
        inputs[{pt[0] + entry.first[0], pt[1] + entry.first[1]}].push_back({q, j});
        ++j;
      }
    }
  }
  const int planes = static_cast<int>(by_xy.begin()->second.size());
  const int row = static_cast<int>(by_xy.size());
  std::ostringstream b;
  b << "  template <class C, long long SROW, long long SPLANE, long long OROW, long long OPLANE>\n"
    << "  static __device__ __forceinline__ void block(const double* __restrict__ p,\n"
    << "                                               double* __restrict__ o, bool near,\n"
    << "                                               int x, int y, int z) {\n";
  for (std::size_t q = 0; q < points.size(); ++q)
    b << "    double a" << q << " = 0.0;\n";
  b << "#pragma unroll 1\n"
    << "    for (int k = 0; k < " << planes << "; ++k) {\n"
    << "      const double* __restrict__ r = p + (k - C::ZLO) * SPLANE;\n"
    << "      const double* c = isl_plane_coef + k * " << row << ";\n";
  int i = 0;
  for (const auto& [pos, uses] : inputs) {
    const std::string v = "v" + std::to_string(i++);
    b << "      const double " << v << " = r[(" << pos[0] << ") + (" << pos[1] << ") * SROW];\n";
    for (const Use& u : uses)
      b << "      a" << u.point << " = fma(c[" << u.coef << "], " << v << ", a" << u.point
        << ");\n";
  }
  b << "    }\n";
  for (std::size_t q = 0; q < points.size(); ++q) {
    const auto& pt = points[q];
    b << "    o[(" << pt[0] << ") + (" << pt[1] << ") * OROW] = isl::keep_sum<C>(near, x + ("
      << pt[0] << "), y + (" << pt[1] << "), z) ? a" << q << " : isl::reload(p + ((" << pt[0]
      << ") + (" << pt[1] << ") * SROW));\n";
  }
  b << "  }\n";
  return b.str();
}

// Rules: retiming and prefetch are off (they need streaming), and fused steps need the shared
// tile (the levels live there). The streaming axis and block (sd, sb) are the streaming
// family's alone: the space holds them at 0 here (ExclusiveParams).
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

// Fused steps (tiled_temporal) read no merge kind: the merge factors only set the tile, so
// cyclic merging would build the block-merged kernel (canonical maps it there for datasets
// recorded before this rule, when OC 17 counted 39,448 valid settings of star2d1r 8192^2 and
// no kernel of its own).
bool fused_merge_kind(const ProblemShape&, const Setting& s, std::string* why) {
  if (s[Param::tdeg] <= 1 || s[Param::merge] != static_cast<int>(MergeKind::cyclic))
    return true;
  if (why) {
    *why = "tdeg=" + std::to_string(s[Param::tdeg]) +
           " without streaming fuses steps in a kernel that reads no merge kind: merge=cyclic "
           "builds the kernel of merge=block (use merge=block).";
  }
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
// chunk_cost > kMaxChunkCost (NVRTC time), it holds more than kMaxChunkPoints points or loads
// more than kMaxChunkLoads distinct inputs (chunk_loads: points `spacing` apart, each reading
// `width` inputs per axis); x first (block-merged x points cost bank conflicts and keep more
// coefficients live), then the larger of y and z (a balanced chunk reuses more loads), y on a
// tie. Halving keeps mf a multiple of the chunk (mf % uf == 0 implies mf % (uf / 2) == 0) and
// the halved factor within the space's powers of two. Only Tiled::canonical calls it: the
// canonical setting carries the chunk, and the plan reads it from there, so settings whose uf
// clip to one chunk share one canonical setting and one IslApply. With the plane loop (plane_loop)
// the chunk holds no z points (each z point is its own chunk) and its cost and loads are one
// plane's: the setting's ufx and ufy, clipped the same way.
std::array<int, 3> clip_chunk(std::array<int, 3> u, long long points,
                              const std::array<int, 3>& spacing, const std::array<int, 3>& width) {
  while (chunk_cost(1LL * u[0] * u[1] * u[2], points) > kMaxChunkCost ||
         1LL * u[0] * u[1] * u[2] > kMaxChunkPoints ||
         chunk_loads(u, spacing, width, points) > kMaxChunkLoads) {
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

// Spacing of a thread's merged points along each axis (block merging 1, cyclic the block's
// threads along the axis) and the inputs one point reads along it (reach plus one).
std::array<int, 3> chunk_spacing(const Setting& s) {
  if (static_cast<MergeKind>(s[Param::merge]) != MergeKind::cyclic)
    return {1, 1, 1};
  return {std::max(1, s[Param::tbx]), std::max(1, s[Param::tby]), std::max(1, s[Param::tbz])};
}
std::array<int, 3> chunk_width(const ProblemShape& shape) {
  return {shape.reach.lo[0] + shape.reach.hi[0] + 1, shape.reach.lo[1] + shape.reach.hi[1] + 1,
          shape.reach.lo[2] + shape.reach.hi[2] + 1};
}

std::array<int, 3> chunk(const ProblemShape& shape, const Setting& s) {
  const std::array<int, 3> asked{std::max(1, s[Param::ufx]), std::max(1, s[Param::ufy]),
                                 std::max(1, s[Param::ufz])};
  const long long points = (shape.flops_per_cell + 1) / 2;
  const std::array<int, 3> spacing = chunk_spacing(s), width = chunk_width(shape);
  const std::array<int, 3> unrolled = clip_chunk(asked, points, spacing, width);
  if (!plane_loop(shape.planes, points, unrolled))
    return unrolled;
  return clip_chunk({asked[0], asked[1], 1}, shape.planes.plane_points, spacing,
                    {width[0], width[1], 1});
}

class Tiled final : public KernelFamily {
 public:
  std::string_view name() const override { return "tiled"; }
  bool builds(const Setting& s) const override { return s[Param::streaming] == 0; }
  // No streaming, no retiming or prefetch (they need streaming); each merge kind, with and
  // without fused steps, but cyclic merging with fused steps (OC 17, tile+cyclic+tb): the
  // fused kernel reads no merge kind, so such a setting would build OC 9's kernel (block)
  // and is not valid (fused_merge_kind).
  const std::vector<Oc>& ocs() const override {
    static const std::vector<Oc> list = [] {
      std::vector<Oc> out;
      for (const int merge : {0, 1, 2}) {
        for (const int temporal : {0, 1}) {
          if (merge != static_cast<int>(MergeKind::cyclic) || temporal == 0)
            out.push_back(flag_oc(OcFlags{0, merge, 0, 0, temporal}));
        }
      }
      return out;
    }();
    return list;
  }
  std::span<const FamilyRule> rules() const override { return kRules; }
  // One step per launch computes every point of any tile from its inputs (the naive kernel's
  // 32x4x2 among them); fused steps compute the interior of overlapped tiles.
  bool takes_any_tile(const Setting& s) const override { return s[Param::tdeg] <= 1; }
  // Fused steps stage their levels in shared memory (temporal_needs_staging).
  std::vector<SpacePart> space_parts(const ProblemShape&, const Oc& oc,
                                     ParamValues part) const override {
    if (oc.temporal)
      keep_only(part[index_of(Param::use_shared)], 1);
    return {SpacePart{std::move(part), -1}};
  }

  // Without streaming sd, sb, retiming and prefetch are not read. With fused steps
  // (tiled_temporal) the merge factors only set the tile, so the merge kind and the unroll
  // factors are not read: block merging and no unrolling stand for them (the exported
  // entries at smaller depths are built from the canonical setting). The unroll factors are the
  // chunk tiled_step really unrolls for this stencil (chunk: a large stencil clips uf).
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
    // The chunk is the canonical setting's uf (fused steps read none: 1).
    const Setting c = canonical(shape, s);
    p.unroll = {std::max(1, c[Param::ufx]), std::max(1, c[Param::ufy]), std::max(1, c[Param::ufz])};
    // Instructions beside the multiply-adds: a chunk of U points loads its distinct inputs
    // once (chunk_loads) and moves each coefficient into its operands once (kCoefficientMoves
    // instructions); fused steps compute point by point from shared memory.
    const long long points = (shape.flops_per_cell + 1) / 2;
    const double chunk = static_cast<double>(p.unroll[0]) * p.unroll[1] * p.unroll[2];
    const std::array<int, 3> spacing = chunk_spacing(c), width = chunk_width(shape);
    if (p.tdeg > 1) {
      p.other_instructions = static_cast<double>(points) * (1 + kCoefficientMoves) * p.redundancy;
      return;
    }
    if (plane_loop(shape.planes, points, p.unroll)) {
      // The plane loop: each plane loads the chunk's in-plane inputs, and each coefficient is
      // one uniform constant load per chunk.
      p.loads_per_cell =
          shape.planes.planes *
          chunk_loads(p.unroll, spacing, {width[0], width[1], 1}, shape.planes.plane_points) /
          chunk;
      p.other_instructions = p.loads_per_cell + static_cast<double>(points) / chunk;
    } else {
      p.loads_per_cell = chunk_loads(p.unroll, spacing, width, points) / chunk;
      p.other_instructions =
          p.loads_per_cell + kCoefficientMoves * static_cast<double>(points) / chunk;
    }
    p.registers = tile_registers(static_cast<long long>(chunk));
  }

  std::optional<std::string> unsupported(const Setting& s) const override {
    return tiled_unsupported(s);
  }
  std::string apply_globals(const Stencil& stencil, const Setting&,
                            const KernelPlan& plan) const override {
    return loops_over_planes(stencil, plan) ? plane_table(stencil) : "";
  }
  std::string apply_member(const Stencil& stencil, const Setting& s,
                           const KernelPlan& plan) const override {
    if (loops_over_planes(stencil, plan))
      return plane_block_function(stencil, s, plan);
    return block_function(stencil, s, plan, s[Param::use_constant] == 1);
  }
  FamilyCode code(const KernelPlan& plan, const Setting& s, const Grid& grid,
                  std::string_view name) const override {
    return tiled_code(plan, s, grid, name);
  }

 private:
  static constexpr std::array<FamilyRule, 4> kRules = {
      FamilyRule{Param::retiming, no_retiming, true, "retiming = 0 (it needs streaming)"},
      FamilyRule{Param::prefetch, no_prefetch, true, "prefetch = 0 (it needs streaming)"},
      FamilyRule{Param::tdeg, fused_merge_kind, false,
                 "tdeg > 1 => merge = none or block (the fused kernel reads no merge kind)"},
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
