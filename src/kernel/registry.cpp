// The registry of kernel families: one line per family (its accessor is defined in
// src/kernel/<family>.cpp). The first family whose builds() accepts a setting builds it.
#include "kernel/registry.hpp"

#include <array>

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

}  // namespace isletune
