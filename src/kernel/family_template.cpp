// Kernel family template (kernels/family_template.cuh): a skeleton to copy when adding a
// family. It builds one point per thread from global memory, one step per launch, and shows
// every piece a family provides. To add a family:
//   1. copy this file to src/kernel/<family>.cpp and kernels/family_template.cuh to
//      kernels/<family>.cuh; rename the class, template_family() and template_step;
//   2. say which settings it builds (builds: only the parameters up to tdeg), its OCs (ocs:
//      ids no other family uses, appended after the ids in use; the trace's /space/ocs, the
//      space's counts, the sampler and the analysis package take them from there), its
//      pruning of the space (space_parts, where values can never be valid beyond the generic
//      pruning) and its rules, what the generic rules ask of it (stream_axis, takes_any_tile),
//      its plan arithmetic, its code;
//   3. add one line to the registry (src/kernel/registry.cpp).
// A family with a parameter of its own appends it to Param (src/setting/setting.hpp: the enum
// line and its kParamInfo line: name, kind, neutral value) and declares its default values
// and allowed values here (own_params); the space holds it neutral in the other families'
// OCs and their canonical settings, keys leave it out at its neutral value, and traces and
// saved states written before it read it neutral (docs/kernel-plan.md). A family whose OCs
// would hold another family's settings (as the template's OC 48, no streaming, no merging,
// one step, holds the tiled family's OC 0 settings) brings a selector: a parameter of its own
// that its OCs name at a value other than its neutral one; the registry builds the settings
// with that value by this family and every other setting by the others (OcTable::family_of).
// The template's own parameters, tpl_px (points per thread along x) and its selector tpl_on
// (0/1), are appended only in the test build of tests/axis (ISLETUNE_TEST_TEMPLATE_AXIS),
// where the template is registered (src/kernel/registry.cpp); tpl_on defaults to 0 alone, so
// that build's default space is the production build's and a space list `tpl_on: [0, 1]`
// adds the template's OC. Elsewhere the template computes one point per thread and is not in
// the registry (its OC would hold OC 0's settings, which the OC table rejects); the unit tests
// build an OC table with it (OcTable), plan and generate it explicitly and compile it with
// NVRTC (tests/unit/test_kernel_family.cpp).
#include <sstream>

#include "kernel/emit.hpp"
#include "kernel/family.hpp"
#include "kernel/kernel_plan.hpp"

namespace isletune {
namespace {

// Points per thread along x: the template's own parameter where the build has it.
int points_x(const Setting& s) {
#ifdef ISLETUNE_TEST_TEMPLATE_AXIS
  return s[Param::tpl_px];
#else
  (void)s;
  return 1;
#endif
}

// A family rule: `stage` is the last parameter it reads; on failure it fills *why (when
// given) with one sentence. This one: one step per launch (the kernel fuses no steps).
bool one_step_per_launch(const ProblemShape&, const Setting& s, std::string* why) {
  if (s[Param::tdeg] == 1)
    return true;
  if (why)
    *why = "the template family advances one step per launch (tdeg must be 1).";
  return false;
}

class FamilyTemplate final : public KernelFamily {
 public:
  std::string_view name() const override { return "template"; }
  // Which settings it builds, from the parameters up to tdeg.
  bool builds(const Setting& s) const override {
    return s[Param::streaming] == 0 && s[Param::merge] == static_cast<int>(MergeKind::none) &&
           s[Param::tdeg] == 1;
  }
  // Its OCs: an id above those in use (kOcCount bounds them), a name, the values that define
  // it (its selector among them, where the build has one), and whether it fuses steps.
  const std::vector<Oc>& ocs() const override {
    static const std::vector<Oc> list = {
        Oc{48,
           "template",
           {
               {Param::streaming, 0},
               {Param::merge, static_cast<int>(MergeKind::none)},
               {Param::retiming, 0},
               {Param::prefetch, 0},
#ifdef ISLETUNE_TEST_TEMPLATE_AXIS
               {Param::tpl_on, 1},
#endif
           },
           false},
    };
    return list;
  }
  // Its pruning inside an OC (space_parts) is the generic one: another family's parameters
  // (the streaming axis and block, sd and sb, which the streaming family reads alone) arrive
  // at their neutral value. Its rules:
  std::span<const FamilyRule> rules() const override {
    return kRules;
  }
  // One point per thread (tpl_px along x), each read with its halo: any tile will do, so the
  // generic rule that the tile exceed the halo does not apply.
  bool takes_any_tile(const Setting&) const override {
    return true;
  }
#ifdef ISLETUNE_TEST_TEMPLATE_AXIS
  // Its own parameters: default values for a problem and the values a space list may hold.
  // tpl_on is its selector (its OC names it): off by default, on where a space list has 1.
  std::span<const OwnParam> own_params() const override {
    static constexpr std::array<OwnParam, 2> list = {
        OwnParam{Param::tpl_px,
                 [](int, const Grid&) {
                   return std::vector<int>{1, 2, 4};
                 },
                 [](int v, int) { return v == 1 || v == 2 || v == 4 || v == 8; }, "1, 2, 4 or 8"},
        OwnParam{Param::tpl_on, [](int, const Grid&) { return std::vector<int>{0}; },
                 [](int v, int) { return v == 0 || v == 1; }, "0 or 1"},
    };
    return list;
  }
#endif

  // Tile = the block times the points per thread along x; no shared memory; the
  // overlapped-tile costs.
  void plan(const ProblemShape& shape, const Setting& s, KernelPlan& p) const override {
    plan_tiles(p, shape, {p.block[0] * points_x(s), p.block[1], p.block[2]});
    p.shared_bytes = 0;
    plan_costs(p);
  }

  std::optional<std::string> unsupported(const Setting& s) const override {
    std::string why;
    if (!one_step_per_launch({}, s, &why))
      return why;
    return std::nullopt;
  }
  // The kernel uses only the common Apply::at; a family adds members (e.g. unrolled chunks).
  std::string apply_member(const Stencil&, const Setting&, const KernelPlan&) const override {
    return "";
  }
  FamilyCode code(const KernelPlan& plan, const Setting& s, const Grid& grid,
                  std::string_view name) const override {
    std::ostringstream c;
    c << "struct " << name << " {\n"
      << constant("TBX", plan.block[0]) << constant("PX", points_x(s))
      << constant("TBY", plan.block[1]) << constant("TBZ", plan.block[2]) << constant("NX", grid.nx)
      << constant("NY", grid.ny) << constant("NZ", grid.nz) << constant("XLO", plan.halo_lo[0])
      << constant("XHI", plan.halo_hi[0]) << constant("YLO", plan.halo_lo[1])
      << constant("YHI", plan.halo_hi[1]) << constant("ZLO", plan.halo_lo[2])
      << constant("ZHI", plan.halo_hi[2]) << "};\n";
    return {"family_template.cuh", "template_step", c.str()};
  }

 private:
  static constexpr std::array<FamilyRule, 1> kRules = {
      FamilyRule{Param::tdeg, one_step_per_launch, false, "tdeg = 1"},
  };
};

}  // namespace

const KernelFamily& template_family() {
  static const FamilyTemplate family;
  return family;
}

}  // namespace isletune
