// Stencil construction and validation.
#include "stencil/stencil.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

#include "common/error.hpp"
#include "common/text.hpp"

namespace isletune {

Stencil Stencil::make(std::string name, int dims, std::vector<Offset> offsets,
                      std::vector<double> coefficients) {
  // Every stencil, whatever file it came from, carries a plain name: it is written into
  // comments of generated code and into messages (issue 50).
  if (!is_plain_name(name)) {
    throw InputError("stencil name " + quote_value(name) + " is not " + kPlainNameRule + ".");
  }
  const std::string who = "stencil '" + name + "'";
  if (dims != 2 && dims != 3) {
    throw InputError(who + ": dims must be 2 or 3, got " + std::to_string(dims) + ".");
  }
  if (offsets.empty())
    throw InputError(who + ": has no points; expected at least one offset.");
  if (offsets.size() != coefficients.size()) {
    throw InputError(who + ": " + std::to_string(offsets.size()) + " offsets but " +
                     std::to_string(coefficients.size()) +
                     " coefficients; expected one coefficient per offset.");
  }
  Stencil s;
  s.name_ = std::move(name);
  s.dims_ = dims;
  std::set<Offset> seen;
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    const Offset& o = offsets[i];
    const std::string at = who + ": point " + std::to_string(i) + " (" + std::to_string(o.x) + "," +
                           std::to_string(o.y) + "," + std::to_string(o.z) + ")";
    if (dims == 2 && o.z != 0)
      throw InputError(at + " has a z offset in a 2-D stencil.");
    if (!seen.insert(o).second)
      throw InputError(at + " is a duplicate offset.");
    if (!std::isfinite(coefficients[i])) {
      throw InputError(at + " has a non-finite coefficient; expected a finite number.");
    }
    const int r = std::max({std::abs(o.x), std::abs(o.y), std::abs(o.z)});
    if (r > 8) {
      throw InputError(at + " has order " + std::to_string(r) + "; the maximum order is 8.");
    }
    s.order_ = std::max(s.order_, r);
    s.radius_[0] = std::max(s.radius_[0], std::abs(o.x));
    s.radius_[1] = std::max(s.radius_[1], std::abs(o.y));
    s.radius_[2] = std::max(s.radius_[2], std::abs(o.z));
  }
  s.offsets_ = std::move(offsets);
  s.coefficients_ = std::move(coefficients);
  return s;
}

}  // namespace isletune
