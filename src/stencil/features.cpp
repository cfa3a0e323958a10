// Table-2 stencil features: order, nnz, sparsity, per-ring and per-Manhattan-step counts.
#include "stencil/features.hpp"

#include <algorithm>
#include <cstdlib>

namespace isletune {

StencilFeatures stencil_features(const Stencil& stencil) {
  StencilFeatures f;
  f.dims = stencil.dims();
  f.order = stencil.order();
  f.nnz = stencil.size();
  const int r = f.order;
  const int side = 2 * r + 1;
  f.sparsity = static_cast<double>(f.nnz) / (f.dims == 3 ? side * side * side : side * side);
  const int steps = r * f.dims;
  f.nnz_per_step.assign(static_cast<std::size_t>(steps), 0);
  f.ratio_per_step.assign(static_cast<std::size_t>(steps), 0.0);
  for (const Offset& o : stencil.offsets()) {
    const int ring = std::max({std::abs(o.x), std::abs(o.y), std::abs(o.z)});
    const int step = std::abs(o.x) + std::abs(o.y) + std::abs(o.z);
    if (ring > 0)
      ++f.nnz_per_ring[static_cast<std::size_t>(ring - 1)];
    if (step > 0)
      ++f.nnz_per_step[static_cast<std::size_t>(step - 1)];
  }
  for (int k = 1; k <= kFeatureRings; ++k) {
    const int outer = 2 * k + 1, inner = 2 * k - 1;
    const int positions =
        f.dims == 3 ? outer * outer * outer - inner * inner * inner : outer * outer - inner * inner;
    f.ratio_per_ring[static_cast<std::size_t>(k - 1)] =
        static_cast<double>(f.nnz_per_ring[static_cast<std::size_t>(k - 1)]) / positions;
  }
  // Lattice positions per Manhattan distance inside the cube of radius r.
  std::vector<int> positions(static_cast<std::size_t>(steps) + 1, 0);
  const int zr = f.dims == 3 ? r : 0;
  for (int x = -r; x <= r; ++x) {
    for (int y = -r; y <= r; ++y) {
      for (int z = -zr; z <= zr; ++z)
        ++positions[static_cast<std::size_t>(std::abs(x) + std::abs(y) + std::abs(z))];
    }
  }
  for (int s = 1; s <= steps; ++s) {
    const auto i = static_cast<std::size_t>(s - 1);
    f.ratio_per_step[i] = static_cast<double>(f.nnz_per_step[i]) / positions[i + 1];
  }
  return f;
}

std::vector<double> StencilFeatures::as_vector() const {
  std::vector<double> v = {static_cast<double>(order), static_cast<double>(nnz), sparsity};
  for (const int n : nnz_per_ring)
    v.push_back(n);
  for (const double x : ratio_per_ring)
    v.push_back(x);
  const std::size_t steps = static_cast<std::size_t>(kFeatureRings * dims);
  for (std::size_t s = 0; s < steps; ++s)
    v.push_back(s < nnz_per_step.size() ? nnz_per_step[s] : 0);
  for (std::size_t s = 0; s < steps; ++s)
    v.push_back(s < ratio_per_step.size() ? ratio_per_step[s] : 0.0);
  return v;
}

std::vector<std::string> StencilFeatures::names() const {
  std::vector<std::string> n = {"order", "nnz", "sparsity"};
  for (int k = 1; k <= kFeatureRings; ++k)
    n.push_back("nnz_ring" + std::to_string(k));
  for (int k = 1; k <= kFeatureRings; ++k)
    n.push_back("ratio_ring" + std::to_string(k));
  for (int s = 1; s <= kFeatureRings * dims; ++s)
    n.push_back("nnz_step" + std::to_string(s));
  for (int s = 1; s <= kFeatureRings * dims; ++s)
    n.push_back("ratio_step" + std::to_string(s));
  return n;
}

}  // namespace isletune
