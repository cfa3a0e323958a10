// Tiled kernel family (kernels/tiled.cuh): one step per launch with optional shared tile,
// merging and unrolling (tiled_step), or tdeg > 1 fused steps on overlapped tiles in two
// ping-pong shared buffers (tiled_temporal). Builds every setting with streaming = 0.
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
    << constant("UFX", s[Param::ufx]) << constant("UFY", s[Param::ufy])
    << constant("UFZ", s[Param::ufz]) << constant("MERGE", s[Param::merge])
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

// Apply::block: one chunk of ufx x ufy x ufz merged points, `step` apart per axis (1 for
// block merging, the block extent for cyclic). Every input position the chunk needs is
// loaded once, in (z, y, x) order, and added into each point that uses it.
std::string block_function(const Stencil& stencil, const Setting& s, bool use_constant) {
  const bool cyclic = s[Param::merge] == static_cast<int>(MergeKind::cyclic);
  const std::array<int, 3> uf{s[Param::ufx], s[Param::ufy], s[Param::ufz]};
  const std::array<int, 3> step{cyclic ? s[Param::tbx] : 1, cyclic ? s[Param::tby] : 1,
                                cyclic ? s[Param::tbz] : 1};
  struct Use {
    int point;
    int coef;
  };
  std::map<std::array<int, 3>, std::vector<Use>> inputs;  // key (z, y, x)
  std::vector<std::array<int, 3>> points;                 // (x, y, z) of each point
  for (int uz = 0; uz < uf[2]; ++uz) {
    for (int uy = 0; uy < uf[1]; ++uy) {
      for (int ux = 0; ux < uf[0]; ++ux) {
        const std::array<int, 3> pt{ux * step[0], uy * step[1], uz * step[2]};
        const int q = static_cast<int>(points.size());
        points.push_back(pt);
        for (int k = 0; k < stencil.size(); ++k) {
          const Offset& o = stencil.offsets()[k];
          inputs[{pt[2] + o.z, pt[1] + o.y, pt[0] + o.x}].push_back({q, k});
        }
      }
    }
  }
  std::ostringstream b;
  b << "  template <long long SROW, long long SPLANE, long long OROW, long long OPLANE>\n"
    << "  static __device__ __forceinline__ void block(const double* __restrict__ p,\n"
    << "                                               double* __restrict__ o) {\n";
  b << "    double";
  for (std::size_t q = 0; q < points.size(); ++q)
    b << (q ? ", a" : " a") << q;
  b << ";\n";
  std::vector<bool> started(points.size(), false);
  for (const auto& [pos, uses] : inputs) {
    b << "    {\n      const double v = p[(" << pos[2] << ") + (" << pos[1] << ") * SROW + ("
      << pos[0] << ") * SPLANE];\n";
    for (const Use& u : uses) {
      b << "      a" << u.point << (started[u.point] ? " += " : " = ")
        << coefficient(stencil, u.coef, use_constant) << " * v;\n";
      started[u.point] = true;
    }
    b << "    }\n";
  }
  for (std::size_t q = 0; q < points.size(); ++q) {
    b << "    o[(" << points[q][0] << ") + (" << points[q][1] << ") * OROW + (" << points[q][2]
      << ") * OPLANE] = a" << q << ";\n";
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

class Tiled final : public KernelFamily {
 public:
  std::string_view name() const override { return "tiled"; }
  bool builds(const Setting& s) const override { return s[Param::streaming] == 0; }
  std::span<const FamilyRule> rules() const override { return kRules; }

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
  }

  std::optional<std::string> unsupported(const Setting& s) const override {
    return tiled_unsupported(s);
  }
  std::string apply_member(const Stencil& stencil, const Setting& s,
                           const KernelPlan&) const override {
    return block_function(stencil, s, s[Param::use_constant] == 1);
  }
  FamilyCode code(const KernelPlan& plan, const Setting& s, const Grid& grid,
                  std::string_view name) const override {
    return tiled_code(plan, s, grid, name);
  }

 private:
  static constexpr std::array<FamilyRule, 4> kRules = {
      FamilyRule{Param::sb, no_stream_form, true},
      FamilyRule{Param::retiming, no_retiming, true},
      FamilyRule{Param::prefetch, no_prefetch, true},
      FamilyRule{Param::use_shared, temporal_needs_staging, false},
  };
};

}  // namespace

const KernelFamily& tiled_family() {
  static const Tiled family;
  return family;
}

}  // namespace isletune
