// A stencil: (offset, coefficient) pairs in 2-D or 3-D, applied Jacobi style
// (docs/architecture.md, "Stencils"): out[p] = sum_k c_k * in[p + o_k] on interior points (every
// neighbour inside the grid); boundary points keep their input value.
#pragma once

#include <array>
#include <string>
#include <vector>

namespace isletune {

struct Offset {
  int x = 0;
  int y = 0;
  int z = 0;  // always 0 in 2-D
  auto operator<=>(const Offset&) const = default;
  bool operator==(const Offset&) const = default;
};

// The problem size: extents per axis (nz = 1 in 2-D).
struct Grid {
  int nx = 1;
  int ny = 1;
  int nz = 1;
  [[nodiscard]] long long cells() const { return 1LL * nx * ny * nz; }
  bool operator==(const Grid&) const = default;
};

class Stencil {
 public:
  // Validated construction. Throws InputError (one sentence naming the stencil and the
  // problem) on: dims not 2/3, empty, offsets/coefficients length mismatch, duplicate
  // offsets, a non-zero z offset in 2-D, order > 8, non-finite coefficients.
  static Stencil make(std::string name, int dims, std::vector<Offset> offsets,
                      std::vector<double> coefficients);

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] int dims() const { return dims_; }
  [[nodiscard]] const std::vector<Offset>& offsets() const { return offsets_; }
  [[nodiscard]] const std::vector<double>& coefficients() const { return coefficients_; }
  [[nodiscard]] int size() const { return static_cast<int>(offsets_.size()); }
  // Maximum Chebyshev radius over all offsets.
  [[nodiscard]] int order() const { return order_; }
  // Largest |offset| along one axis (0 = x, 1 = y, 2 = z): the halo width on that axis.
  [[nodiscard]] int radius(int axis) const { return radius_[axis]; }
  // Floating-point operations per cell update (one mul and one add per point, minus one).
  [[nodiscard]] int flops_per_cell() const { return 2 * size() - 1; }

 private:
  std::string name_;
  int dims_ = 2;
  std::vector<Offset> offsets_;
  std::vector<double> coefficients_;
  int order_ = 0;
  std::array<int, 3> radius_{};
};

}  // namespace isletune
