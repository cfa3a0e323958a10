// Code generation for the CUDA evaluator: setting → NVRTC source and launch configuration.
#include "eval/cuda/codegen.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

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

// Largest negative and positive offsets per axis (both >= 0): the exact halo.
struct Halo {
  std::array<int, 3> lo{};
  std::array<int, 3> hi{};
};

Halo halo_of(const Stencil& stencil) {
  Halo h;
  for (const Offset& o : stencil.offsets()) {
    const std::array<int, 3> v{o.x, o.y, o.z};
    for (int a = 0; a < 3; ++a) {
      h.lo[a] = std::max(h.lo[a], -v[a]);
      h.hi[a] = std::max(h.hi[a], v[a]);
    }
  }
  return h;
}

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
std::string apply_struct(const Stencil& stencil, const Setting& setting, bool use_constant) {
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
  s << "    return s;\n  }\n" << block_function(stencil, setting, use_constant) << "};\n";
  return s.str();
}

long long ceil_div(long long a, long long b) {
  return (a + b - 1) / b;
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
                                              const Setting& s) {
  const std::pair<Param, int> part2[] = {{Param::streaming, 0}, {Param::retiming, 0},
                                         {Param::prefetch, 0},  {Param::tdeg, 1},
                                         {Param::sd, 0},        {Param::sb, 0}};
  for (const auto& [p, neutral] : part2) {
    if (s[p] != neutral) {
      return "parameter " + std::string(param_name(p)) + " = " + std::to_string(s[p]) +
             " is not implemented by the CUDA evaluator yet (part 2)";
    }
  }
  if (grid.nx < 1 || grid.ny < 1 || grid.nz < 1 || grid.cells() > (1LL << 40) ||
      1LL * grid.nx * grid.ny > (1LL << 31) - 1) {
    return "grid is empty or too large for the part-1 kernels";
  }
  if (stencil.dims() == 2 && grid.nz != 1)
    return "a 2-D stencil needs nz = 1";
  const Param positive[] = {Param::tbx, Param::tby, Param::tbz, Param::mfx, Param::mfy,
                            Param::mfz, Param::ufx, Param::ufy, Param::ufz};
  for (Param p : positive) {
    if (s[p] < 1)
      return "parameter " + std::string(param_name(p)) + " must be >= 1";
  }
  const std::array<std::pair<Param, Param>, 3> uf_mf{
      {{Param::ufx, Param::mfx}, {Param::ufy, Param::mfy}, {Param::ufz, Param::mfz}}};
  for (const auto& [uf, mf] : uf_mf) {
    if (s[uf] > s[mf]) {
      return "unroll factor " + std::string(param_name(uf)) + " exceeds merge factor " +
             std::string(param_name(mf));
    }
  }
  for (const auto& [uf, mf] : uf_mf) {
    if (s[mf] % s[uf] != 0) {
      return "merge factor " + std::string(param_name(mf)) +
             " is not a multiple of unroll factor " + std::string(param_name(uf));
    }
  }
  const int merge = s[Param::merge];
  if (merge < 0 || merge > 2)
    return "merge must be none, block or cyclic";
  if (merge == 0 && (s[Param::mfx] * s[Param::mfy] * s[Param::mfz] != 1)) {
    return "merge = none needs every merge factor to be 1";
  }
  if (s[Param::use_shared] < 0 || s[Param::use_shared] > 1 || s[Param::use_constant] < 0 ||
      s[Param::use_constant] > 1) {
    return "use_shared and use_constant must be 0 or 1";
  }
  if (stencil.dims() == 2 && (s[Param::tbz] != 1 || s[Param::mfz] != 1 || s[Param::ufz] != 1)) {
    return "tbz, mfz and ufz must be 1 for a 2-D stencil";
  }
  return std::nullopt;
}

KernelSource generate_kernel(const Stencil& stencil, const Grid& grid, const Setting& s) {
  const Halo h = halo_of(stencil);
  const int tbx = s[Param::tbx], tby = s[Param::tby], tbz = s[Param::tbz];
  const int mfx = s[Param::mfx], mfy = s[Param::mfy], mfz = s[Param::mfz];
  const bool shared = s[Param::use_shared] == 1;

  KernelSource k;
  k.entry = "isl_kernel";
  k.launch.block = {tbx, tby, tbz};
  k.launch.grid = {ceil_div(grid.nx, 1LL * tbx * mfx), ceil_div(grid.ny, 1LL * tby * mfy),
                   ceil_div(grid.nz, 1LL * tbz * mfz)};
  if (shared) {
    k.launch.shared_bytes =
        static_cast<int>(8LL * (tbx * mfx + h.lo[0] + h.hi[0]) * (tby * mfy + h.lo[1] + h.hi[1]) *
                         (tbz * mfz + h.lo[2] + h.hi[2]));
  }

  std::ostringstream src;
  src << "// isletune generated kernel\n"
      << "// stencil " << stencil.name() << " (" << stencil.dims() << "-D, " << stencil.size()
      << " points), grid " << grid.nx << "x" << grid.ny << "x" << grid.nz << "\n"
      << "// setting " << canonical_key(s) << "\n"
      << "// launch: block " << tbx << "x" << tby << "x" << tbz << ", grid " << k.launch.grid[0]
      << "x" << k.launch.grid[1] << "x" << k.launch.grid[2] << ", dynamic shared "
      << k.launch.shared_bytes << " B\n\n"
      << kernel_template("stencil_part1.cuh") << "\n"
      << apply_struct(stencil, s, s[Param::use_constant] == 1) << "\n"
      << "extern \"C\" __global__ void __launch_bounds__(" << tbx * tby * tbz << ")\n"
      << k.entry << "(const double* __restrict__ in, double* __restrict__ out) {\n"
      << "  extern __shared__ double isl_smem[];\n"
      << "  isl::part1_step<" << tbx << ", " << tby << ", " << tbz << ", " << mfx << ", " << mfy
      << ", " << mfz << ", " << s[Param::ufx] << ", " << s[Param::ufy] << ", " << s[Param::ufz]
      << ", " << s[Param::merge] << ", " << (shared ? 1 : 0) << ", " << grid.nx << ", " << grid.ny
      << ", " << grid.nz << ", " << h.lo[0] << ", " << h.hi[0] << ", " << h.lo[1] << ", " << h.hi[1]
      << ", " << h.lo[2] << ", " << h.hi[2] << ", IslApply>(in, out, isl_smem);\n"
      << "}\n";
  k.source = src.str();
  return k;
}

std::string generate_reference(const Stencil& stencil, const Grid& grid) {
  const Halo h = halo_of(stencil);
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
