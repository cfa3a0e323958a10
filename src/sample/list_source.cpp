// ListSource: sampling restricted to an explicit list of settings.
#include <algorithm>
#include <unordered_set>

#include "sample/setting_source.hpp"

namespace isletune {
namespace {

// OC id by the formula documented with kOcCount in space.hpp (the same value as
// Space::oc_of; computed here so list sampling needs no Space object).
int oc_id(const Setting& s) {
  const int temporal = s[Param::tdeg] > 1 ? 1 : 0;
  return (((s[Param::streaming] * 3 + s[Param::merge]) * 2 + s[Param::retiming]) * 2 +
          s[Param::prefetch]) *
             2 +
         temporal;
}

}  // namespace

// Groups the distinct listed settings by OC, keeping list order inside each OC.
ListSource::ListSource(std::vector<Setting> settings)
    : remaining_(kOcCount), counts_(kOcCount, 0.0) {
  std::unordered_set<Setting, SettingHash> seen;
  for (const Setting& s : settings) {
    if (!seen.insert(s).second)
      continue;
    const int oc = oc_id(s);
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
