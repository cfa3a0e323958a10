// OCs (optimization combinations, ARCHITECTURE §4): the kinds of kernel a family builds, each
// named by the values its settings give the parameters that select it and by whether it fuses
// steps (tdeg > 1). The kernel families declare them (KernelFamily::ocs, src/kernel/<family>.cpp)
// and the registry lists them (kernel/registry.hpp: oc_table, oc_of, oc_name); this file holds
// the type, its rule text, and the flag formula the tiled and streaming families number their
// OCs by (the ids traces, datasets and checkpoints recorded). The trace stores the table
// (/space/ocs) so readers need no copy of it.
#pragma once

#include <string>
#include <vector>

#include "setting/setting.hpp"

namespace isletune {

// OC ids are below this (an id is stable once recorded; a new family appends above the
// ids in use). Arrays indexed by OC id have this size.
inline constexpr int kOcCount = 64;

// One parameter value every setting of an OC has.
struct OcValue {
  Param param;
  int value = 0;
  bool operator==(const OcValue&) const = default;
};

// One OC as its family declares it.
struct Oc {
  int id = 0;
  std::string name;             // e.g. "stream+cyclic+retime+prefetch+tb", "tile"
  std::vector<OcValue> values;  // the parameter values that define it
  bool temporal = false;        // its settings fuse steps: tdeg > 1 (else tdeg = 1)

  // Whether s is in this OC: every value as declared and tdeg > 1 exactly when temporal.
  [[nodiscard]] bool holds(const Setting& s) const;
  // The rule in a line, as the trace's /space/ocs `rule` column stores it: the values as
  // `name=value` (enums by number) joined by ',', then `tdeg>1` or `tdeg=1`, e.g.
  // "streaming=1,merge=2,retiming=0,prefetch=0,tdeg>1".
  [[nodiscard]] std::string rule() const;
};

// The flags the tiled and streaming families' OCs are numbered by (their values of streaming,
// merge, retiming and prefetch, and tdeg > 1), and the trace's legacy flag columns.
struct OcFlags {
  int streaming = 0;  // 0/1
  int merge = 0;      // MergeKind
  int retiming = 0;   // 0/1
  int prefetch = 0;   // 0/1
  int temporal = 0;   // 0/1: tdeg > 1
};

// Id: ((((streaming * 3 + merge) * 2 + retiming) * 2 + prefetch) * 2 + temporal), stable.
[[nodiscard]] constexpr int oc_id(const OcFlags& f) {
  return (((f.streaming * 3 + f.merge) * 2 + f.retiming) * 2 + f.prefetch) * 2 + f.temporal;
}
[[nodiscard]] constexpr OcFlags oc_flags(int oc) {
  return OcFlags{oc / 24, (oc / 8) % 3, (oc / 4) % 2, (oc / 2) % 2, oc % 2};
}
// The OC of these flags with its recorded id and name (e.g. "stream+cyclic+retime+prefetch+tb",
// "tile"): what the tiled and streaming families declare.
[[nodiscard]] Oc flag_oc(const OcFlags& f);
// An OC's legacy flags (the trace's flag columns): its values of streaming, merge, retiming
// and prefetch (0 where it declares none) and its temporal.
[[nodiscard]] OcFlags flags_of(const Oc& oc);

}  // namespace isletune
