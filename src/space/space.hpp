// The optimization space (ARCHITECTURE §4): allowed values per parameter, explicit
// constraints, OC ids, counting valid settings per OC without enumerating huge spaces.
//
// Explicit constraints, each reported by violation() as one sentence:
//  - 2-D: tbz = mfz = ufz = 1 and sd = 1 (y).
//  - canonical form without streaming: sd = sb = 0, retiming = prefetch = 0.
//  - every other value is in its allowed list (sd/sb lists apply while streaming).
//  - streaming: sb <= grid extent along sd; block extent along sd is 1; mf_sd = 1;
//    uf_sd <= sb (the streaming loop is unrolled by uf_sd).
//  - at least 32 threads per block (tbx*tby*tbz); the block fits the device's per-axis
//    limits (block z <= 64 on H100) and max_threads_per_block (kernel_plan.hpp).
//  - merge none => every mf = 1; merge block/cyclic => some mf > 1.
//  - tile: tb_d * mf_d > 2 * radius_d along every tiled dimension d (all dims, minus sd
//    while streaming) where the stencil has radius_d > 0.
//  - unrolling along a tiled dimension applies to the per-thread loop over the mf_d
//    merged points, so uf_d must divide mf_d (without merging: uf_d = 1).
//  - tdeg > 1 (temporal blocking) keeps intermediate steps on chip, so it needs
//    use_shared = 1 or streaming = 1.
//  - the kernel plan (kernel_plan.hpp) can launch: blocks per axis within max_grid_dim and
//    the plan's shared memory within shared_per_block_optin.
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
#include "setting/setting.hpp"
#include "stencil/stencil.hpp"

namespace isletune {

// An OC (optimization combination): (streaming, merge kind, retiming, prefetch, tdeg > 1).
// Its id is stable: ((((streaming * 3 + merge) * 2 + retiming) * 2 + prefetch) * 2 + temporal).
inline constexpr int kOcCount = 48;

struct OcCount {
  int oc = 0;
  double count = 0;    // valid settings in this OC
  bool exact = false;  // false: seeded Monte-Carlo estimate
};

class Space {
 public:
  using Values = std::array<std::vector<int>, kParamCount>;

  // Default values of ARCHITECTURE §4 for a problem; parameters that do not apply in 2-D
  // (tbz, mfz, ufz, sd = z) get their single neutral value.
  static Values default_values(int dims, const Grid& grid);

  // Space over `values` (each list sorted, distinct, non-empty after construction).
  // Throws InputError naming the parameter when a value list is empty or out of range.
  Space(const Stencil& stencil, const Grid& grid, const DeviceLimits& limits, Values values);

  [[nodiscard]] const std::vector<int>& values(Param p) const { return values_[index_of(p)]; }
  [[nodiscard]] const Values& all_values() const { return values_; }
  [[nodiscard]] int dims() const { return dims_; }
  [[nodiscard]] int order() const { return order_; }
  [[nodiscard]] const Grid& grid() const { return grid_; }
  [[nodiscard]] const DeviceLimits& limits() const { return limits_; }
  // Largest |offset| of the stencil along an axis (0 = x, 1 = y, 2 = z).
  [[nodiscard]] int radius(int axis) const { return radius_[axis]; }
  // The values each parameter may take inside OC `oc` once the OC's fixed flags and the
  // canonical form are applied (e.g. sd = sb = 0 without streaming, mf = 1 for merge
  // none); every list empty when the OC holds no valid setting at all.
  [[nodiscard]] const Values& oc_domain(int oc) const { return oc_domains_[oc]; }

  // Why the setting is not valid (one sentence naming the violated constraint), or
  // nullopt when every explicit constraint holds and every value is allowed.
  [[nodiscard]] std::optional<std::string> violation(const Setting& s) const;
  [[nodiscard]] bool valid(const Setting& s) const { return !violation(s).has_value(); }

  [[nodiscard]] static int oc_of(const Setting& s);
  [[nodiscard]] static std::string oc_name(int oc);  // e.g. "stream+cyclic+retime+prefetch+tb"

  // Number of valid settings per OC (only OCs with at least one valid setting are
  // listed, in id order). Exact by enumeration when the OC's raw product of value
  // counts is at most `enumerate_limit`, otherwise a seeded Monte-Carlo estimate.
  [[nodiscard]] std::vector<OcCount> count_per_oc(std::uint64_t seed,
                                                  double enumerate_limit = 2e6) const;
  // Sum of count_per_oc.
  [[nodiscard]] double size(std::uint64_t seed = 0) const;

  // A uniformly random valid setting of OC `oc`, by rejection; nullopt after
  // `max_tries` draws without a valid one.
  [[nodiscard]] std::optional<Setting> random_in_oc(int oc, Rng& rng, int max_tries = 100000) const;
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
    // Depth-first over the parameters in order, pruning as soon as a constraint fails.
    Setting s;
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
        family = find_family(s);
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
