// Tensor-core family (kernels/mma.cuh): one step per launch on the FP64 tensor cores (DMMA),
// the window tiled exactly by pairs of k4 patches (src/kernel/mma_tiling.hpp). Selected by its
// own parameter `mma` = 1; it reads its own parameters only (batches per warp, warps, where
// the coefficient fragments live, minimum resident blocks) and holds every base parameter at
// its neutral value. The prototype and the measurements that chose this mapping:
// docs/studies/2026-11-28-dmma-prototype.md, docs/studies/2026-12-05-dmma-pair-tiled-window.md.
#include <algorithm>
#include <array>
#include <sstream>
#include <vector>

#include "kernel/emit.hpp"
#include "kernel/family.hpp"
#include "kernel/kernel_plan.hpp"
#include "kernel/mma_tiling.hpp"

namespace isletune {
namespace {

// Output planes a block streams (at most, clipped to the grid), ring depth in groups: the
// prototype's, measured best on every box of radius 2-4 (a 256-plane CTA lost 16 % to the
// partial last wave on box3d2r).
constexpr int kPlanesPerBlock = 128;
constexpr int kStages = 3;
// Coefficient doubles a lane may keep in registers (mma_creg = 1); beyond, only shared memory.
// box3d2r's 54 ran at 238 registers, 0.80x its shared-memory variant (2026-12-05 study).
constexpr int kMaxRegisterCoefficients = 64;
// Smallest share of the MMA work that is useful (stencil points / padded window volume) for
// which the family builds a stencil: at 0.4 the DMMA pipe (2x the vector peak) does 0.8x the
// vector pipe's useful work; stars (star3d1r 7/64, star2d2r 9/48) are far below, every box of
// radius >= 1 in 3-D and >= 2 in 2-D above (box3d1r 0.42, box2d2r 0.52, box3d4r 0.73).
constexpr double kMinUsefulShare = 0.4;

// The value the family's settings hold for each base parameter (it reads none but tdeg = 1):
// the neutral value, but tbx = 32, since the generic block rules ask for at least a warp (its
// own mma_warps sets the block).
int held_value(Param p) {
  return p == Param::tbx ? 32 : neutral_value(p);
}

int round_up(long long a, int b) {
  return static_cast<int>((a + b - 1) / b * b);
}

// Everything the kernel's layout derives from the problem and the setting (the one home of
// the config struct's numbers; the plan's shared bytes and tile read it).
struct MmaLayout {
  MmaTiling tiling;
  std::array<long long, 3> extent{};  // NX, NY, NS in kernel axes
  int nb = 1, wxw = 1, wyw = 1, warps = 1, csm = 1;
  int wfx = 0, tx = 0, ty = 0, ts = 0, txn = 0, txs = 0, tys = 0, plane_s = 0;
  int ring = 0, ncoef = 0, groups = 0;
  long long shared_bytes = 0;
  bool vec2 = false;
};

MmaLayout layout_of(const ProblemShape& shape, const Setting& s) {
  MmaLayout l;
  l.tiling = mma_tiling(shape.reach, shape.dims);
  const MmaTiling& t = l.tiling;
  const bool flat = shape.dims == 2;
  l.extent = flat ? std::array<long long, 3>{shape.grid.nx, 1, shape.grid.ny}
                  : std::array<long long, 3>{shape.grid.nx, shape.grid.ny, shape.grid.nz};
  l.nb = std::max(1, s[Param::mma_nb]);
  l.warps = std::max(1, s[Param::mma_warps]);
  l.wxw = flat ? l.warps : 1;
  l.wyw = flat ? 1 : l.warps;
  l.csm = s[Param::mma_creg] != 0 ? 0 : 1;
  const int bx = t.block[0], by = t.block[1], bs = t.block[2];
  l.wfx = l.nb * 16 * bx;
  l.tx = l.wxw * l.wfx;
  l.ty = l.wyw * by;
  l.ts = std::min<int>(kPlanesPerBlock, round_up(l.extent[2], bs));
  l.txn = l.tx + t.window[0] - bx;
  // Row pitch: 8 mod 16 doubles in 3-D (the two rows of a p42 load fall in different bank
  // halves), even in 2-D (16-byte loads).
  l.txs = flat ? round_up(l.txn, 2) : l.txn + ((8 - l.txn % 16) + 16) % 16;
  l.tys = l.ty + t.window[1] - by;
  l.plane_s = l.txs * l.tys;
  l.ring = kStages * bs * l.plane_s;
  l.ncoef = t.np * t.lane_doubles;
  l.groups = l.ts / bs + t.np - 1;
  l.shared_bytes = 8LL * l.ring + (l.csm ? 8LL * l.ncoef * 32 : 0);
  l.vec2 = t.lo[0] % 2 == 0 && l.extent[0] % 2 == 0;
  return l;
}

// Useful share of the MMA work (stencil points / padded window volume).
double useful_share(const ProblemShape& shape) {
  const MmaTiling t = mma_tiling(shape.reach, shape.dims);
  const long long points = (shape.flops_per_cell + 1) / 2;
  return static_cast<double>(points) / static_cast<double>(t.window_volume());
}

bool fills_window(const ProblemShape& shape, const Setting&, std::string* why) {
  if (useful_share(shape) >= kMinUsefulShare)
    return true;
  if (why) {
    std::ostringstream w;
    w.precision(2);
    w << "the tensor-core family needs a stencil that fills at least " << kMinUsefulShare
      << " of its window (useful share of the MMA work); this one fills " << useful_share(shape)
      << " (mma must be 0).";
    *why = w.str();
  }
  return false;
}

bool register_coefficients_fit(const ProblemShape& shape, const Setting& s, std::string* why) {
  if (s[Param::mma_creg] == 0)
    return true;
  const int doubles = layout_of(shape, s).ncoef;
  if (doubles <= kMaxRegisterCoefficients)
    return true;
  if (why) {
    *why = "mma_creg=1 keeps " + std::to_string(doubles) +
           " coefficient doubles a lane in registers for this stencil; at most " +
           std::to_string(kMaxRegisterCoefficients) + " fit (use mma_creg=0).";
  }
  return false;
}

// A table of a config struct as a constexpr function of one index (ternary chain: folded to
// a constant wherever the unrolled index is one).
std::string table_function(std::string_view name, std::string_view args, std::string_view index,
                           const std::vector<long long>& values) {
  std::ostringstream f;
  f << "  static __host__ __device__ constexpr int " << name << "(" << args << ") {\n"
    << "    return ";
  for (std::size_t i = 0; i + 1 < values.size(); ++i)
    f << "(" << index << ") == " << i << " ? " << values[i] << " : ";
  f << (values.empty() ? 0 : values.back()) << ";\n  }\n";
  return f.str();
}

const std::vector<int>& off_on() {
  static const std::vector<int> v{0, 1};
  return v;
}

class Mma final : public KernelFamily {
 public:
  std::string_view name() const override { return "mma"; }
  bool builds(const Setting& s) const override {
    return s[Param::streaming] == 0 && s[Param::tdeg] == 1;
  }
  const std::vector<Oc>& ocs() const override {
    static const std::vector<Oc> list = {
        Oc{49, "mma", {{Param::streaming, 0}, {Param::mma, 1}}, false},
    };
    return list;
  }
  std::span<const OwnParam> own_params() const override {
    static const std::array<OwnParam, 5> list = {
        OwnParam{Param::mma, [](int, const Grid&) { return off_on(); },
                 [](int v, int) { return v == 0 || v == 1; }, "0 or 1"},
        OwnParam{Param::mma_nb,
                 [](int, const Grid&) {
                   return std::vector<int>{1, 2};
                 },
                 [](int v, int) { return v == 1 || v == 2 || v == 4; }, "1, 2 or 4"},
        OwnParam{Param::mma_warps,
                 [](int, const Grid&) {
                   return std::vector<int>{4, 8};
                 },
                 [](int v, int) { return v == 1 || v == 2 || v == 4 || v == 8 || v == 16; },
                 "1, 2, 4, 8 or 16"},
        OwnParam{Param::mma_creg, [](int, const Grid&) { return off_on(); },
                 [](int v, int) { return v == 0 || v == 1; }, "0 or 1"},
        OwnParam{Param::mma_minb,
                 [](int, const Grid&) {
                   return std::vector<int>{1, 2, 3, 4};
                 },
                 [](int v, int) { return v >= 1 && v <= 8; }, "1 to 8"},
    };
    return list;
  }
  std::span<const FamilyRule> rules() const override { return kRules; }
  bool reads_base(Param p) const override { return p == Param::tdeg; }
  // Its kernel computes every point of the grid from the staged windows: any tile will do.
  bool takes_any_tile(const Setting&) const override { return true; }
  // It reads none of the base parameters but tdeg (1): they take their held value alone (a
  // space list without it leaves the OC empty).
  std::vector<SpacePart> space_parts(const ProblemShape&, const Oc&,
                                     ParamValues part) const override {
    for (std::size_t i = 0; i < kBaseParamCount; ++i) {
      if (param_at(i) != Param::tdeg)
        keep_only(part[i], held_value(param_at(i)));
    }
    return {SpacePart{std::move(part), -1}};
  }
  Setting canonical(const ProblemShape&, const Setting& s) const override {
    Setting c = s;
    for (std::size_t i = 0; i < kBaseParamCount; ++i) {
      if (param_at(i) != Param::tdeg)
        c.values[i] = held_value(param_at(i));
    }
    return c;
  }

  void plan(const ProblemShape& shape, const Setting& s, KernelPlan& p) const override {
    const MmaLayout l = layout_of(shape, s);
    p.block = {32 * l.warps, 1, 1};
    p.threads_per_block = 32 * l.warps;
    plan_tiles(
        p, shape,
        shape.dims == 2 ? std::array<int, 3>{l.tx, l.ts, 1} : std::array<int, 3>{l.tx, l.ty, l.ts});
    p.shared_bytes = l.shared_bytes;
    plan_costs(p);
    p.tensor_flops_per_cell = 2.0 * static_cast<double>(l.tiling.window_volume());
    p.min_compute = 90;
    p.x_spread = 1;
    p.merged_points = 1;
    p.constant_coefficients = false;
  }

  std::optional<std::string> unsupported(const Setting& s) const override {
    if (s[Param::tdeg] != 1)
      return "the tensor-core family advances one step per launch (tdeg must be 1)";
    if (s[Param::streaming] != 0)
      return "the tensor-core family does not stream (streaming must be 0)";
    for (const OwnParam& o : own_params()) {
      if (!o.allowed(s[o.param], 3))
        return std::string(param_name(o.param)) + " must be " + std::string(o.expected);
    }
    return std::nullopt;
  }

  std::string apply_globals(const Stencil& stencil, const Setting&,
                            const KernelPlan&) const override {
    const MmaTiling t = mma_tiling(reach_of(stencil), stencil.dims());
    const std::vector<double> table = t.coefficient_table(stencil);
    std::ostringstream g;
    g << "// The tensor-core family's coefficient fragments (src/kernel/mma_tiling.hpp).\n"
      << "__device__ const double isl_mma_b[" << table.size() << "] = {";
    for (std::size_t i = 0; i < table.size(); ++i)
      g << (i ? (i % 8 == 0 ? ",\n    " : ", ") : "") << exact_literal(table[i]);
    g << "};\n";
    return g.str();
  }
  std::string apply_member(const Stencil&, const Setting&, const KernelPlan&) const override {
    return "  static __device__ __forceinline__ const double* mma_b() { return isl_mma_b; }\n";
  }

  FamilyCode code(const KernelPlan& plan, const Setting& s, const Grid& grid,
                  std::string_view name) const override {
    const ProblemShape shape = shape_of_plan(plan, grid);
    const MmaLayout l = layout_of(shape, s);
    const MmaTiling& t = l.tiling;
    std::vector<long long> pair, kind, base, offset, type;
    for (std::size_t u = 0; u < t.units.size(); ++u) {
      const MmaUnit& unit = t.units[u];
      pair.push_back(unit.pair ? 1 : 0);
      kind.push_back(unit.k);
      base.push_back(unit.base);
      for (std::size_t i = 0; i < 4; ++i) {
        long long off = 0, ty = 0;
        if (i < unit.items.size()) {
          const int item = unit.items[i];
          const int plane = unit.pair ? item / t.pairs : item / t.singles;
          const int d = unit.pair ? item % t.pairs : t.pairs + item % t.singles;
          const MmaDescriptor& desc = t.descriptors[static_cast<std::size_t>(d)];
          off = 1LL * plane * l.plane_s + 1LL * desc.dy * l.txs + desc.dx;
          ty = static_cast<int>(desc.type);
        }
        offset.push_back(off);
        type.push_back(ty);
      }
    }
    std::ostringstream c;
    c << "struct " << name << " {\n"
      << constant("NX", l.extent[0]) << constant("NY", l.extent[1]) << constant("NS", l.extent[2])
      << constant("PLANE", l.extent[0] * l.extent[1], "long long") << constant("XLO", t.lo[0])
      << constant("XHI", t.hi[0]) << constant("YLO", t.lo[1]) << constant("YHI", t.hi[1])
      << constant("SLO", t.lo[2]) << constant("SHI", t.hi[2]) << constant("BX", t.block[0])
      << constant("BY", t.block[1]) << constant("BS", t.block[2]) << constant("NB", l.nb)
      << constant("WXW", l.wxw) << constant("WYW", l.wyw) << constant("NWARPS", l.warps)
      << constant("THREADS", 32 * l.warps) << constant("WFX", l.wfx) << constant("TX", l.tx)
      << constant("TY", l.ty) << constant("TS", l.ts) << constant("TXN", l.txn)
      << constant("TXS", l.txs) << constant("TYS", l.tys) << constant("PLANE_S", l.plane_s)
      << constant("STAGES", kStages) << constant("RING", l.ring) << constant("NP", t.np)
      << constant("NBL", t.lane_doubles) << constant("NCOEF", l.ncoef)
      << constant("NU", static_cast<long long>(t.units.size())) << constant("NG", l.groups)
      << constant("CSM", l.csm) << constant("VEC2", l.vec2 ? 1 : 0, "bool")
      << constant("TWOD", t.dims == 2 ? 1 : 0, "bool")
      << table_function("upair", "int u", "u", pair) << table_function("ukind", "int u", "u", kind)
      << table_function("ubase", "int u", "u", base)
      << table_function("item_offset", "int u, int t", "u * 4 + t", offset)
      << table_function("item_type", "int u, int t", "u * 4 + t", type) << "};\n";
    return {"mma.cuh", "mma_step", c.str(), std::to_string(std::max(1, s[Param::mma_minb]))};
  }

 private:
  // The problem shape a plan was made for (code() gets the plan and the grid, not the shape).
  static ProblemShape shape_of_plan(const KernelPlan& plan, const Grid& grid) {
    ProblemShape shape;
    shape.reach.lo = plan.halo_lo;
    shape.reach.hi = plan.halo_hi;
    shape.dims = plan.dims;
    shape.flops_per_cell = static_cast<int>(plan.flops_per_cell);
    shape.grid = grid;
    return shape;
  }

  static constexpr std::array<FamilyRule, 2> kRules = {
      FamilyRule{Param::mma, fills_window, false,
                 "mma = 1 => the stencil fills at least 0.4 of its MMA window"},
      FamilyRule{Param::mma_creg, register_coefficients_fit, false,
                 "mma_creg = 1 => at most 64 coefficient doubles a lane"},
  };
};

}  // namespace

const KernelFamily& mma_family() {
  static const Mma family;
  return family;
}

}  // namespace isletune
