// Code generation for the CUDA evaluator: setting → kernel plan → family → NVRTC source with
// main and tail entries and their launch configurations.
#include "eval/cuda/codegen.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

#include "eval/cuda/codegen_family.hpp"
#include "space/kernel_plan.hpp"

namespace isletune::cuda {
namespace detail {
// Defined in the build-generated kernel_templates.cpp (kernels/*.cuh embedded as text).
struct EmbeddedFile {
  const char* name;
  const char* text;
};
extern const EmbeddedFile kEmbeddedKernels[];
extern const int kEmbeddedKernelCount;

std::string constant(std::string_view name, long long value, std::string_view type) {
  return "  static constexpr " + std::string(type) + " " + std::string(name) + " = " +
         std::to_string(value) + (type == "long long" ? "LL" : "") + ";\n";
}
}  // namespace detail

namespace {

// A double as an exact hexadecimal literal (round-trips bit for bit).
std::string exact_literal(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return std::string("(") + buf + ")";
}

// Apply::block: one chunk of ufx x ufy x ufz merged points, `step` apart per axis (1 for
// block merging, the block extent for cyclic). Every input position the chunk needs is
// loaded once, in (z, y, x) order, and added into each point that uses it.
std::string block_function(const Stencil& stencil, const Setting& s, bool use_constant) {
  const bool cyclic = s[Param::merge] == static_cast<int>(MergeKind::cyclic);
  const std::array<int, 3> uf{s[Param::ufx], s[Param::ufy], s[Param::ufz]};
  const std::array<int, 3> step{cyclic ? s[Param::tbx] : 1, cyclic ? s[Param::tby] : 1,
                                cyclic ? s[Param::tbz] : 1};
  struct Use {
    int point;
    int coef;
  };
  std::map<std::array<int, 3>, std::vector<Use>> inputs;  // key (z, y, x)
  std::vector<std::array<int, 3>> points;                 // (x, y, z) of each point
  for (int uz = 0; uz < uf[2]; ++uz) {
    for (int uy = 0; uy < uf[1]; ++uy) {
      for (int ux = 0; ux < uf[0]; ++ux) {
        const std::array<int, 3> pt{ux * step[0], uy * step[1], uz * step[2]};
        const int q = static_cast<int>(points.size());
        points.push_back(pt);
        for (int k = 0; k < stencil.size(); ++k) {
          const Offset& o = stencil.offsets()[k];
          inputs[{pt[2] + o.z, pt[1] + o.y, pt[0] + o.x}].push_back({q, k});
        }
      }
    }
  }
  std::ostringstream b;
  b << "  template <long long SROW, long long SPLANE, long long OROW, long long OPLANE>\n"
    << "  static __device__ __forceinline__ void block(const double* __restrict__ p,\n"
    << "                                               double* __restrict__ o) {\n";
  b << "    double";
  for (std::size_t q = 0; q < points.size(); ++q)
    b << (q ? ", a" : " a") << q;
  b << ";\n";
  std::vector<bool> started(points.size(), false);
  for (const auto& [pos, uses] : inputs) {
    b << "    {\n      const double v = p[(" << pos[2] << ") + (" << pos[1] << ") * SROW + ("
      << pos[0] << ") * SPLANE];\n";
    for (const Use& u : uses) {
      const std::string c = use_constant ? "isl_coef[" + std::to_string(u.coef) + "]"
                                         : exact_literal(stencil.coefficients()[u.coef]);
      b << "      a" << u.point << (started[u.point] ? " += " : " = ") << c << " * v;\n";
      started[u.point] = true;
    }
    b << "    }\n";
  }
  for (std::size_t q = 0; q < points.size(); ++q) {
    b << "    o[(" << points[q][0] << ") + (" << points[q][1] << ") * OROW + (" << points[q][2]
      << ") * OPLANE] = a" << q << ";\n";
  }
  b << "  }\n";
  return b.str();
}

// The Apply struct of the kernel templates: the stencil's weighted sum, unrolled, per point
// (edge path) and per chunk of merged points (fast path).
// Apply::ring<LA>(pl, i) of the streaming family: the weighted sum at in-plane index i of a
// ring of planes (pl[k] = plane at streaming offset k - slo), offsets mapped to the in-plane
// axes (x, b) and the streaming axis. With retiming the sum is split into per-plane partial
// sums, added plane by plane along the stream.
std::string ring_function(const Stencil& stencil, const Setting& setting, bool use_constant,
                          int slo) {
  const int sd = setting[Param::sd];
  const bool retime = setting[Param::retiming] != 0;
  std::map<int, std::vector<int>> by_plane;  // streaming offset -> stencil points
  for (int k = 0; k < stencil.size(); ++k) {
    const Offset& o = stencil.offsets()[k];
    by_plane[sd == 2 ? o.z : o.y].push_back(k);
  }
  std::ostringstream r;
  r << "  template <int LA>\n"
    << "  static __device__ __forceinline__ double ring(const double* const* pl, int i) {\n"
    << "    double s = 0.0;\n";
  for (const auto& [ds, points] : by_plane) {
    if (retime)
      r << "    {\n      double part = 0.0;\n";
    for (const int k : points) {
      const Offset& o = stencil.offsets()[k];
      const int db = sd == 2 ? o.y : o.z;
      const std::string c = use_constant ? "isl_coef[" + std::to_string(k) + "]"
                                         : exact_literal(stencil.coefficients()[k]);
      r << (retime ? "      part += " : "    s += ") << c << " * pl[" << ds + slo << "][i + ("
        << o.x << ") + (" << db << ") * LA];\n";
    }
    if (retime)
      r << "      s += part;\n    }\n";
  }
  r << "    return s;\n  }\n";
  return r.str();
}

std::string apply_struct(const Stencil& stencil, const Setting& setting, bool use_constant,
                         const KernelPlan& plan) {
  std::ostringstream s;
  const auto& off = stencil.offsets();
  const auto& coef = stencil.coefficients();
  if (use_constant) {
    s << "__constant__ double isl_coef[" << coef.size() << "] = {";
    for (std::size_t k = 0; k < coef.size(); ++k)
      s << (k ? ", " : "") << exact_literal(coef[k]);
    s << "};\n";
  }
  s << "struct IslApply {\n"
    << "  template <int SY, int SZ>\n"
    << "  static __device__ __forceinline__ double at(const double* __restrict__ p) {\n"
    << "    double s = 0.0;\n";
  for (std::size_t k = 0; k < off.size(); ++k) {
    const std::string c =
        use_constant ? "isl_coef[" + std::to_string(k) + "]" : exact_literal(coef[k]);
    s << "    s += " << c << " * p[(" << off[k].x << ") + (" << off[k].y << ") * SY + (" << off[k].z
      << ") * SZ];\n";
  }
  s << "    return s;\n  }\n";
  if (plan.family == KernelFamily::tiled) {
    s << block_function(stencil, setting, use_constant);
  } else {
    s << ring_function(stencil, setting, use_constant,
                       plan.halo_lo[static_cast<std::size_t>(plan.stream_axis)]);
  }
  s << "};\n";
  return s.str();
}

detail::FamilyCode family_code(const KernelPlan& plan, const Setting& s, const Grid& grid,
                               std::string_view name) {
  return plan.family == KernelFamily::tiled ? detail::tiled_code(plan, s, grid, name)
                                            : detail::streaming_code(plan, s, grid, name);
}

LaunchConfig launch_of(const KernelPlan& plan) {
  LaunchConfig l;
  l.block = plan.block;
  l.grid = plan.grid;
  l.shared_bytes = static_cast<int>(plan.shared_bytes);
  l.steps = plan.steps_per_launch;
  return l;
}

// extern "C" entry calling the family's device function with one config struct.
std::string entry(std::string_view name, const KernelPlan& plan, const detail::FamilyCode& code,
                  std::string_view config) {
  std::ostringstream e;
  e << "extern \"C\" __global__ void __launch_bounds__(" << plan.threads_per_block << ")\n"
    << name << "(const double* __restrict__ in, double* __restrict__ out) {\n"
    << "  extern __shared__ double isl_smem[];\n"
    << "  isl::" << code.function << "<" << config << ", IslApply>(in, out, isl_smem);\n"
    << "}\n";
  return e.str();
}

}  // namespace

std::string_view kernel_template(std::string_view name) {
  for (int i = 0; i < detail::kEmbeddedKernelCount; ++i) {
    if (name == detail::kEmbeddedKernels[i].name)
      return detail::kEmbeddedKernels[i].text;
  }
  throw std::logic_error("kernel template not embedded: " + std::string(name));
}

std::optional<std::string> unsupported_reason(const Stencil& stencil, const Grid& grid,
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
  if (stencil.dims() == 2 &&
      (s[Param::tbz] != 1 || s[Param::mfz] != 1 || s[Param::ufz] != 1 || s[Param::sd] == 2)) {
    return "a 2-D stencil needs tbz = mfz = ufz = 1 and no streaming along z";
  }
  const int merge = s[Param::merge];
  if (merge < 0 || merge > 2)
    return "merge must be none, block or cyclic";
  // Along a tiled axis the unroll covers the merged points; along the streaming axis it
  // unrolls the plane loop instead.
  const std::array<Param, 3> uf{Param::ufx, Param::ufy, Param::ufz};
  const std::array<Param, 3> mf{Param::mfx, Param::mfy, Param::mfz};
  for (int d = 0; d < 3; ++d) {
    const auto i = static_cast<std::size_t>(d);
    if (s[Param::streaming] != 0 && d == s[Param::sd])
      continue;
    if (s[mf[i]] % s[uf[i]] != 0) {
      return "merge factor " + std::string(param_name(mf[i])) +
             " is not a multiple of unroll factor " + std::string(param_name(uf[i]));
    }
  }
  if (const auto why = plan_violation(stencil, grid, s, limits))
    return *why;
  return s[Param::streaming] != 0 ? detail::streaming_unsupported(s) : detail::tiled_unsupported(s);
}

KernelSource generate_kernel(const Stencil& stencil, const Grid& grid, const Setting& s,
                             const DeviceLimits& limits) {
  const KernelPlan plan = make_plan(stencil, grid, s, limits);
  const detail::FamilyCode main = family_code(plan, s, grid, "IslMain");
  KernelSource k;
  k.entry = "isl_kernel";
  k.launch = launch_of(plan);

  std::ostringstream src;
  src << "// isletune generated kernel\n"
      << "// stencil " << stencil.name() << " (" << stencil.dims() << "-D, " << stencil.size()
      << " points), grid " << grid.nx << "x" << grid.ny << "x" << grid.nz << "\n"
      << "// setting " << canonical_key(s) << "\n"
      << "// main: block " << plan.block[0] << "x" << plan.block[1] << "x" << plan.block[2]
      << ", grid " << plan.grid[0] << "x" << plan.grid[1] << "x" << plan.grid[2]
      << ", dynamic shared " << plan.shared_bytes << " B, " << plan.tdeg << " steps per launch\n\n"
      << kernel_template(main.template_file) << "\n"
      << apply_struct(stencil, s, s[Param::use_constant] == 1, plan) << "\n"
      << main.config << "\n"
      << entry(k.entry, plan, main, "IslMain");
  if (plan.tdeg > 1) {
    // The one-step tail kernel of the same family for the T % tdeg leftover steps.
    Setting one = s;
    one[Param::tdeg] = 1;
    const KernelPlan tail_plan = make_plan(stencil, grid, one, limits);
    const detail::FamilyCode tail = family_code(tail_plan, one, grid, "IslTail");
    k.tail_entry = "isl_tail";
    k.tail_launch = launch_of(tail_plan);
    src << "\n" << tail.config << "\n" << entry(k.tail_entry, tail_plan, tail, "IslTail");
  }
  k.source = src.str();
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
