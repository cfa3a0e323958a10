// The standalone .cu of `isletune export`: a generated kernel plus the naive reference and
// a main that allocates, initialises, runs, verifies and times it, built with plain
// `nvcc -arch=sm_90 -O3 -o best best.cu`. Pure C++ (text generation only).
#pragma once

#include <string>

#include "eval/cuda/codegen.hpp"
#include "stencil/stencil.hpp"

namespace isletune::cuda {

// What the standalone program prints in its header comment.
struct StandaloneInfo {
  std::string setting_key;
  double recorded_ms = 0;   // median ms per step recorded by the tuner (0: unknown)
  std::string recorded_on;  // GPU the measurement came from
  std::string replayed;     // replayed_label(dataset) when the run was replayed, else ""
};

// About how many steps the program times by default.
inline constexpr int kStandaloneSteps = 100;
// The default timed steps: the multiple of `steps_per_launch` at or above kStandaloneSteps,
// so the default timing runs only the tuned kernel's main entry.
[[nodiscard]] int standalone_default_steps(int steps_per_launch);

// The complete .cu text. `steps` = default number of timed steps (argv[1] overrides; 0:
// standalone_default_steps of the kernel). `kernel` from generate_export_kernel runs the
// leftover steps of any count at their depth.
[[nodiscard]] std::string write_standalone_cu(const Stencil& stencil, const Grid& grid,
                                              const KernelSource& kernel,
                                              const StandaloneInfo& info, int steps = 0);

}  // namespace isletune::cuda
