// Kernel families as units: the registry picks one family per setting, the template family a
// newcomer copies plans, generates and (with the CUDA Toolkit) compiles with NVRTC, the device
// limits' one field list round-trips through the worker hello.
#include <gtest/gtest.h>

#include <set>

#include "kernel/kernel_plan.hpp"
#include "kernel/registry.hpp"
#include "space/space.hpp"
#include "stencil/typical.hpp"

#ifdef ISLETUNE_KERNEL_FAMILY_CODEGEN
#include "eval/cuda/codegen.hpp"
#include "eval/cuda/worker_protocol.hpp"
#endif
#ifdef ISLETUNE_KERNEL_FAMILY_NVRTC
#include "eval/cuda/nvrtc_compiler.hpp"
#endif

namespace isletune {

const KernelFamily& template_family();  // src/kernel/family_template.cpp

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
  const Grid grid{96, 80, 1};
  const Space space(typical_stencil("star2d1r"), grid, {}, Space::default_values(2, grid));
  Rng rng(7, 0);
  for (int i = 0; i < 500; ++i) {
    const auto s = space.random_setting(rng);
    ASSERT_TRUE(s.has_value());
    int building = 0;
    for (const KernelFamily* f : families())
      building += f->builds(*s) ? 1 : 0;
    EXPECT_EQ(building, 1) << canonical_key(*s);
    EXPECT_EQ(find_family(*s)->name(), (*s)[Param::streaming] ? "streaming" : "tiled");
  }
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

#ifdef ISLETUNE_KERNEL_FAMILY_CODEGEN
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
#else
TEST(KernelFamily, TemplateFamilyCompilesWithNvrtcIn2DAnd3D) {
  GTEST_SKIP() << "built without the CUDA Toolkit: NVRTC is not available";
}
#endif

}  // namespace
}  // namespace isletune
