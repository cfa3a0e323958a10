// ListSource: sampling restricted to an explicit list of settings.
#include <algorithm>
#include <unordered_set>

#include "kernel/registry.hpp"
#include "sample/setting_source.hpp"

namespace isletune {

// Groups the distinct canonical settings of the list by OC, keeping list order inside each
// OC (a kernel listed under several settings comes once, at its first place).
ListSource::ListSource(const ProblemShape& shape, std::vector<Setting> settings)
    : remaining_(kOcCount), counts_(kOcCount, 0.0) {
  std::unordered_set<Setting, SettingHash> seen;
  for (const Setting& listed : settings) {
    const Setting s = canonical(shape, listed);
    if (!seen.insert(s).second)
      continue;
    const int oc = oc_of(s);
    if (oc < 0 || oc >= kOcCount)
      continue;
    remaining_[oc].push_back(s);
    counts_[oc] += 1;
  }
}

// Exact counts of the listed settings per OC.
std::vector<OcCount> ListSource::count_per_oc(std::uint64_t) const {
  std::vector<OcCount> out;
  for (int oc = 0; oc < kOcCount; ++oc) {
    if (counts_[oc] > 0)
      out.push_back(OcCount{oc, counts_[oc], true});
  }
  return out;
}

// Removes and returns a uniformly random not-yet-drawn listed setting of the OC.
std::optional<Setting> ListSource::draw(int oc, Rng& rng) {
  if (oc < 0 || oc >= kOcCount || remaining_[oc].empty())
    return std::nullopt;
  auto& pool = remaining_[oc];
  const std::size_t i = rng.below(pool.size());
  std::swap(pool[i], pool.back());
  Setting s = pool.back();
  pool.pop_back();
  return s;
}

}  // namespace isletune
