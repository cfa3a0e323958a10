// What of a generated source makes the kernel: the text without its whole-line `//` comments
// (the `// setting <key>` header and the templates' comments). The cubin cache keys on it and
// the tests that no two settings build the same kernel compare it. Header-only: the NVRTC
// layer uses it without linking the core.
#pragma once

#include <string>
#include <string_view>

namespace isletune {

inline std::string without_comment_lines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  std::size_t pos = 0;
  while (pos < source.size()) {
    std::size_t end = source.find('\n', pos);
    end = end == std::string_view::npos ? source.size() : end + 1;
    const std::string_view line = source.substr(pos, end - pos);
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line.substr(first, 2) != "//")
      out += line;
    pos = end;
  }
  return out;
}

}  // namespace isletune
