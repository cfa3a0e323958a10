// The kernel families the tuner knows (registry.cpp lists them, one line each) and the
// lookup every caller uses instead of branching on a family.
#pragma once

#include <span>
#include <string_view>

#include "kernel/family.hpp"

namespace isletune {

// KernelFamily::builds reads only the OC parameters, which come first in parameter order and
// are all set once tdeg is: a family is known from this parameter on.
inline constexpr Param kFamilyKnown = Param::tdeg;

// Every registered family, in registry order.
[[nodiscard]] std::span<const KernelFamily* const> families();
// The first registered family that builds s, or nullptr.
[[nodiscard]] const KernelFamily* find_family(const Setting& s);
// The registered family named `name`, or nullptr.
[[nodiscard]] const KernelFamily* find_family(std::string_view name);
// The canonical setting of s for a problem of this shape, by the family that builds it (s
// itself when none does): two settings build the same kernel of that problem exactly when
// their canonical settings are equal. The stencil matters: a factor its code clips for a large
// stencil (KernelPlan::unroll) is canonical at the clipped value.
[[nodiscard]] Setting canonical(const ProblemShape& shape, const Setting& s);
// Whether s is its own canonical setting for a problem of this shape.
[[nodiscard]] bool is_canonical(const ProblemShape& shape, const Setting& s);

}  // namespace isletune
