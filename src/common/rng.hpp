// The one random engine of isletune: xoshiro256** seeded through splitmix64.
// Integers and reals are derived from the raw 64-bit output here, never through
// std::*_distribution, so a seed gives the same stream on every platform and library.
#pragma once

#include <array>
#include <cstdint>
#include <limits>

namespace isletune {

class Rng {
 public:
  using result_type = std::uint64_t;
  using State = std::array<std::uint64_t, 4>;

  // Engine for (seed, stream): islands use stream = rank, other users their own constant.
  explicit Rng(std::uint64_t seed = 0, std::uint64_t stream = 0) {
    std::uint64_t x = seed ^ (0x9E3779B97F4A7C15ULL * (stream + 1));
    for (auto& word : state_)
      word = splitmix64(x);
  }

  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }

  // Next raw 64-bit output.
  result_type operator()() {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform integer in [0, n), n > 0, without modulo bias (rejection sampling).
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t limit = max() - max() % n;
    std::uint64_t r;
    do {
      r = (*this)();
    } while (r >= limit);
    return r % n;
  }

  // Uniform integer in [lo, hi] inclusive.
  std::int64_t between(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo) + 1));
  }

  // Uniform real in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }

  // True with probability p.
  bool chance(double p) { return uniform() < p; }

  // Full engine state, for checkpoints (resume continues the same stream).
  [[nodiscard]] const State& state() const { return state_; }
  void set_state(const State& s) { state_ = s; }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t splitmix64(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  State state_{};
};

}  // namespace isletune
