// OCs (optimization combinations, ARCHITECTURE §4): (streaming, merge kind, retiming,
// prefetch, tdeg > 1) of a setting, the one home of their id and name. The trace stores the
// table (/space/ocs) so readers need no copy of the formula.
#pragma once

#include <string>

#include "setting/setting.hpp"

namespace isletune {

// Id: ((((streaming * 3 + merge) * 2 + retiming) * 2 + prefetch) * 2 + temporal), stable.
inline constexpr int kOcCount = 48;

// The flags an OC id stands for.
struct OcFlags {
  int streaming = 0;  // 0/1
  int merge = 0;      // MergeKind
  int retiming = 0;   // 0/1
  int prefetch = 0;   // 0/1
  int temporal = 0;   // 0/1: tdeg > 1
};

[[nodiscard]] constexpr int oc_id(const OcFlags& f) {
  return (((f.streaming * 3 + f.merge) * 2 + f.retiming) * 2 + f.prefetch) * 2 + f.temporal;
}
[[nodiscard]] constexpr OcFlags oc_flags(int oc) {
  return OcFlags{oc / 24, (oc / 8) % 3, (oc / 4) % 2, (oc / 2) % 2, oc % 2};
}
// The OC of a setting (flags read as != 0, merge clamped to none..cyclic).
[[nodiscard]] int oc_of(const Setting& s);
// e.g. "stream+cyclic+retime+prefetch+tb", "tile".
[[nodiscard]] std::string oc_name(int oc);

}  // namespace isletune
