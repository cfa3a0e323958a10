// Variation operators (docs/architecture.md, "The island GA"): uniform crossover and per-gene
// mutation.
#pragma once

#include <span>

#include "common/rng.hpp"
#include "ga/reindex.hpp"

namespace isletune {

// With probability `rate`, each gene from either parent with equal chance; otherwise a
// copy of the first parent. Parents have equal length.
[[nodiscard]] Genome crossover(const Genome& first, const Genome& second, double rate, Rng& rng);

// Each gene with `alleles[g] > 1` mutates with probability `rate` to a different allele,
// uniformly among the other alleles. Returns the number of genes changed.
int mutate(Genome& genome, std::span<const int> alleles, double rate, Rng& rng);

}  // namespace isletune
