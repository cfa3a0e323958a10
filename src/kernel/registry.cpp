// The registry of kernel families: one line per family (its accessor is defined in
// src/kernel/<family>.cpp). The first family whose builds() accepts a setting builds it.
#include "kernel/registry.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <vector>

namespace isletune {

const KernelFamily& tiled_family();      // src/kernel/tiled.cpp
const KernelFamily& streaming_family();  // src/kernel/streaming.cpp

std::span<const KernelFamily* const> families() {
  static const std::array<const KernelFamily*, 2> list = {&tiled_family(), &streaming_family()};
  return list;
}

const KernelFamily* find_family(const Setting& s) {
  for (const KernelFamily* f : families()) {
    if (f->builds(s))
      return f;
  }
  return nullptr;
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

// Whether one setting could be in both OCs: every parameter both name has one value in both,
// and both fuse steps or neither does.
bool overlap(const Oc& a, const Oc& b) {
  if (a.temporal != b.temporal)
    return false;
  for (const OcValue& va : a.values) {
    for (const OcValue& vb : b.values) {
      if (va.param == vb.param && va.value != vb.value)
        return false;
    }
  }
  return true;
}

std::string who(const Oc& oc, const KernelFamily& f) {
  return "OC " + std::to_string(oc.id) + " (" + oc.rule() + ") of the " + std::string(f.name()) +
         " family";
}

}  // namespace

OcTable::OcTable(std::span<const KernelFamily* const> families)
    : families_(families.begin(), families.end()) {
  for (const KernelFamily* f : families_) {
    for (const OwnParam& own : f->own_params()) {
      const std::string name(param_name(own.param));
      if (!is_appended(own.param)) {
        throw std::logic_error("the " + std::string(f->name()) + " family declares " + name +
                               " as its own, but it is a base parameter (kBaseParamCount)");
      }
      const KernelFamily* first = owner(own.param);
      if (first != f) {
        throw std::logic_error("the " + std::string(f->name()) + " family declares " + name +
                               ", which the " + std::string(first->name()) +
                               " family declares already");
      }
    }
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
        if (other.oc != nullptr && other.family != f && overlap(oc, *other.oc)) {
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
  for (const KernelFamily* f : families_) {
    if (f->builds(s))
      return f;
  }
  return nullptr;
}

const KernelFamily* OcTable::owner(Param p) const {
  for (const KernelFamily* f : families_) {
    if (f->owns(p))
      return f;
  }
  return nullptr;
}

Setting OcTable::canonical(const ProblemShape& shape, const Setting& s) const {
  const KernelFamily* f = family_of(s);
  if (f == nullptr)
    return s;
  Setting c = f->canonical(shape, s);
  for (std::size_t i = kBaseParamCount; i < kParamCount; ++i) {
    if (!f->owns(param_at(i)))
      c.values[i] = neutral_value(param_at(i));
  }
  return c;
}

const OcEntry* OcTable::find(int id) const {
  if (id < 0 || id >= kOcCount || row_[static_cast<std::size_t>(id)] < 0)
    return nullptr;
  return &entries_[static_cast<std::size_t>(row_[static_cast<std::size_t>(id)])];
}

int OcTable::oc_of(const Setting& s) const {
  for (const KernelFamily* f : families_) {
    if (!f->builds(s))
      continue;
    for (const Oc& oc : f->ocs()) {
      if (oc.holds(s))
        return oc.id;
    }
    return -1;
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
