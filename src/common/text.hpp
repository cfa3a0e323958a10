// User text inside one-line messages (STYLE: one sentence naming file and key). Values
// and names read from input files are quoted, their control bytes escaped and long text
// cut, so a message stays one short line whatever the input holds.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace isletune {

// `s` with control bytes (and DEL) written as \xNN, cut to about `max_chars` characters
// with "... (N bytes)" when longer.
[[nodiscard]] inline std::string printable(std::string_view s, std::size_t max_chars = 60) {
  std::string out;
  for (const char c : s) {
    if (out.size() >= max_chars) {
      return out + "... (" + std::to_string(s.size()) + " bytes)";
    }
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

// A value from the input as 'value' (printable, cut at `max_chars`).
[[nodiscard]] inline std::string quote_value(std::string_view s, std::size_t max_chars = 40) {
  return "'" + printable(s, max_chars) + "'";
}

// A path for messages: printable, and when long its start and end around "...".
[[nodiscard]] inline std::string display_path(const std::filesystem::path& p) {
  const std::string s = printable(p.string(), 1 << 20);
  constexpr std::size_t kMax = 64;
  if (s.size() <= kMax)
    return s;
  return s.substr(0, 24) + "..." + s.substr(s.size() - (kMax - 27));
}

}  // namespace isletune
