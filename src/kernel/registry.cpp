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
  const KernelFamily* f = find_family(s);
  return f ? f->canonical(shape, s) : s;
}

bool is_canonical(const ProblemShape& shape, const Setting& s) {
  return canonical(shape, s) == s;
}

namespace {

// The OC table by id (an entry with oc == nullptr: no family declares the id).
const std::array<OcEntry, kOcCount>& oc_index() {
  static const std::array<OcEntry, kOcCount> index = [] {
    std::array<OcEntry, kOcCount> out{};
    for (const KernelFamily* f : families()) {
      for (const Oc& oc : f->ocs()) {
        if (oc.id < 0 || oc.id >= kOcCount) {
          throw std::logic_error("the " + std::string(f->name()) + " family declares OC " +
                                 std::to_string(oc.id) + ", outside 0.." +
                                 std::to_string(kOcCount - 1));
        }
        OcEntry& e = out[static_cast<std::size_t>(oc.id)];
        if (e.oc != nullptr) {
          throw std::logic_error("OC " + std::to_string(oc.id) + " is declared by the " +
                                 std::string(e.family->name()) + " and the " +
                                 std::string(f->name()) + " family");
        }
        e = OcEntry{&oc, f};
      }
    }
    return out;
  }();
  return index;
}

}  // namespace

std::span<const OcEntry> oc_table() {
  static const std::vector<OcEntry> table = [] {
    std::vector<OcEntry> out;
    for (const OcEntry& e : oc_index()) {
      if (e.oc != nullptr)
        out.push_back(e);
    }
    return out;
  }();
  return table;
}

const OcEntry* find_oc(int id) {
  if (id < 0 || id >= kOcCount)
    return nullptr;
  const OcEntry& e = oc_index()[static_cast<std::size_t>(id)];
  return e.oc != nullptr ? &e : nullptr;
}

int oc_of(const Setting& s) {
  const KernelFamily* f = find_family(s);
  if (f == nullptr)
    return -1;
  for (const Oc& oc : f->ocs()) {
    if (oc.holds(s))
      return oc.id;
  }
  return -1;
}

std::string oc_name(int id) {
  const OcEntry* e = find_oc(id);
  return e != nullptr ? e->oc->name : "oc" + std::to_string(id);
}

}  // namespace isletune
