// Code generation for the CUDA evaluator: setting → kernel plan → family → NVRTC source with
// main and tail entries and their launch configurations.
#include "eval/cuda/codegen.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>
#include <variant>

#include "kernel/emit.hpp"
#include "kernel/kernel_plan.hpp"
#include "kernel/registry.hpp"

namespace isletune::cuda {
namespace detail {
// Defined in the build-generated kernel_templates.cpp (kernels/*.cuh embedded as text).
struct EmbeddedFile {
  const char* name;
  const char* text;
};
extern const EmbeddedFile kEmbeddedKernels[];
extern const int kEmbeddedKernelCount;
}  // namespace detail

namespace {

LaunchConfig launch_of(const KernelPlan& plan) {
  LaunchConfig l;
  l.block = plan.block;
  l.grid = plan.grid;
  l.shared_bytes = static_cast<int>(plan.shared_bytes);
  l.steps = plan.steps_per_launch;
  return l;
}

// The plain one-step tail (kernels/one_step.cuh): its config struct and entry. Generated
// with the kernel it follows, so it reads the same IslApply (and __constant__ table).
std::string one_step_entry(const Stencil& stencil, const Grid& grid, std::string_view name) {
  const StencilReach h = reach_of(stencil);
  std::ostringstream e;
  e << kernel_template("one_step.cuh") << "\nstruct IslTail {\n"
    << constant("NX", grid.nx) << constant("NY", grid.ny) << constant("NZ", grid.nz)
    << constant("XLO", h.lo[0]) << constant("XHI", h.hi[0]) << constant("YLO", h.lo[1])
    << constant("YHI", h.hi[1]) << constant("ZLO", h.lo[2]) << constant("ZHI", h.hi[2])
    << "};\n\nextern \"C\" __global__ void __launch_bounds__(" << kOneStepThreads << ")\n"
    << name << "(const double* __restrict__ in, double* __restrict__ out) {\n"
    << "  isl::one_step<IslTail, IslApply>(in, out);\n"
    << "}\n";
  return e.str();
}

// extern "C" entry calling the family's device function with one config struct.
std::string entry(std::string_view name, const KernelPlan& plan, const FamilyCode& code,
                  std::string_view config) {
  std::ostringstream e;
  e << "extern \"C\" __global__ void __launch_bounds__(" << plan.threads_per_block;
  if (!code.min_blocks.empty())
    e << ", " << code.min_blocks;
  e << ")\n"
    << name << "(const double* __restrict__ in, double* __restrict__ out) {\n"
    << "  extern __shared__ double isl_smem[];\n"
    << "  isl::" << code.function << "<" << config << ", IslApply>(in, out, isl_smem);\n"
    << "}\n";
  return e.str();
}

}  // namespace

LaunchConfig one_step_launch(const Grid& grid) {
  LaunchConfig l;
  l.block = {kOneStepThreads, 1, 1};
  l.grid = {std::clamp<long long>((grid.cells() + kOneStepThreads - 1) / kOneStepThreads, 1,
                                  kOneStepMaxBlocks),
            1, 1};
  return l;
}

std::string_view kernel_template(std::string_view name) {
  for (int i = 0; i < detail::kEmbeddedKernelCount; ++i) {
    if (name == detail::kEmbeddedKernels[i].name)
      return detail::kEmbeddedKernels[i].text;
  }
  throw std::logic_error("kernel template not embedded: " + std::string(name));
}

std::variant<KernelPlan, std::string> codegen_plan(const Stencil& stencil, const Grid& grid,
                                                   const Setting& s, const DeviceLimits& limits) {
  if (grid.nx < 1 || grid.ny < 1 || grid.nz < 1 || grid.cells() > (1LL << 40) ||
      1LL * grid.nx * grid.ny > (1LL << 31) - 1) {
    return "the grid is empty or too large for 32-bit plane strides";
  }
  if (stencil.dims() == 2 && grid.nz != 1)
    return "a 2-D stencil needs nz = 1";
  const Param positive[] = {Param::tbx, Param::tby, Param::tbz, Param::mfx, Param::mfy,
                            Param::mfz, Param::ufx, Param::ufy, Param::ufz, Param::tdeg};
  for (Param p : positive) {
    if (s[p] < 1)
      return "parameter " + std::string(param_name(p)) + " must be >= 1";
  }
  constexpr const char* kFlat = "a 2-D stencil needs tbz = mfz = ufz = 1 and no streaming along z";
  if (stencil.dims() == 2 && (s[Param::tbz] != 1 || s[Param::mfz] != 1 || s[Param::ufz] != 1))
    return kFlat;
  const int merge = s[Param::merge];
  if (merge < 0 || merge > 2)
    return "merge must be none, block or cyclic";
  const KernelFamily* family = find_family(s);
  if (!family)
    return "no kernel family builds this setting";
  if (stencil.dims() == 2 && family->stream_axis(s) == 2)
    return kFlat;
  if (auto why = family->unsupported(s))
    return *why;
  // The family's own rules (the space checks them too; a kernel is never built without them).
  const ProblemShape shape = on_device(shape_of(stencil, grid), limits);
  for (const FamilyRule& rule : family->rules()) {
    std::string why;
    if (!rule.form && !rule.check(shape, s, &why))
      return why;
  }
  // Along a tiled axis the unroll covers the merged points; along the streaming axis it
  // unrolls the plane loop instead.
  for (int d = 0; d < 3; ++d) {
    const auto i = static_cast<std::size_t>(d);
    if (d == family->stream_axis(s))
      continue;
    if (s[kMf[i]] % s[kUf[i]] != 0) {
      return "merge factor " + std::string(param_name(kMf[i])) +
             " is not a multiple of unroll factor " + std::string(param_name(kUf[i]));
    }
  }
  return plan_or_violation(shape_of(stencil, grid), s, limits);
}

std::optional<std::string> unsupported_reason(const Stencil& stencil, const Grid& grid,
                                              const Setting& s, const DeviceLimits& limits) {
  auto plan = codegen_plan(stencil, grid, s, limits);
  if (auto* why = std::get_if<std::string>(&plan))
    return std::move(*why);
  return std::nullopt;
}

KernelSource generate_kernel(const Stencil& stencil, const Grid& grid, const Setting& setting,
                             const KernelPlan& plan) {
  const KernelFamily& family = *plan.family;
  // The kernel is built from the canonical setting (same plan), so settings that differ only
  // in parameters the family does not read, or in factors it clips for this stencil, get the
  // same source.
  const Setting s = family.canonical(shape_of(stencil, grid), setting);
  const FamilyCode main = family.code(plan, s, grid, "IslMain");
  KernelSource k;
  k.entry = "isl_kernel";
  k.launch = launch_of(plan);

  std::ostringstream src;
  src << "// isletune generated kernel\n"
      << "// stencil " << stencil.name() << " (" << stencil.dims() << "-D, " << stencil.size()
      << " points), grid " << grid.nx << "x" << grid.ny << "x" << grid.nz << "\n"
      << "// setting " << canonical_key(setting) << "\n"
      << "// kernel of " << canonical_key(s) << "\n"
      << "// main: " << family.name() << ", block " << plan.block[0] << "x" << plan.block[1] << "x"
      << plan.block[2] << ", grid " << plan.grid[0] << "x" << plan.grid[1] << "x" << plan.grid[2]
      << ", dynamic shared " << plan.shared_bytes << " B, " << plan.tdeg << " steps per launch\n\n"
      << kernel_template(main.template_file) << "\n"
      << apply_struct(stencil, s, plan) << "\n"
      << main.config << "\n"
      << entry(k.entry, plan, main, "IslMain");
  if (plan.steps_per_launch > 1) {
    // The T % tdeg leftover steps: the plain one-step kernel (kernels/one_step.cuh).
    k.tail_entry = "isl_tail";
    k.tail_launch = one_step_launch(grid);
    src << "\n" << one_step_entry(stencil, grid, k.tail_entry);
  }
  k.source = src.str();
  return k;
}

KernelSource generate_kernel(const Stencil& stencil, const Grid& grid, const Setting& s,
                             const DeviceLimits& limits) {
  auto plan = codegen_plan(stencil, grid, s, limits);
  if (auto* why = std::get_if<std::string>(&plan))
    throw std::logic_error("generate_kernel: " + *why);
  return generate_kernel(stencil, grid, s, std::get<KernelPlan>(plan));
}

KernelSource generate_export_kernel(const Stencil& stencil, const Grid& grid,
                                    const Setting& setting, const DeviceLimits& limits) {
  auto planned = codegen_plan(stencil, grid, setting, limits);
  if (auto* why = std::get_if<std::string>(&planned))
    throw std::logic_error("generate_export_kernel: " + *why);
  const KernelPlan& plan = std::get<KernelPlan>(planned);
  KernelSource k = generate_kernel(stencil, grid, setting, plan);
  const KernelFamily& family = *plan.family;
  const ProblemShape shape = shape_of(stencil, grid);
  const Setting s = family.canonical(shape, setting);
  std::ostringstream src;
  for (int depth = 2; depth < plan.steps_per_launch; ++depth) {
    Setting at = family.one_step(s);
    at[Param::tdeg] = depth;
    at = family.canonical(shape, at);
    // Only a depth this family builds within the device's limits (else the tail runs it).
    const auto check = codegen_plan(stencil, grid, at, limits);
    if (!std::holds_alternative<KernelPlan>(check) || std::get<KernelPlan>(check).family != &family)
      continue;
    const KernelPlan rest_plan = make_plan(family, shape, at);
    const std::string config = "IslRest" + std::to_string(depth);
    const FamilyCode code = family.code(rest_plan, at, grid, config);
    RestEntry rest{"isl_rest" + std::to_string(depth), launch_of(rest_plan)};
    src << "\n" << code.config << "\n" << entry(rest.entry, rest_plan, code, config);
    k.rest_entries.push_back(std::move(rest));
  }
  k.source += src.str();
  return k;
}

std::string generate_reference(const Stencil& stencil, const Grid& grid) {
  const StencilReach h = reach_of(stencil);
  std::ostringstream s;
  s << "// isletune reference module: stencil " << stencil.name() << ", grid " << grid.nx << "x"
    << grid.ny << "x" << grid.nz << "\n"
    << "#define NX " << grid.nx << "\n#define NY " << grid.ny << "\n#define NZ " << grid.nz
    << "\n#define XLO " << h.lo[0] << "\n#define XHI " << h.hi[0] << "\n#define YLO " << h.lo[1]
    << "\n#define YHI " << h.hi[1] << "\n#define ZLO " << h.lo[2] << "\n#define ZHI " << h.hi[2]
    << "\n#define NPTS " << stencil.size() << "\n";
  s << "__constant__ int isl_ref_off[NPTS][3] = {";
  for (int k = 0; k < stencil.size(); ++k) {
    const Offset& o = stencil.offsets()[k];
    s << (k ? ", " : "") << "{" << o.x << ", " << o.y << ", " << o.z << "}";
  }
  s << "};\n__constant__ double isl_ref_coef[NPTS] = {";
  for (int k = 0; k < stencil.size(); ++k) {
    s << (k ? ", " : "") << exact_literal(stencil.coefficients()[k]);
  }
  s << "};\n\n" << kernel_template("reference.cuh");
  return s.str();
}

}  // namespace isletune::cuda
