// Byte encoding of settings and measurements for what crosses a process boundary (ring
// migrants) or a restart (resume checkpoints). Host byte order: every rank of a run, and
// the resume of a run, is the same binary on the same kind of machine. Pure.
//
// A setting carries its parameter count, so a blob written before a family appended a
// parameter still reads (the parameter at its neutral value) and one written by a build
// with more parameters is refused in one sentence (docs/decisions.md#family-ocs): the int
// -N, then the N values in parameter order. Blobs of before the count (checkpoint format 4
// and older) hold kBaseParamCount values and no count; their first value, streaming, is
// never negative, which tells the two apart.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "common/error.hpp"
#include "eval/evaluator.hpp"
#include "setting/setting.hpp"

namespace isletune {

// Appends values to a byte buffer.
class ByteWriter {
 public:
  std::vector<std::uint8_t> bytes;

  template <typename T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  void put_string(const std::string& s) {
    put(static_cast<std::uint32_t>(s.size()));
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  void put_ints(const std::vector<int>& v) {
    put(static_cast<std::uint32_t>(v.size()));
    for (const int x : v)
      put(static_cast<std::int32_t>(x));
  }
  // The count, then every value (the file comment has the layout).
  void put_setting(const Setting& s) {
    put(-static_cast<std::int32_t>(kParamCount));
    for (const int v : s.values)
      put(static_cast<std::int32_t>(v));
  }
  // Every field, so the receiver never has to measure the setting again.
  void put_measurement(const Measurement& m) {
    put(static_cast<std::uint8_t>(m.status));
    put(m.median_ms);
    put(static_cast<std::uint32_t>(m.times_ms.size()));
    for (const double t : m.times_ms)
      put(t);
    put(m.compile_ms);
    put(m.verify_ms);
    put(m.run_ms);
    put(static_cast<std::int32_t>(m.registers));
    put(static_cast<std::int32_t>(m.shared_bytes));
    put(m.occupancy);
    put(m.error_l2);
    put(m.error_max);
    put_string(m.message);
  }
};

// Reads values back in the order they were put. A short or corrupt buffer calls `fail`,
// which must throw (the caller decides which error its users see).
class ByteReader {
 public:
  ByteReader(std::span<const std::uint8_t> bytes, std::function<void()> fail)
      : bytes_(bytes), fail_(std::move(fail)) {}

  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T));
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string get_string() {
    const auto n = get<std::uint32_t>();
    need(n);
    std::string s(reinterpret_cast<const char*>(bytes_.data()) + pos_, n);
    pos_ += n;
    return s;
  }
  std::vector<int> get_ints() {
    std::vector<int> v(get<std::uint32_t>());
    for (int& x : v)
      x = get<std::int32_t>();
    return v;
  }
  // A setting of this build's parameters or fewer (the rest at their neutral values). Throws
  // InputError for one of more parameters than this build knows; a count below
  // kBaseParamCount is corrupt (`fail`).
  Setting get_setting() {
    Setting s;  // parameters the blob does not hold stay neutral
    const auto first = get<std::int32_t>();
    std::size_t count = kBaseParamCount;
    std::size_t i = 0;
    if (first >= 0) {  // no count: a blob of before the count
      s.values[i++] = first;
    } else {
      count = static_cast<std::size_t>(-static_cast<std::int64_t>(first));
      if (count < kBaseParamCount)
        failed();
      if (count > kParamCount) {
        throw InputError("a setting in this saved state has " + std::to_string(count) +
                         " parameters and this isletune knows " + std::to_string(kParamCount) +
                         ": a newer isletune wrote it, so only that version can read it.");
      }
    }
    for (; i < count; ++i)
      s.values[i] = get<std::int32_t>();
    return s;
  }
  Measurement get_measurement() {
    Measurement m;
    const auto status = get<std::uint8_t>();
    if (status >= kStatusCount)
      failed();
    m.status = static_cast<Status>(status);
    m.median_ms = get<double>();
    m.times_ms.resize(get<std::uint32_t>());
    for (double& t : m.times_ms)
      t = get<double>();
    m.compile_ms = get<double>();
    m.verify_ms = get<double>();
    m.run_ms = get<double>();
    m.registers = get<std::int32_t>();
    m.shared_bytes = get<std::int32_t>();
    m.occupancy = get<double>();
    m.error_l2 = get<double>();
    m.error_max = get<double>();
    m.message = get_string();
    return m;
  }
  [[nodiscard]] bool done() const { return pos_ == bytes_.size(); }
  // Reports a corrupt buffer through the caller's `fail`.
  [[noreturn]] void failed() const {
    fail_();
    throw std::logic_error("ByteReader: the fail callback returned");
  }

 private:
  void need(std::size_t n) const {
    if (n > bytes_.size() - pos_)
      failed();
  }
  std::span<const std::uint8_t> bytes_;
  std::function<void()> fail_;
  std::size_t pos_ = 0;
};

}  // namespace isletune
