// A family with parameters of its own (issue 46): in this build (ISLETUNE_TEST_TEMPLATE_AXIS)
// Param::tpl_px, the template family's points per thread along x, and Param::tpl_on, its
// selector, are appended after the base parameters and declared by the template
// (KernelFamily::own_params), which is registered (src/kernel/registry.cpp). Its OC names
// tpl_on = 1: the registry builds the settings with tpl_on = 1 by the template and every other
// one by the tiled and streaming families; tpl_on defaults to 0 alone, so the default space is
// the production build's, and a space list with tpl_on 1 adds the template's OC. The space
// enumerates the template's OC over tpl_px and holds both parameters neutral in the other
// families' OCs, their canonical settings have them neutral, keys name them only away from
// their neutral values, and the template's plan and code read tpl_px. The same build also runs
// the setting, byte-codec and golden-space tests (tests/axis/CMakeLists.txt); axis_probe.sh
// compares keys, hashes, draws and saved states with the production build.
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "common/error.hpp"
#include "ga/island.hpp"
#include "kernel/kernel_plan.hpp"
#include "kernel/registry.hpp"
#include "sample/predictor.hpp"
#include "sample/sampler.hpp"
#include "space/space.hpp"
#include "stencil/typical.hpp"

namespace isletune {

const KernelFamily& template_family();   // src/kernel/family_template.cpp
const KernelFamily& tiled_family();      // src/kernel/tiled.cpp
const KernelFamily& streaming_family();  // src/kernel/streaming.cpp
const KernelFamily& mma_family();        // src/kernel/mma.cpp

namespace {

static_assert(kParamCount == index_of(Param::tpl_px) + 2,
              "this build appends two parameters after the production build's");
static_assert(is_appended(Param::tpl_px) && is_appended(Param::tpl_on));

const Grid kGrid{256, 256, 1};

// The registry's families (the template among them) with the template switched on.
Space::Values template_on(int dims) {
  Space::Values values = Space::default_values(dims, kGrid);
  values[index_of(Param::tpl_on)] = {0, 1};
  return values;
}

Space space_of(const std::string& stencil) {
  const Stencil st = typical_stencil(stencil);
  return Space(st, kGrid, DeviceLimits{}, template_on(st.dims()));
}

// The production build's families, without the template.
const OcTable& without_template() {
  static const std::array<const KernelFamily*, 3> list = {&tiled_family(), &streaming_family(),
                                                          &mma_family()};
  static const OcTable t(list);
  return t;
}

// A valid streaming setting of the space, drawn.
Setting streaming_setting(const Space& space) {
  Rng rng(5, 0);
  for (const OcEntry& e : registered_ocs().entries()) {
    if (e.family == &streaming_family()) {
      if (auto s = space.random_kernel_in_oc(e.oc->id, rng))
        return *s;
    }
  }
  throw std::logic_error("no streaming setting drawn");
}

// A tiled setting of OC 0 (one point per thread, no merging, one step).
Setting tile_setting() {
  Setting s = naive_setting(2);
  EXPECT_EQ(oc_of(s), 0);
  return s;
}

TEST(FamilyAxis, TheSelectorPicksTheFamilyInTheRegistryAndTheOcTable) {
  // The tensor-core family's selector (mma) first, then the template's.
  ASSERT_EQ(registered_ocs().selectors().size(), 2u);
  EXPECT_EQ(registered_ocs().selectors()[0].param, Param::mma);
  const FamilySelector& sel = registered_ocs().selectors()[1];
  EXPECT_EQ(sel.param, Param::tpl_on);
  EXPECT_EQ(sel.values, std::vector<int>{1});
  EXPECT_EQ(sel.family, &template_family());
  EXPECT_EQ(find_family("template"), &template_family());

  Setting s = tile_setting();
  EXPECT_EQ(find_family(s), &tiled_family());
  s[Param::tpl_on] = 1;  // the same OC values, selected by the template
  EXPECT_EQ(find_family(s), &template_family());
  EXPECT_EQ(registered_ocs().family_of(s), &template_family());
  EXPECT_EQ(oc_of(s), 48);
  EXPECT_EQ(oc_name(48), "template");
  // Selected, but not a setting the template builds: no family does (not the tiled one).
  Setting fused = s;
  fused[Param::tdeg] = 2;
  EXPECT_EQ(find_family(fused), nullptr);
  EXPECT_EQ(oc_of(fused), -1);
  Setting streamed = s;
  streamed[Param::streaming] = 1;
  EXPECT_EQ(find_family(streamed), nullptr);
  const Space space = space_of("star2d1r");
  EXPECT_TRUE(space.violation(fused).has_value());
  EXPECT_TRUE(space.violation(streamed).has_value());
  // The OC's rule names the selector (the trace's /space/ocs rule column).
  EXPECT_EQ(find_oc(48)->oc->rule(), "streaming=0,merge=0,retiming=0,prefetch=0,tpl_on=1,tdeg=1");
  // The online model lets the selector interact with every other parameter, as the streaming
  // switch does (production: merge, streaming, retiming, prefetch, mma).
  const std::vector<Param> interact = model_interactions();
  const std::vector<Param> expected = {Param::merge,    Param::streaming, Param::retiming,
                                       Param::prefetch, Param::mma,       Param::tpl_on};
  EXPECT_EQ(interact, expected);
  // With its selector the template's OC holds no tiled setting: a table of the two is accepted
  // (without it, it is refused: tests/unit/test_kernel_family.cpp).
  const std::array<const KernelFamily*, 2> list = {&tiled_family(), &template_family()};
  EXPECT_NO_THROW((void)OcTable(list));
}

// A family that owns tpl_on and declares the OCs it is given (a stand-in for a family whose
// selector is declared wrongly).
class SelectorFamily final : public KernelFamily {
 public:
  explicit SelectorFamily(std::vector<Oc> ocs) : ocs_(std::move(ocs)) {}
  std::string_view name() const override { return "selector"; }
  bool builds(const Setting&) const override { return true; }
  const std::vector<Oc>& ocs() const override { return ocs_; }
  std::span<const OwnParam> own_params() const override { return template_family().own_params(); }
  std::span<const FamilyRule> rules() const override { return {}; }
  void plan(const ProblemShape&, const Setting&, KernelPlan&) const override {}
  std::optional<std::string> unsupported(const Setting&) const override { return std::nullopt; }
  std::string apply_member(const Stencil&, const Setting&, const KernelPlan&) const override {
    return "";
  }
  FamilyCode code(const KernelPlan&, const Setting&, const Grid&, std::string_view) const override {
    return {};
  }

 private:
  std::vector<Oc> ocs_;
};

TEST(FamilyAxis, AWronglyDeclaredSelectorIsRefusedInOneSentence) {
  const auto refused = [](std::vector<Oc> ocs) -> std::string {
    const SelectorFamily f(std::move(ocs));
    const std::array<const KernelFamily*, 2> list = {&tiled_family(), &f};
    try {
      const OcTable table(list);
    } catch (const std::logic_error& e) {
      return e.what();
    }
    return "accepted";
  };
  const auto oc = [](int id, std::vector<OcValue> values) {
    return Oc{id, "oc" + std::to_string(id), std::move(values), true};
  };
  EXPECT_NE(refused({oc(50, {{Param::streaming, 0}, {Param::tpl_on, 0}})})
                .find("names its selector tpl_on at its neutral value 0"),
            std::string::npos);
  EXPECT_NE(refused({oc(50, {{Param::streaming, 0}, {Param::tpl_on, 1}}),
                     oc(51, {{Param::streaming, 1}})})
                .find("OC 51 (streaming=1,tdeg>1) of the selector family does not name tpl_on"),
            std::string::npos);
  EXPECT_NE(refused({oc(50, {{Param::tpl_on, 1}, {Param::tpl_px, 2}})})
                .find("names two parameters of its own in its OCs (tpl_px and tpl_on)"),
            std::string::npos);
  // Without a selector the same OC overlaps the tiled family's fused OCs; with it, it does not.
  EXPECT_NE(refused({oc(50, {{Param::streaming, 0}})}).find("could hold the settings of"),
            std::string::npos);
  EXPECT_EQ(refused({oc(50, {{Param::streaming, 0}, {Param::tpl_on, 1}})}), "accepted");
}

TEST(FamilyAxis, TheDefaultSpaceLeavesTheTemplateOutAndAListAddsItsOcAlone) {
  for (const char* name : {"star2d1r", "box3d1r"}) {
    SCOPED_TRACE(name);
    const Stencil st = typical_stencil(name);
    const Grid grid = st.dims() == 3 ? Grid{64, 64, 64} : kGrid;
    EXPECT_EQ(Space::default_values(st.dims(), grid)[index_of(Param::tpl_on)], std::vector<int>{0});
    const Space plain(st, grid, DeviceLimits{}, Space::default_values(st.dims(), grid));
    Space::Values on = Space::default_values(st.dims(), grid);
    on[index_of(Param::tpl_on)] = {0, 1};
    const Space with(st, grid, DeviceLimits{}, on);
    std::map<int, std::pair<double, double>> a, b;
    for (const OcCount& c : plain.count_per_oc(1, 2e4))
      a[c.oc] = {c.count, c.kernels};
    for (const OcCount& c : with.count_per_oc(1, 2e4))
      b[c.oc] = {c.count, c.kernels};
    EXPECT_FALSE(a.count(48));
    ASSERT_TRUE(b.count(48));
    EXPECT_GT(b[48].first, 0);
    b.erase(48);
    EXPECT_EQ(a, b) << "the other OCs count as without the template";
    for (int oc = 0; oc < kOcCount; ++oc) {
      if (with.oc_domain(oc)[0].empty())
        continue;
      EXPECT_EQ(with.oc_domain(oc)[index_of(Param::tpl_on)], std::vector<int>{oc == 48 ? 1 : 0})
          << "OC " << oc;
    }
  }
}

TEST(FamilyAxis, TheTemplatesOcEnumeratesExactlyItsValidSettingsUnderItsOwnPruning) {
  const Space space = space_of("star2d1r");
  const Space::Values& dom = space.oc_domain(48);
  // The family's pruning (space_parts): no streaming axis or block, one step, the selector on.
  EXPECT_EQ(dom[index_of(Param::sd)], std::vector<int>{0});
  EXPECT_EQ(dom[index_of(Param::sb)], std::vector<int>{0});
  EXPECT_EQ(dom[index_of(Param::tdeg)], std::vector<int>{1});
  EXPECT_EQ(dom[index_of(Param::tpl_on)], std::vector<int>{1});
  EXPECT_GT(space.values(Param::sb).size(), 1u);
  // Every setting of the domain's product, checked one by one, against the enumeration.
  long long brute = 0;
  std::vector<Setting> todo(1);
  for (std::size_t p = 0; p < kParamCount; ++p) {
    std::vector<Setting> next;
    for (const Setting& s : todo) {
      for (const int v : dom[p]) {
        Setting t = s;
        t.values[p] = v;
        next.push_back(t);
      }
    }
    todo = std::move(next);
  }
  ASSERT_LT(todo.size(), 200000u);
  for (const Setting& s : todo)
    brute += space.valid(s) ? 1 : 0;
  long long n = 0;
  space.for_each_valid(48, [&](const Setting& s) {
    ++n;
    EXPECT_EQ(find_family(s), &template_family()) << canonical_key(s);
    EXPECT_EQ(oc_of(s), 48);
    EXPECT_FALSE(space.violation(s).has_value()) << canonical_key(s);
  });
  EXPECT_GT(n, 0);
  EXPECT_EQ(n, brute);
  // Settings of every other OC hold the selector off.
  space.for_each_valid(0, [&](const Setting& s) { EXPECT_EQ(s[Param::tpl_on], 0); });
}

TEST(FamilyAxis, TheSamplerDrawsTheTemplatesOcOverItsAxis) {
  const Space space = space_of("star2d1r");
  SpaceSource source(space);
  UniformPredictor predictor;
  SamplerSettings settings;
  settings.max_samples = 3000;
  const SampleResult r = sample(source, predictor, settings, 7);
  std::set<int> px;
  int template_settings = 0;
  for (std::size_t i = 0; i < r.set.size(); ++i) {
    const Setting& s = r.set.settings[i];
    EXPECT_EQ(r.set.oc[i], oc_of(s));
    EXPECT_EQ(s[Param::tpl_on] == 1, r.set.oc[i] == 48);
    if (r.set.oc[i] == 48) {
      ++template_settings;
      px.insert(s[Param::tpl_px]);
    } else {
      EXPECT_EQ(s[Param::tpl_px], 1);
    }
  }
  EXPECT_GE(template_settings, 10);
  EXPECT_EQ(px, (std::set<int>{1, 2, 4}));
}

TEST(FamilyAxis, TheSpaceEnumeratesTheTemplatesOcOverItsOwnAxisAndNoOtherOc) {
  const Space space = space_of("star2d1r");
  // The defaults of the family that declares it; without the template, its neutral value.
  EXPECT_EQ(space.values(Param::tpl_px), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(Space::default_values(2, kGrid, without_template())[index_of(Param::tpl_px)],
            std::vector<int>{1});
  std::set<int> seen;
  long long n = 0;
  space.for_each_valid(48, [&](const Setting& s) {
    seen.insert(s[Param::tpl_px]);
    ++n;
  });
  EXPECT_EQ(seen, (std::set<int>{1, 2, 4}));
  const auto counts = space.count_per_oc(1);
  double template_count = -1;
  for (const OcCount& c : counts) {
    if (c.oc == 48)
      template_count = c.count;
    const auto& dom = space.oc_domain(c.oc)[index_of(Param::tpl_px)];
    if (c.oc == 48) {
      EXPECT_EQ(dom, (std::vector<int>{1, 2, 4}));
    } else {
      EXPECT_EQ(dom, std::vector<int>{1}) << "OC " << c.oc << " holds tpl_px neutral";
    }
  }
  EXPECT_EQ(template_count, static_cast<double>(n));
  // Drawn kernels of the template's OC take every value too.
  Rng rng(3, 0);
  std::set<int> drawn;
  for (int i = 0; i < 60; ++i) {
    const auto s = space.random_kernel_in_oc(48, rng);
    ASSERT_TRUE(s.has_value());
    drawn.insert((*s)[Param::tpl_px]);
  }
  EXPECT_EQ(drawn, (std::set<int>{1, 2, 4}));
}

TEST(FamilyAxis, OtherFamiliesHoldItNeutralAndTheirKeysDoNotName) {
  const Space space = space_of("star2d1r");
  Setting s = streaming_setting(space);
  ASSERT_EQ(s[Param::tpl_px], 1);
  const std::string key = canonical_key(s);
  EXPECT_EQ(key.find("tpl_px"), std::string::npos) << key;
  // The key of the base parameters alone, as a build without the parameter writes it
  // (axis_probe.sh compares with that build itself).
  std::string base;
  for (std::size_t i = 0; i < kBaseParamCount; ++i) {
    const Param p = param_at(i);
    base += std::string(i > 0 ? "," : "") + std::string(param_name(p)) + "=" +
            (p == Param::merge ? std::string(merge_name(static_cast<MergeKind>(s[p])))
                               : std::to_string(s[p]));
  }
  EXPECT_EQ(key, base);

  Setting off = s;
  off[Param::tpl_px] = 4;
  EXPECT_EQ(canonical(space.shape(), off), canonical(space.shape(), s));
  EXPECT_EQ(canonical(space.shape(), off)[Param::tpl_px], 1);
  const auto why = space.violation(off);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("tpl_px=4 is read by the template family only"), std::string::npos) << *why;
  EXPECT_NE(canonical_key(off), key);
  EXPECT_NE(setting_hash(off), setting_hash(s));
  // An OC table without the template (no family declares tpl_px there) holds it neutral too.
  EXPECT_EQ(without_template().canonical(space.shape(), off)[Param::tpl_px], 1);
}

TEST(FamilyAxis, TheTemplatesKeysNameItsAxisAwayFromNeutralAndReadBack) {
  const Space space = space_of("star2d1r");
  Rng rng(4, 0);
  for (int i = 0; i < 40; ++i) {
    const auto s = space.random_kernel_in_oc(48, rng);
    ASSERT_TRUE(s.has_value());
    const std::string key = canonical_key(*s);
    const bool named = key.find(",tpl_px=") != std::string::npos;
    EXPECT_EQ(named, (*s)[Param::tpl_px] != 1) << key;
    const auto back = setting_from_key(key);
    ASSERT_TRUE(back.has_value()) << key;
    EXPECT_EQ(*back, *s);
  }
  // A key without the appended parameter (as recorded before it) reads it neutral.
  Setting s = *space.random_kernel_in_oc(48, rng);
  s[Param::tpl_px] = 2;
  const std::string key = canonical_key(s);
  const std::string before = key.substr(0, key.find(",tpl_px="));
  const auto old = setting_from_key(before);
  ASSERT_TRUE(old.has_value()) << before;
  EXPECT_EQ((*old)[Param::tpl_px], 1);
  EXPECT_FALSE(setting_from_key(before + ",tpl_px=2,tpl_px=4").has_value());
  EXPECT_FALSE(setting_from_key(before + ",warp_tile=2").has_value());
}

TEST(FamilyAxis, TheTemplatesPlanAndCodeReadItsAxis) {
  const Stencil st = typical_stencil("star2d1r");
  const Space space = space_of("star2d1r");
  Rng rng(6, 0);
  for (int i = 0; i < 20; ++i) {
    const Setting s = *space.random_kernel_in_oc(48, rng);
    const KernelPlan plan = make_plan(template_family(), shape_of(st, kGrid), s);
    EXPECT_EQ(plan.tile[0], s[Param::tbx] * s[Param::tpl_px]);
    const FamilyCode code = template_family().code(plan, s, kGrid, "IslMain");
    EXPECT_NE(code.config.find("PX = " + std::to_string(s[Param::tpl_px]) + ";"), std::string::npos)
        << code.config;
  }
}

TEST(FamilyAxis, AListOutsideTheFamilysValuesIsOneSentence) {
  const Stencil st = typical_stencil("star2d1r");
  Space::Values values = template_on(2);
  values[index_of(Param::tpl_px)] = {1, 3};
  try {
    const Space bad(st, kGrid, DeviceLimits{}, values);
    FAIL() << "tpl_px = 3 was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'tpl_px' has value 3; expected 1, 2, 4 or 8"),
              std::string::npos)
        << e.what();
  }
  // Without the declaring family (the production build's families), only the neutral value.
  values = Space::default_values(2, kGrid, without_template());
  values[index_of(Param::tpl_px)] = {2};
  try {
    const Space bad(st, kGrid, DeviceLimits{}, values, without_template());
    FAIL() << "tpl_px = 2 was accepted without the template family";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("only 1 (no kernel family of this build reads it)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace isletune
