// Checkpoint blobs for resume (see checkpoint.hpp). Plain host-order bytes: a run is
// resumed by the same binary on the same kind of machine.
#include "run/checkpoint.hpp"

#include <string>

#include "common/error.hpp"
#include "eval/byte_codec.hpp"

namespace isletune::run {
namespace {

constexpr std::uint32_t kMagic = 0x49534c43U;  // "ISLC"
constexpr std::uint32_t kFormat = 1;

// A damaged blob is the user's problem to know about: one sentence, no crash.
[[noreturn]] void damaged() {
  throw InputError("the run's checkpoint is damaged or was written by another isletune version.");
}

ByteReader reader_of(const std::vector<std::uint8_t>& bytes) {
  return ByteReader(bytes, [] { damaged(); });
}

void put_state(ByteWriter& w, const RankState& s) {
  const IslandState& is = s.island;
  w.put(static_cast<std::int32_t>(is.generation));
  w.put(static_cast<std::uint32_t>(is.population.size()));
  for (const Individual& ind : is.population) {
    w.put(static_cast<std::int32_t>(ind.id));
    w.put_ints(ind.genome);
    w.put_measurement(ind.measurement);
  }
  w.put(static_cast<std::uint32_t>(is.cache.size()));
  for (const auto& [setting, m] : is.cache) {
    w.put_setting(setting);
    w.put_measurement(m);
  }
  w.put(static_cast<std::uint8_t>(is.best.has_value()));
  if (is.best) {
    w.put_setting(is.best->first);
    w.put_measurement(is.best->second);
  }
  for (std::uint64_t word : is.rng)
    w.put(word);
  w.put(is.next_eval_id);
  w.put(is.evaluations);
  w.put(is.elapsed_s);
  w.put(static_cast<std::int32_t>(is.stopped));
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

RankState get_state(ByteReader& r) {
  RankState s;
  IslandState& is = s.island;
  is.generation = r.get<std::int32_t>();
  is.population.resize(r.get<std::uint32_t>());
  for (Individual& ind : is.population) {
    ind.id = r.get<std::int32_t>();
    ind.genome = r.get_ints();
    ind.measurement = r.get_measurement();
  }
  is.cache.resize(r.get<std::uint32_t>());
  for (auto& [setting, m] : is.cache) {
    setting = r.get_setting();
    m = r.get_measurement();
  }
  if (r.get<std::uint8_t>()) {
    Setting best = r.get_setting();
    is.best.emplace(best, r.get_measurement());
  }
  for (std::uint64_t& word : is.rng)
    word = r.get<std::uint64_t>();
  is.next_eval_id = r.get<std::int64_t>();
  is.evaluations = r.get<std::int64_t>();
  is.elapsed_s = r.get<double>();
  is.stopped = get_reason(r);
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
  if (current.island.generation == generation)
    return current;
  if (previous && previous->island.generation == generation)
    return previous;
  return std::nullopt;
}

std::vector<std::uint8_t> encode_checkpoint(const RankCheckpoint& c) {
  ByteWriter w;
  w.put(kMagic);
  w.put(kFormat);
  put_state(w, c.current);
  w.put(static_cast<std::uint8_t>(c.previous.has_value()));
  if (c.previous)
    put_state(w, *c.previous);
  return std::move(w.bytes);
}

RankCheckpoint decode_checkpoint(const std::vector<std::uint8_t>& bytes) {
  ByteReader r = reader_of(bytes);
  if (r.get<std::uint32_t>() != kMagic || r.get<std::uint32_t>() != kFormat)
    damaged();
  RankCheckpoint c;
  c.current = get_state(r);
  if (r.get<std::uint8_t>())
    c.previous = get_state(r);
  if (!r.done())
    damaged();
  return c;
}

}  // namespace isletune::run
