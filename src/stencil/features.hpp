// Stencil features of the GSTuner paper (Table 2), inputs of the performance predictors.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "stencil/stencil.hpp"

namespace isletune {

inline constexpr int kFeatureRings = 8;  // Stencil::make caps the order at 8

struct StencilFeatures {
  int dims = 2;
  int order = 0;        // maximum Chebyshev radius
  int nnz = 0;          // number of points
  double sparsity = 0;  // nnz / (2*order+1)^dims
  // Points on Chebyshev ring k = 1..8 (index k-1), and the fraction of that ring's
  // lattice positions ((2k+1)^d - (2k-1)^d of them) that they fill.
  std::array<int, kFeatureRings> nnz_per_ring{};
  std::array<double, kFeatureRings> ratio_per_ring{};
  // Points at Manhattan distance s = 1..order*dims (index s-1), and the fraction of the
  // lattice positions at that distance inside the (2*order+1)^d cube that they fill.
  std::vector<int> nnz_per_step;
  std::vector<double> ratio_per_step;

  // Fixed-length vector for one dimensionality: order, nnz, sparsity, nnz_ring1..8,
  // ratio_ring1..8, nnz_step1..(8*dims), ratio_step1..(8*dims) (steps past order*dims are 0).
  [[nodiscard]] std::vector<double> as_vector() const;
  // Names of the as_vector entries, same order.
  [[nodiscard]] std::vector<std::string> names() const;
};

[[nodiscard]] StencilFeatures stencil_features(const Stencil& stencil);

}  // namespace isletune
