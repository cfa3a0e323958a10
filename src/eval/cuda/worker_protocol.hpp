// The message format between CudaEvaluator (parent) and isletune-worker (child) over a
// socket pair. A message is a kind line followed by length-prefixed fields and a "." line:
//   kind\n  key length\n<length bytes>\n ... .\n
// Binary-safe (cubins, sources, multi-line logs) and trivially parsed. Pure POSIX.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "eval/cuda/codegen.hpp"
#include "setting/device_limits.hpp"

namespace isletune::cuda {

struct Message {
  std::string kind;
  std::vector<std::pair<std::string, std::string>> fields;

  // Appends a field (numbers through std::to_string-like formatting).
  Message& set(std::string key, std::string value);
  Message& set(std::string key, double value);
  Message& set(std::string key, long long value);
  Message& set(std::string key, int value) {
    return set(std::move(key), static_cast<long long>(value));
  }
  // First field of that name, or "" when absent.
  [[nodiscard]] const std::string& get(const std::string& key) const;
  [[nodiscard]] double number(const std::string& key, double fallback = 0) const;
  [[nodiscard]] bool has(const std::string& key) const;
};

// A launch as one field value: "bx by bz gx gy gz shared_bytes steps".
[[nodiscard]] std::string launch_text(const LaunchConfig& l);
// The inverse of launch_text; nullopt when the text is not eight integers.
[[nodiscard]] std::optional<LaunchConfig> parse_launch(const std::string& text);

// The device limits as hello fields (DeviceLimits' for_each_field: one field per limit,
// arrays as "a b c"), and back: a field absent or unparsable keeps the value already in `d`.
void put_limits(Message& m, const DeviceLimits& d);
void get_limits(const Message& m, DeviceLimits& d);

// Serialises a message.
[[nodiscard]] std::string encode(const Message& m);

// One end of the channel: buffered reads with a timeout, whole-message writes.
class Channel {
 public:
  enum class Read { ok, timeout, closed };

  explicit Channel(int read_fd = -1, int write_fd = -1) : rfd_(read_fd), wfd_(write_fd) {}

  // Sends one message; false if the peer is gone.
  bool send(const Message& m);
  // Receives one message, waiting at most timeout_s (< 0: forever).
  Read receive(Message& out, double timeout_s);

 private:
  bool fill(double deadline_s, Read& why);
  std::optional<std::string> take_line(double deadline_s, Read& why);
  std::optional<std::string> take_bytes(std::size_t n, double deadline_s, Read& why);

  int rfd_;
  int wfd_;
  std::string buffer_;
};

}  // namespace isletune::cuda
