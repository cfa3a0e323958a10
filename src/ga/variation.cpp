// Uniform crossover and per-gene mutation.
#include "ga/variation.hpp"

namespace isletune {

// Uniform crossover with probability `rate`, else a copy of the first parent.
Genome crossover(const Genome& first, const Genome& second, double rate, Rng& rng,
                 std::span<const int> alleles) {
  Genome child = first;
  if (!rng.chance(rate))
    return child;
  for (std::size_t g = 0; g < child.size(); ++g) {
    if (g >= kBaseParamCount && g < alleles.size() && alleles[g] < 2)
      continue;  // an appended parameter at one value: no draw (both parents hold it)
    if (rng.chance(0.5))
      child[g] = second[g];
  }
  return child;
}

// Mutation to another allele: shift by 1..k-1 modulo k.
int mutate(Genome& genome, std::span<const int> alleles, double rate, Rng& rng) {
  int changed = 0;
  for (std::size_t g = 0; g < genome.size(); ++g) {
    const int k = alleles[g];
    if (k < 2 || !rng.chance(rate))
      continue;
    const int shift = 1 + static_cast<int>(rng.below(static_cast<std::uint64_t>(k - 1)));
    genome[g] = (genome[g] + shift) % k;
    ++changed;
  }
  return changed;
}

}  // namespace isletune
