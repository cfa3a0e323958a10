// Checkpoint blobs for resume (see checkpoint.hpp). Plain host-order bytes: a run is
// resumed by the same binary on the same kind of machine.
#include "run/checkpoint.hpp"

#include <cstring>
#include <string>

#include "common/error.hpp"

namespace isletune::run {
namespace {

constexpr std::uint32_t kMagic = 0x49534c43U;  // "ISLC"
constexpr std::uint32_t kFormat = 1;

class Writer {
 public:
  template <typename T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  void put_string(const std::string& s) {
    put(static_cast<std::uint32_t>(s.size()));
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  void put_ints(const std::vector<int>& v) {
    put(static_cast<std::uint32_t>(v.size()));
    for (int x : v)
      put(static_cast<std::int32_t>(x));
  }
  void put_setting(const Setting& s) {
    for (int v : s.values)
      put(static_cast<std::int32_t>(v));
  }
  void put_measurement(const Measurement& m) {
    put(static_cast<std::uint8_t>(m.status));
    put(m.median_ms);
    put(static_cast<std::uint32_t>(m.times_ms.size()));
    for (double t : m.times_ms)
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
  std::vector<std::uint8_t> bytes;
};

class Reader {
 public:
  explicit Reader(const std::vector<std::uint8_t>& b) : bytes_(b) {}
  template <typename T>
  T get() {
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
  Setting get_setting() {
    Setting s;
    for (int& v : s.values)
      v = get<std::int32_t>();
    return s;
  }
  Measurement get_measurement() {
    Measurement m;
    const auto status = get<std::uint8_t>();
    if (status >= kStatusCount)
      fail();
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
  [[noreturn]] static void fail() {
    throw InputError("the run's checkpoint is damaged or was written by another isletune version.");
  }

 private:
  void need(std::size_t n) const {
    if (pos_ + n > bytes_.size())
      fail();
  }
  const std::vector<std::uint8_t>& bytes_;
  std::size_t pos_ = 0;
};

void put_state(Writer& w, const RankState& s) {
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
  }
  w.put(static_cast<std::int32_t>(s.votes));
  w.put(static_cast<std::int32_t>(s.last_wish));
}

StopReason get_reason(Reader& r) {
  const auto v = r.get<std::int32_t>();
  if (v < 0 || v > static_cast<int>(StopReason::error))
    Reader::fail();
  return static_cast<StopReason>(v);
}

RankState get_state(Reader& r) {
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
  Writer w;
  w.put(kMagic);
  w.put(kFormat);
  put_state(w, c.current);
  w.put(static_cast<std::uint8_t>(c.previous.has_value()));
  if (c.previous)
    put_state(w, *c.previous);
  return std::move(w.bytes);
}

RankCheckpoint decode_checkpoint(const std::vector<std::uint8_t>& bytes) {
  Reader r(bytes);
  if (r.get<std::uint32_t>() != kMagic || r.get<std::uint32_t>() != kFormat)
    Reader::fail();
  RankCheckpoint c;
  c.current = get_state(r);
  if (r.get<std::uint8_t>())
    c.previous = get_state(r);
  if (!r.done())
    Reader::fail();
  return c;
}

}  // namespace isletune::run
