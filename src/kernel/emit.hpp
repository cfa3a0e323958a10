// String building shared by the families' code emission (no CUDA header: the text is compiled
// later by NVRTC or nvcc): exact coefficient literals, config-struct constants and the
// generated IslApply struct.
#pragma once

#include <string>
#include <string_view>

#include "kernel/kernel_plan.hpp"
#include "setting/setting.hpp"
#include "stencil/stencil.hpp"

namespace isletune {

// A double as an exact hexadecimal literal "(0x1.8p-1)" (round-trips bit for bit).
[[nodiscard]] std::string exact_literal(double v);
// Coefficient k of the stencil: `isl_coef[k]` (use_constant) or its exact literal.
[[nodiscard]] std::string coefficient(const Stencil& stencil, int k, bool use_constant);
// `  static constexpr <type> NAME = value;` line of a config struct.
[[nodiscard]] std::string constant(std::string_view name, long long value,
                                   std::string_view type = "int");
// The IslApply struct every entry uses: the `__constant__ isl_coef` table when
// use_constant, Apply::at<SY, SZ>(p) (the weighted sum around p, every family's edge path),
// then the family's member (plan.family->apply_member).
[[nodiscard]] std::string apply_struct(const Stencil& stencil, const Setting& s,
                                       const KernelPlan& plan);

}  // namespace isletune
