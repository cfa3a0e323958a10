// Error types shared by every layer. InputError carries one sentence for the user:
// what was wrong, where (file and key, or parameter), and what was expected.
#pragma once

#include <stdexcept>
#include <string>

namespace isletune {

// Bad input from the user (config, stencil, parameter range, GA setting, dataset).
// The CLI prints what() as-is and exits non-zero.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& sentence) : std::runtime_error(sentence) {}
};

}  // namespace isletune
