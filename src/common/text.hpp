// Text from input files on its way to a user or into generated code (STYLE: one sentence
// naming file and key; issue 50: nothing a file holds reaches a terminal or the generated
// source as it is). printable() is the one escape, is_plain_name() the one rule for names.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace isletune {

// A character that must never reach a terminal or a line of generated code as it is: C0
// controls and DEL, C1 controls (U+0080-U+009F: 8-bit escape sequences), line and
// paragraph separators, and the bidirectional marks and overrides that make text display
// in another order than a compiler reads it.
[[nodiscard]] constexpr bool is_unsafe_code_point(char32_t c) {
  return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x061c || c == 0x200e || c == 0x200f ||
         (c >= 0x2028 && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

// The length of the well-formed UTF-8 sequence at the start of `s` and its code point, or
// 0 when it is not one (a stray byte, an overlong form, a surrogate, past U+10FFFF).
[[nodiscard]] constexpr std::size_t utf8_sequence(std::string_view s, char32_t& c) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = b(0);
  std::size_t n = lead < 0x80             ? 1
                  : (lead & 0xe0) == 0xc0 ? 2
                  : (lead & 0xf0) == 0xe0 ? 3
                  : (lead & 0xf8) == 0xf0 ? 4
                                          : 0;
  if (n == 0 || n > s.size())
    return 0;
  c = n == 1 ? lead : n == 2 ? lead & 0x1f : n == 3 ? lead & 0x0f : lead & 0x07;
  for (std::size_t i = 1; i < n; ++i) {
    if ((b(i) & 0xc0) != 0x80)
      return 0;
    c = (c << 6) | (b(i) & 0x3f);
  }
  constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (c < kMin[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
    return 0;
  return n;
}

// The one escape for text read from input files (configs, traces, datasets, stencil
// files) on its way to a terminal, a message or a comment of generated code: `s` with
// every unsafe character (is_unsafe_code_point) and every byte that is not well-formed
// UTF-8 written as \xNN, cut to about `max_chars` bytes with "... (N bytes)" when longer.
// The result holds no newline, so it cannot end a `//` comment.
[[nodiscard]] inline std::string printable(std::string_view s, std::size_t max_chars = 60) {
  std::string out;
  const auto escape = [&](char byte) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(byte));
    out += buf;
  };
  for (std::size_t at = 0; at < s.size();) {
    if (out.size() >= max_chars) {
      return out + "... (" + std::to_string(s.size()) + " bytes)";
    }
    char32_t c = 0;
    const std::size_t n = utf8_sequence(s.substr(at), c);
    if (n == 0) {
      escape(s[at++]);
      continue;
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (is_unsafe_code_point(c))
        escape(s[at + i]);
      else
        out += s[at + i];
    }
    at += n;
  }
  return out;
}

// The one rule for a name that input files carry into messages and generated code (a
// stencil's name from a config, a stencil file, a trace or a dataset; a feature, parameter
// or OC name read back from a trace): 1 to `max_chars` printable ASCII characters, no
// backslash. Such a name is safe in a `//` comment, a message and a terminal as it is.
[[nodiscard]] inline bool is_plain_name(std::string_view s, std::size_t max_chars = 64) {
  if (s.empty() || s.size() > max_chars)
    return false;
  for (const char c : s) {
    if (c < 0x20 || c > 0x7e || c == '\\')
      return false;
  }
  return true;
}

// What is_plain_name expects, for messages.
inline constexpr const char* kPlainNameRule =
    "a name of 1 to 64 printable ASCII characters without backslashes";

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
