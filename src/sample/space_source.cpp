// SpaceSource: the sampler's view of a Space (kept in its own file so code that samples
// from lists alone does not need the Space implementation).
#include "sample/setting_source.hpp"

namespace isletune {

// Per-OC counts as the space computes them (exact or estimated).
std::vector<OcCount> SpaceSource::count_per_oc(std::uint64_t seed) const {
  return space_.count_per_oc(seed);
}

// A uniformly random valid setting of the OC, by rejection.
std::optional<Setting> SpaceSource::draw(int oc, Rng& rng) {
  return space_.random_in_oc(oc, rng, max_tries_);
}

}  // namespace isletune
