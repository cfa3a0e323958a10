// The values each parameter takes in at least one valid setting of a space: what a trace's
// /space/parameters and a Kernel Tuner cache's tune_params list, so that their product is
// not inflated by values no setting can take (e.g. sb values above the grid, uf values no
// merge factor admits, sd values of a 2-D stencil).
#pragma once

#include "space/space.hpp"

namespace isletune {

// Per parameter (sorted): the values some valid setting of the space takes, including the
// neutral value of a parameter one family reads alone when another family's setting is valid
// (sd = sb = 0 outside the streaming family), which no list holds.
// Exact: every value of a list is either seen in a random valid setting or decided by a
// depth-first search for one with that value. Empty lists when no setting is valid.
[[nodiscard]] Space::Values values_taken(const Stencil& stencil, const Space& space);

// Whether the space holds at least one valid setting (seeded random draws first, then a
// pruned depth-first search that stops at the first valid setting).
[[nodiscard]] bool has_valid_setting(const Space& space);

}  // namespace isletune
