// The registry of kernel families: one line per family (its accessor is defined in
// src/kernel/<family>.cpp). The first family whose builds() accepts a setting builds it; a
// family with a selector (a parameter of its own its OCs name) builds the settings it selects.
#include "kernel/registry.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <stdexcept>
#include <vector>

namespace isletune {

const KernelFamily& tiled_family();      // src/kernel/tiled.cpp
const KernelFamily& streaming_family();  // src/kernel/streaming.cpp
const KernelFamily& mma_family();        // src/kernel/mma.cpp (selected by mma = 1)
#ifdef ISLETUNE_TEST_TEMPLATE_AXIS
const KernelFamily& template_family();  // src/kernel/family_template.cpp (tests/axis only)
#endif

std::span<const KernelFamily* const> families() {
  static const std::array list = {
      &tiled_family(), &streaming_family(), &mma_family(),
#ifdef ISLETUNE_TEST_TEMPLATE_AXIS
      &template_family(),  // selected by tpl_on = 1 (tests/axis)
#endif
  };
  return list;
}

const KernelFamily* find_family(const Setting& s) {
  return registered_ocs().family_of(s);
}

const KernelFamily* find_family(std::string_view name) {
  for (const KernelFamily* f : families()) {
    if (f->name() == name)
      return f;
  }
  return nullptr;
}

Setting canonical(const ProblemShape& shape, const Setting& s) {
  return registered_ocs().canonical(shape, s);
}

bool is_canonical(const ProblemShape& shape, const Setting& s) {
  return canonical(shape, s) == s;
}

namespace {

// The value every setting of OC `oc` of family f gives p: the value the OC names, the neutral
// value of an appended parameter f does not own (its settings hold it there), else nullopt.
std::optional<int> value_in(const Oc& oc, const KernelFamily& f, Param p) {
  for (const OcValue& v : oc.values) {
    if (v.param == p)
      return v.value;
  }
  if (is_appended(p) && !f.owns(p))
    return neutral_value(p);
  return std::nullopt;
}

// Whether one setting could be in both OCs: every parameter has one value in both where both
// fix it, and both fuse steps or neither does.
bool overlap(const Oc& a, const KernelFamily& fa, const Oc& b, const KernelFamily& fb) {
  if (a.temporal != b.temporal)
    return false;
  for (std::size_t i = 0; i < kParamCount; ++i) {
    const auto va = value_in(a, fa, param_at(i));
    const auto vb = value_in(b, fb, param_at(i));
    if (va && vb && *va != *vb)
      return false;
  }
  return true;
}

std::string who(const Oc& oc, const KernelFamily& f) {
  return "OC " + std::to_string(oc.id) + " (" + oc.rule() + ") of the " + std::string(f.name()) +
         " family";
}

// The selector of family f (KernelFamily::ocs): the parameter of its own its OCs name, with
// the values they name it at; nullopt when they name none. Throws std::logic_error when they
// name two, name one in some OCs only, or at its neutral value.
std::optional<FamilySelector> selector_of(const KernelFamily& f) {
  std::optional<FamilySelector> out;
  const std::string family = "the " + std::string(f.name()) + " family";
  for (const OwnParam& own : f.own_params()) {
    const Param p = own.param;
    const std::string name(param_name(p));
    std::vector<int> values;
    for (const Oc& oc : f.ocs()) {
      const auto v = std::find_if(oc.values.begin(), oc.values.end(),
                                  [p](const OcValue& ov) { return ov.param == p; });
      if (v == oc.values.end())
        continue;
      if (v->value == neutral_value(p)) {
        throw std::logic_error(who(oc, f) + " names its selector " + name + " at its neutral " +
                               "value " + std::to_string(v->value) +
                               ", which every other family's settings hold");
      }
      if (std::find(values.begin(), values.end(), v->value) == values.end())
        values.push_back(v->value);
    }
    if (values.empty())
      continue;
    for (const Oc& oc : f.ocs()) {
      if (!std::any_of(oc.values.begin(), oc.values.end(),
                       [p](const OcValue& ov) { return ov.param == p; })) {
        throw std::logic_error(who(oc, f) + " does not name " + name + ", which other OCs of " +
                               family + " name: a selector defines every OC of its family");
      }
    }
    if (out) {
      throw std::logic_error(family + " names two parameters of its own in its OCs (" +
                             std::string(param_name(out->param)) + " and " + name +
                             "): a family has at most one selector");
    }
    out = FamilySelector{p, std::move(values), &f};
  }
  return out;
}

}  // namespace

OcTable::OcTable(std::span<const KernelFamily* const> families)
    : families_(families.begin(), families.end()) {
  // Who declares each parameter: an appended one as a family's own (own_params), a base one as
  // read by a family alone (exclusive_params); the first declaration holds, a second throws.
  const auto declare = [&](const KernelFamily& f, std::span<const OwnParam> list, bool own) {
    for (const OwnParam& o : list) {
      const std::string name(param_name(o.param));
      if (is_appended(o.param) != own) {
        throw std::logic_error(
            "the " + std::string(f.name()) + " family declares " + name +
            (own ? " as its own, but it is a base parameter (kBaseParamCount)"
                 : " as read by it alone, but it is a parameter a family brings (own_params)"));
      }
      const KernelFamily*& first = declarer_[index_of(o.param)];
      if (first != nullptr && first != &f) {
        throw std::logic_error("the " + std::string(f.name()) + " family declares " + name +
                               ", which the " + std::string(first->name()) +
                               " family declares already");
      }
      first = &f;
    }
  };
  for (const KernelFamily* f : families_) {
    declare(*f, f->own_params(), true);
    declare(*f, f->exclusive_params().params, false);
  }
  for (const KernelFamily* f : families_) {
    if (auto selector = selector_of(*f))
      selectors_.push_back(std::move(*selector));
    else
      unselected_.push_back(f);
  }
  row_.fill(-1);
  std::array<OcEntry, kOcCount> by_id{};
  for (const KernelFamily* f : families_) {
    for (const Oc& oc : f->ocs()) {
      if (oc.id < 0 || oc.id >= kOcCount) {
        throw std::logic_error(who(oc, *f) + " has an id outside 0.." +
                               std::to_string(kOcCount - 1));
      }
      OcEntry& e = by_id[static_cast<std::size_t>(oc.id)];
      if (e.oc != nullptr)
        throw std::logic_error(who(oc, *f) + " reuses the id of " + who(*e.oc, *e.family));
      for (const OcEntry& other : by_id) {
        if (other.oc != nullptr && other.family != f && overlap(oc, *f, *other.oc, *other.family)) {
          throw std::logic_error(who(oc, *f) + " could hold the settings of " +
                                 who(*other.oc, *other.family) +
                                 ": the family listed first would build them");
        }
      }
      e = OcEntry{&oc, f};
    }
  }
  for (const OcEntry& e : by_id) {
    if (e.oc != nullptr) {
      row_[static_cast<std::size_t>(e.oc->id)] = static_cast<int>(entries_.size());
      entries_.push_back(e);
    }
  }
}

const KernelFamily* OcTable::family_of(const Setting& s) const {
  for (const FamilySelector& sel : selectors_) {
    const int v = s[sel.param];
    if (v == neutral_value(sel.param))
      continue;
    const bool selected = std::find(sel.values.begin(), sel.values.end(), v) != sel.values.end();
    return selected && sel.family->builds(s) ? sel.family : nullptr;
  }
  for (const KernelFamily* f : unselected_) {
    if (f->builds(s))
      return f;
  }
  return nullptr;
}

const KernelFamily* OcTable::owner(Param p) const {
  return is_appended(p) ? declarer_[index_of(p)] : nullptr;
}

const KernelFamily* OcTable::alone_reader(Param p) const {
  return is_appended(p) ? nullptr : declarer_[index_of(p)];
}

const OwnParam* OcTable::declaration(Param p) const {
  const KernelFamily* f = declarer_[index_of(p)];
  if (f == nullptr)
    return nullptr;
  for (const OwnParam& o : is_appended(p) ? f->own_params() : f->exclusive_params().params) {
    if (o.param == p)
      return &o;
  }
  return nullptr;
}

Setting OcTable::canonical(const ProblemShape& shape, const Setting& s) const {
  const KernelFamily* f = family_of(s);
  if (f == nullptr)
    return s;
  Setting c = f->canonical(shape, s);
  for (std::size_t i = 0; i < kParamCount; ++i) {
    const Param p = param_at(i);
    if ((is_appended(p) || declarer_[i] != nullptr) && declarer_[i] != f)
      c.values[i] = neutral_value(p);
  }
  return c;
}

const OcEntry* OcTable::find(int id) const {
  if (id < 0 || id >= kOcCount || row_[static_cast<std::size_t>(id)] < 0)
    return nullptr;
  return &entries_[static_cast<std::size_t>(row_[static_cast<std::size_t>(id)])];
}

int OcTable::oc_of(const Setting& s) const {
  const KernelFamily* f = family_of(s);
  if (f == nullptr)
    return -1;
  for (const Oc& oc : f->ocs()) {
    if (oc.holds(s))
      return oc.id;
  }
  return -1;
}

const OcTable& registered_ocs() {
  static const OcTable table(families());
  return table;
}

std::span<const OcEntry> oc_table() {
  return registered_ocs().entries();
}

const OcEntry* find_oc(int id) {
  return registered_ocs().find(id);
}

int oc_of(const Setting& s) {
  return registered_ocs().oc_of(s);
}

std::string oc_name(int id) {
  const OcEntry* e = find_oc(id);
  return e != nullptr ? e->oc->name : "oc" + std::to_string(id);
}

}  // namespace isletune
