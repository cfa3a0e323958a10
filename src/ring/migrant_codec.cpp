// Byte encoding of migrant batches (see migrant_codec.hpp), on the shared byte codec.
#include "ring/migrant_codec.hpp"

#include <stdexcept>

#include "eval/byte_codec.hpp"

namespace isletune::ring {
namespace {

constexpr std::uint32_t kMagic = 0x49534c4dU;  // "ISLM"

}  // namespace

std::vector<std::uint8_t> encode_batch(const MigrantBatch& batch) {
  ByteWriter out;
  out.bytes.reserve(64 + batch.migrants.size() * 256);
  out.put(kMagic);
  out.put(batch.seq);
  out.put(static_cast<std::uint32_t>(batch.migrants.size()));
  for (const Migrant& m : batch.migrants) {
    out.put_setting(m.setting);
    out.put(static_cast<std::int32_t>(m.source_rank));
    out.put(static_cast<std::int32_t>(m.generation));
    out.put(static_cast<std::uint8_t>(m.measurement_only ? 1 : 0));
    out.put_measurement(m.measurement);
  }
  return std::move(out.bytes);
}

MigrantBatch decode_batch(const std::vector<std::uint8_t>& bytes) {
  ByteReader in(bytes, [] { throw std::runtime_error("migrant message is truncated or corrupt"); });
  if (in.get<std::uint32_t>() != kMagic)
    throw std::runtime_error("not a migrant message");
  MigrantBatch batch;
  batch.seq = in.get<std::int64_t>();
  batch.migrants.resize(in.get<std::uint32_t>());
  for (Migrant& m : batch.migrants) {
    m.setting = in.get_setting();
    m.source_rank = in.get<std::int32_t>();
    m.generation = in.get<std::int32_t>();
    m.measurement_only = in.get<std::uint8_t>() != 0;
    m.measurement = in.get_measurement();
  }
  if (!in.done())
    throw std::runtime_error("migrant message has trailing bytes");
  return batch;
}

}  // namespace isletune::ring
