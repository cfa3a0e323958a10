// SpaceSource: the sampler's view of a Space (kept in its own file so code that samples
// from lists alone does not need the Space implementation).
#include "sample/setting_source.hpp"

namespace isletune {

// Distinct kernels per OC as the space computes them (exact or estimated); OCs whose
// settings all build kernels of another OC are left out.
std::vector<OcCount> SpaceSource::count_per_oc(std::uint64_t seed) const {
  std::vector<OcCount> out;
  for (OcCount c : space_.count_per_oc(seed)) {
    if (!(c.kernels > 0))
      continue;
    c.count = c.kernels;
    out.push_back(c);
  }
  return out;
}

// A uniformly random distinct kernel (valid canonical setting) of the OC, by rejection.
std::optional<Setting> SpaceSource::draw(int oc, Rng& rng) {
  return space_.random_kernel_in_oc(oc, rng, max_tries_);
}

}  // namespace isletune
