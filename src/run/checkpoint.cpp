// Checkpoint blobs for resume (see checkpoint.hpp). Plain host-order bytes: a run is
// resumed by the same binary on the same kind of machine.
#include "run/checkpoint.hpp"

#include <algorithm>
#include <string>

#include "common/error.hpp"
#include "eval/byte_codec.hpp"

namespace isletune::run {
namespace {

constexpr std::uint32_t kMagic = 0x49534c43U;  // "ISLC"
// 5: every setting with its parameter count (eval/byte_codec.hpp), so an older isletune
// refuses the blob instead of misreading it; 4: the evaluator's queue (SearchState::queue);
// 3: up to kMaxKeptStates generations (2: two). Formats 2-4 read: their settings are told
// apart by the codec itself.
constexpr std::uint32_t kFormat = 5;

// A damaged blob is the user's problem to know about: one sentence, no crash.
[[noreturn]] void damaged() {
  throw InputError("the run's checkpoint is damaged or was written by another isletune version.");
}

ByteReader reader_of(const std::vector<std::uint8_t>& bytes) {
  return ByteReader(bytes, [] { damaged(); });
}

void put_state(ByteWriter& w, const RankState& s) {
  const SearchState& ss = s.search;
  w.put(static_cast<std::int32_t>(ss.generation));
  w.put(ss.evaluations);
  w.put(ss.rows);
  w.put(ss.elapsed_s);
  w.put(static_cast<std::int32_t>(ss.stopped));
  w.put(static_cast<std::uint32_t>(ss.strategy.size()));
  w.bytes.insert(w.bytes.end(), ss.strategy.begin(), ss.strategy.end());
  w.put(static_cast<std::uint32_t>(ss.queue.size()));
  w.bytes.insert(w.bytes.end(), ss.queue.begin(), ss.queue.end());
  w.put(s.sends);
  w.put(static_cast<std::uint32_t>(s.last_sent.size()));
  for (const Migrant& m : s.last_sent) {
    w.put_setting(m.setting);
    w.put_measurement(m.measurement);
    w.put(static_cast<std::int32_t>(m.source_rank));
    w.put(static_cast<std::int32_t>(m.generation));
    w.put(static_cast<std::uint8_t>(m.measurement_only ? 1 : 0));
  }
  w.put(static_cast<std::int32_t>(s.votes));
  w.put(static_cast<std::int32_t>(s.last_wish));
}

StopReason get_reason(ByteReader& r) {
  const auto v = r.get<std::int32_t>();
  if (v < 0 || v > static_cast<int>(StopReason::error))
    damaged();
  return static_cast<StopReason>(v);
}

RankState get_state(ByteReader& r, std::uint32_t format) {
  RankState s;
  SearchState& ss = s.search;
  ss.generation = r.get<std::int32_t>();
  ss.evaluations = r.get<std::int64_t>();
  ss.rows = r.get<std::int64_t>();
  ss.elapsed_s = r.get<double>();
  ss.stopped = get_reason(r);
  ss.strategy.resize(r.get<std::uint32_t>());
  for (std::uint8_t& byte : ss.strategy)
    byte = r.get<std::uint8_t>();
  if (format >= 4) {
    ss.queue.resize(r.get<std::uint32_t>());
    for (std::uint8_t& byte : ss.queue)
      byte = r.get<std::uint8_t>();
  }
  s.sends = r.get<std::int64_t>();
  s.last_sent.resize(r.get<std::uint32_t>());
  for (Migrant& m : s.last_sent) {
    m.setting = r.get_setting();
    m.measurement = r.get_measurement();
    m.source_rank = r.get<std::int32_t>();
    m.generation = r.get<std::int32_t>();
    m.measurement_only = r.get<std::uint8_t>() != 0;
  }
  s.votes = r.get<std::int32_t>();
  s.last_wish = get_reason(r);
  return s;
}

}  // namespace

std::optional<RankState> RankCheckpoint::at(int generation) const {
  if (current.search.generation == generation)
    return current;
  for (const RankState& s : earlier) {
    if (s.search.generation == generation)
      return s;
  }
  return std::nullopt;
}

RankCheckpoint RankCheckpoint::then(RankState next, int keep) const {
  const auto most = static_cast<std::size_t>(std::clamp(keep, 2, kMaxKeptStates) - 1);
  RankCheckpoint c;
  c.earlier.reserve(most);
  c.earlier.push_back(current);
  for (std::size_t i = 0; i < earlier.size() && c.earlier.size() < most; ++i)
    c.earlier.push_back(earlier[i]);
  c.current = std::move(next);
  return c;
}

std::vector<std::uint8_t> encode_checkpoint(const RankCheckpoint& c) {
  ByteWriter w;
  w.put(kMagic);
  w.put(kFormat);
  put_state(w, c.current);
  const std::size_t n = std::min<std::size_t>(c.earlier.size(), kMaxKeptStates - 1);
  w.put(static_cast<std::uint8_t>(n));
  for (std::size_t i = 0; i < n; ++i)
    put_state(w, c.earlier[i]);
  return std::move(w.bytes);
}

RankCheckpoint decode_checkpoint(const std::vector<std::uint8_t>& bytes) {
  ByteReader r = reader_of(bytes);
  if (r.get<std::uint32_t>() != kMagic)
    damaged();
  // Format 2 (one earlier state at most) reads as format 3 with a count of 0 or 1.
  const std::uint32_t format = r.get<std::uint32_t>();
  if (format < 2 || format > kFormat)
    damaged();
  RankCheckpoint c;
  c.current = get_state(r, format);
  const int n = r.get<std::uint8_t>();
  if (n > kMaxKeptStates - 1 || (format == 2 && n > 1))
    damaged();
  for (int i = 0; i < n; ++i)
    c.earlier.push_back(get_state(r, format));
  if (!r.done())
    damaged();
  return c;
}

}  // namespace isletune::run
