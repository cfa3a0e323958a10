// Internal interface between codegen.cpp and the kernel families (codegen_tiled.cpp,
// codegen_streaming.cpp): each family says which settings it builds (supports), which
// kernels/*.cuh template and device function it uses, and writes the config struct of one
// entry from the kernel plan.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "space/kernel_plan.hpp"
#include "space/setting.hpp"
#include "stencil/stencil.hpp"

namespace isletune::cuda::detail {

struct FamilyCode {
  std::string_view template_file;  // kernels/<file>
  std::string_view function;       // isl::<function><Config, IslApply>(in, out, smem)
  std::string config;              // `struct <name> { static constexpr ... };`
  int min_blocks = 0;              // __launch_bounds__ blocks per SM to aim for (0: none)
};

// Why the tiled family cannot build the setting, or nullopt.
[[nodiscard]] std::optional<std::string> tiled_unsupported(const Setting& s);
[[nodiscard]] FamilyCode tiled_code(const KernelPlan& plan, const Setting& s, const Grid& grid,
                                    std::string_view name);

// Why the streaming family cannot build the setting, or nullopt.
[[nodiscard]] std::optional<std::string> streaming_unsupported(const Setting& s);
// `points`: the stencil's point count (bounds the unrolled body).
[[nodiscard]] FamilyCode streaming_code(const KernelPlan& plan, const Setting& s, const Grid& grid,
                                        int points, std::string_view name);

// `static constexpr int NAME = value;` lines of a config struct.
[[nodiscard]] std::string constant(std::string_view name, long long value,
                                   std::string_view type = "int");

}  // namespace isletune::cuda::detail
