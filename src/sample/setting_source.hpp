// Where the sampler's settings come from, per OC: the space itself (rejection sampling,
// never enumerated) or an explicit finite list (replay datasets: only recorded settings).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/rng.hpp"
#include "setting/setting.hpp"
#include "space/space.hpp"

namespace isletune {

class SettingSource {
 public:
  virtual ~SettingSource() = default;
  // Distinct kernels (canonical settings, kernel/registry.hpp) per OC (OCs with none are
  // left out), in OC id order.
  [[nodiscard]] virtual std::vector<OcCount> count_per_oc(std::uint64_t seed) const = 0;
  // One canonical setting of OC `oc`. It may repeat an earlier draw (the sampler dedupes);
  // nullopt when the OC has nothing (more) to give.
  virtual std::optional<Setting> draw(int oc, Rng& rng) = 0;
};

// Rejection sampling from a Space (Space::random_kernel_in_oc); counts: the kernels of
// Space::count_per_oc.
class SpaceSource final : public SettingSource {
 public:
  explicit SpaceSource(const Space& space, int max_tries = 100000)
      : space_(space), max_tries_(max_tries) {}
  [[nodiscard]] std::vector<OcCount> count_per_oc(std::uint64_t seed) const override;
  std::optional<Setting> draw(int oc, Rng& rng) override;

 private:
  const Space& space_;
  int max_tries_;
};

// A finite candidate list (e.g. the settings recorded in a replay dataset). Draws are
// without replacement: every listed setting comes out at most once, then nullopt.
class ListSource final : public SettingSource {
 public:
  // The settings are canonicalised for a problem of this shape (kernel/registry.hpp) and
  // duplicates dropped: a list recorded before canonical settings existed offers each kernel
  // once, under its canonical setting. OC ids come from oc_of (setting/oc.hpp).
  ListSource(const ProblemShape& shape, std::vector<Setting> settings);
  [[nodiscard]] std::vector<OcCount> count_per_oc(std::uint64_t seed) const override;
  std::optional<Setting> draw(int oc, Rng& rng) override;

 private:
  std::vector<std::vector<Setting>> remaining_;  // per OC id, not drawn yet
  std::vector<double> counts_;                   // per OC id, listed settings
};

}  // namespace isletune
