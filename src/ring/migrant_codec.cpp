// Byte encoding of migrant batches (see migrant_codec.hpp).
#include "ring/migrant_codec.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

namespace isletune::ring {
namespace {

constexpr std::uint32_t kMagic = 0x49534c4dU;  // "ISLM"

// Appends the raw bytes of a trivially copyable value.
template <typename T>
void put(std::vector<char>& out, const T& v) {
  const char* p = reinterpret_cast<const char*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

// Reads values back in the order they were put, checking the remaining length.
class Reader {
 public:
  explicit Reader(const std::vector<char>& bytes) : bytes_(bytes) {}

  template <typename T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string get_string(std::size_t n) {
    need(n);
    std::string s(bytes_.data() + pos_, n);
    pos_ += n;
    return s;
  }

  [[nodiscard]] bool done() const { return pos_ == bytes_.size(); }

 private:
  void need(std::size_t n) const {
    if (pos_ + n > bytes_.size())
      throw std::runtime_error("migrant message is truncated");
  }
  const std::vector<char>& bytes_;
  std::size_t pos_ = 0;
};

}  // namespace

std::vector<char> encode_batch(const MigrantBatch& batch) {
  std::vector<char> out;
  out.reserve(64 + batch.migrants.size() * 256);
  put(out, kMagic);
  put(out, batch.seq);
  put(out, static_cast<std::uint32_t>(batch.migrants.size()));
  for (const Migrant& m : batch.migrants) {
    for (int v : m.setting.values)
      put(out, static_cast<std::int32_t>(v));
    put(out, static_cast<std::int32_t>(m.source_rank));
    put(out, static_cast<std::int32_t>(m.generation));
    const Measurement& x = m.measurement;
    put(out, static_cast<std::uint8_t>(x.status));
    put(out, x.median_ms);
    put(out, x.compile_ms);
    put(out, x.verify_ms);
    put(out, x.run_ms);
    put(out, static_cast<std::int32_t>(x.registers));
    put(out, static_cast<std::int32_t>(x.shared_bytes));
    put(out, x.occupancy);
    put(out, x.error_l2);
    put(out, x.error_max);
    put(out, static_cast<std::uint32_t>(x.times_ms.size()));
    for (double t : x.times_ms)
      put(out, t);
    put(out, static_cast<std::uint32_t>(x.message.size()));
    out.insert(out.end(), x.message.begin(), x.message.end());
  }
  return out;
}

MigrantBatch decode_batch(const std::vector<char>& bytes) {
  Reader in(bytes);
  if (in.get<std::uint32_t>() != kMagic)
    throw std::runtime_error("not a migrant message");
  MigrantBatch batch;
  batch.seq = in.get<std::int64_t>();
  const auto count = in.get<std::uint32_t>();
  batch.migrants.resize(count);
  for (Migrant& m : batch.migrants) {
    for (int& v : m.setting.values)
      v = in.get<std::int32_t>();
    m.source_rank = in.get<std::int32_t>();
    m.generation = in.get<std::int32_t>();
    Measurement& x = m.measurement;
    const auto status = in.get<std::uint8_t>();
    if (status >= kStatusCount)
      throw std::runtime_error("migrant message has a bad status");
    x.status = static_cast<Status>(status);
    x.median_ms = in.get<double>();
    x.compile_ms = in.get<double>();
    x.verify_ms = in.get<double>();
    x.run_ms = in.get<double>();
    x.registers = in.get<std::int32_t>();
    x.shared_bytes = in.get<std::int32_t>();
    x.occupancy = in.get<double>();
    x.error_l2 = in.get<double>();
    x.error_max = in.get<double>();
    x.times_ms.resize(in.get<std::uint32_t>());
    for (double& t : x.times_ms)
      t = in.get<double>();
    x.message = in.get_string(in.get<std::uint32_t>());
  }
  if (!in.done())
    throw std::runtime_error("migrant message has trailing bytes");
  return batch;
}

}  // namespace isletune::ring
