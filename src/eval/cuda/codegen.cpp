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
// The streaming family's stencil functions (kernels/streaming.cuh). Offsets are split into
// the in-plane part (a = x, b = the other non-streamed axis) and the streaming offset os.
// In-plane offsets are numbered m = 0 (the centre) .. NM-1; queue slot j holds the plane at
// streaming offset j - slo. used(j, m): the stencil reads (m, os = j - slo); live(j, m): slot
// j of the queue must keep m (used at j or an older slot; the centre at j = slo always, for
// the boundary condition); needed(m): m is read at some os. qsum: the weighted sum from a
// register queue w[Q][NPT][NM]; part(j, nb): with retiming, the in-plane partial sum that
// a newly arrived plane nb[NM] adds to the output plane at queue slot j (os = shi - j).
std::string stream_functions(const Stencil& stencil, const KernelPlan& plan, bool use_constant) {
  const auto sd = static_cast<std::size_t>(plan.stream_axis);
  const std::size_t bd = sd == 2 ? 1 : 2;
  const int slo = plan.halo_lo[sd], shi = plan.halo_hi[sd];
  const int q = slo + shi + 1;
  std::vector<std::array<int, 2>> inplane{{0, 0}};
  struct Term {
    int m, j, k;
  };
  std::vector<Term> terms;
  for (int k = 0; k < stencil.size(); ++k) {
    const Offset& o = stencil.offsets()[k];
    const std::array<int, 3> v{o.x, o.y, o.z};
    const std::array<int, 2> ab{v[0], v[bd]};
    auto it = std::find(inplane.begin(), inplane.end(), ab);
    if (it == inplane.end()) {
      inplane.push_back(ab);
      it = inplane.end() - 1;
    }
    terms.push_back({static_cast<int>(it - inplane.begin()), v[sd] + slo, k});
  }
  const int nm = static_cast<int>(inplane.size());
  std::vector<std::vector<bool>> used(static_cast<std::size_t>(q),
                                      std::vector<bool>(static_cast<std::size_t>(nm)));
  for (const Term& t : terms)
    used[static_cast<std::size_t>(t.j)][static_cast<std::size_t>(t.m)] = true;
  const auto coef = [&](int k) {
    return use_constant ? "isl_coef[" + std::to_string(k) + "]"
                        : exact_literal(stencil.coefficients()[static_cast<std::size_t>(k)]);
  };
  std::ostringstream r;
  r << "  static constexpr int NM = " << nm << ";\n";
  r << "  static __device__ __forceinline__ constexpr int ma(int m) {\n    return ";
  for (int m = 1; m < nm; ++m)
    r << "m == " << m << " ? " << inplane[static_cast<std::size_t>(m)][0] << " : ";
  r << "0;\n  }\n";
  r << "  static __device__ __forceinline__ constexpr int mb(int m) {\n    return ";
  for (int m = 1; m < nm; ++m)
    r << "m == " << m << " ? " << inplane[static_cast<std::size_t>(m)][1] << " : ";
  r << "0;\n  }\n";
  // Bit j of mask m: live(j, m); needed(m): any bit of used.
  std::vector<unsigned long long> live(static_cast<std::size_t>(nm), 0), need(live);
  for (int m = 0; m < nm; ++m) {
    bool any = false;  // used at j or an older slot (lower j: values move down the queue)
    for (int j = 0; j < q; ++j) {
      const bool u =
          used[static_cast<std::size_t>(j)][static_cast<std::size_t>(m)] || (m == 0 && j == slo);
      any = any || u;
      if (any)
        live[static_cast<std::size_t>(m)] |= 1ULL << j;
    }
    for (int j = 0; j < q; ++j) {
      if (used[static_cast<std::size_t>(j)][static_cast<std::size_t>(m)])
        need[static_cast<std::size_t>(m)] = 1;
    }
  }
  r << "  static __device__ __forceinline__ constexpr bool live(int j, int m) {\n    return ";
  for (int m = 0; m < nm; ++m) {
    r << "m == " << m << " ? ((" << live[static_cast<std::size_t>(m)] << "ULL >> j) & 1) != 0 : ";
  }
  r << "false;\n  }\n";
  r << "  static __device__ __forceinline__ constexpr bool needed(int m) {\n    return ";
  for (int m = 0; m < nm; ++m)
    r << "m == " << m << " ? " << (need[static_cast<std::size_t>(m)] ? "true" : "false") << " : ";
  r << "false;\n  }\n";
  // Queue sum, in stencil order.
  r << "  template <int Q, int NPT, int NMM>\n"
    << "  static __device__ __forceinline__ double qsum(const double (&w)[Q][NPT][NMM], int p) {\n"
    << "    double s = 0.0;\n";
  for (std::size_t t = 0; t < terms.size(); ++t) {
    r << "    s " << (t ? "+=" : "=") << " " << coef(terms[t].k) << " * w[" << terms[t].j << "][p]["
      << terms[t].m << "];\n";
  }
  r << "    return s;\n  }\n";
  // Retiming: per output slot j the terms with streaming offset os = shi - j, i.e. queue
  // index slo + shi - j.
  r << "  static __device__ __forceinline__ constexpr bool has_part(int j) {\n    return false";
  for (int j = 0; j < q; ++j) {
    bool any = false;
    for (const Term& t : terms)
      any = any || t.j == slo + shi - j;
    if (any)
      r << " || j == " << j;
  }
  r << ";\n  }\n";
  r << "  template <int NMM>\n"
    << "  static __device__ __forceinline__ double part(int j, const double (&nb)[NMM]) {\n";
  for (int j = 0; j < q; ++j) {
    bool first = true;
    for (const Term& t : terms) {
      if (t.j != slo + shi - j)
        continue;
      if (first)
        r << "    if (j == " << j << ") {\n      double s = ";
      else
        r << "      s += ";
      r << coef(t.k) << " * nb[" << t.m << "];\n";
      first = false;
    }
    if (!first)
      r << "      return s;\n    }\n";
  }
  r << "    return 0.0;\n  }\n";
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
    s << stream_functions(stencil, plan, use_constant);
  }
  s << "};\n";
  return s.str();
}

detail::FamilyCode family_code(const KernelPlan& plan, const Setting& s, const Grid& grid,
                               const Stencil& stencil, std::string_view name) {
  return plan.family == KernelFamily::tiled
             ? detail::tiled_code(plan, s, grid, name)
             : detail::streaming_code(plan, s, grid, stencil.size(), name);
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
  e << "extern \"C\" __global__ void __launch_bounds__(" << plan.threads_per_block;
  if (code.min_blocks > 0)
    e << ", " << code.min_blocks;
  e << ")\n"
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
  const detail::FamilyCode main = family_code(plan, s, grid, stencil, "IslMain");
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
    const detail::FamilyCode tail = family_code(tail_plan, one, grid, stencil, "IslTail");
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

Setting naive_setting(int dims) {
  Setting s;
  s[Param::merge] = static_cast<int>(MergeKind::none);
  s[Param::tdeg] = 1;
  s[Param::tbx] = 32;
  s[Param::tby] = dims == 2 ? 8 : 4;
  s[Param::tbz] = dims == 2 ? 1 : 2;
  for (Param p : {Param::mfx, Param::mfy, Param::mfz, Param::ufx, Param::ufy, Param::ufz}) {
    s[p] = 1;
  }
  return s;
}

}  // namespace isletune::cuda
