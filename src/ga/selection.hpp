// Parent selection on the island's torus (docs/architecture.md, "The island GA").
//
// Cells are numbered row-major on a rows x cols torus (both axes wrap). The candidates
// of a cell are its distinct von Neumann neighbours (up, down, left, right, in that
// order), the cell itself excluded. On tiny grids those positions repeat and can be
// fewer than two distinct cells (1 x 2: the other cell only); the cell itself is then
// added so there are always two distinct parents to pick. A 1 x 1 torus has no parents.
//
// Two DISTINCT parents are drawn: the first by fitness-proportional roulette over the
// candidates, the second by roulette over the remaining candidates; a roulette whose
// weights are all zero is uniform.
#pragma once

#include <span>
#include <utility>
#include <vector>

#include "common/rng.hpp"

namespace isletune {

class Torus {
 public:
  // rows, cols >= 1 and rows * cols >= 2 (checked by the GA settings).
  Torus(int rows, int cols);
  [[nodiscard]] int rows() const { return rows_; }
  [[nodiscard]] int cols() const { return cols_; }
  [[nodiscard]] int cells() const { return rows_ * cols_; }
  // Parent candidates of `cell` as documented above (2 to 4 distinct cells).
  [[nodiscard]] std::span<const int> candidates(int cell) const;

 private:
  int rows_;
  int cols_;
  std::vector<std::vector<int>> candidates_;
};

// Index into `cells` drawn with probability fitness[cells[i]] / sum, uniform when every
// weight is 0; the entry at `skip` (an index into `cells`, or -1) is never drawn.
[[nodiscard]] int roulette(std::span<const int> cells, std::span<const double> fitness, Rng& rng,
                           int skip = -1);

// Two distinct parent cells for `cell`.
[[nodiscard]] std::pair<int, int> select_parents(const Torus& torus, int cell,
                                                 std::span<const double> fitness, Rng& rng);

}  // namespace isletune
