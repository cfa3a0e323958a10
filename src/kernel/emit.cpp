// String building shared by the families' code emission.
#include "kernel/emit.hpp"

#include <cstdio>
#include <sstream>

namespace isletune {

std::string exact_literal(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return std::string("(") + buf + ")";
}

std::string coefficient(const Stencil& stencil, int k, bool use_constant) {
  return use_constant ? "isl_coef[" + std::to_string(k) + "]"
                      : exact_literal(stencil.coefficients()[static_cast<std::size_t>(k)]);
}

std::string constant(std::string_view name, long long value, std::string_view type) {
  return "  static constexpr " + std::string(type) + " " + std::string(name) + " = " +
         std::to_string(value) + (type == "long long" ? "LL" : "") + ";\n";
}

std::string apply_struct(const Stencil& stencil, const Setting& setting, const KernelPlan& plan) {
  const bool use_constant = setting[Param::use_constant] == 1;
  std::ostringstream s;
  const auto& off = stencil.offsets();
  const auto& coef = stencil.coefficients();
  if (use_constant) {
    s << "__constant__ double isl_coef[" << coef.size() << "] = {";
    for (std::size_t k = 0; k < coef.size(); ++k)
      s << (k ? ", " : "") << exact_literal(coef[k]);
    s << "};\n";
  }
  s << plan.family->apply_globals(stencil, setting, plan);
  s << "struct IslApply {\n"
    << "  template <int SY, int SZ>\n"
    << "  static __device__ __forceinline__ double at(const double* __restrict__ p) {\n"
    << "    double s = 0.0;\n";
  for (std::size_t k = 0; k < off.size(); ++k) {
    s << "    s += " << coefficient(stencil, static_cast<int>(k), use_constant) << " * p[("
      << off[k].x << ") + (" << off[k].y << ") * SY + (" << off[k].z << ") * SZ];\n";
  }
  s << "    return s;\n  }\n";
  s << plan.family->apply_member(stencil, setting, plan);
  s << "};\n";
  return s.str();
}

}  // namespace isletune
