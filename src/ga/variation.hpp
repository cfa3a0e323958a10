// Variation operators (docs/architecture.md, "The island GA"): uniform crossover and per-gene
// mutation.
#pragma once

#include <span>

#include "common/rng.hpp"
#include "ga/reindex.hpp"

namespace isletune {

// With probability `rate`, each gene from either parent with equal chance; otherwise a
// copy of the first parent. Parents have equal length. A gene from kBaseParamCount on with
// `alleles[g]` < 2 (a parameter a kernel family appended, held at one value) takes no draw,
// so a genome with such genes breeds what it bred before the parameter existed; every other
// gene draws, as always (alleles empty: every gene draws).
[[nodiscard]] Genome crossover(const Genome& first, const Genome& second, double rate, Rng& rng,
                               std::span<const int> alleles = {});

// Each gene with `alleles[g] > 1` mutates with probability `rate` to a different allele,
// uniformly among the other alleles. Returns the number of genes changed.
int mutate(Genome& genome, std::span<const int> alleles, double rate, Rng& rng);

}  // namespace isletune
