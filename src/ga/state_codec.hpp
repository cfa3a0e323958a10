// The byte form of the strategies' state (SearchStrategy::save / restore), shared by the
// strategies' files (ga/island_strategy.cpp, ga/search.cpp). Internal to src/ga. Pure.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "eval/byte_codec.hpp"

namespace isletune::state_codec {

// A strategy's bytes that do not read back: a resume from a damaged or foreign state.
[[noreturn]] inline void damaged_state() {
  throw InputError("the search state to resume is damaged or of another isletune version.");
}

inline ByteReader reader_of(const std::vector<std::uint8_t>& bytes) {
  return ByteReader(bytes, [] { damaged_state(); });
}

inline void put_best(ByteWriter& w, const std::optional<std::pair<Setting, Measurement>>& best) {
  w.put(static_cast<std::uint8_t>(best.has_value()));
  if (best) {
    w.put_setting(best->first);
    w.put_measurement(best->second);
  }
}

inline std::optional<std::pair<Setting, Measurement>> get_best(ByteReader& r) {
  if (!r.get<std::uint8_t>())
    return std::nullopt;
  Setting s = r.get_setting();
  return std::make_pair(s, r.get_measurement());
}

// A cache as rows sorted by setting, so equal caches give equal bytes.
inline void put_cache(ByteWriter& w, std::vector<std::pair<Setting, Measurement>> rows) {
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  w.put(static_cast<std::uint32_t>(rows.size()));
  for (const auto& [setting, m] : rows) {
    w.put_setting(setting);
    w.put_measurement(m);
  }
}

inline std::vector<std::pair<Setting, Measurement>> get_cache(ByteReader& r) {
  std::vector<std::pair<Setting, Measurement>> rows(r.get<std::uint32_t>());
  for (auto& [setting, m] : rows) {
    setting = r.get_setting();
    m = r.get_measurement();
  }
  return rows;
}

}  // namespace isletune::state_codec
