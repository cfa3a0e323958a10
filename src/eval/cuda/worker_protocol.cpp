// Message encoding and the buffered, time-limited channel between parent and worker.
#include "eval/cuda/worker_protocol.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <type_traits>

namespace isletune::cuda {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

Message& Message::set(std::string key, std::string value) {
  fields.emplace_back(std::move(key), std::move(value));
  return *this;
}

Message& Message::set(std::string key, double value) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  return set(std::move(key), std::string(buf));
}

Message& Message::set(std::string key, long long value) {
  return set(std::move(key), std::to_string(value));
}

void put_limits(Message& m, const DeviceLimits& d) {
  for_each_field(d, [&](const char* name, const auto& v) {
    using T = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<T, std::string>) {
      m.set(name, v);
    } else if constexpr (std::is_arithmetic_v<T>) {
      m.set(name, v);
    } else {
      m.set(name, std::to_string(v[0]) + " " + std::to_string(v[1]) + " " + std::to_string(v[2]));
    }
  });
}

void get_limits(const Message& m, DeviceLimits& d) {
  for_each_field(d, [&](const char* name, auto& v) {
    using T = std::decay_t<decltype(v)>;
    if (!m.has(name))
      return;
    if constexpr (std::is_same_v<T, std::string>) {
      v = m.get(name);
    } else if constexpr (std::is_arithmetic_v<T>) {
      v = static_cast<T>(m.number(name, static_cast<double>(v)));
    } else {
      std::istringstream in(m.get(name));
      T parsed{};
      if (in >> parsed[0] >> parsed[1] >> parsed[2])
        v = parsed;
    }
  });
}

const std::string& Message::get(const std::string& key) const {
  static const std::string empty;
  for (const auto& [k, v] : fields) {
    if (k == key)
      return v;
  }
  return empty;
}

double Message::number(const std::string& key, double fallback) const {
  const std::string& v = get(key);
  if (v.empty())
    return fallback;
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  return end == v.c_str() ? fallback : d;
}

bool Message::has(const std::string& key) const {
  for (const auto& f : fields) {
    if (f.first == key)
      return true;
  }
  return false;
}

std::string launch_text(const LaunchConfig& l) {
  std::ostringstream o;
  o << l.block[0] << ' ' << l.block[1] << ' ' << l.block[2] << ' ' << l.grid[0] << ' ' << l.grid[1]
    << ' ' << l.grid[2] << ' ' << l.shared_bytes << ' ' << l.steps;
  return o.str();
}

std::optional<LaunchConfig> parse_launch(const std::string& text) {
  std::istringstream in(text);
  LaunchConfig l;
  if (!(in >> l.block[0] >> l.block[1] >> l.block[2] >> l.grid[0] >> l.grid[1] >> l.grid[2] >>
        l.shared_bytes >> l.steps))
    return std::nullopt;
  std::string rest;
  if (in >> rest)
    return std::nullopt;
  return l;
}

std::string encode(const Message& m) {
  std::string out = m.kind + "\n";
  for (const auto& [k, v] : m.fields) {
    out += k + " " + std::to_string(v.size()) + "\n";
    out += v;
    out += "\n";
  }
  out += ".\n";
  return out;
}

bool Channel::send(const Message& m) {
  const std::string data = encode(m);
  std::size_t done = 0;
  while (done < data.size()) {
    // MSG_NOSIGNAL: a dead worker must not kill the parent with SIGPIPE.
    ssize_t n = ::send(wfd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK)
      n = ::write(wfd_, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool Channel::fill(double deadline_s, Read& why) {
  for (;;) {
    int wait_ms = -1;
    if (deadline_s >= 0) {
      const double left = deadline_s - now_s();
      if (left <= 0) {
        why = Read::timeout;
        return false;
      }
      wait_ms = static_cast<int>(left * 1000) + 1;
    }
    pollfd p{rfd_, POLLIN, 0};
    const int r = ::poll(&p, 1, wait_ms);
    if (r < 0 && errno == EINTR)
      continue;
    if (r == 0)
      continue;  // re-check the deadline
    if (r < 0) {
      why = Read::closed;
      return false;
    }
    char buf[65536];
    const ssize_t n = ::read(rfd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      why = Read::closed;
      return false;
    }
    buffer_.append(buf, static_cast<std::size_t>(n));
    return true;
  }
}

std::optional<std::string> Channel::take_line(double deadline_s, Read& why) {
  for (;;) {
    const std::size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (!fill(deadline_s, why))
      return std::nullopt;
  }
}

std::optional<std::string> Channel::take_bytes(std::size_t n, double deadline_s, Read& why) {
  while (buffer_.size() < n) {
    if (!fill(deadline_s, why))
      return std::nullopt;
  }
  std::string out = buffer_.substr(0, n);
  buffer_.erase(0, n);
  return out;
}

Channel::Read Channel::receive(Message& out, double timeout_s) {
  const double deadline = timeout_s < 0 ? -1 : now_s() + timeout_s;
  Read why = Read::closed;
  out = Message{};
  auto kind = take_line(deadline, why);
  if (!kind)
    return why;
  out.kind = *kind;
  for (;;) {
    auto line = take_line(deadline, why);
    if (!line)
      return why;
    if (*line == ".")
      return Read::ok;
    const std::size_t sp = line->rfind(' ');
    if (sp == std::string::npos)
      return Read::closed;  // malformed: treat as a dead peer
    const std::size_t n = std::strtoull(line->c_str() + sp + 1, nullptr, 10);
    auto value = take_bytes(n + 1, deadline, why);  // value + its newline
    if (!value)
      return why;
    value->pop_back();
    out.fields.emplace_back(line->substr(0, sp), std::move(*value));
  }
}

}  // namespace isletune::cuda
