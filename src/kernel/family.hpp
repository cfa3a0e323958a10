// A kernel family: one kind of generated kernel (kernels/<family>.cuh) and everything the
// tuner knows about it, in one unit (src/kernel/<family>.cpp): which settings it builds, the
// parameters its kernel reads, its rules for the space, its plan arithmetic (tile, loaded
// region, shared bytes, costs, the one-step tail) and its code emission (the IslApply member
// and the config struct of one entry). Families are listed in the registry (registry.cpp);
// nothing else branches on the family. A family also says which parameters its kernel reads
// (own_params, exclusive_params: the space holds them neutral in every other family's settings)
// and which factors it clips for a stencil (canonical), and which generic rules bend for it
// (stream_axis, takes_any_tile): the space's rules read these, never a family's switch. How to
// add one: docs/kernel-plan.md; the skeleton to copy: family_template.cpp +
// kernels/family_template.cuh.
#pragma once

#include <algorithm>
#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "setting/device_limits.hpp"
#include "setting/oc.hpp"
#include "setting/setting.hpp"
#include "stencil/stencil.hpp"

namespace isletune {

struct KernelPlan;

// Largest negative (lo) and positive (hi) offset per axis, both >= 0: the exact one-step halo.
struct StencilReach {
  std::array<int, 3> lo{};
  std::array<int, 3> hi{};
};
[[nodiscard]] StencilReach reach_of(const Stencil& stencil);

// Values one thread of the streaming family keeps per merged point and fused level when it
// streams along an axis (its register pipeline; computed in streaming.cpp, and the kernel's
// IslApply::LIVE_QUEUE / LIVE_RETIME print the same counts): `queue` without retiming (the
// queue's live slots: the planes along the axis and the in-plane neighbours of the planes
// still to be used), `sums` with retiming (the 2r+1 pending partial sums plus the centre
// queue), `neighbours` the in-plane neighbours a plane brings (read once, not kept).
// `centre` and `lag`: the centre-queue kernel (tdeg 1 without retiming, streaming.cpp
// centre_queue) keeps only the centre column's planes (`centre` values) and reads every
// in-plane neighbour from the shared input plane it lies in, up to `lag` planes behind the
// newest; lag is -1 where an in-plane offset occurs in two planes (boxes: the kernel would read
// it twice from shared memory), and the queue kernel is built instead.
struct StreamLive {
  int queue = 0;
  int sums = 0;
  int neighbours = 0;
  int centre = 0;
  int lag = -1;
};
[[nodiscard]] StreamLive stream_live(const Stencil& stencil, std::size_t axis);

// The z-planes of a 3-D stencil whose every plane in its z range holds the same in-plane
// offsets (a box, or a user's prism of any footprint): `planes` planes of `plane_points` points
// each; both 0 otherwise (2-D stencils, stars, a plane missing in the range). The tiled family's
// register tile can then loop over the planes at run time (tiled.cpp, plane_loop).
struct StencilPlanes {
  int planes = 0;
  int plane_points = 0;
};
[[nodiscard]] StencilPlanes planes_of(const Stencil& stencil);

// What the rules and the plan arithmetic know of the problem (no stencil coefficients).
struct ProblemShape {
  StencilReach reach;
  int dims = 2;
  int flops_per_cell = 1;
  Grid grid;
  int sm_count = 132;  // SMs to fill (streaming plans shape the launch to whole waves)
  // Opt-in shared memory per block (streaming: how many input planes fit in flight).
  long long shared_per_block = DeviceLimits{}.shared_per_block_optin;
  // The streaming register pipeline per stream axis (x unused: streaming is along y or z).
  std::array<StreamLive, 3> stream_live{};
  StencilPlanes planes{};
  // Largest |offset| per axis: max(reach.lo, reach.hi).
  [[nodiscard]] int radius(std::size_t axis) const;
};
[[nodiscard]] ProblemShape shape_of(const Stencil& stencil, const Grid& grid);
// The shape with the device's SM count (plans shape their launch to it).
[[nodiscard]] ProblemShape on_device(const ProblemShape& shape, const DeviceLimits& limits);

// One rule a family adds to the space. `stage` is the last parameter it reads (the space
// enumerates in parameter order and prunes as soon as a rule fails); `check` says whether
// the rule holds and, on failure, fills *why (when given) with one sentence. `form` rules
// say how a parameter the family does not read must be set; they are reported before the
// value lists are checked.
struct FamilyRule {
  Param stage;
  bool (*check)(const ProblemShape& shape, const Setting& s, std::string* why);
  bool form = false;
  std::string_view text;  // the rule in a line (`isletune space` lists it)
};

// One product set of value lists inside an OC (what the space counts, enumerates and samples
// from), and the axis its settings stream along (-1: none; the generic rule "uf_d divides
// mf_d" skips that axis).
struct SpacePart {
  ParamValues values;
  int stream_axis = -1;
};

// A parameter a family brings (appended to Param, setting.hpp: its name, kind and neutral value
// live there): the values the space gives it by default for a problem, and which values a
// `space` list may hold. Only the declaring family's settings take it away from its neutral
// value: the space holds it neutral in every other family's OCs, and canonical settings of
// other families have it neutral (registry.hpp). When the family's OCs name it, it is the
// family's selector (KernelFamily::ocs): its defaults decide whether the default space holds
// the family (a list without the selecting value leaves the family's OCs empty).
struct OwnParam {
  Param param;
  std::vector<int> (*defaults)(int dims, const Grid& grid);
  bool (*allowed)(int value, int dims);
  std::string_view expected;  // what `allowed` accepts, e.g. "1, 2 or 4": a space list's error
  std::string_view expected_2d = {};  // the same for a 2-D stencil where it differs, else ""
};

// The base parameters only one family's kernel reads and whose allowed values hold none that
// means "off" (the streaming family's axis sd, 1 or 2, and stream block sb, a power of two).
// The family declares their default and allowed values (`params`, as for a parameter of its
// own), and every other family's settings hold them at their neutral value, outside those
// values: the space gives them that value alone in the other families' OCs, checks their lists
// in the declaring family's settings only, and rejects another family's setting that sets one
// in a sentence `absent` begins ("without streaming": "without streaming sd and sb must be 0").
struct ExclusiveParams {
  std::span<const OwnParam> params;
  std::string_view absent;
};

// Narrows a value list to {v} when it holds v, else to {} (no valid setting).
inline void keep_only(std::vector<int>& list, int v) {
  const bool has = std::find(list.begin(), list.end(), v) != list.end();
  list = has ? std::vector<int>{v} : std::vector<int>{};
}

// The code of one entry: kernels/<template_file>, the device function
// isl::<function><Config, IslApply>(in, out, smem) it calls, and the config struct.
struct FamilyCode {
  std::string_view template_file;
  std::string_view function;
  std::string config;           // `struct <name> { static constexpr ... };`
  std::string min_blocks = {};  // __launch_bounds__ min blocks per SM (an expression), or ""
};

class KernelFamily {
 public:
  virtual ~KernelFamily() = default;

  // Short name: "tiled", "streaming" (plans, tests, docs).
  [[nodiscard]] virtual std::string_view name() const = 0;
  // Whether this family builds s. It may read only the parameters up to kFamilyKnown (tdeg,
  // registry.hpp) and its selector: the space picks the family once they are set. A family
  // with a selector is asked only about settings that give the selector one of its values,
  // every other family only about settings that hold every selector neutral
  // (OcTable::family_of).
  [[nodiscard]] virtual bool builds(const Setting& s) const = 0;
  // The OCs it builds (registry.hpp lists every family's in one table): each an id that no
  // other family declares (below kOcCount; an id recorded in traces never changes meaning, a
  // new family appends), a name, the parameter values that define it (parameters up to
  // kFamilyKnown, and its selector) and whether it fuses steps. Every setting it builds that
  // its rules admit is in exactly one of them; a setting in none is not valid. A family's
  // selector is a parameter of its own (own_params) that every one of its OCs names at a value
  // other than the parameter's neutral one: the settings that give it such a value are the
  // family's, whatever the other OC parameters say (the tensor-core family of issue 47 beside
  // the tiled one; tests/axis gives the template one: tpl_on = 1). Its one home is these OC
  // values: the registry reads the selector from them.
  [[nodiscard]] virtual const std::vector<Oc>& ocs() const = 0;
  // Its pruning of the space inside one of its OCs: `part` arrives with the OC's values
  // fixed, tdeg kept to the OC's side of 1 and the generic pruning done (merge none: mf = 1;
  // another family's parameters at their neutral value: appended ones it does not own, base
  // ones another family reads alone); it returns product sets whose valid settings are exactly
  // the OC's (only values that can never be valid removed: a part per streaming axis, the
  // shared tile its fused steps need). Default: the part as it came.
  [[nodiscard]] virtual std::vector<SpacePart> space_parts(const ProblemShape& shape, const Oc& oc,
                                                           ParamValues part) const {
    (void)shape;
    (void)oc;
    return {SpacePart{std::move(part), -1}};
  }
  // The canonical setting of s for a problem of this shape: every parameter its kernel does
  // not read set to a neutral value, and every factor its code clips for this stencil (an
  // unrolled chunk bounded by the stencil's size) set to the value the kernel really uses, so
  // settings that build the same kernel share one canonical setting (the space counts and
  // samples canonical settings, codegen builds from them, replay datasets load
  // canonicalised). The family's plan takes its clipped factors from here (KernelPlan::unroll),
  // so the two cannot disagree. It must keep a valid s valid, built by this family, with the
  // same plan, and be idempotent (tests/unit/test_kernel_family.cpp checks all four).
  [[nodiscard]] virtual Setting canonical(const ProblemShape& shape, const Setting& s) const {
    (void)shape;
    return s;
  }
  // The parameters it brings (appended after the base parameters, each declared by one family;
  // docs/kernel-plan.md, "A family with its own parameter"). Default: none.
  [[nodiscard]] virtual std::span<const OwnParam> own_params() const { return {}; }
  // Whether its kernel reads appended parameter p (one of its own_params).
  [[nodiscard]] bool owns(Param p) const {
    const auto list = own_params();
    return std::any_of(list.begin(), list.end(), [p](const OwnParam& o) { return o.param == p; });
  }
  // The base parameters only its kernel reads (ExclusiveParams: the streaming family's sd and
  // sb). Default: none.
  [[nodiscard]] virtual ExclusiveParams exclusive_params() const { return {}; }
  // Whether its kernel reads base parameter p alone (one of exclusive_params).
  [[nodiscard]] bool reads_alone(Param p) const {
    const auto list = exclusive_params().params;
    return std::any_of(list.begin(), list.end(), [p](const OwnParam& o) { return o.param == p; });
  }
  // Whether its kernel reads base parameter p (what `short_setting` prints of its settings).
  // Default: every base parameter; the tensor-core family reads only tdeg (it holds the others
  // at fixed values: canonical).
  [[nodiscard]] virtual bool reads_base(Param p) const {
    (void)p;
    return true;
  }
  // Its rules for the space (checked for the settings it builds).
  [[nodiscard]] virtual std::span<const FamilyRule> rules() const = 0;
  // The axis it streams along for s (1 = y, 2 = z), or -1: the generic tile rules
  // (tile covers the halo, unroll divides merge) apply to every other axis, and a 2-D
  // stencil's settings do not stream along z.
  [[nodiscard]] virtual int stream_axis(const Setting& s) const {
    (void)s;
    return -1;
  }
  // Whether its kernel for s computes every point of a tile of any extent (one step, each
  // point read with its halo: the tiled family at tdeg 1, the naive kernel's 32x4x2 among its
  // tiles). The generic rule that the tile exceed the halo along every axis but a streamed one
  // (tb_d * mf_d > 2 * radius_d) holds for every other setting: a kernel that fuses steps on
  // overlapped tiles, or streams, computes only a tile's interior. Default: false.
  [[nodiscard]] virtual bool takes_any_tile(const Setting& s) const {
    (void)s;
    return false;
  }

  // Plan arithmetic. `p` arrives with the generic part filled (dims, tdeg, steps_per_launch,
  // block, threads_per_block, halo, flops_per_cell); the family sets tile, loaded, grid,
  // stream_axis/stream_len, shared_bytes and the costs (plan_tiles / plan_costs help).
  virtual void plan(const ProblemShape& shape, const Setting& s, KernelPlan& p) const = 0;
  // The setting at one step per launch (default: tdeg = 1), from which an exported program's
  // entries at smaller depths (isl_rest<r>: tdeg = r) are built; the T % tdeg leftover steps a
  // depth has no entry for run on the plain one-step tail (kernels/one_step.cuh).
  [[nodiscard]] virtual Setting one_step(const Setting& s) const;
  // Predictor: factor on the roofline time for what the plan cannot see (1 = none).
  [[nodiscard]] virtual double cost_factor(const Setting& s) const {
    (void)s;
    return 1.0;
  }

  // Why codegen cannot build s beyond the space's rules (values out of range), or nullopt.
  [[nodiscard]] virtual std::optional<std::string> unsupported(const Setting& s) const = 0;
  // Namespace-scope declarations the family's IslApply member reads (a `__constant__` table),
  // emitted before the struct, or "".
  [[nodiscard]] virtual std::string apply_globals(const Stencil& stencil, const Setting& s,
                                                  const KernelPlan& plan) const {
    (void)stencil;
    (void)s;
    (void)plan;
    return {};
  }
  // The family's member of the generated IslApply struct (after the common `at`), or "".
  [[nodiscard]] virtual std::string apply_member(const Stencil& stencil, const Setting& s,
                                                 const KernelPlan& plan) const = 0;
  // The code of one entry named `name` (its config struct).
  [[nodiscard]] virtual FamilyCode code(const KernelPlan& plan, const Setting& s, const Grid& grid,
                                        std::string_view name) const = 0;
};

}  // namespace isletune
