// Byte encoding of migrants for the ring: a batch of individuals with their full
// measurements (times_ms and message included), so immigrants are never re-measured.
// Fixed little-endian-as-host layout: every rank of one run is the same binary.
#pragma once

#include <cstdint>
#include <vector>

#include "ga/migrator.hpp"

namespace isletune::ring {

// One migration message: the sender's send sequence number and its migrants.
struct MigrantBatch {
  std::int64_t seq = 0;
  std::vector<Migrant> migrants;
};

// Serialises a batch into bytes.
[[nodiscard]] std::vector<std::uint8_t> encode_batch(const MigrantBatch& batch);
// Inverse of encode_batch; throws std::runtime_error on a truncated or corrupt buffer.
[[nodiscard]] MigrantBatch decode_batch(const std::vector<std::uint8_t>& bytes);

}  // namespace isletune::ring
