// Kernel families as units: the registry picks one family per setting, the template family a
// newcomer copies plans, generates and (with the CUDA Toolkit) compiles with NVRTC, the device
// limits' one field list round-trips through the worker hello. Canonical settings: valid,
// same family and plan, idempotent; no two distinct canonical settings build the same kernel
// source (a large random sample, and every setting a default search measures in replay).
#include <gtest/gtest.h>

#include <stdexcept>

#include <cstdio>
#include <set>
#include <unordered_set>

#include "kernel/kernel_plan.hpp"
#include "kernel/registry.hpp"
#include "space/space.hpp"
#include "stencil/typical.hpp"

#ifdef ISLETUNE_KERNEL_FAMILY_CODEGEN
#include <filesystem>
#include <unordered_map>

#include "config/config.hpp"
#include "eval/cuda/codegen.hpp"
#include "eval/cuda/worker_protocol.hpp"
#include "eval/replay/replay_evaluator.hpp"
#include "ga/island.hpp"
#include "ga/memory_ring.hpp"
#include "kernel/source_text.hpp"
#include "sample/predictor.hpp"
#include "sample/sampler.hpp"
#include "sample/setting_source.hpp"
#include "trace/reader.hpp"
#include "trace/replay_dataset.hpp"
#endif
#ifdef ISLETUNE_KERNEL_FAMILY_NVRTC
#include "eval/cuda/nvrtc_compiler.hpp"
#endif

namespace isletune {

const KernelFamily& template_family();   // src/kernel/family_template.cpp
const KernelFamily& tiled_family();      // src/kernel/tiled.cpp
const KernelFamily& streaming_family();  // src/kernel/streaming.cpp

namespace {

Setting one_point(int dims) {
  Setting s;
  s[Param::tdeg] = 1;
  s[Param::tbx] = 32;
  s[Param::tby] = dims == 2 ? 8 : 4;
  s[Param::tbz] = dims == 2 ? 1 : 2;
  for (const Param p : {Param::mfx, Param::mfy, Param::mfz, Param::ufx, Param::ufy, Param::ufz})
    s[p] = 1;
  return s;
}

TEST(KernelFamily, EverySettingOfTheDefaultSpaceHasExactlyOneRegisteredFamily) {
  std::set<std::string_view> names;
  for (const KernelFamily* f : families())
    EXPECT_TRUE(names.insert(f->name()).second) << "two families named " << f->name();
  EXPECT_EQ(find_family("template"), nullptr);  // the skeleton is not registered
  // A family with a selector builds the settings that select it; of the others exactly one
  // builds each setting (OcTable::family_of).
  const auto selected = [](const KernelFamily* f, const Setting& s) {
    const KernelFamily* by_selector = nullptr;
    for (const FamilySelector& sel : registered_ocs().selectors()) {
      if (s[sel.param] != neutral_value(sel.param))
        by_selector = sel.family;
    }
    const bool has_selector =
        std::any_of(registered_ocs().selectors().begin(), registered_ocs().selectors().end(),
                    [f](const FamilySelector& sel) { return sel.family == f; });
    return by_selector != nullptr ? f == by_selector : !has_selector;
  };
  int mma = 0;
  for (const char* name : {"star2d1r", "box2d2r"}) {
    const Grid grid{96, 80, 1};
    const Space space(typical_stencil(name), grid, {}, Space::default_values(2, grid));
    Rng rng(7, 0);
    for (int i = 0; i < 550; ++i) {
      // The tensor-core OC is 32 of box2d2r's 200,000 settings: drawn on its own too.
      const auto s = i < 500 ? space.random_setting(rng) : space.random_in_oc(49, rng);
      if (i >= 500 && name == std::string("star2d1r")) {
        EXPECT_FALSE(s.has_value()) << "a star holds no tensor-core setting";
        continue;
      }
      ASSERT_TRUE(s.has_value());
      int building = 0;
      for (const KernelFamily* f : families())
        building += f->builds(*s) && selected(f, *s) ? 1 : 0;
      EXPECT_EQ(building, 1) << canonical_key(*s);
      EXPECT_EQ(find_family(*s)->name(), (*s)[Param::mma]         ? "mma"
                                         : (*s)[Param::streaming] ? "streaming"
                                                                  : "tiled");
      mma += (*s)[Param::mma];
    }
  }
  EXPECT_GT(mma, 0) << "box2d2r's space holds tensor-core settings";
}

TEST(KernelFamily, TemplateFamilyPlansOnePointPerThreadWithoutSharedMemory) {
  const Stencil st = typical_stencil("star3d2r");
  const Grid grid{67, 35, 19};
  const KernelPlan p = make_plan(template_family(), shape_of(st, grid), one_point(3));
  EXPECT_EQ(p.family, &template_family());
  EXPECT_EQ(p.tile, (std::array<int, 3>{32, 4, 2}));
  EXPECT_EQ(p.grid, (std::array<long long, 3>{3, 9, 10}));
  EXPECT_EQ(p.shared_bytes, 0);
  EXPECT_EQ(p.loaded, (std::array<int, 3>{36, 8, 6}));
  EXPECT_DOUBLE_EQ(p.redundancy, 1.0);
  Setting fused = one_point(3);
  fused[Param::tdeg] = 2;
  std::string why;
  ASSERT_EQ(template_family().rules().size(), 1u);
  EXPECT_FALSE(template_family().rules()[0].check(shape_of(st, grid), fused, &why));
  EXPECT_NE(why.find("tdeg must be 1"), std::string::npos) << why;
  EXPECT_TRUE(template_family().unsupported(fused).has_value());
  EXPECT_FALSE(template_family().unsupported(one_point(3)).has_value());
}

// The extension point (issue 46): a family brings its OCs. The template's OC 48 joins an OC
// table beside the streaming family's with its id, name and rule, and a setting the template
// builds is in it; beside the tiled family it is refused, because tiled's OC 0 holds the same
// settings (the family listed first would build them), as is an id declared twice.
TEST(KernelFamily, TemplateBringsItsOwnOcToAnOcTable) {
  const std::array<const KernelFamily*, 2> list = {&template_family(), &streaming_family()};
  const OcTable table(list);
  ASSERT_EQ(table.entries().size(), 25u);
  EXPECT_EQ(table.entries().back().oc->id, 48);
  EXPECT_EQ(table.entries().back().family, &template_family());
  ASSERT_NE(table.find(48), nullptr);
  EXPECT_EQ(table.find(48)->oc->name, "template");
  EXPECT_EQ(table.find(48)->oc->rule(), "streaming=0,merge=0,retiming=0,prefetch=0,tdeg=1");
  EXPECT_EQ(table.find(0), nullptr) << "no tiled family in this table";
  EXPECT_EQ(table.oc_of(one_point(3)), 48);
  Setting fused = one_point(3);
  fused[Param::tdeg] = 2;
  EXPECT_EQ(table.oc_of(fused), -1) << "the template builds one step per launch";
  Setting streamed = one_point(3);
  streamed[Param::streaming] = 1;
  EXPECT_EQ(table.oc_of(streamed), oc_of(streamed)) << "streaming keeps its recorded ids";
  // Its OC in a space over the table: the streaming family's sd and sb (which it reads alone)
  // at 0, the rest as listed; a setting that streams no axis but sets sd is refused in the
  // streaming family's words.
  const Grid grid{64, 64, 64};
  const Space::Values values = Space::default_values(3, grid, table);
  const Space space(typical_stencil("star3d1r"), grid, {}, values, table);
  EXPECT_EQ(space.oc_domain(48)[index_of(Param::sd)], std::vector<int>{0});
  EXPECT_EQ(space.oc_domain(48)[index_of(Param::sb)], std::vector<int>{0});
  EXPECT_EQ(space.oc_domain(48)[index_of(Param::tbx)], values[index_of(Param::tbx)]);
  EXPECT_EQ(space.violation(one_point(3)), std::nullopt);
  Setting with_axis = one_point(3);
  with_axis[Param::sd] = 1;
  EXPECT_EQ(space.violation(with_axis), "without streaming sd and sb must be 0 (got sd=1, sb=0).");
  // It takes any tile (one point per thread, each read with its halo): a block thinner than
  // the halo is valid, as in the tiled family's one-step kernel.
  Setting thin = one_point(3);
  thin[Param::tbx] = 1;
  thin[Param::tby] = 32;
  EXPECT_EQ(space.violation(thin), std::nullopt);

  const std::array<const KernelFamily*, 3> with_tiled = {&tiled_family(), &streaming_family(),
                                                         &template_family()};
  try {
    const OcTable refused(with_tiled);
    ADD_FAILURE() << "an OC table with overlapping OCs was built";
  } catch (const std::logic_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("OC 48"), std::string::npos) << msg;
    EXPECT_NE(msg.find("OC 0 "), std::string::npos) << msg;
    EXPECT_NE(msg.find("tiled family"), std::string::npos) << msg;
  }
  const std::array<const KernelFamily*, 2> twice = {&streaming_family(), &streaming_family()};
  EXPECT_THROW(OcTable{twice}, std::logic_error);
  // The registered table is the tiled and streaming families' 29 OCs and the tensor-core one.
  EXPECT_EQ(oc_table().size(), 30u);
  EXPECT_EQ(find_oc(48), nullptr);
}

// The generic rules read what a family declares, never its switch: the streaming family reads
// sd and sb alone (their defaults and allowed values are its own, every other family's
// settings hold them at 0), and which kernels take any tile (the tile-covers-halo rule's
// exemption) is each family's answer.
TEST(KernelFamily, TheSpaceReadsTheFamiliesDeclarationsNotTheStreamingSwitch) {
  const OcTable& ocs = registered_ocs();
  EXPECT_EQ(ocs.alone_reader(Param::sd), &streaming_family());
  EXPECT_EQ(ocs.alone_reader(Param::sb), &streaming_family());
  EXPECT_EQ(ocs.alone_reader(Param::tbx), nullptr);
  EXPECT_EQ(ocs.alone_reader(Param::streaming), nullptr) << "an OC parameter, not read alone";
  EXPECT_FALSE(tiled_family().reads_alone(Param::sd));
  EXPECT_FALSE(template_family().reads_alone(Param::sb));
  ASSERT_NE(ocs.declaration(Param::sd), nullptr);
  EXPECT_EQ(ocs.declaration(Param::sd)->defaults(3, Grid{64, 64, 64}), (std::vector<int>{1, 2}));
  EXPECT_EQ(ocs.declaration(Param::sb)->defaults(3, Grid{64, 64, 64}),
            (std::vector<int>{8, 16, 32, 64}));
  EXPECT_EQ(streaming_family().exclusive_params().absent, "without streaming");

  Setting tiled = one_point(3);
  EXPECT_TRUE(tiled_family().takes_any_tile(tiled));
  tiled[Param::tdeg] = 2;
  EXPECT_FALSE(tiled_family().takes_any_tile(tiled)) << "fused steps compute tile interiors";
  Setting streamed = one_point(3);
  streamed[Param::streaming] = 1;
  streamed[Param::sd] = 2;
  EXPECT_FALSE(streaming_family().takes_any_tile(streamed));
  EXPECT_TRUE(template_family().takes_any_tile(one_point(3)));

  // A family that declares a parameter read alone which another declares is refused.
  class Rival final : public KernelFamily {
   public:
    std::string_view name() const override { return "rival"; }
    bool builds(const Setting&) const override { return false; }
    const std::vector<Oc>& ocs() const override {
      static const std::vector<Oc> none;
      return none;
    }
    ExclusiveParams exclusive_params() const override {
      return streaming_family().exclusive_params();
    }
    std::span<const FamilyRule> rules() const override { return {}; }
    void plan(const ProblemShape&, const Setting&, KernelPlan&) const override {}
    std::optional<std::string> unsupported(const Setting&) const override { return {}; }
    std::string apply_member(const Stencil&, const Setting&, const KernelPlan&) const override {
      return "";
    }
    FamilyCode code(const KernelPlan&, const Setting&, const Grid&,
                    std::string_view) const override {
      return {};
    }
  };
  const Rival rival;
  const std::array<const KernelFamily*, 2> both = {&streaming_family(), &rival};
  try {
    const OcTable refused(both);
    ADD_FAILURE() << "two families read sd alone";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("the rival family declares sd, which the streaming "
                                         "family declares already"),
              std::string::npos)
        << e.what();
  }
}

// The online model's interacting parameters are what selects a family's kernel, read from the
// registered OCs: the tiled and streaming families' switches and the tensor-core family's
// selector, merge first (the model's column
// order, on which every recorded replay trajectory depends).
TEST(KernelFamily, ModelInteractionsAreTheOcSelectingParameters) {
  const std::vector<Param> expected = {Param::merge, Param::streaming, Param::retiming,
                                       Param::prefetch, Param::mma};
  EXPECT_EQ(model_interactions(), expected);
}

// The spaces the canonical tests walk: 2-D and 3-D, symmetric and asymmetric reach, and a
// stencil large enough that codegen clips unroll factors (box3d4r).
struct Problem {
  Stencil stencil;
  Grid grid;
};
std::vector<Problem> problems() {
  return {{typical_stencil("star2d1r"), Grid{8192, 8192, 1}},
          {typical_stencil("box2d2r"), Grid{4096, 4096, 1}},
          {typical_stencil("star3d2r"), Grid{256, 256, 256}},
          {typical_stencil("box3d4r"), Grid{256, 256, 256}},
          {Stencil::make("asym3d", 3, {{0, 0, 0}, {-1, 0, 0}, {2, 0, 0}, {0, -2, 0}, {0, 0, 1}},
                         {0.4, 0.1, 0.2, 0.2, 0.1}),
           Grid{130, 67, 90}}};
}

TEST(Canonical, IsValidIdempotentAndKeepsTheFamilyAndThePlan) {
  for (const Problem& pr : problems()) {
    const Space space(pr.stencil, pr.grid, {}, Space::default_values(pr.stencil.dims(), pr.grid));
    const ProblemShape shape = shape_of(pr.stencil, pr.grid);
    Rng rng(11, 0);
    int moved = 0;
    for (int i = 0; i < 3000; ++i) {
      const auto s = space.random_setting(rng);
      ASSERT_TRUE(s.has_value());
      const Setting c = canonical(shape, *s);
      moved += c != *s ? 1 : 0;
      ASSERT_TRUE(space.valid(c)) << canonical_key(*s) << " -> " << *space.violation(c);
      EXPECT_EQ(canonical(shape, c), c);
      ASSERT_EQ(find_family(c), find_family(*s));
      const KernelPlan a = make_plan(shape, *s), b = make_plan(shape, c);
      EXPECT_EQ(a.block, b.block);
      EXPECT_EQ(a.grid, b.grid);
      EXPECT_EQ(a.tile, b.tile);
      EXPECT_EQ(a.loaded, b.loaded);
      EXPECT_EQ(a.shared_bytes, b.shared_bytes);
      EXPECT_EQ(a.stream_axis, b.stream_axis);
      EXPECT_EQ(a.stream_len, b.stream_len);
      EXPECT_EQ(a.steps_per_launch, b.steps_per_launch);
    }
    EXPECT_GT(moved, 300) << pr.stencil.name();  // the default space holds many twins
  }
}

TEST(Canonical, SpaceCountsAndSamplesDistinctKernels) {
  const Grid grid{8192, 8192, 1};
  const Space space(typical_stencil("star2d1r"), grid, {}, Space::default_values(2, grid));
  double valid = 0, kernels = 0;
  for (const OcCount& c : space.count_per_oc(0)) {
    ASSERT_TRUE(c.exact);
    valid += c.count;
    kernels += c.kernels;
    const OcFlags f = oc_flags(c.oc);
    // Cyclic merging with fused tiled steps built the block-merged kernels (0 kernels of its
    // own): OC 17 is not declared, so not counted (issue 46).
    EXPECT_FALSE(f.merge == static_cast<int>(MergeKind::cyclic) && f.temporal && !f.streaming)
        << oc_name(c.oc);
    EXPECT_GT(c.kernels, 0) << oc_name(c.oc);
    if (f.streaming) {  // the register pipeline reads the merge kind
      EXPECT_GT(c.kernels, 0) << oc_name(c.oc);
    }
  }
  // The census figures (docs/studies/2026-11-24-distinct-kernels-canonical-settings.md,
  // isletune-kernel-count star2d1r 8192 8192): since a tdeg-1 tiled tile may be as thin as the
  // halo, 3,680 more (2-wide blocks along x or y); since use_shared selects the shared ring of the
  // last level at tdeg >= 2 (streaming), 19,888 more settings fit the registers (390,910 before)
  // and the streaming settings with use_shared = 1 at tdeg >= 2 build kernels of their own (105,158
  // before); OC 17's 39,448 settings, none a kernel of its own, are no longer valid (410,798
  // before, issue 46); since tdeg 1 without retiming builds the centre-queue kernel (3 values a
  // point instead of the queue's 7), 2,816 more settings fit the registers (371,350 and 157,254
  // before, issue 48).
  EXPECT_EQ(valid, 374166);
  EXPECT_EQ(kernels, 157606);
  Rng rng(3, 0);
  const int oc = oc_id(OcFlags{1, 1, 0, 0, 1});  // stream+block+tb
  for (int i = 0; i < 200; ++i) {
    const auto s = space.random_kernel_in_oc(oc, rng);
    ASSERT_TRUE(s.has_value());
    EXPECT_TRUE(space.valid(*s));
    EXPECT_TRUE(is_canonical(space.shape(), *s)) << canonical_key(*s);
    EXPECT_EQ(oc_of(*s), oc);
  }
  EXPECT_FALSE(space.random_kernel_in_oc(oc_id(OcFlags{0, 2, 0, 0, 1}), rng, 2000).has_value());
}

#ifdef ISLETUNE_KERNEL_FAMILY_CODEGEN
// The kernel a setting builds, as the cubin cache keys it (comment lines left out).
std::string kernel_text(const Problem& pr, const Setting& s) {
  return without_comment_lines(cuda::generate_kernel(pr.stencil, pr.grid, s).source);
}

TEST(Canonical, NoTwoCanonicalSettingsOfALargeRandomSampleBuildTheSameKernel) {
  for (const Problem& pr : problems()) {
    const Space space(pr.stencil, pr.grid, {}, Space::default_values(pr.stencil.dims(), pr.grid));
    Rng rng(5, 1);
    std::unordered_map<std::string, Setting> kernel_of;  // kernel text -> canonical setting
    std::size_t canonicals = 0;
    std::unordered_set<Setting, SettingHash> seen;
    for (int i = 0; i < 4000; ++i) {
      const auto s = space.random_setting(rng);  // canonical or not
      ASSERT_TRUE(s.has_value());
      const Setting c = canonical(space.shape(), *s);
      canonicals += seen.insert(c).second ? 1 : 0;
      const std::string text = kernel_text(pr, *s);
      const auto [it, fresh] = kernel_of.emplace(text, c);
      EXPECT_EQ(it->second, c) << pr.stencil.name() << ": " << canonical_key(it->second) << " and "
                               << canonical_key(c) << " build the same kernel";
    }
    EXPECT_EQ(kernel_of.size(), canonicals) << pr.stencil.name();
    EXPECT_GT(canonicals, 1500u) << pr.stencil.name();
  }
}

// A setting of the tiled family (block merging, 32x4x2 threads, 1x4x8 points per thread)
// and of the streaming family (along z, 32x16 threads, one point each, sb 16), valid for a
// stencil of radius <= 4; `ufz` unrolls along z (tiled: the chunk; streaming: the plane loop).
Setting tiled_with_ufz(int ufz) {
  Setting s = one_point(3);
  s[Param::merge] = static_cast<int>(MergeKind::block);
  s[Param::mfy] = 4;
  s[Param::mfz] = 8;
  s[Param::ufz] = ufz;
  return s;
}
Setting streaming_with_ufz(int ufz) {
  Setting s = one_point(3);
  s[Param::streaming] = 1;
  s[Param::sd] = 2;
  s[Param::sb] = 16;
  s[Param::tby] = 16;
  s[Param::tbz] = 1;
  s[Param::retiming] = 1;  // box3d4r's queue (729 doubles) would not fit the registers
  s[Param::ufz] = ufz;
  return s;
}

// A factor the code clips for a large stencil: box3d4r (729 points) unrolls its stream loop at
// most 4 ways, so streaming ufz 8 and ufz 4 build one kernel and share one canonical setting
// (carrying 4); its tiled chunk loops over the stencil's planes (a tile unrolled over all nine
// planes cannot hold 8 points), so a tiled chunk has no z points: ufz 8, 4 and 1 build one
// kernel, canonical with ufz 1. A 7-point star clips nothing and keeps them all apart.
TEST(Canonical, FactorsTheStencilClipsShareOneCanonicalSettingAndOneKernel) {
  const Grid grid{128, 128, 128};
  for (const auto& make : {tiled_with_ufz, streaming_with_ufz}) {
    const bool tiled = make == tiled_with_ufz;
    const Problem big{typical_stencil("box3d4r"), grid};
    const Space space(big.stencil, grid, {}, Space::default_values(3, grid));
    const Setting eight = make(8), four = make(4), one = make(1);
    ASSERT_TRUE(space.valid(eight)) << *space.violation(eight);
    ASSERT_TRUE(space.valid(four)) << *space.violation(four);
    const Setting& kept = tiled ? one : four;
    EXPECT_EQ(canonical(space.shape(), eight), kept) << canonical_key(eight);
    EXPECT_EQ(canonical(space.shape(), four), kept) << canonical_key(four);
    EXPECT_TRUE(is_canonical(space.shape(), kept));
    EXPECT_FALSE(is_canonical(space.shape(), eight));
    EXPECT_EQ(kernel_text(big, eight), kernel_text(big, four));
    EXPECT_EQ(kernel_text(big, eight), kernel_text(big, kept));
    // The plan takes the unroll from the canonical setting.
    EXPECT_EQ(make_plan(space.shape(), eight).unroll, make_plan(space.shape(), four).unroll);
    EXPECT_EQ(make_plan(space.shape(), eight).unroll[2], tiled ? 1 : 4);

    const Problem small{typical_stencil("star3d1r"), grid};
    const Space small_space(small.stencil, grid, {}, Space::default_values(3, grid));
    ASSERT_TRUE(small_space.valid(eight)) << *small_space.violation(eight);
    EXPECT_TRUE(is_canonical(small_space.shape(), eight));
    EXPECT_TRUE(is_canonical(small_space.shape(), four));
    EXPECT_NE(kernel_text(small, eight), kernel_text(small, four));
    EXPECT_EQ(make_plan(small_space.shape(), eight).unroll[2], 8);
  }
}

// box3d3r (343 points) keeps z points in its tiled chunk (its best tiles share loads along z):
// ufz 8 clips to 4 with 4 points along y, ufz 1 loops over the planes; both canonical.
TEST(Canonical, TiledChunkOfABoxKeepsItsZPointsWhereEightFitTheCost) {
  const Grid grid{128, 128, 128};
  const Problem box{typical_stencil("box3d3r"), grid};
  const Space space(box.stencil, grid, {}, Space::default_values(3, grid));
  Setting eight = tiled_with_ufz(8), one = tiled_with_ufz(1);
  eight[Param::ufy] = one[Param::ufy] = 4;
  ASSERT_TRUE(space.valid(eight)) << *space.violation(eight);
  ASSERT_TRUE(space.valid(one)) << *space.violation(one);
  EXPECT_EQ(make_plan(space.shape(), eight).unroll, (std::array<int, 3>{1, 4, 4}));
  EXPECT_EQ(make_plan(space.shape(), one).unroll, (std::array<int, 3>{1, 4, 1}));
  EXPECT_TRUE(is_canonical(space.shape(), one));
  const std::string looped = kernel_text(box, one), unrolled = kernel_text(box, eight);
  EXPECT_NE(looped.find("isl_plane_coef"), std::string::npos);
  EXPECT_EQ(unrolled.find("isl_plane_coef"), std::string::npos);
}

// With fused steps the streaming main kernel clips its plane loop harder than a tdeg-1 kernel
// would; its one-step tail is the plain kernel and reads no unroll, so settings whose main
// kernels clip alike are one kernel (box3d4r, one point per thread: tdeg 2 kernels unroll 2
// ways whatever ufz >= 2 asks, a tdeg-1 kernel 4 ways).
TEST(Canonical, StreamingWithFusedStepsKeepsTheUnrollItsMainKernelReads) {
  const Grid grid{128, 128, 128};
  const Problem big{typical_stencil("box3d4r"), grid};
  const Space space(big.stencil, grid, {}, Space::default_values(3, grid));
  const auto fused = [](int ufz) {
    Setting s = streaming_with_ufz(ufz);
    s[Param::tdeg] = 2;
    s[Param::tby] = 32;
    s[Param::retiming] = 1;  // the queue of two levels would not fit the registers
    return s;
  };
  const Setting eight = fused(8), four = fused(4), two = fused(2);
  for (const Setting& s : {eight, four, two})
    ASSERT_TRUE(space.valid(s)) << *space.violation(s);
  EXPECT_EQ(canonical(space.shape(), eight), two);
  EXPECT_EQ(canonical(space.shape(), four), two);
  EXPECT_EQ(canonical(space.shape(), two), two);
  EXPECT_EQ(make_plan(space.shape(), eight).unroll[2], 2);
  EXPECT_EQ(make_plan(space.shape(), two).unroll[2], 2);
  EXPECT_EQ(kernel_text(big, eight), kernel_text(big, two));
  EXPECT_EQ(kernel_text(big, four), kernel_text(big, two));
  // At tdeg 1 the same factors clip less: 8 and 4 are one kernel, 2 another.
  Setting one8 = eight, one4 = four, one2 = two;
  for (Setting* s : {&one8, &one4, &one2})
    (*s)[Param::tdeg] = 1;
  EXPECT_EQ(canonical(space.shape(), one8), one4);
  EXPECT_NE(kernel_text(big, one4), kernel_text(big, one2));
}

// use_shared is the shared ring of the last level at tdeg >= 2 (its own kernel) and means
// nothing at tdeg 1 (canonical 0, the same kernel); the generated kernel of a block-merged x
// pair reads star3d2r's in-plane neighbours of two points with six aligned double2 loads
// ((-2,-1) and (2,3) of the row, (0,1) of the rows -2, -1, 1, 2) and the ring level's 13 terms
// of two points with eleven (three of the centre row, four rows, four planes).
TEST(Canonical, StreamingSharedRingIsItsOwnKernelOnlyWithFusedSteps) {
  const Grid grid{256, 256, 256};
  const Problem pr{typical_stencil("star3d2r"), grid};
  const Space space(pr.stencil, grid, {}, Space::default_values(3, grid));
  // Families case 32 at tdeg 1 and without the ring.
  Setting s = *setting_from_key(
      "streaming=1,merge=block,retiming=1,prefetch=1,tdeg=1,sd=1,sb=128,tbx=32,tby=1,tbz=16,"
      "mfx=2,mfy=1,mfz=2,ufx=1,ufy=1,ufz=1,use_shared=0,use_constant=1");
  Setting ring = s;
  ring[Param::use_shared] = 1;
  EXPECT_EQ(canonical(space.shape(), ring), s);  // tdeg 1
  EXPECT_EQ(kernel_text(pr, ring), kernel_text(pr, s));
  s[Param::tdeg] = ring[Param::tdeg] = 2;
  ASSERT_TRUE(space.valid(ring)) << *space.violation(ring);
  EXPECT_EQ(canonical(space.shape(), ring), ring);
  EXPECT_FALSE(space.valid(s));  // 4 points x 2 register levels do not fit 512 threads
  const std::string text = kernel_text(pr, ring);
  EXPECT_NE(text.find("static constexpr int SHQ = 1;"), std::string::npos);
  EXPECT_NE(text.find("static constexpr int VEC = 1;"), std::string::npos);
  const auto loads_in = [&](const std::string& function) {
    const auto from = text.find(function);
    const auto to = text.find("  }\n", from);
    int n = 0;
    for (auto at = text.find("const double2 v", from); at < to;
         at = text.find("const double2 v", at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(loads_in("void push_part2("), 6);
  EXPECT_EQ(loads_in("void ssum2("), 11);
  ring[Param::merge] = static_cast<int>(MergeKind::cyclic);  // cyclic points: no pairs
  EXPECT_NE(kernel_text(pr, ring).find("static constexpr int VEC = 0;"), std::string::npos);
}

// `isletune space`'s distinct-kernel count (Space::count_per_oc, exact by enumeration here)
// equals the number of distinct kernel sources over an enumerated subspace of a big 3-D box
// whose unroll factors the stencil clips, and is below the number of valid settings.
TEST(Canonical, DistinctKernelCountOfABig3DBoxIsTheNumberOfDistinctSources) {
  const Grid grid{64, 64, 64};
  const Problem big{typical_stencil("box3d4r"), grid};
  Space::Values v = Space::default_values(3, grid);
  const auto set = [&v](Param p, std::vector<int> values) { v[index_of(p)] = std::move(values); };
  set(Param::merge, {0, 1});
  set(Param::retiming, {0, 1});
  set(Param::prefetch, {0});
  set(Param::tdeg, {1, 2});
  set(Param::sd, {2});
  set(Param::sb, {16});
  set(Param::tbx, {32});
  set(Param::tby, {4, 16});
  set(Param::tbz, {1, 2});
  set(Param::mfx, {1});
  set(Param::mfy, {1, 4});
  set(Param::mfz, {1, 8});
  set(Param::ufx, {1});
  set(Param::ufy, {1, 2, 4});
  set(Param::use_constant, {0});
  const Space space(big.stencil, grid, {}, v);
  double valid = 0, kernels = 0;
  for (const OcCount& c : space.count_per_oc(0)) {
    ASSERT_TRUE(c.exact);
    valid += c.count;
    kernels += c.kernels;
  }
  std::unordered_set<std::string> sources;
  long long enumerated = 0;
  space.for_each_valid(-1, [&](const Setting& s) {
    ++enumerated;
    sources.insert(kernel_text(big, s));
  });
  std::printf("box3d4r subspace: %lld valid settings, %.0f distinct kernels, %zu sources\n",
              enumerated, kernels, sources.size());
  EXPECT_EQ(static_cast<double>(enumerated), valid);
  EXPECT_EQ(kernels, static_cast<double>(sources.size()));
  EXPECT_LT(kernels, valid);
  EXPECT_GT(sources.size(), 12u);
}

// A default search (sampler, 2 islands of the default GA with measurement sharing) on the
// recorded star2d1r dataset: every setting it measures builds a kernel no other measured
// setting builds.
TEST(Canonical, NoTwoSettingsMeasuredByADefaultReplayRunBuildTheSameKernel) {
  const auto dataset = std::filesystem::path(ISLETUNE_TEST_DATA) / "h200-star2d1r.h5";
  const Config config =
      parse_config(TraceReader(dataset).config_yaml(), dataset.string(), dataset.parent_path());
  const Problem pr{resolve_stencil(config), config.grid};
  ReplayEvaluator replay = load_replay(dataset);
  // The recording holds one kernel under several settings; the candidates do not.
  std::unordered_set<Setting, SettingHash> recorded_canonical;
  for (const Setting& s : replay.candidates()) {
    EXPECT_TRUE(is_canonical(replay.shape(), s));
    EXPECT_TRUE(recorded_canonical.insert(s).second);
  }
  ListSource source(replay.shape(), replay.candidates());
  const auto predictor = make_predictor("roofline", pr.stencil, pr.grid, replay.limits());
  const SampledSet sampled = sample(source, *predictor, SamplerSettings{}, 1).set;
  const GaSettings ga;
  const Reindex alphabet(sampled.settings, ga.encoding);
  const Torus torus(ga.rows, ga.cols);
  MemoryRing ring(2);
  std::vector<Island> islands;
  for (int r = 0; r < 2; ++r)
    islands.emplace_back(alphabet, torus, GaOperators{}, 1, static_cast<std::uint64_t>(r));
  struct Sink final : TraceSink {
    void evaluation(const EvaluationRecord& r) override {
      if (!r.cached && !r.migrant)
        measured.push_back(r.setting);
    }
    void generation(const GenerationRecord&) override {}
    void migration(const MigrationRecord&) override {}
    void flush() override {}
    std::vector<Setting> measured;
  } sink;
  for (int g = 0; g < 60; ++g) {
    for (Island& island : islands) {
      if (g == 0)
        island.initialize(replay, sink);
      else
        island.step(replay, sink);
    }
    for (int r = 0; r < 2; ++r)
      ring.migrator(r).send(islands[r].emigrants(ga.migration_count, r));
    for (int r = 0; r < 2; ++r)
      islands[r].immigrate(ring.migrator(r).receive(), sink, 0);
  }
  ASSERT_GT(sink.measured.size(), 100u);
  std::unordered_map<std::string, Setting> kernel_of;
  for (const Setting& s : sink.measured) {
    const auto [it, fresh] = kernel_of.emplace(kernel_text(pr, s), s);
    if (!fresh && it->second != s)
      ADD_FAILURE() << canonical_key(it->second) << " and " << canonical_key(s)
                    << " were both measured and build the same kernel";
  }
}

TEST(KernelFamily, TemplateFamilyGeneratesItsTemplateAndConfig) {
  const Stencil st = typical_stencil("star2d1r");
  const Grid grid{131, 67, 1};
  const Setting s = one_point(2);
  const KernelPlan plan = make_plan(template_family(), shape_of(st, grid), s);
  const cuda::KernelSource k = cuda::generate_kernel(st, grid, s, plan);
  EXPECT_NE(k.source.find("isl::template_step<IslMain, IslApply>"), std::string::npos);
  EXPECT_NE(k.source.find("static constexpr int NX = 131;"), std::string::npos);
  EXPECT_NE(k.source.find("// main: template,"), std::string::npos);
  EXPECT_TRUE(k.tail_entry.empty());
  EXPECT_EQ(k.launch.grid, (std::array<long long, 3>{5, 9, 1}));
  EXPECT_EQ(k.launch.shared_bytes, 0);
}

TEST(KernelFamily, DeviceLimitsRoundTripThroughTheWorkerHello) {
  DeviceLimits d;
  d.name = "NVIDIA H200";
  d.sm_count = 132;
  d.max_block_dim = {512, 256, 32};
  d.max_grid_dim = {1LL << 31, 1000, 7};
  d.shared_per_block_optin = 232447;
  d.memory_bandwidth_gbs = 4321.25;
  cuda::Message hello{"hello", {}};
  cuda::put_limits(hello, d);
  DeviceLimits back;
  back.name = "unset";
  back.max_block_dim = {1, 1, 1};
  cuda::get_limits(hello, back);
  EXPECT_EQ(back.name, d.name);
  EXPECT_EQ(back.max_block_dim, d.max_block_dim);
  EXPECT_EQ(back.max_grid_dim, d.max_grid_dim);
  EXPECT_EQ(back.shared_per_block_optin, d.shared_per_block_optin);
  EXPECT_EQ(back.memory_bandwidth_gbs, d.memory_bandwidth_gbs);
  int fields = 0;
  for_each_field(d, [&](const char* name, const auto&) {
    EXPECT_TRUE(hello.has(name)) << name;
    ++fields;
  });
  EXPECT_EQ(static_cast<std::size_t>(fields), hello.fields.size());
}
#endif

#ifdef ISLETUNE_KERNEL_FAMILY_NVRTC
TEST(KernelFamily, TemplateFamilyCompilesWithNvrtcIn2DAnd3D) {
  const cuda::CubinCompiler compiler(90, "");
  for (const char* name : {"star2d1r", "box3d2r"}) {
    const Stencil st = typical_stencil(name);
    const Grid grid = st.dims() == 2 ? Grid{131, 67, 1} : Grid{67, 35, 19};
    for (const int use_constant : {0, 1}) {
      Setting s = one_point(st.dims());
      s[Param::use_constant] = use_constant;
      const KernelPlan plan = make_plan(template_family(), shape_of(st, grid), s);
      const auto result = compiler.compile(cuda::generate_kernel(st, grid, s, plan).source);
      EXPECT_TRUE(result.ok) << name << "\n" << result.log;
      EXPECT_GT(result.cubin.size(), 1000u) << name;
    }
  }
}

// The tensor-core family's kernels compile for sm_90 in 2-D and 3-D, on odd grids (scalar
// staging and stores), with the coefficient fragments in shared memory and in registers, for
// typical boxes and a user's asymmetric stencil; ptxas keeps the MMAs (no local memory for the
// accumulators of box3d2r at nb 1).
TEST(KernelFamily, MmaFamilyCompilesWithNvrtcIn2DAnd3D) {
  const cuda::CubinCompiler compiler(90, "");
  std::vector<Offset> off;
  std::vector<double> coef;
  for (int z = -2; z <= 1; ++z)  // 120 points of a 6 x 8 x 6-plane window: 0.42 useful
    for (int y = -3; y <= 2; ++y)
      for (int x = -2; x <= 2; ++x) {
        off.push_back({x, y, z});
        coef.push_back(0.001 * static_cast<double>(off.size()));
      }
  const Stencil user = Stencil::make("user", 3, off, coef);
  struct Case {
    Stencil stencil;
    Grid grid;
    int creg;
  };
  const std::vector<Case> cases = {
      {typical_stencil("box2d2r"), Grid{131, 67, 1}, 1},
      {typical_stencil("box2d4r"), Grid{256, 64, 1}, 0},
      {typical_stencil("box3d2r"), Grid{67, 35, 19}, 0},
      {typical_stencil("box3d2r"), Grid{64, 32, 16}, 1},
      {user, Grid{67, 35, 19}, 0},
  };
  for (const Case& c : cases) {
    Setting s = one_point(c.stencil.dims());
    s[Param::mma] = 1;
    s[Param::mma_creg] = c.creg;
    s = canonical(shape_of(c.stencil, c.grid), s);
    const auto result =
        compiler.compile(cuda::generate_kernel(c.stencil, c.grid, s, DeviceLimits{}).source);
    EXPECT_TRUE(result.ok) << c.stencil.name() << "\n" << result.log;
    EXPECT_GT(result.cubin.size(), 1000u) << c.stencil.name();
  }
}
#else
TEST(KernelFamily, TemplateFamilyCompilesWithNvrtcIn2DAnd3D) {
  GTEST_SKIP() << "built without the CUDA Toolkit: NVRTC is not available";
}
TEST(KernelFamily, MmaFamilyCompilesWithNvrtcIn2DAnd3D) {
  GTEST_SKIP() << "built without the CUDA Toolkit: NVRTC is not available";
}
#endif

}  // namespace
}  // namespace isletune
