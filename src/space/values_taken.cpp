// values_taken: seeded random valid settings per OC mark most values; each value left is
// decided by a pruned depth-first search over the space restricted to it.
#include "space/values_taken.hpp"

#include <algorithm>
#include <set>

namespace isletune {
namespace {

// Thrown from for_each_valid's callback to stop at the first valid setting.
struct Found {};

// Whether some valid setting of `space` takes value v for parameter i (stops at the
// first). OCs whose domain lacks v are skipped: a parameter another family reads alone is 0
// there (sd and sb outside the streaming OCs) whatever its list holds.
bool any_valid_with(const Space& space, std::size_t i, int v) {
  for (int oc = 0; oc < kOcCount; ++oc) {
    const auto& domain = space.oc_domain(oc)[i];
    if (std::find(domain.begin(), domain.end(), v) == domain.end())
      continue;
    try {
      space.for_each_valid(oc, [&](const Setting& s) {
        if (s.values[i] == v)
          throw Found{};
      });
    } catch (const Found&) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool has_valid_setting(const Space& space) {
  Rng rng(0x7a4b3, 18);
  for (int oc = 0; oc < kOcCount; ++oc) {
    if (!space.oc_domain(oc)[0].empty() && space.random_in_oc(oc, rng, 200))
      return true;
  }
  for (int oc = 0; oc < kOcCount; ++oc) {
    if (space.oc_domain(oc)[0].empty())
      continue;
    try {
      space.for_each_valid(oc, [](const Setting&) { throw Found{}; });
    } catch (const Found&) {
      return true;
    }
  }
  return false;
}

Space::Values values_taken(const Stencil& stencil, const Space& space) {
  std::array<std::set<int>, kParamCount> taken;
  auto mark = [&](const Setting& s) {
    for (std::size_t i = 0; i < kParamCount; ++i)
      taken[i].insert(s.values[i]);
  };
  // Random settings of every OC mark the common values (and the OC's canonical values).
  Rng rng(0x7a4b3, 17);
  for (int oc = 0; oc < kOcCount; ++oc) {
    if (space.oc_domain(oc)[0].empty())
      continue;
    for (int draw = 0; draw < 64; ++draw) {
      if (const auto s = space.random_in_oc(oc, rng, 2000))
        mark(*s);
    }
  }
  // A value not yet seen is taken when the space restricted to it holds a valid setting.
  for (std::size_t i = 0; i < kParamCount; ++i) {
    for (const int v : space.values(param_at(i))) {
      if (taken[i].contains(v))
        continue;
      Space::Values only = space.all_values();
      only[i] = {v};
      const Space restricted(stencil, space.grid(), space.limits(), only);
      if (any_valid_with(restricted, i, v))
        taken[i].insert(v);
    }
  }
  // Neutral values outside the lists (sd = sb = 0 in the families that do not stream: the
  // streaming family reads them alone) come only from settings, never from the lists: keep
  // those the draws saw.
  Space::Values out;
  for (std::size_t i = 0; i < kParamCount; ++i)
    out[i].assign(taken[i].begin(), taken[i].end());
  return out;
}

}  // namespace isletune
