// Hand-made replay records' problem and settings, for the replay and pipeline tests.
#pragma once

#include "kernel/family.hpp"
#include "setting/setting.hpp"
#include "stencil/typical.hpp"

namespace isletune::testing {

// The problem the hand-made records are of (a small stencil: canonical settings clip nothing).
inline ProblemShape small_shape() {
  return shape_of(typical_stencil("star2d1r"), Grid{256, 256, 1});
}

// A setting that differs from the others by its x block size.
inline Setting setting_with(int tbx) {
  Setting s;
  s[Param::tbx] = tbx;
  s[Param::tby] = 4;
  return s;
}

}  // namespace isletune::testing
