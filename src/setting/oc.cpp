// The OC type: membership, rule text, and the flag-numbered OCs of the tiled and streaming
// families.
#include "setting/oc.hpp"

namespace isletune {

bool Oc::holds(const Setting& s) const {
  for (const OcValue& v : values) {
    if (s[v.param] != v.value)
      return false;
  }
  return (s[Param::tdeg] > 1) == temporal;
}

std::string Oc::rule() const {
  std::string out;
  for (const OcValue& v : values) {
    out += std::string(param_name(v.param)) + "=" + std::to_string(v.value) + ",";
  }
  out += temporal ? "tdeg>1" : "tdeg=1";
  return out;
}

Oc flag_oc(const OcFlags& f) {
  Oc oc;
  oc.id = oc_id(f);
  oc.name = f.streaming ? "stream" : "tile";
  if (f.merge != 0)
    oc.name += "+" + std::string(merge_name(static_cast<MergeKind>(f.merge)));
  if (f.retiming)
    oc.name += "+retime";
  if (f.prefetch)
    oc.name += "+prefetch";
  if (f.temporal)
    oc.name += "+tb";
  oc.values = {{Param::streaming, f.streaming},
               {Param::merge, f.merge},
               {Param::retiming, f.retiming},
               {Param::prefetch, f.prefetch}};
  oc.temporal = f.temporal != 0;
  return oc;
}

OcFlags flags_of(const Oc& oc) {
  OcFlags f;
  for (const OcValue& v : oc.values) {
    switch (v.param) {
      case Param::streaming:
        f.streaming = v.value;
        break;
      case Param::merge:
        f.merge = v.value;
        break;
      case Param::retiming:
        f.retiming = v.value;
        break;
      case Param::prefetch:
        f.prefetch = v.value;
        break;
      default:
        break;
    }
  }
  f.temporal = oc.temporal ? 1 : 0;
  return f;
}

}  // namespace isletune
