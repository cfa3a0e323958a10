// Encoding and decoding of genomes over the sampled set (see reindex.hpp).
#include "ga/reindex.hpp"

#include <algorithm>
#include <stdexcept>

#include "common/error.hpp"

namespace isletune {

std::string_view encoding_name(Encoding e) {
  return e == Encoding::index ? "index" : "parameters";
}

std::optional<Encoding> encoding_from_name(std::string_view name) {
  if (name == "index")
    return Encoding::index;
  if (name == "parameters")
    return Encoding::parameters;
  return std::nullopt;
}

// Sorts and dedupes the settings and builds the per-gene alphabets.
Reindex::Reindex(std::vector<Setting> settings, Encoding encoding, bool gray)
    : encoding_(encoding), gray_(gray), settings_(std::move(settings)) {
  if (settings_.empty())
    throw InputError("The sampled set is empty; the GA needs at least one setting.");
  std::sort(settings_.begin(), settings_.end());
  settings_.erase(std::unique(settings_.begin(), settings_.end()), settings_.end());
  const std::size_t n = settings_.size();
  if (encoding_ == Encoding::index) {
    bits_ = 1;
    while ((std::size_t{1} << bits_) < n)
      ++bits_;
    alleles_.assign(bits_, 2);
    return;
  }
  values_.resize(kParamCount);
  for (std::size_t p = 0; p < kParamCount; ++p) {
    auto& v = values_[p];
    for (const Setting& s : settings_)
      v.push_back(s.values[p]);
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    alleles_.push_back(static_cast<int>(v.size()));
  }
  genomes_.resize(n * kParamCount);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t p = 0; p < kParamCount; ++p) {
      const auto& v = values_[p];
      genomes_[i * kParamCount + p] = static_cast<std::uint16_t>(
          std::lower_bound(v.begin(), v.end(), settings_[i].values[p]) - v.begin());
    }
  }
}

// Binary search in the sorted settings.
std::optional<int> Reindex::id_of(const Setting& s) const {
  const auto it = std::lower_bound(settings_.begin(), settings_.end(), s);
  if (it == settings_.end() || *it != s)
    return std::nullopt;
  return static_cast<int>(it - settings_.begin());
}

// Bits of the (Gray-coded) id, or the per-parameter value indices.
Genome Reindex::encode(int id) const {
  if (encoding_ == Encoding::index) {
    const unsigned code = gray_ ? static_cast<unsigned>(id) ^ (static_cast<unsigned>(id) >> 1)
                                : static_cast<unsigned>(id);
    Genome g(bits_);
    for (int b = 0; b < bits_; ++b)
      g[b] = (code >> (bits_ - 1 - b)) & 1U;
    return g;
  }
  Genome g(kParamCount);
  for (std::size_t p = 0; p < kParamCount; ++p)
    g[p] = genomes_[id * kParamCount + p];
  return g;
}

Genome Reindex::encode(const Setting& s) const {
  const auto id = id_of(s);
  if (!id)
    throw std::out_of_range("Reindex::encode: the setting is not in the sampled set");
  return encode(*id);
}

// Exact match by binary search over the sorted genome rows.
std::optional<int> Reindex::exact_id(std::span<const int> genome) const {
  if (encoding_ != Encoding::parameters)
    return std::nullopt;
  int lo = 0, hi = size();
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    const std::uint16_t* row = &genomes_[static_cast<std::size_t>(mid) * kParamCount];
    int cmp = 0;
    for (std::size_t p = 0; p < kParamCount && cmp == 0; ++p) {
      cmp = row[p] < genome[p] ? -1 : (row[p] > genome[p] ? 1 : 0);
    }
    if (cmp == 0)
      return mid;
    if (cmp < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return std::nullopt;
}

namespace {

// Number of genes where a sampled row and a genome differ.
int distance(const std::uint16_t* row, std::span<const int> genome) {
  int d = 0;
  for (std::size_t p = 0; p < kParamCount; ++p)
    d += row[p] != genome[p] ? 1 : 0;
  return d;
}

}  // namespace

int Reindex::nearest_distance(std::span<const int> genome) const {
  int best = static_cast<int>(kParamCount) + 1;
  for (int i = 0; i < size(); ++i) {
    best = std::min(best, distance(&genomes_[static_cast<std::size_t>(i) * kParamCount], genome));
  }
  return best;
}

// Fold (index) or exact lookup then nearest repair (parameters).
int Reindex::decode(std::span<const int> genome, Rng& rng) const {
  if (encoding_ == Encoding::index) {
    unsigned code = 0;
    for (int b = 0; b < bits_; ++b)
      code = (code << 1) | (genome[b] & 1);
    if (gray_) {
      for (unsigned shift = code >> 1; shift != 0; shift >>= 1)
        code ^= shift;
    }
    return static_cast<int>(code % static_cast<unsigned>(size()));
  }
  if (const auto id = exact_id(genome))
    return *id;
  int best = static_cast<int>(kParamCount) + 1;
  int ties = 0;
  for (int i = 0; i < size(); ++i) {
    const int d = distance(&genomes_[static_cast<std::size_t>(i) * kParamCount], genome);
    if (d < best) {
      best = d;
      ties = 0;
    }
    ties += d == best ? 1 : 0;
  }
  int pick = static_cast<int>(rng.below(static_cast<std::uint64_t>(ties)));
  for (int i = 0; i < size(); ++i) {
    if (distance(&genomes_[static_cast<std::size_t>(i) * kParamCount], genome) == best &&
        pick-- == 0) {
      return i;
    }
  }
  return 0;  // unreachable: `ties` rows matched above
}

}  // namespace isletune
