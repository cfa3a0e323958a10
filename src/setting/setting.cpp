// Parameter names and the canonical setting key.
#include "setting/setting.hpp"

#include <algorithm>
#include <charconv>

namespace isletune {
namespace {

constexpr std::array<std::string_view, kParamCount> kNames = {
    "streaming", "merge", "retiming", "prefetch", "tdeg",       "sd",
    "sb",        "tbx",   "tby",      "tbz",      "mfx",        "mfy",
    "mfz",       "ufx",   "ufy",      "ufz",      "use_shared", "use_constant"};

constexpr std::array<std::string_view, 3> kMergeNames = {"none", "block", "cyclic"};

}  // namespace

std::string_view param_name(Param p) {
  return kNames[index_of(p)];
}

std::optional<Param> param_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kParamCount; ++i) {
    if (kNames[i] == name)
      return param_at(i);
  }
  return std::nullopt;
}

std::string_view merge_name(MergeKind k) {
  return kMergeNames[static_cast<std::size_t>(k)];
}

std::optional<MergeKind> merge_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kMergeNames.size(); ++i) {
    if (kMergeNames[i] == name)
      return static_cast<MergeKind>(i);
  }
  return std::nullopt;
}

ParamKind param_kind(Param p) {
  switch (p) {
    case Param::streaming:
    case Param::retiming:
    case Param::prefetch:
    case Param::use_shared:
    case Param::use_constant:
      return ParamKind::flag;
    case Param::merge:
      return ParamKind::enumeration;
    case Param::sd:
      return ParamKind::axis;
    default:
      return ParamKind::integer;
  }
}

int neutral_value(Param p) {
  switch (p) {
    case Param::tdeg:
    case Param::tbx:
    case Param::tby:
    case Param::tbz:
    case Param::mfx:
    case Param::mfy:
    case Param::mfz:
    case Param::ufx:
    case Param::ufy:
    case Param::ufz:
      return 1;
    default:
      return 0;
  }
}

std::string_view param_kind_name(ParamKind k) {
  constexpr std::array<std::string_view, 4> names = {"flag", "enum", "axis", "int"};
  return names[static_cast<std::size_t>(k)];
}

std::string canonical_key(const Setting& s) {
  std::string key;
  key.reserve(200);
  for (std::size_t i = 0; i < kParamCount; ++i) {
    if (i > 0)
      key += ',';
    key += kNames[i];
    key += '=';
    const int v = s.values[i];
    if (param_at(i) == Param::merge && v >= 0 && v < 3) {
      key += kMergeNames[static_cast<std::size_t>(v)];
    } else {
      key += std::to_string(v);
    }
  }
  return key;
}

std::optional<Setting> setting_from_key(std::string_view key) {
  Setting s;
  std::size_t pos = 0;
  for (std::size_t i = 0; i < kParamCount; ++i) {
    const std::size_t end = std::min(key.find(',', pos), key.size());
    const std::string_view pair = key.substr(pos, end - pos);
    const std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos || pair.substr(0, eq) != kNames[i])
      return std::nullopt;
    const std::string_view text = pair.substr(eq + 1);
    if (param_at(i) == Param::merge) {
      const auto kind = merge_from_name(text);
      if (!kind)
        return std::nullopt;
      s.values[i] = static_cast<int>(*kind);
    } else {
      int v = 0;
      const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || ptr != text.data() + text.size())
        return std::nullopt;
      s.values[i] = v;
    }
    pos = end + 1;
    if (i + 1 < kParamCount && end >= key.size())
      return std::nullopt;
  }
  if (pos < key.size())
    return std::nullopt;
  return s;
}

std::uint64_t setting_hash(const Setting& s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : canonical_key(s)) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace isletune
