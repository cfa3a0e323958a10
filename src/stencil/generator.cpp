// Random symmetric stencil generator (paper Alg. 1).
#include "stencil/generator.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <vector>

#include "common/error.hpp"
#include "stencil/typical.hpp"

namespace isletune {
namespace {

int chebyshev(const Offset& o) {
  return std::max({std::abs(o.x), std::abs(o.y), std::abs(o.z)});
}

// Draws the order with probability proportional to (2r+1)^dims - 1.
int draw_order(int dims, Rng& rng) {
  std::vector<std::uint64_t> weight;
  std::uint64_t total = 0;
  for (int r = 1; r <= kMaxGeneratedOrder; ++r) {
    std::uint64_t w = 1;
    for (int d = 0; d < dims; ++d)
      w *= static_cast<std::uint64_t>(2 * r + 1);
    weight.push_back(w - 1);
    total += w - 1;
  }
  std::uint64_t u = rng.below(total);
  for (int r = 1; r <= kMaxGeneratedOrder; ++r) {
    if (u < weight[static_cast<std::size_t>(r - 1)])
      return r;
    u -= weight[static_cast<std::size_t>(r - 1)];
  }
  return kMaxGeneratedOrder;
}

}  // namespace

Stencil random_stencil(int dims, Rng& rng, std::string name) {
  if (dims != 2 && dims != 3) {
    throw InputError("random stencil '" + name + "': dims must be 2 or 3, got " +
                     std::to_string(dims) + ".");
  }
  const int order = draw_order(dims, rng);
  std::set<Offset> orthant = {Offset{}};
  std::set<Offset> frontier = {Offset{}};
  for (int ring = 1; ring <= order; ++ring) {
    std::set<Offset> proposals;
    for (const Offset& p : frontier) {
      for (int step = 1; step < (1 << dims); ++step) {
        const Offset q{p.x + (step & 1), p.y + ((step >> 1) & 1), p.z + ((step >> 2) & 1)};
        if (chebyshev(q) == ring && !orthant.contains(q))
          proposals.insert(q);
      }
    }
    // A random non-empty subset: its size uniform in 1..n, its members by a partial shuffle.
    std::vector<Offset> pool(proposals.begin(), proposals.end());
    const auto keep =
        static_cast<std::size_t>(rng.between(1, static_cast<std::int64_t>(pool.size())));
    for (std::size_t i = 0; i < keep; ++i) {
      const auto j = i + static_cast<std::size_t>(rng.below(pool.size() - i));
      std::swap(pool[i], pool[j]);
    }
    frontier = std::set<Offset>(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(keep));
    orthant.insert(frontier.begin(), frontier.end());
  }
  std::set<Offset> mirrored;
  for (const Offset& p : orthant) {
    for (int signs = 0; signs < 8; ++signs) {
      mirrored.insert(
          Offset{signs & 1 ? -p.x : p.x, signs & 2 ? -p.y : p.y, signs & 4 ? -p.z : p.z});
    }
  }
  std::vector<Offset> offsets(mirrored.begin(), mirrored.end());
  auto coefficients = typical_coefficients(offsets);
  return Stencil::make(std::move(name), dims, std::move(offsets), std::move(coefficients));
}

Stencil random_stencil(int dims, std::uint64_t seed, std::string name) {
  Rng rng(seed, 0x5354454E43494CULL);
  return random_stencil(dims, rng, std::move(name));
}

}  // namespace isletune
