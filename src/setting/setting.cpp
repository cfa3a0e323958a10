// Parameter names and the canonical setting key.
#include "setting/setting.hpp"

#include <algorithm>
#include <charconv>

namespace isletune {
namespace {

constexpr std::array<std::string_view, 3> kMergeNames = {"none", "block", "cyclic"};

}  // namespace

std::optional<Param> param_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kParamCount; ++i) {
    if (kParamInfo[i].name == name)
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

std::string_view param_kind_name(ParamKind k) {
  constexpr std::array<std::string_view, 4> names = {"flag", "enum", "axis", "int"};
  return names[static_cast<std::size_t>(k)];
}

namespace {

void append_pair(std::string& key, std::size_t i, int v) {
  if (!key.empty())
    key += ',';
  key += kParamInfo[i].name;
  key += '=';
  if (param_at(i) == Param::merge && v >= 0 && v < 3) {
    key += kMergeNames[static_cast<std::size_t>(v)];
  } else {
    key += std::to_string(v);
  }
}

// The value text of parameter i in a key, or nullopt.
std::optional<int> value_of(std::size_t i, std::string_view text) {
  if (param_at(i) == Param::merge) {
    const auto kind = merge_from_name(text);
    if (!kind)
      return std::nullopt;
    return static_cast<int>(*kind);
  }
  int v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size())
    return std::nullopt;
  return v;
}

}  // namespace

std::string canonical_key(const Setting& s) {
  std::string key;
  key.reserve(200);
  for (std::size_t i = 0; i < kParamCount; ++i) {
    if (i < kBaseParamCount || s.values[i] != kParamInfo[i].neutral)
      append_pair(key, i, s.values[i]);
  }
  return key;
}

std::optional<Setting> setting_from_key(std::string_view key) {
  Setting s;             // appended parameters neutral until named
  std::size_t next = 0;  // the first parameter the next pair may name
  std::size_t pos = 0;
  while (pos <= key.size() && !(pos == key.size() && next >= kBaseParamCount)) {
    const std::size_t end = std::min(key.find(',', pos), key.size());
    const std::string_view pair = key.substr(pos, end - pos);
    const std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos)
      return std::nullopt;
    const auto p = param_from_name(pair.substr(0, eq));
    // Base parameters in order, each named; then appended ones in order, each optional.
    if (!p || index_of(*p) < next || (next < kBaseParamCount && index_of(*p) != next))
      return std::nullopt;
    const auto v = value_of(index_of(*p), pair.substr(eq + 1));
    if (!v)
      return std::nullopt;
    s.values[index_of(*p)] = *v;
    next = index_of(*p) + 1;
    pos = end + 1;
  }
  if (next < kBaseParamCount)
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

Setting naive_setting(int dims) {
  Setting s;
  s[Param::merge] = static_cast<int>(MergeKind::none);
  s[Param::tdeg] = 1;
  s[Param::tbx] = 32;
  s[Param::tby] = dims == 2 ? 8 : 4;
  s[Param::tbz] = dims == 2 ? 1 : 2;
  for (Param p : {Param::mfx, Param::mfy, Param::mfz, Param::ufx, Param::ufy, Param::ufz})
    s[p] = 1;
  return s;
}

}  // namespace isletune
