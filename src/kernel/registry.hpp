// The kernel families the tuner knows (registry.cpp lists them, one line each), the lookup every
// caller uses instead of branching on a family, and the OC table the families declare.
#pragma once

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/family.hpp"

namespace isletune {

// KernelFamily::builds reads only the OC parameters, which come first in parameter order and
// are all set once tdeg is, and a family's selector (appended, so last in parameter order: the
// space's enumeration of an OC sets the OC's values, the selector among them, before it
// descends): a family is known from this parameter on.
inline constexpr Param kFamilyKnown = Param::tdeg;

// Every registered family, in registry order.
[[nodiscard]] std::span<const KernelFamily* const> families();
// The registered family that builds s (OcTable::family_of: the first that builds it, a
// family's selector first), or nullptr.
[[nodiscard]] const KernelFamily* find_family(const Setting& s);
// The registered family named `name`, or nullptr.
[[nodiscard]] const KernelFamily* find_family(std::string_view name);
// The canonical setting of s for a problem of this shape, by the family that builds it (s
// itself when none does), with every appended parameter that family does not own at its
// neutral value, and every base parameter another family reads alone (OcTable::canonical):
// two settings build the same kernel of that problem
// exactly when their canonical settings are equal. The stencil matters: a factor its code
// clips for a large stencil (KernelPlan::unroll) is canonical at the clipped value.
[[nodiscard]] Setting canonical(const ProblemShape& shape, const Setting& s);
// Whether s is its own canonical setting for a problem of this shape.
[[nodiscard]] bool is_canonical(const ProblemShape& shape, const Setting& s);

// One row of the OC table: an OC and the family that declares it.
struct OcEntry {
  const Oc* oc = nullptr;
  const KernelFamily* family = nullptr;
};

// A family's selector (KernelFamily::ocs): its settings are those that give `param` one of
// `values` (never the parameter's neutral value).
struct FamilySelector {
  Param param;
  std::vector<int> values;
  const KernelFamily* family = nullptr;
};

// The OC table of a list of families (the registry's: oc_table() below; a test's own list, to
// try a family before it is registered, and a Space over it). Throws std::logic_error naming
// both when an id is out of range, declared twice, or when two families' OCs could hold one
// setting (every parameter both name at one value, both temporal or neither; an appended
// parameter a family does not own is neutral in its OCs): the first family would build it,
// the other's OC would never be reached; and naming the family when it declares a base
// parameter as its own or an appended one as read alone (exclusive_params), or a parameter
// another family of the list declares, or when its OCs name a parameter of its own (a
// selector) at its neutral value, or not in all of them, or name two.
class OcTable {
 public:
  explicit OcTable(std::span<const KernelFamily* const> families);
  // The families of the list, in order.
  [[nodiscard]] std::span<const KernelFamily* const> families() const { return families_; }
  // The family that builds s: when s gives a selector a value other than its neutral one, the
  // selector's family if it builds s (else nullptr); otherwise the first family of the list
  // without a selector that builds s, or nullptr. Without selectors: the first family of the
  // list that builds s.
  [[nodiscard]] const KernelFamily* family_of(const Setting& s) const;
  // The selectors of the list's families, in list order.
  [[nodiscard]] std::span<const FamilySelector> selectors() const { return selectors_; }
  // The family of the list that declares appended parameter p (KernelFamily::own_params), or
  // nullptr (then every setting holds it neutral).
  [[nodiscard]] const KernelFamily* owner(Param p) const;
  // The family of the list whose kernel reads base parameter p alone (KernelFamily::
  // exclusive_params), or nullptr: every other family's settings hold p at its neutral value.
  [[nodiscard]] const KernelFamily* alone_reader(Param p) const;
  // How the family that declares p (owner or alone_reader) declares it: its default and
  // allowed values; nullptr when no family of the list declares p.
  [[nodiscard]] const OwnParam* declaration(Param p) const;
  // The canonical setting of s (as ::canonical, for this list's families; a base parameter
  // another family reads alone at its neutral value too).
  [[nodiscard]] Setting canonical(const ProblemShape& shape, const Setting& s) const;
  // Every OC by ascending id.
  [[nodiscard]] std::span<const OcEntry> entries() const { return entries_; }
  // The OC with this id, or nullptr when no family of the list declares it.
  [[nodiscard]] const OcEntry* find(int id) const;
  // The id of the OC s is in (of the first family of the list that builds s), or -1.
  [[nodiscard]] int oc_of(const Setting& s) const;

 private:
  std::vector<const KernelFamily*> families_;
  std::vector<const KernelFamily*> unselected_;  // the families without a selector, in order
  std::vector<FamilySelector> selectors_;
  std::vector<OcEntry> entries_;
  std::array<int, kOcCount> row_{};  // id -> index into entries_, -1 when undeclared
  // Per parameter, the family that declares it (owner or alone_reader), or nullptr.
  std::array<const KernelFamily*, kParamCount> declarer_{};
};

// The registered families' OC table (what the space counts and /space/ocs records).
[[nodiscard]] const OcTable& registered_ocs();
// Its entries, by ascending id.
[[nodiscard]] std::span<const OcEntry> oc_table();
// The OC with this id, or nullptr when no registered family declares it.
[[nodiscard]] const OcEntry* find_oc(int id);
// The id of the OC s is in (the one of the family that builds s whose values s has), or -1.
[[nodiscard]] int oc_of(const Setting& s);
// The name of OC `id` ("oc<id>" when no family declares it).
[[nodiscard]] std::string oc_name(int id);

}  // namespace isletune
