// Gene alphabets over a sampled set (docs/architecture.md, "The island GA"): every genome decodes
// to one of the sampled settings, identified by its id = rank in lexicographic Setting order
// (Setting's operator< follows the parameter order: OC flags first).
//
// Encoding `index` (the paper's): genes are the bits of the id, most significant first,
// bits = ceil(log2 n) (at least 1). With `gray`, the bits are the reflected Gray code of
// the id. Fold: a code c >= n decodes to c mod n, so every genome is a sampled setting.
//
// Encoding `parameters`: one gene per parameter (kParamCount genes), each an index into
// that parameter's sorted distinct sampled values. A genome that is not a sampled
// setting is repaired to the nearest sampled one: fewest differing genes, ties broken
// uniformly at random with the caller's Rng. Sorted settings are also sorted genomes, so
// an exact genome is found by binary search; repair scans all n genomes twice (find the
// minimum distance and count ties, then take the k-th tie) without allocating.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "common/rng.hpp"
#include "setting/setting.hpp"

namespace isletune {

enum class Encoding : std::uint8_t { index = 0, parameters = 1 };

[[nodiscard]] std::string_view encoding_name(Encoding e);
[[nodiscard]] std::optional<Encoding> encoding_from_name(std::string_view name);

using Genome = std::vector<int>;

class Reindex {
 public:
  // Alphabet over the distinct `settings` (order and duplicates do not matter).
  // Throws InputError when `settings` is empty.
  Reindex(std::vector<Setting> settings, Encoding encoding, bool gray = false);

  [[nodiscard]] Encoding encoding() const { return encoding_; }
  [[nodiscard]] bool gray() const { return gray_; }
  // Number of distinct sampled settings n.
  [[nodiscard]] int size() const { return static_cast<int>(settings_.size()); }
  [[nodiscard]] int gene_count() const { return static_cast<int>(alleles_.size()); }
  // Alleles per gene (2 for `index`; distinct sampled values for `parameters`).
  [[nodiscard]] const std::vector<int>& alleles() const { return alleles_; }
  // Sampled setting by id (0..n-1, lexicographic order).
  [[nodiscard]] const Setting& setting(int id) const { return settings_[id]; }
  [[nodiscard]] const std::vector<Setting>& settings() const { return settings_; }
  // Id of a sampled setting; nullopt when it was not sampled.
  [[nodiscard]] std::optional<int> id_of(const Setting& s) const;

  // Genome of sampled setting `id`.
  [[nodiscard]] Genome encode(int id) const;
  // Genome of a sampled setting; throws std::out_of_range when it was not sampled.
  [[nodiscard]] Genome encode(const Setting& s) const;
  // The sampled setting id a genome stands for (fold or repair as documented above).
  // `rng` breaks repair ties; `index` decoding never draws from it.
  [[nodiscard]] int decode(std::span<const int> genome, Rng& rng) const;
  // For `parameters`: id of the sampled setting whose genome equals `genome`, if any.
  [[nodiscard]] std::optional<int> exact_id(std::span<const int> genome) const;
  // For `parameters`: smallest number of differing genes to any sampled genome.
  [[nodiscard]] int nearest_distance(std::span<const int> genome) const;

 private:
  Encoding encoding_;
  bool gray_;
  std::vector<Setting> settings_;         // sorted, distinct
  std::vector<int> alleles_;              // per gene
  std::vector<std::vector<int>> values_;  // parameters: sorted distinct values
  std::vector<std::uint16_t> genomes_;    // parameters: n x kParamCount, row-major
  int bits_ = 1;                          // index: genes per genome
};

}  // namespace isletune
