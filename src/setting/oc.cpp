// OC ids and names.
#include "setting/oc.hpp"

#include <algorithm>

namespace isletune {

int oc_of(const Setting& s) {
  return oc_id(OcFlags{s[Param::streaming] != 0 ? 1 : 0, std::clamp(s[Param::merge], 0, 2),
                       s[Param::retiming] != 0 ? 1 : 0, s[Param::prefetch] != 0 ? 1 : 0,
                       s[Param::tdeg] > 1 ? 1 : 0});
}

std::string oc_name(int oc) {
  const OcFlags f = oc_flags(oc);
  std::string name = f.streaming ? "stream" : "tile";
  if (f.merge != 0)
    name += "+" + std::string(merge_name(static_cast<MergeKind>(f.merge)));
  if (f.retiming)
    name += "+retime";
  if (f.prefetch)
    name += "+prefetch";
  if (f.temporal)
    name += "+tb";
  return name;
}

}  // namespace isletune
