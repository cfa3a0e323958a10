// The optimization space (docs/architecture.md, "The search space"): allowed values per parameter,
// explicit constraints, OC ids, counting valid settings per OC without enumerating huge spaces.
//
// The explicit constraints are the generic rules of space.cpp (one table, used for messages,
// pruned enumeration and the text `isletune space` prints: Space::constraints()) and the rules
// of the kernel family that builds a setting (KernelFamily::rules, src/kernel/<family>.cpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/rng.hpp"
#include "kernel/kernel_plan.hpp"
#include "kernel/registry.hpp"
#include "setting/device_limits.hpp"
#include "setting/oc.hpp"
#include "setting/setting.hpp"
#include "stencil/stencil.hpp"

namespace isletune {

struct OcCount {
  int oc = 0;
  double count = 0;    // valid settings in this OC
  bool exact = false;  // false: seeded Monte-Carlo estimate
  double kernels = 0;  // distinct kernels: valid settings canonical for the stencil (registry.hpp)
};

class Space {
 public:
  using Values = ParamValues;

  // Default values of docs/architecture.md, "The search space" for a problem; parameters that do
  // not apply in 2-D (tbz, mfz, ufz) get their single neutral value. A parameter a family of
  // `ocs` declares (an appended one it brings, KernelFamily::own_params; a base one it reads
  // alone, exclusive_params: the streaming family's sd and sb) gets that family's defaults; an
  // appended one no family declares its neutral value alone.
  static Values default_values(int dims, const Grid& grid, const OcTable& ocs = registered_ocs());
  // Every explicit constraint in a line: the generic rules, then each registered family's.
  [[nodiscard]] static std::vector<std::string> constraints();

  // Space over `values` (each list sorted, distinct, non-empty after construction) and the
  // kernel families of `ocs` (the registry's; a test's own list, which must outlive the space).
  // Throws InputError naming the parameter when a value list is empty or out of range.
  Space(const Stencil& stencil, const Grid& grid, const DeviceLimits& limits, Values values,
        const OcTable& ocs = registered_ocs());

  [[nodiscard]] const std::vector<int>& values(Param p) const { return values_[index_of(p)]; }
  [[nodiscard]] const Values& all_values() const { return values_; }
  [[nodiscard]] int dims() const { return dims_; }
  [[nodiscard]] int order() const { return order_; }
  [[nodiscard]] const Grid& grid() const { return grid_; }
  [[nodiscard]] const DeviceLimits& limits() const { return limits_; }
  // What the rules, the plan and canonical settings know of the problem (kernel/family.hpp).
  [[nodiscard]] const ProblemShape& shape() const { return shape_; }
  // Largest |offset| of the stencil along an axis (0 = x, 1 = y, 2 = z).
  [[nodiscard]] int radius(int axis) const { return radius_[axis]; }
  // The values each parameter may take inside OC `oc` once the OC's values, the generic
  // pruning and its family's (KernelFamily::space_parts) are applied (e.g. sd = sb = 0 in
  // another family's OCs than the streaming one, mf = 1 for merge none); every list empty when
  // the OC holds no valid
  // setting at all or no family declares it.
  [[nodiscard]] const Values& oc_domain(int oc) const { return oc_domains_[oc]; }

  // Why the setting is not valid (one sentence naming the violated constraint), or
  // nullopt when every explicit constraint holds and every value is allowed.
  [[nodiscard]] std::optional<std::string> violation(const Setting& s) const;
  [[nodiscard]] bool valid(const Setting& s) const { return !violation(s).has_value(); }

  // The kernel families and OCs of this space.
  [[nodiscard]] const OcTable& ocs() const { return *ocs_; }
  // The OC of a setting and an OC's name (the registered families declare the OCs:
  // kernel/registry.hpp).
  [[nodiscard]] static int oc_of(const Setting& s);
  [[nodiscard]] static std::string oc_name(int oc);

  // Number of valid settings and of distinct kernels per OC (only OCs with at least one
  // valid setting are listed, in id order). Exact by enumeration when the OC's raw product
  // of value counts is at most `enumerate_limit`, otherwise a seeded Monte-Carlo estimate.
  // The OCs are the families' (KernelFamily::ocs); a family declares no OC whose settings
  // would all build another OC's kernels (tile+cyclic+tb, OC 17, is not declared), so an OC
  // listed with 0 kernels is a Monte-Carlo estimate that drew no canonical setting.
  [[nodiscard]] std::vector<OcCount> count_per_oc(std::uint64_t seed,
                                                  double enumerate_limit = 2e6) const;
  // Sum of count_per_oc.
  [[nodiscard]] double size(std::uint64_t seed = 0) const;

  // A uniformly random valid setting of OC `oc`, by rejection; nullopt after
  // `max_tries` draws without a valid one.
  [[nodiscard]] std::optional<Setting> random_in_oc(int oc, Rng& rng, int max_tries = 100000) const;
  // A uniformly random distinct kernel of OC `oc`: a valid canonical setting, by rejection
  // (what the sampler draws, so no kernel is sampled twice under two settings).
  [[nodiscard]] std::optional<Setting> random_kernel_in_oc(int oc, Rng& rng,
                                                           int max_tries = 100000) const;
  // A uniformly random valid setting of the whole space.
  [[nodiscard]] std::optional<Setting> random_setting(Rng& rng, int max_tries = 100000) const;

  // Calls f(setting) for every valid setting of OC `oc` (or all OCs when oc < 0) in
  // lexicographic parameter order. Only for spaces small enough to enumerate.
  template <typename F>
  void for_each_valid(int oc, F&& f) const;

 private:
  friend struct SpaceRules;
  // True when every constraint decided once parameters 0..p are set holds for `s`
  // (p is a parameter index), for settings whose values come from an OC's domain (so
  // allowed by construction): lets enumeration prune whole subtrees.
  [[nodiscard]] bool stage_ok(const Setting& s, std::size_t p) const;
  // Same, with the family that builds s already looked up (nullptr: none, or p < tdeg).
  [[nodiscard]] bool stage_ok(const Setting& s, std::size_t p, const KernelFamily* family) const;

  int dims_;
  int order_;
  std::array<int, 3> radius_;
  ProblemShape shape_;
  Grid grid_;
  DeviceLimits limits_;
  const OcTable* ocs_;
  Values values_;
  std::vector<Values> oc_domains_;             // per OC: union of its parts
  std::vector<std::vector<Values>> oc_parts_;  // per OC: product sets (one per sd) to sample
};

template <typename F>
void Space::for_each_valid(int oc, F&& f) const {
  const int first = oc < 0 ? 0 : oc;
  const int last = oc < 0 ? kOcCount - 1 : oc;
  for (int o = first; o <= last; ++o) {
    const Values& dom = oc_domains_[static_cast<std::size_t>(o)];
    if (dom[0].empty())
      continue;
    // Depth-first over the parameters in order, pruning as soon as a constraint fails. The
    // OC's values are set first: a family's selector comes last in parameter order, and the
    // family is looked up at kFamilyKnown.
    Setting s;
    for (const OcValue& v : ocs_->find(o)->oc->values)
      s[v.param] = v.value;
    std::array<std::size_t, kParamCount> at{};
    std::size_t depth = 0;
    const KernelFamily* family = nullptr;  // looked up once the OC parameters are set
    while (true) {
      if (at[depth] == dom[depth].size()) {
        if (depth == 0)
          break;
        --depth;
        ++at[depth];
        continue;
      }
      s.values[depth] = dom[depth][at[depth]];
      if (depth == index_of(kFamilyKnown))
        family = ocs_->family_of(s);
      if (!stage_ok(s, depth, depth >= index_of(kFamilyKnown) ? family : nullptr)) {
        ++at[depth];
        continue;
      }
      if (depth + 1 == kParamCount) {
        f(static_cast<const Setting&>(s));
        ++at[depth];
        continue;
      }
      ++depth;
      at[depth] = 0;
    }
  }
}

}  // namespace isletune
