// A family with a parameter of its own (issue 46): in this build (ISLETUNE_TEST_TEMPLATE_AXIS)
// Param::tpl_px, the template family's points per thread along x, is appended after the base
// parameters and declared by the template (KernelFamily::own_params). The space enumerates the
// template's OC over the parameter's values and holds it neutral in the other families' OCs,
// their canonical settings have it neutral, keys name it only away from its neutral value, and
// the template's plan and code read it. The same build also runs the setting, byte-codec and
// golden-space tests (tests/axis/CMakeLists.txt); axis_probe.sh compares keys, hashes, draws and
// saved states with the production build.
#include <gtest/gtest.h>

#include <array>
#include <set>
#include <stdexcept>
#include <string>

#include "common/error.hpp"
#include "kernel/kernel_plan.hpp"
#include "kernel/registry.hpp"
#include "space/space.hpp"
#include "stencil/typical.hpp"

namespace isletune {

const KernelFamily& template_family();   // src/kernel/family_template.cpp
const KernelFamily& streaming_family();  // src/kernel/streaming.cpp

namespace {

static_assert(kParamCount == kBaseParamCount + 1, "this build appends one parameter");
static_assert(is_appended(Param::tpl_px));

const Grid kGrid{256, 256, 1};

// The template beside the streaming family (beside the tiled one its OC is refused:
// tests/unit/test_kernel_family.cpp).
const OcTable& table() {
  static const std::array<const KernelFamily*, 2> list = {&template_family(), &streaming_family()};
  static const OcTable t(list);
  return t;
}

Space space_of(const std::string& stencil) {
  const Stencil st = typical_stencil(stencil);
  return Space(st, kGrid, DeviceLimits{}, Space::default_values(st.dims(), kGrid, table()),
               table());
}

// A valid streaming setting of the space, drawn.
Setting streaming_setting(const Space& space) {
  Rng rng(5, 0);
  for (const OcEntry& e : table().entries()) {
    if (e.family == &streaming_family()) {
      if (auto s = space.random_kernel_in_oc(e.oc->id, rng))
        return *s;
    }
  }
  throw std::logic_error("no streaming setting drawn");
}

TEST(FamilyAxis, TheSpaceEnumeratesTheTemplatesOcOverItsOwnAxisAndNoOtherOc) {
  const Space space = space_of("star2d1r");
  // The defaults of the family that declares it; the registry's families declare none.
  EXPECT_EQ(space.values(Param::tpl_px), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(Space::default_values(2, kGrid)[index_of(Param::tpl_px)], std::vector<int>{1});
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
  EXPECT_EQ(table().canonical(space.shape(), off), table().canonical(space.shape(), s));
  EXPECT_EQ(table().canonical(space.shape(), off)[Param::tpl_px], 1);
  const auto why = space.violation(off);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("tpl_px=4 is read by the template family only"), std::string::npos) << *why;
  EXPECT_NE(canonical_key(off), key);
  EXPECT_NE(setting_hash(off), setting_hash(s));
  // The registry's own canonical (no family declares tpl_px there) holds it neutral too.
  EXPECT_EQ(canonical(space.shape(), off)[Param::tpl_px], 1);
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
  Space::Values values = Space::default_values(2, kGrid, table());
  values[index_of(Param::tpl_px)] = {1, 3};
  try {
    const Space bad(st, kGrid, DeviceLimits{}, values, table());
    FAIL() << "tpl_px = 3 was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'tpl_px' has value 3; expected 1, 2, 4 or 8"),
              std::string::npos)
        << e.what();
  }
  // Without the declaring family (the registry's families), only the neutral value.
  values[index_of(Param::tpl_px)] = {2};
  try {
    const Space bad(st, kGrid, DeviceLimits{}, values);
    FAIL() << "tpl_px = 2 was accepted without the template family";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("only 1 (no kernel family of this build reads it)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace isletune
