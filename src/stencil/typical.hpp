// The 24 typical stencils {star,box,cross}{2d,3d}{1..4}r (docs/architecture.md, "Stencils") and the
// coefficient rule shared by them and by generated stencils. The library itself lives in
// config/stencils/*.yaml as data; this code is what generated those files and what tests
// compare them with.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stencil/stencil.hpp"

namespace isletune {

enum class TypicalShape { star, box, cross };

struct TypicalName {
  TypicalShape shape = TypicalShape::star;
  int dims = 2;
  int order = 1;
};

// "star", "box" or "cross".
[[nodiscard]] std::string_view shape_name(TypicalShape shape);
// e.g. "box3d2r".
[[nodiscard]] std::string typical_name(const TypicalName& t);
// Inverse of typical_name; nullopt when `name` is not one of the 24.
[[nodiscard]] std::optional<TypicalName> parse_typical_name(std::string_view name);
// The 24 names, shape-major: star2d1r..star2d4r, star3d1r.., box.., cross...
[[nodiscard]] std::vector<std::string> typical_names();

// Offsets of a typical stencil in lexicographic (x, y, z) order:
//  star  = centre + axis points at distance 1..r (2-D 4r+1, 3-D 6r+1 points);
//  box   = the full (2r+1)^d cube;
//  cross = centre + diagonal points (±i,±i[,±i]) for i = 1..r (2-D 4r+1, 3-D 8r+1).
[[nodiscard]] std::vector<Offset> typical_offsets(TypicalShape shape, int dims, int order);

// Coefficient rule: each offset gets a raw weight 2^30 + (30 bits of a splitmix64 hash of
// the offset and a salt); weights are scaled to integers m_k summing to exactly 2^50
// (remainder spread over the first points) and c_k = m_k / 2^50. So the coefficients are
// positive, deterministic, depend on the offset itself (mirror-image neighbours get
// different weights, so a kernel that swaps neighbours fails verification), sum to
// exactly 1 in any summation order (every partial sum is a multiple of 2^-50), and are
// distinct (the salt is bumped until they are).
[[nodiscard]] std::vector<double> typical_coefficients(const std::vector<Offset>& offsets);

// The typical stencil `name`, built in code. Throws InputError for an unknown name.
[[nodiscard]] Stencil typical_stencil(std::string_view name);

// The stencil as library YAML text: name, dims and one "[dx, dy(, dz), coefficient]" row
// per point, coefficients printed with %.17g so they read back bit for bit.
[[nodiscard]] std::string stencil_yaml_text(const Stencil& stencil);

}  // namespace isletune
