// CUDA code generation for the CUDA evaluator (pure C++, no CUDA headers): from a Stencil,
// a Grid and a Setting it emits a self-contained NVRTC source (the kernel family's template of
// kernels/*.cuh inlined, one config struct per entry built from the kernel plan
// (kernel/kernel_plan.hpp), the stencil's weighted sum unrolled with literal or __constant__
// coefficients, extern "C" main and tail entries) and their launch configurations. What each
// family emits lives with the family (src/kernel/<family>.cpp, paired with kernels/<family>.cuh);
// this file assembles the translation unit. Also emits the reference module used for
// verification.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kernel/kernel_plan.hpp"
#include "setting/device_limits.hpp"
#include "setting/setting.hpp"
#include "stencil/stencil.hpp"

namespace isletune::cuda {

// How one entry of a generated kernel is launched; one launch advances `steps` time steps.
struct LaunchConfig {
  std::array<int, 3> block{1, 1, 1};
  std::array<long long, 3> grid{1, 1, 1};
  int shared_bytes = 0;  // dynamic shared memory per block
  int steps = 1;         // time steps one launch advances
};

// The launch of the plain one-step tail: kOneStepThreads threads a block, a grid-stride loop
// over the grid's cells on at most kOneStepMaxBlocks blocks.
inline constexpr int kOneStepThreads = 256;
inline constexpr long long kOneStepMaxBlocks = 1LL << 20;
[[nodiscard]] LaunchConfig one_step_launch(const Grid& grid);

// A complete kernel ready for NVRTC: source, entry names, launches. Every entry has the
// signature `extern "C" __global__ void entry(const double* in, double* out)`; a launch reads
// `in`, writes every point of `out`, and the caller swaps the buffers after each launch.
// T steps run as T / launch.steps launches of `entry`, then T % launch.steps launches of
// `tail_entry` (a one-step kernel in the same source; empty when launch.steps == 1).
// Tests plant raw kernels (wrong, crashing, hanging) through the same type.
// An entry of the same kernel at a smaller depth (generate_export_kernel): one launch runs
// the T % launch.steps leftover steps (launch.steps, 2 or more) at the tuned kernel's speed.
struct RestEntry {
  std::string entry;  // "isl_rest<steps>"
  LaunchConfig launch;
};

struct KernelSource {
  std::string source;
  std::string entry = "isl_kernel";  // advances launch.steps time steps
  LaunchConfig launch;
  std::string tail_entry;    // empty when launch.steps == 1
  LaunchConfig tail_launch;  // steps == 1
  // generate_export_kernel only: entries of depths 2 .. launch.steps - 1 (a depth the
  // family cannot build is missing: its leftover steps run on the tail entry).
  std::vector<RestEntry> rest_entries;
};

// Whether verifying a kernel of `launch_steps` steps per main launch needs the long (T-step)
// run besides the short one of `short_steps`: the short run alone exercises the schedule when
// it holds a main launch and, for multi-step launches, a tail (short_steps = q * launch_steps
// + r, q >= 1, r >= 1); `full` asks for the long run always (evaluator.full_verification).
[[nodiscard]] constexpr bool verification_needs_long_run(int launch_steps, int short_steps,
                                                         bool full) {
  const int k = launch_steps < 1 ? 1 : launch_steps;
  const bool covered = k == 1 || (short_steps > k && short_steps % k != 0);
  return full || !covered;
}

// The kernel plan of a setting codegen can build, or why it cannot (the kernel plan cannot
// launch on `limits`, no family supports it, values out of range, a grid too large for 32-bit
// coordinates). Callers that go on to generate build the plan once here and hand it on.
[[nodiscard]] std::variant<KernelPlan, std::string> codegen_plan(const Stencil& stencil,
                                                                 const Grid& grid,
                                                                 const Setting& setting,
                                                                 const DeviceLimits& limits = {});

// Why codegen cannot build this setting (the kernel plan cannot launch on `limits`, no family
// supports it, values out of range, a grid too large for 32-bit coordinates); nullopt when it
// can. Every valid setting of the space is supported.
[[nodiscard]] std::optional<std::string> unsupported_reason(const Stencil& stencil,
                                                            const Grid& grid,
                                                            const Setting& setting,
                                                            const DeviceLimits& limits = {});

// The kernel for one setting: main entry (tdeg steps per launch) and, when tdeg > 1, the
// plain one-step tail entry (kernels/one_step.cuh, launched as one_step_launch(grid)): its
// speed never enters a timing, and the family's own one-step kernel it replaced was about a
// quarter to a third of such a source's NVRTC time (24 sources of lap3d19's settings:
// 672 -> 509 ms; docs/studies/2026-12-06-plain-tail-compile.md).
// Precondition: unsupported_reason(...) is nullopt.
[[nodiscard]] KernelSource generate_kernel(const Stencil& stencil, const Grid& grid,
                                           const Setting& setting, const DeviceLimits& limits = {});
// Same, from the plan codegen_plan built (its family may be one outside the registry).
[[nodiscard]] KernelSource generate_kernel(const Stencil& stencil, const Grid& grid,
                                           const Setting& setting, const KernelPlan& plan);

// generate_kernel plus, for a kernel of S > 2 steps per launch, an entry of the same family
// at each depth 2 .. S-1 (KernelSource::rest_entries), so a program running T steps (the
// exported .cu) runs its T % S leftover steps as one launch of the tuned kernel rather than
// as one-step tail launches at about the naive kernel's speed. Same precondition.
[[nodiscard]] KernelSource generate_export_kernel(const Stencil& stencil, const Grid& grid,
                                                  const Setting& setting,
                                                  const DeviceLimits& limits = {});

// The reference module (isl_reference_step, isl_fill_random, isl_fill_nan, isl_compare).
[[nodiscard]] std::string generate_reference(const Stencil& stencil, const Grid& grid);

// The embedded text of kernels/<name> (e.g. "tiled.cuh"); throws if unknown.
[[nodiscard]] std::string_view kernel_template(std::string_view name);

// The lowest-register "naive" setting (declared with Setting, space/setting.hpp).
using ::isletune::naive_setting;

}  // namespace isletune::cuda
