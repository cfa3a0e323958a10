// GPU correctness of the kernel families (tiled, streaming, temporal blocking on either):
// every typical stencil x every OC with valid settings x random settings of the default space
// on odd grids (not tile multiples) and grids smaller than one tile, verified by the worker
// against the naive reference after T = 48 and T = 7 steps (whole domain, NaN-poisoned output,
// rel L2 <= 1e-12, max rel <= 1e-10); user stencils with asymmetric offsets and order 6 with
// random coefficients. Without a GPU every test reports itself SKIPPED.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "common/error.hpp"
#include "common/rng.hpp"
#include "eval/cuda/codegen.hpp"
#include "eval/cuda/cuda_evaluator.hpp"
#include "gpu_start.hpp"
#include "space/space.hpp"
#include "stencil/typical.hpp"

namespace isletune::cuda {
namespace {

gpu_test::Started start(const Stencil& st, const Grid& g) {
  CudaOptions o;
  o.timeout_s = 120;
  o.min_rep_ms = 0.05;
  return gpu_test::start_evaluator(Problem{st, g, 48, 1, 1}, o);
}

// `per_oc` random valid settings of every OC of the default space (seeded per stencil); with
// stride 2 only the OCs of one temporal flag (oc % 2 == phase), to bound device time.
std::vector<Setting> every_oc(const Stencil& st, const Grid& g, int per_oc, std::uint64_t seed,
                              int stride = 1, int phase = 0) {
  const Space space(st, g, DeviceLimits{}, Space::default_values(st.dims(), g));
  Rng rng(seed, 3);
  std::vector<Setting> out;
  for (int oc = 0; oc < kOcCount; ++oc) {
    if (oc % stride != phase)
      continue;
    for (int k = 0; k < per_oc; ++k) {
      if (const auto s = space.random_in_oc(oc, rng, 20000))
        out.push_back(*s);
    }
  }
  return out;
}

// Every measurement verifies; failures are listed with their setting and OC.
void expect_all_verify(const std::vector<Setting>& batch, const std::vector<Measurement>& got,
                       const std::string& what) {
  ASSERT_FALSE(batch.empty()) << what << ": an empty batch verifies nothing";
  ASSERT_EQ(got.size(), batch.size());
  std::map<std::string, int> by_status;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ++by_status[std::string(status_name(got[i].status))];
    EXPECT_EQ(got[i].status, Status::ok)
        << what << " [" << Space::oc_name(Space::oc_of(batch[i])) << "] " << canonical_key(batch[i])
        << ": " << status_name(got[i].status) << " " << got[i].message;
    if (got[i].ok()) {
      EXPECT_LE(got[i].error_l2, 1e-12);
      EXPECT_GT(got[i].median_ms, 0);
    }
  }
  std::cout << what << ": " << got.size() << " settings;";
  for (const auto& [name, n] : by_status)
    std::cout << " " << name << " " << n;
  std::cout << "\n";
}

class FamiliesOnEveryTypicalStencil : public testing::TestWithParam<std::string> {};

TEST_P(FamiliesOnEveryTypicalStencil, EveryOcVerifiesOnAnOddGrid) {
  const Stencil st = typical_stencil(GetParam());
  const Grid g = st.dims() == 2 ? Grid{157, 83, 1} : Grid{45, 29, 23};
  START_OR_SKIP(e, st, g);
  // Two settings per OC in 2-D, one in 3-D (3-D kernels of order >= 3 compile slowly).
  const auto batch = every_oc(st, g, st.dims() == 2 ? 2 : 1, std::hash<std::string>{}(GetParam()));
  expect_all_verify(batch, e.evaluate(batch), GetParam() + " odd grid");
}

TEST_P(FamiliesOnEveryTypicalStencil, EveryOcVerifiesOnAGridSmallerThanOneTile) {
  const Stencil st = typical_stencil(GetParam());
  const Grid g = st.dims() == 2 ? Grid{19, 13, 1} : Grid{11, 10, 9};
  START_OR_SKIP(e, st, g);
  // One setting per OC; the OCs with and without temporal blocking alternate by stencil.
  const std::size_t seed = 99 + std::hash<std::string>{}(GetParam());
  const auto batch = every_oc(st, g, 1, seed, 2, static_cast<int>((GetParam().size() + seed) % 2));
  expect_all_verify(batch, e.evaluate(batch), GetParam() + " tiny grid");
}

INSTANTIATE_TEST_SUITE_P(Typical, FamiliesOnEveryTypicalStencil, testing::ValuesIn(typical_names()),
                         [](const auto& info) { return info.param; });

// Random coefficients normalised to sum |w| = 1, signs mixed.
std::vector<double> random_coefficients(std::size_t n, std::uint64_t seed) {
  Rng rng(seed, 5);
  std::vector<double> c(n);
  double sum = 0;
  for (auto& v : c) {
    v = (rng.uniform() - 0.3) * 2;
    sum += std::abs(v);
  }
  for (auto& v : c)
    v /= sum;
  return c;
}

TEST(FamiliesUserStencils, AsymmetricAndOrderSixVerifyInEveryOc) {
  const std::vector<Offset> asym3{{0, 0, 0}, {-1, 0, 0}, {2, 0, 0},  {0, -2, 0},
                                  {0, 1, 0}, {0, 0, 3},  {1, 1, -1}, {-1, 0, 1}};
  std::vector<Offset> star6{{0, 0, 0}};
  for (int r = 1; r <= 6; ++r) {
    for (const Offset o : {Offset{r, 0, 0}, Offset{-r, 0, 0}, Offset{0, r, 0}, Offset{0, -r, 0}})
      star6.push_back(o);
  }
  const std::vector<Offset> asym2{{0, 0, 0}, {3, 0, 0}, {0, -2, 0}, {-1, 1, 0}, {0, 4, 0}};
  const std::vector<std::pair<Stencil, Grid>> cases{
      {Stencil::make("asym3d", 3, asym3, random_coefficients(asym3.size(), 1)), Grid{37, 26, 21}},
      {Stencil::make("star2d6r", 2, star6, random_coefficients(star6.size(), 2)), Grid{141, 77, 1}},
      {Stencil::make("asym2d", 2, asym2, random_coefficients(asym2.size(), 3)), Grid{97, 61, 1}}};
  for (const auto& [st, g] : cases) {
    START_OR_SKIP(e, st, g);
    const auto batch = every_oc(st, g, 2, 17);
    expect_all_verify(batch, e.evaluate(batch), st.name());
  }
}

// A user's prism (identical z-planes of an asymmetric in-plane footprint, asymmetric in z, 152
// points, random coefficients that differ from plane to plane): the tiled family's register tile
// loops over its planes (plane loop) for chunks without z points, block and cyclic, staged or
// not, with fused steps (the one-step tail) and one point per thread, on an odd grid and on a
// grid smaller than one tile; plus random settings of every OC.
TEST(FamiliesUserStencils, PrismOfIdenticalPlanesVerifiesItsPlaneLoop) {
  std::vector<Offset> prism;
  for (int z = -1; z <= 2; ++z) {
    for (int y = -2; y <= 4; ++y) {
      for (int x = -3; x <= 2; ++x) {
        if ((x == -3 && y == 4) || (x == 2 && y == -2) || (x == -3 && y == -2) ||
            (x == 1 && y == 3))
          continue;
        prism.push_back({x, y, z});
      }
    }
  }
  const Stencil st = Stencil::make("prism3d", 3, prism, random_coefficients(prism.size(), 7));
  ASSERT_EQ(st.size(), 152);
  ASSERT_EQ(shape_of(st, Grid{45, 29, 23}).planes.planes, 4);
  const auto tiled = [](int tbx, int tby, int tbz, MergeKind merge, int mfx, int mfy, int mfz,
                        int shared, int tdeg) {
    Setting s = naive_setting(3);
    s[Param::tbx] = tbx;
    s[Param::tby] = tby;
    s[Param::tbz] = tbz;
    s[Param::merge] = static_cast<int>(merge);
    s[Param::mfx] = s[Param::ufx] = mfx;
    s[Param::mfy] = s[Param::ufy] = mfy;
    s[Param::mfz] = mfz;
    s[Param::ufz] = 1;
    s[Param::use_shared] = shared;
    s[Param::tdeg] = tdeg;
    return s;
  };
  const std::vector<Setting> looped{
      tiled(32, 2, 8, MergeKind::block, 1, 8, 1, 0, 1),
      tiled(32, 2, 8, MergeKind::block, 2, 8, 1, 0, 1),
      tiled(32, 2, 8, MergeKind::block, 1, 8, 1, 1, 1),
      tiled(32, 4, 4, MergeKind::cyclic, 2, 4, 2, 0, 1),
      tiled(32, 4, 2, MergeKind::cyclic, 1, 4, 4, 1, 1),
      tiled(32, 4, 8, MergeKind::block, 1, 4, 1, 0, 1),
      tiled(16, 8, 4, MergeKind::block, 1, 2, 2, 1, 2),
  };
  for (const Grid& g : {Grid{45, 29, 23}, Grid{11, 10, 9}}) {
    const Space space(st, g, DeviceLimits{}, Space::default_values(3, g));
    std::vector<Setting> batch;
    for (const Setting& s : looped) {
      if (!space.valid(s)) {
        std::cout << canonical_key(s) << ": " << *space.violation(s) << "\n";
        continue;  // a block larger than the tiny grid allows
      }
      ASSERT_NE(generate_kernel(st, g, s).source.find("isl_plane_coef"), std::string::npos)
          << canonical_key(s);
      batch.push_back(s);
    }
    EXPECT_GE(batch.size(), g.nx > 40 ? looped.size() : 1u);
    for (const Setting& s : every_oc(st, g, 1, 23))
      batch.push_back(s);
    START_OR_SKIP(e, st, g);
    expect_all_verify(batch, e.evaluate(batch), "prism3d " + std::to_string(g.nx));
  }
}

// The streaming register pipeline at the depths where it pays (tdeg up to 16 in 2-D, 4 in
// 3-D), queue and partial-sum variants, cyclic and contiguous register tiles, the last level
// from the shared ring (use_shared = 1 at tdeg >= 2) or not, on grids that
// are not tile multiples and on asymmetric user stencils (the partial-sum variant reads the
// points the boundary condition keeps back from the input, at every level).
TEST(FamiliesStreaming, DeepTdegVerifiesOnOddGridsAndAsymmetricStencils) {
  const std::vector<Offset> asym2{{0, 0, 0}, {3, 0, 0}, {0, -2, 0}, {-1, 1, 0}, {0, 4, 0}};
  const std::vector<Offset> asym3{{0, 0, 0}, {-1, 0, 0}, {2, 0, 0},  {0, -2, 0},
                                  {0, 1, 0}, {0, 0, 3},  {1, 1, -1}, {-1, 0, 1}};
  const std::vector<std::pair<Stencil, Grid>> cases{
      {Stencil::make("asym3d", 3, asym3, random_coefficients(asym3.size(), 1)), Grid{71, 37, 29}},
      {typical_stencil("star2d1r"), Grid{1031, 517, 1}},
      {typical_stencil("box2d1r"), Grid{1031, 517, 1}},
      {Stencil::make("asym2d", 2, asym2, random_coefficients(asym2.size(), 3)), Grid{611, 301, 1}},
      {typical_stencil("star3d1r"), Grid{131, 67, 45}},
      // An even row, tile and offset (x pairs as double2 global loads and stores).
      {typical_stencil("star3d2r"), Grid{132, 68, 46}},
      {typical_stencil("box3d1r"), Grid{131, 67, 45}}};
  for (const auto& [st, g] : cases) {
    START_OR_SKIP(e, st, g);
    const Space space(st, g, e.limits(), Space::default_values(st.dims(), g));
    std::vector<Setting> batch;
    const std::vector<int> depths =
        st.dims() == 2 ? std::vector<int>{1, 2, 8, 12, 16} : std::vector<int>{1, 2, 3, 4};
    for (const int tdeg : depths) {
      for (const int retiming : {0, 1}) {
        for (const int merge : {0, 1, 2}) {
          for (const int ring : {0, 1}) {
            if (ring == 1 && tdeg < 2)
              continue;
            Setting s = naive_setting(st.dims());
            s[Param::use_shared] = ring;
            s[Param::streaming] = 1;
            s[Param::prefetch] = 1;
            s[Param::retiming] = retiming;
            s[Param::tdeg] = tdeg;
            s[Param::merge] = merge;
            s[Param::sd] = st.dims() == 2 ? 1 : 2;
            s[Param::sb] = st.dims() == 2 ? 64 : 16;
            s[Param::tby] = st.dims() == 2 ? 1 : 8;
            s[Param::tbz] = 1;
            s[Param::tbx] = st.dims() == 2 ? 128 : 64;
            if (merge != 0)
              s[st.dims() == 2 ? Param::mfx : Param::mfy] = 2;
            // Block-merged x pairs in 3-D too (double2 shared accesses; at tdeg 1 the input
            // ring in a row padded to an even start), for half of the block-merged settings
            // beyond tdeg 1 and all of them at tdeg 1.
            if (merge == 1 && st.dims() == 3 && (retiming == ring || tdeg == 1)) {
              s[Param::mfx] = 2;
              s[Param::tbx] = 32;
            }
            if (space.valid(s))
              batch.push_back(s);
          }
        }
      }
    }
    ASSERT_GE(batch.size(), 12u) << st.name();
    expect_all_verify(batch, e.evaluate(batch), st.name() + " deep streaming");
  }
}

// The centre-queue kernel (tdeg 1 without retiming, the in-plane neighbours read from input
// planes kept up to r behind the newest in shared memory) of the 3-D stars of radius 2-4 and a
// 2-D star: x pairs and scalar points, cyclic and block tiles, asynchronous copies or the
// register path, streaming along z and y, on grids that are not tile multiples.
TEST(FamiliesStreaming, CentreQueueVerifiesForHighOrderStars) {
  const std::vector<std::pair<std::string, Grid>> cases{{"star3d2r", Grid{69, 45, 41}},
                                                        {"star3d3r", Grid{67, 37, 43}},
                                                        {"star3d4r", Grid{71, 41, 47}},
                                                        {"star2d3r", Grid{517, 301, 1}}};
  for (const auto& [name, g] : cases) {
    const Stencil st = typical_stencil(name);
    START_OR_SKIP(e, st, g);
    const Space space(st, g, e.limits(), Space::default_values(st.dims(), g));
    std::vector<Setting> batch;
    for (const int sd : {1, 2}) {
      if (sd >= st.dims())
        continue;
      for (const int prefetch : {0, 1}) {
        for (const int merge : {0, 1, 2}) {
          Setting s = naive_setting(st.dims());
          s[Param::streaming] = 1;
          s[Param::prefetch] = prefetch;
          s[Param::merge] = merge;
          s[Param::sd] = sd;
          s[Param::sb] = 16;
          s[Param::ufx] = s[Param::ufy] = s[Param::ufz] = 1;
          const Param across = sd == 2 ? Param::tby : Param::tbz;
          s[sd == 2 ? Param::tbz : Param::tby] = 1;
          s[Param::tbx] = st.dims() == 2 ? 128 : 32;
          if (st.dims() == 3)
            s[across] = 16;
          if (merge == 1) {
            s[Param::mfx] = 2;  // x pairs
            if (st.dims() == 3)
              s[sd == 2 ? Param::mfy : Param::mfz] = 2;
          } else if (merge == 2) {
            s[st.dims() == 3 ? (sd == 2 ? Param::mfy : Param::mfz) : Param::mfx] = 2;
          }
          s[sd == 2 ? Param::ufz : Param::ufy] = 4;
          ASSERT_TRUE(space.valid(s))
              << name << " " << canonical_key(s) << ": " << *space.violation(s);
          batch.push_back(s);
        }
      }
    }
    expect_all_verify(batch, e.evaluate(batch), name + " centre queue");
  }
}

// A uniform sample of the whole default space: nothing the space admits is invalid or fails
// to launch (and everything verifies).
// The tensor-core family (issue 47) on every box its rule admits and on users' asymmetric
// stencils (random coefficients), 2-D and 3-D, on odd grids, grids smaller than one tile and
// even grids (16-byte staging and stores): every variant of its own parameters the defaults
// hold and the extremes (4 batches, 1 and 16 warps), verified against the naive reference.
TEST(FamiliesTensorCores, EveryVariantVerifiesOnOddTinyAndEvenGrids) {
  std::vector<Stencil> stencils;
  for (const char* name : {"box2d2r", "box2d3r", "box2d4r", "box3d1r", "box3d2r", "box3d3r"})
    stencils.push_back(typical_stencil(name));
  const auto user = [](int dims, std::array<int, 3> lo, std::array<int, 3> hi) {
    std::vector<Offset> off;
    for (int z = -lo[2]; z <= hi[2]; ++z)
      for (int y = -lo[1]; y <= hi[1]; ++y)
        for (int x = -lo[0]; x <= hi[0]; ++x)
          off.push_back({x, y, z});
    const auto n = off.size();
    return Stencil::make("user" + std::to_string(dims) + "d", dims, std::move(off),
                         random_coefficients(n, n));
  };
  stencils.push_back(user(3, {2, 3, 2}, {2, 2, 1}));
  stencils.push_back(user(2, {3, 1, 0}, {4, 3, 0}));
  for (const Stencil& st : stencils) {
    const std::vector<Grid> grids =
        st.dims() == 2 ? std::vector<Grid>{{157, 83, 1}, {19, 13, 1}, {256, 96, 1}}
                       : std::vector<Grid>{{45, 29, 23}, {11, 10, 9}, {64, 32, 40}};
    for (const Grid& g : grids) {
      START_OR_SKIP(e, st, g);
      const Space space(st, g, e.limits(), Space::default_values(st.dims(), g));
      std::vector<Setting> batch;
      space.for_each_valid(49, [&](const Setting& s) {
        if (s[Param::mma_minb] == 1 || s[Param::mma_minb] == 3)  // 2 and 4: launch bounds only
          batch.push_back(s);
      });
      Setting extreme = batch.empty() ? Setting{} : batch.front();
      for (const auto& [nb, warps] : std::vector<std::pair<int, int>>{{4, 1}, {1, 16}}) {
        extreme[Param::mma_nb] = nb;
        extreme[Param::mma_warps] = warps;
        extreme[Param::mma_creg] = 0;
        if (!batch.empty() && !space.violation(extreme))
          batch.push_back(extreme);
      }
      expect_all_verify(batch, e.evaluate(batch),
                        st.name() + " tensor cores " + std::to_string(g.nx) + "x" +
                            std::to_string(g.ny) + "x" + std::to_string(g.nz));
    }
  }
}

TEST(FamiliesDefaultSpace, RandomSampleHasNoInvalidAndNoLaunchError) {
  for (const std::string name : {"star2d1r", "box2d2r", "star3d2r", "box3d1r", "cross3d3r"}) {
    const Stencil st = typical_stencil(name);
    const Grid g = st.dims() == 2 ? Grid{301, 203, 1} : Grid{61, 47, 39};
    START_OR_SKIP(e, st, g);
    const Space space(st, g, e.limits(), Space::default_values(st.dims(), g));
    Rng rng(2026, 1);
    std::vector<Setting> batch;
    for (int i = 0; i < 24; ++i) {
      if (const auto s = space.random_setting(rng))
        batch.push_back(*s);
    }
    expect_all_verify(batch, e.evaluate(batch), name + " default-space sample");
  }
}

}  // namespace
}  // namespace isletune::cuda
