// sim.*: generated kernels (streaming, tiled and tensor-core families) run on the host emulation
// (bench/harness/host_sim.h: every GPU thread an OS thread, barriers, shared memory filled with NaN
// at launch, cp.async copies landing at their issue or at the wait that must see them), so a change
// to a kernel family's index arithmetic, boundary rule or pipeline is checked on a machine without
// a GPU: each case generates the kernel of one setting on a small grid whose blocks, stream blocks
// and edges are partial, compiles it with the host compiler, runs three launches from a random
// input into NaN-poisoned buffers (a point left unwritten stays NaN) and compares the result with
// the stencil's steps computed here, as the worker's verification does on the GPU.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "eval/cuda/codegen.hpp"
#include "kernel/family.hpp"
#include "stencil/typical.hpp"

namespace isletune::cuda {
namespace {

namespace fs = std::filesystem;

struct Case {
  const char* name;
  Stencil stencil;
  Grid grid;
  const char* fields;  // on top of the naive setting
  const char* copies;  // SIM_COPY: "early" or "late"
};

// The stencil's steps with the boundary rule of docs/architecture.md ("Stencils"): a point
// whose stencil leaves the grid keeps its value.
std::vector<double> reference(const Stencil& st, const Grid& g, std::vector<double> a, int steps) {
  const auto [lo, hi] = reach_of(st);
  std::vector<double> b(a.size());
  const long long nx = g.nx, ny = g.ny, nz = g.nz;
  for (int t = 0; t < steps; ++t) {
    for (long long z = 0; z < nz; ++z)
      for (long long y = 0; y < ny; ++y)
        for (long long x = 0; x < nx; ++x) {
          const long long i = (z * ny + y) * nx + x;
          if (x < lo[0] || x >= nx - hi[0] || y < lo[1] || y >= ny - hi[1] || z < lo[2] ||
              z >= nz - hi[2]) {
            b[static_cast<std::size_t>(i)] = a[static_cast<std::size_t>(i)];
            continue;
          }
          double s = 0;
          for (int k = 0; k < st.size(); ++k) {
            const Offset& o = st.offsets()[static_cast<std::size_t>(k)];
            s += st.coefficients()[static_cast<std::size_t>(k)] *
                 a[static_cast<std::size_t>(i + (o.z * ny + o.y) * nx + o.x)];
          }
          b[static_cast<std::size_t>(i)] = s;
        }
    std::swap(a, b);
  }
  return a;
}

// The generated source made host C++: the host emulation first, the dynamic shared memory as
// the emulated block's buffer, and a driver that runs `launches` launches from the input file
// into two NaN-poisoned buffers and writes the last output.
std::string host_program(const KernelSource& k, const Grid& g, int launches) {
  std::string src = k.source;
  const std::string shared = "extern __shared__ double isl_smem[];";
  const auto at = src.find(shared);
  if (at == std::string::npos || src.find(shared, at + 1) != std::string::npos)
    return {};
  src.replace(at, shared.size(), "double* const isl_smem = sim::tl_blk->smem.data();");
  const LaunchConfig& l = k.launch;
  std::string out = "#define ISL_HOST_SIM 1\n#include \"host_sim.h\"\n#include <cstdio>\n" + src;
  out += "\nint main(int, char** argv) {\n";
  out += "  const size_t n = " + std::to_string(1LL * g.nx * g.ny * g.nz) + ";\n";
  out += R"(  std::vector<double> in(n), a(n, std::nan("")), b(n, std::nan(""));
  FILE* f = std::fopen(argv[1], "rb");
  if (!f || std::fread(in.data(), 8, n, f) != n) return 2;
  std::fclose(f);
  const double* src = in.data();
  double* dst = a.data();
)";
  out += "  for (int t = 0; t < " + std::to_string(launches) + "; ++t) {\n";
  out += "    sim::launch(dim3(" + std::to_string(l.grid[0]) + ", " + std::to_string(l.grid[1]) +
         ", " + std::to_string(l.grid[2]) + "), dim3(1, 1, 1), dim3(" + std::to_string(l.block[0]) +
         ", " + std::to_string(l.block[1]) + ", " + std::to_string(l.block[2]) + "), " +
         std::to_string(l.shared_bytes) + ", [&] { isl_kernel(src, dst); });\n";
  out += R"(    src = dst;
    dst = dst == a.data() ? b.data() : a.data();
  }
  f = std::fopen(argv[2], "wb");
  if (!f || std::fwrite(src, 8, n, f) != n) return 3;
  std::fclose(f);
  return 0;
}
)";
  return out;
}

// "name=value" pairs (space-separated) over the naive setting.
Setting setting_of(int dims, const std::string& fields) {
  Setting s = naive_setting(dims);
  std::istringstream in(fields);
  for (std::string item; in >> item;) {
    const auto eq = item.find('=');
    const auto p = param_from_name(item.substr(0, eq));
    EXPECT_TRUE(eq != std::string::npos && p) << item;
    if (eq == std::string::npos || !p)
      continue;
    const std::string value = item.substr(eq + 1);
    s[*p] = *p == Param::merge ? static_cast<int>(merge_from_name(value).value_or(MergeKind::none))
                               : std::stoi(value);
  }
  return s;
}

int run(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name << " (" << c.fields << ")";
}

class KernelsOnTheHost : public ::testing::TestWithParam<Case> {};

TEST_P(KernelsOnTheHost, MatchTheStencilsStepsAndWriteEveryPoint) {
  const Case& c = GetParam();
  const Setting s = setting_of(c.stencil.dims(), c.fields);
  ASSERT_FALSE(unsupported_reason(c.stencil, c.grid, s).has_value())
      << *unsupported_reason(c.stencil, c.grid, s);
  const KernelSource k = generate_kernel(c.stencil, c.grid, s);
  constexpr int kLaunches = 3;
  const std::string program = host_program(k, c.grid, kLaunches);
  ASSERT_FALSE(program.empty()) << "the kernel's dynamic shared memory was not found";

  const fs::path dir = fs::path(ISLETUNE_SIM_DIR) / c.name;
  fs::create_directories(dir);
  std::ofstream(dir / "kernel.cpp") << program;
  ASSERT_EQ(run(std::string(ISLETUNE_HOST_CXX) + " -std=c++20 -O1 -w -pthread -I" +
                ISLETUNE_HOST_SIM_DIR + " -o " + (dir / "kernel").string() + " " +
                (dir / "kernel.cpp").string()),
            0)
      << "the host compiler failed on " << (dir / "kernel.cpp").string();

  const auto n = static_cast<std::size_t>(1LL * c.grid.nx * c.grid.ny * c.grid.nz);
  std::vector<double> in(n);
  std::mt19937_64 rng(20261207);
  std::uniform_real_distribution<double> u(0.5, 1.5);
  for (double& v : in)
    v = u(rng);
  std::ofstream(dir / "in.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(in.data()), static_cast<std::streamsize>(n * 8));
  ASSERT_EQ(run(std::string("SIM_COPY=") + c.copies + " " + (dir / "kernel").string() + " " +
                (dir / "in.bin").string() + " " + (dir / "out.bin").string()),
            0);
  std::vector<double> got(n);
  std::ifstream(dir / "out.bin", std::ios::binary)
      .read(reinterpret_cast<char*>(got.data()), static_cast<std::streamsize>(n * 8));
  const std::vector<double> want = reference(c.stencil, c.grid, in, kLaunches * k.launch.steps);
  double d2 = 0, r2 = 0, worst = 0;
  long long unwritten = 0;
  std::size_t first_bad = n;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(got[i])) {
      ++unwritten;
      first_bad = std::min(first_bad, i);
      continue;
    }
    const double e = std::abs(got[i] - want[i]);
    d2 += e * e;
    r2 += want[i] * want[i];
    if (e > 1e-12 * std::abs(want[i]) && first_bad == n)
      first_bad = i;
    worst = std::max(worst, e / std::abs(want[i]));
  }
  const auto where = [&](std::size_t i) {
    const long long x = static_cast<long long>(i) % c.grid.nx;
    const long long y = static_cast<long long>(i) / c.grid.nx % c.grid.ny;
    const long long z = static_cast<long long>(i) / c.grid.nx / c.grid.ny;
    return "(" + std::to_string(x) + ", " + std::to_string(y) + ", " + std::to_string(z) + ")";
  };
  EXPECT_EQ(unwritten, 0) << "points not finite, the first at " << where(first_bad);
  EXPECT_LE(std::sqrt(d2 / r2), 1e-13) << "first point off at " << where(first_bad);
  EXPECT_LE(worst, 1e-12) << "first point off at " << where(first_bad);
}

Stencil user_3d() {  // a user's asymmetric 3-D stencil: reach 1/2 along x, 2/1 along z
  return Stencil::make("user3d", 3,
                       {{0, 0, 0}, {-1, 0, 0}, {2, 0, 0}, {0, 1, 0}, {0, 0, -2}, {0, 0, 1}},
                       {0.4, 0.15, 0.1, 0.15, 0.1, 0.1});
}

Stencil behind_3d() {  // a user's stencil that reaches only behind along z (reach hi 0)
  return Stencil::make("behind3d", 3,
                       {{0, 0, 0}, {1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, 0, -1}, {0, 0, -2}},
                       {0.3, 0.15, 0.15, 0.1, 0.2, 0.1});
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(
    Streaming, KernelsOnTheHost,
    ::testing::Values(
        Case{"star3d4r_retimed_pairs", typical_stencil("star3d4r"), Grid{36, 22, 30},
             "streaming=1 sd=2 sb=16 tbx=8 tby=4 tbz=1 merge=block mfx=2 mfy=2 ufz=2 retiming=1 "
             "prefetch=1",
             "late"},
        Case{"star3d3r_retimed_pairs", typical_stencil("star3d3r"), Grid{34, 21, 27},
             "streaming=1 sd=2 sb=16 tbx=8 tby=4 tbz=1 merge=block mfx=2 mfy=2 retiming=1 "
             "prefetch=1",
             "early"},
        Case{"star3d2r_retimed_tdeg2", typical_stencil("star3d2r"), Grid{30, 26, 21},
             "streaming=1 sd=2 sb=8 tbx=16 tby=16 tbz=1 tdeg=2 retiming=1 prefetch=1", "early"},
        Case{"star3d1r_shared_ring_tdeg3", typical_stencil("star3d1r"), Grid{29, 23, 26},
             "streaming=1 sd=1 sb=8 tbx=16 tby=1 tbz=16 tdeg=3 retiming=1 prefetch=1 "
             "use_shared=1",
             "late"},
        Case{"user3d_retimed_cyclic", user_3d(), Grid{33, 19, 25},
             "streaming=1 sd=2 sb=16 tbx=8 tby=4 tbz=1 merge=cyclic mfy=2 retiming=1 prefetch=1",
             "late"},
        Case{"behind3d_retimed", behind_3d(), Grid{27, 22, 24},
             "streaming=1 sd=2 sb=8 tbx=8 tby=4 tbz=1 merge=block mfy=2 retiming=1 prefetch=1",
             "late"},
        Case{"behind3d_retimed_tdeg2", behind_3d(), Grid{27, 22, 24},
             "streaming=1 sd=2 sb=8 tbx=16 tby=8 tbz=1 tdeg=2 retiming=1 prefetch=1", "early"},
        Case{"star3d2r_centre_queue", typical_stencil("star3d2r"), Grid{30, 26, 21},
             "streaming=1 sd=2 sb=16 tbx=8 tby=4 tbz=1 merge=block mfx=2 prefetch=1", "late"},
        Case{"star2d2r_retimed_y", typical_stencil("star2d2r"), Grid{70, 45, 1},
             "streaming=1 sd=1 sb=16 tbx=32 tby=1 retiming=1 prefetch=1", "early"}),
    case_name);

INSTANTIATE_TEST_SUITE_P(
    Tiled, KernelsOnTheHost,
    ::testing::Values(
        Case{"box3d2r_register_tile_staged", typical_stencil("box3d2r"), Grid{37, 21, 19},
             "tbx=32 tby=4 tbz=1 merge=block mfy=4 ufy=4 mfz=4 ufz=4 use_shared=1", "late"},
        Case{"box3d1r_register_tile_constant", typical_stencil("box3d1r"), Grid{35, 18, 13},
             "tbx=32 tby=2 tbz=4 merge=block mfy=4 ufy=4 mfz=2 use_constant=1", "early"},
        Case{"box3d2r_plane_loop", typical_stencil("box3d2r"), Grid{37, 21, 19},
             "tbx=32 tby=2 tbz=8 merge=block mfy=8 ufy=8 mfz=2", "early"},
        Case{"star2d1r_temporal_tdeg3", typical_stencil("star2d1r"), Grid{75, 41, 1},
             "tbx=32 tby=8 merge=block mfx=2 use_shared=1 tdeg=3", "early"},
        Case{"user3d_cyclic", user_3d(), Grid{33, 19, 25},
             "tbx=16 tby=4 tbz=2 merge=cyclic mfx=2 ufx=2", "early"}),
    case_name);

INSTANTIATE_TEST_SUITE_P(
    Mma, KernelsOnTheHost,
    ::testing::Values(Case{"box3d2r_mma_two_batches", typical_stencil("box3d2r"), Grid{37, 19, 13},
                           "mma=1 tbx=32 tby=1 tbz=1 mma_nb=2 mma_warps=4 mma_minb=3", "late"},
                      Case{"box3d1r_mma_eight_warps", typical_stencil("box3d1r"), Grid{35, 21, 11},
                           "mma=1 tbx=32 tby=1 tbz=1 mma_nb=1 mma_warps=8 mma_minb=2", "early"},
                      Case{"box2d2r_mma_coefficients_in_registers", typical_stencil("box2d2r"),
                           Grid{70, 45, 1},
                           "mma=1 tbx=32 tby=1 tbz=1 mma_nb=1 mma_warps=4 mma_creg=1 mma_minb=1",
                           "late"}),
    case_name);

}  // namespace
}  // namespace isletune::cuda
