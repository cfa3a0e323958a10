// Random symmetric stencils (GSTuner paper, Alg. 1), for training data and tests.
#pragma once

#include <cstdint>
#include <string>

#include "common/rng.hpp"
#include "stencil/stencil.hpp"

namespace isletune {

// Largest order the generator draws (the paper's 1..4).
inline constexpr int kMaxGeneratedOrder = 4;

// A random stencil of `dims` (2 or 3) dimensions:
//  1. its order r is drawn from 1..4 with probability proportional to (2r+1)^d - 1 (the
//     number of points a radius-r box adds around the centre);
//  2. starting from the centre, ring k = 1..r proposes every point one step outward
//     from the current frontier inside the non-negative orthant (the frontier point plus
//     a 0/1 step on each axis, not all 0) whose Chebyshev radius is exactly k; a random
//     non-empty subset of the proposals is kept and becomes the next frontier;
//  3. the kept points are mirrored over every axis, so the pattern is symmetric.
// Coefficients follow typical_coefficients. Deterministic for a given engine state.
[[nodiscard]] Stencil random_stencil(int dims, Rng& rng, std::string name = "random");

// Same, with an engine seeded by `seed` (stream 0x5354454E43494CULL, "STENCIL").
[[nodiscard]] Stencil random_stencil(int dims, std::uint64_t seed, std::string name = "random");

}  // namespace isletune
