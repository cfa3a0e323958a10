// Torus neighbourhoods and fitness-proportional roulette.
#include "ga/selection.hpp"

#include <algorithm>

namespace isletune {

// Precomputes every cell's parent candidates.
Torus::Torus(int rows, int cols) : rows_(rows), cols_(cols), candidates_(rows * cols) {
  for (int r = 0; r < rows_; ++r) {
    for (int c = 0; c < cols_; ++c) {
      const int cell = r * cols_ + c;
      const int around[4] = {((r + rows_ - 1) % rows_) * cols_ + c, ((r + 1) % rows_) * cols_ + c,
                             r * cols_ + (c + cols_ - 1) % cols_, r * cols_ + (c + 1) % cols_};
      auto& list = candidates_[cell];
      for (const int n : around) {
        if (n != cell && std::find(list.begin(), list.end(), n) == list.end())
          list.push_back(n);
      }
      if (list.size() < 2)
        list.push_back(cell);
    }
  }
}

std::span<const int> Torus::candidates(int cell) const {
  return candidates_[cell];
}

// Cumulative-sum roulette; guards against a draw that lands past the last weight.
int roulette(std::span<const int> cells, std::span<const double> fitness, Rng& rng, int skip) {
  double total = 0;
  int eligible = 0;
  for (int i = 0; i < static_cast<int>(cells.size()); ++i) {
    if (i == skip)
      continue;
    total += std::max(0.0, fitness[cells[i]]);
    ++eligible;
  }
  if (total <= 0) {
    int pick = static_cast<int>(rng.below(static_cast<std::uint64_t>(eligible)));
    for (int i = 0; i < static_cast<int>(cells.size()); ++i) {
      if (i != skip && pick-- == 0)
        return i;
    }
  }
  const double x = rng.uniform() * total;
  double sum = 0;
  int last = -1;
  for (int i = 0; i < static_cast<int>(cells.size()); ++i) {
    const double w = i == skip ? 0.0 : std::max(0.0, fitness[cells[i]]);
    if (w <= 0)
      continue;
    sum += w;
    last = i;
    if (x < sum)
      return i;
  }
  return last;
}

// First parent over all candidates, second over the others.
std::pair<int, int> select_parents(const Torus& torus, int cell, std::span<const double> fitness,
                                   Rng& rng) {
  const std::span<const int> c = torus.candidates(cell);
  const int first = roulette(c, fitness, rng);
  const int second = roulette(c, fitness, rng, first);
  return {c[first], c[second]};
}

}  // namespace isletune
