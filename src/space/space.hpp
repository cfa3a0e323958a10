// The optimization space (ARCHITECTURE §4): allowed values per parameter, explicit
// constraints, OC ids, counting valid settings per OC without enumerating huge spaces.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/rng.hpp"
#include "space/device_limits.hpp"
#include "space/setting.hpp"
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

  // Why the setting is not valid (one sentence naming the violated constraint), or
  // nullopt when every explicit constraint holds and every value is allowed.
  [[nodiscard]] std::optional<std::string> violation(const Setting& s) const;
  [[nodiscard]] bool valid(const Setting& s) const { return !violation(s).has_value(); }

  // Estimated shared memory bytes of the kernel for a setting (tile with halo, doubles).
  [[nodiscard]] long long shared_bytes(const Setting& s) const;

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
  [[nodiscard]] std::optional<Setting> random_in_oc(int oc, Rng& rng,
                                                    int max_tries = 100000) const;
  // A uniformly random valid setting of the whole space.
  [[nodiscard]] std::optional<Setting> random_setting(Rng& rng, int max_tries = 100000) const;

  // Calls f(setting) for every valid setting of OC `oc` (or all OCs when oc < 0) in
  // lexicographic parameter order. Only for spaces small enough to enumerate.
  template <typename F>
  void for_each_valid(int oc, F&& f) const;

 private:
  int dims_;
  int order_;
  std::array<int, 3> radius_;
  Grid grid_;
  DeviceLimits limits_;
  Values values_;
};

}  // namespace isletune
