// The replay evaluator (see replay_evaluator.hpp).
#include "eval/replay/replay_evaluator.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "common/error.hpp"
#include "common/text.hpp"
#include "eval/byte_codec.hpp"
#include "eval/race.hpp"
#include "kernel/registry.hpp"

namespace isletune {

ReplayEvaluator::ReplayEvaluator(const ProblemShape& shape,
                                 std::span<const RecordedMeasurement> measured, DeviceLimits limits,
                                 std::string origin)
    : shape_(shape), limits_(std::move(limits)) {
  recording_.origin = std::move(origin);
  std::vector<Setting>& candidates_ = recording_.candidates;
  const std::string& origin_ = recording_.origin;
  for (const RecordedMeasurement& r : measured) {
    if (r.measurement.status == Status::invalid)
      continue;
    const Setting kernel = canonical(shape_, r.setting);
    if (table_.emplace(kernel, r.measurement).second)
      candidates_.push_back(kernel);
  }
  if (candidates_.empty()) {
    throw InputError(origin_ + ": the replay dataset has no recorded measurements to answer from.");
  }
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the answers, in recording order
  const auto mix = [&h](const void* data, std::size_t n) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i)
      h = (h ^ bytes[i]) * 0x100000001b3ULL;
  };
  for (const Setting& setting : candidates_) {
    const Measurement& m = table_.at(setting);
    mix(setting.values.data(), sizeof(setting.values[0]) * setting.values.size());
    const auto status = static_cast<std::int32_t>(m.status);
    mix(&status, sizeof status);
    for (const double x : {m.median_ms, m.compile_ms, m.verify_ms, m.run_ms})
      mix(&x, sizeof x);
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  recording_.fingerprint = text;
}

// The queue's schedule (QueueModel) of a batch submitted at once.
double batch_span_s(std::span<const Measurement> batch, int threads) {
  QueueModel queue(threads);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    queue.add(static_cast<Ticket>(i), 0, batch[i].compile_ms * 1e-3,
              (batch[i].verify_ms + batch[i].run_ms) * 1e-3);
  }
  double span = 0;
  while (const auto done = queue.next())
    span = std::max(span, done->timeline.finish_s);
  return span;
}

void ReplayEvaluator::enqueue(Ticket ticket, const Setting& s) {
  const auto it = table_.find(canonical(shape_, s));
  Measurement m;
  double raced_gpu_s = -1;    // loses the race: its GPU time if another kernel waits
  double settled_gpu_s = -1;  // its first runs settle: the same
  if (it == table_.end()) {
    m.status = Status::invalid;
    m.message = "no record of this setting in " + recording_.origin;
  } else {
    ++measured_;
    m = it->second;
    m.compile_ms *= compile_scale_;
    const bool loses = m.ok() && race_factor_ > 0 && best_ms_ > 0 &&
                       (static_cast<int>(m.times_ms.size()) >= kRaceRuns
                            ? races_out(m.times_ms, best_ms_, race_factor_)
                            : m.median_ms > race_factor_ * best_ms_);
    if (loses) {
      raced_gpu_s = (m.verify_ms + m.run_ms * kRacedRunShare) * 1e-3;
      losers_.emplace(ticket, best_ms_);
    }
    if (m.ok() && settles(m.times_ms, settle_spread_))
      settled_gpu_s = (m.verify_ms + m.run_ms * kSettledRunShare) * 1e-3;
  }
  // The answers for unrecorded settings carry no costs and are done at once.
  queue_.add(ticket, clock_s_, m.compile_ms * 1e-3, (m.verify_ms + m.run_ms) * 1e-3, raced_gpu_s,
             settled_gpu_s);
  answers_.emplace(ticket, std::move(m));
}

Completion ReplayEvaluator::wait_one() {
  if (delay_s_ > 0 && ++since_delay_ >= kDelayEvery) {
    since_delay_ = 0;
    std::this_thread::sleep_for(std::chrono::duration<double>(delay_s_));
  }
  const auto done = queue_.next();
  if (!done)
    throw std::logic_error("ReplayEvaluator: wait_one() with nothing queued");
  const auto it = answers_.find(done->ticket);
  Completion c{done->ticket, std::move(it->second), done->timeline};
  answers_.erase(it);
  if (const auto lost = losers_.find(done->ticket); lost != losers_.end()) {
    if (done->raced) {
      char why[256];
      std::snprintf(why, sizeof why,
                    "raced (replay): over %g x the fastest kernel returned so far, %.6g ms, "
                    "and another kernel waited for the GPU %s; timed at %g of its recorded cost",
                    race_factor_, lost->second, kRacedMark, kRacedRunShare);
      c.measurement.run_ms *= kRacedRunShare;
      c.measurement.message = why;
    }
    losers_.erase(lost);
  }
  if (done->settled) {  // the worker's answer: the first runs, their median
    Measurement& m = c.measurement;
    m.times_ms.resize(kSettleRuns);
    m.median_ms = median_of_first(m.times_ms, m.times_ms.size());
    m.run_ms *= kSettledRunShare;
  }
  if (c.measurement.ok() && c.measurement.median_ms > 0 &&
      (best_ms_ <= 0 || c.measurement.median_ms < best_ms_))
    best_ms_ = c.measurement.median_ms;
  clock_s_ = std::max(clock_s_, c.timeline.finish_s);
  return c;
}

// The queue's schedule and the answers it owes, in ticket order.
std::vector<std::uint8_t> ReplayEvaluator::save_queue() const {
  ByteWriter w;
  const std::vector<std::uint8_t> q = queue_.save();
  w.put(static_cast<std::uint32_t>(q.size()));
  w.bytes.insert(w.bytes.end(), q.begin(), q.end());
  std::vector<std::pair<Ticket, const Measurement*>> owed;
  for (const auto& [t, m] : answers_)
    owed.emplace_back(t, &m);
  std::sort(owed.begin(), owed.end());
  w.put(static_cast<std::uint32_t>(owed.size()));
  for (const auto& [t, m] : owed) {
    w.put(t);
    w.put_measurement(*m);
  }
  w.put(next_ticket());
  w.put(clock_s_);
  if (race_factor_ > 0) {  // (a queue saved without racing reads as before)
    w.put(best_ms_);
    const std::map<Ticket, double> losers(losers_.begin(), losers_.end());
    w.put(static_cast<std::uint32_t>(losers.size()));
    for (const auto& [t, best] : losers) {
      w.put(t);
      w.put(best);
    }
  }
  return std::move(w.bytes);
}

bool ReplayEvaluator::restore_queue(const std::vector<std::uint8_t>& bytes) {
  if (bytes.empty())
    return false;
  const auto damaged = [] {
    throw InputError("the replay queue to resume is damaged or of another isletune version.");
  };
  ByteReader r(bytes, damaged);
  const std::uint32_t n = r.get<std::uint32_t>();
  if (n > bytes.size())
    damaged();
  std::vector<std::uint8_t> q(n);
  for (std::uint8_t& b : q)
    b = r.get<std::uint8_t>();
  try {
    queue_.restore(q);
  } catch (const std::invalid_argument&) {
    damaged();
  }
  answers_.clear();
  const std::uint32_t owed = r.get<std::uint32_t>();
  if (owed > bytes.size())
    damaged();
  for (std::uint32_t i = 0; i < owed; ++i) {
    const Ticket t = r.get<Ticket>();
    answers_.emplace(t, r.get_measurement());
  }
  const Ticket next = r.get<Ticket>();
  clock_s_ = r.get<double>();
  best_ms_ = race_factor_ > 0 && !r.done() ? r.get<double>() : 0;
  losers_.clear();
  if (race_factor_ > 0 && !r.done()) {
    const std::uint32_t losers = r.get<std::uint32_t>();
    if (losers > bytes.size())
      damaged();
    for (std::uint32_t i = 0; i < losers; ++i) {
      const Ticket t = r.get<Ticket>();
      losers_.emplace(t, r.get<double>());
    }
  }
  if (!r.done() || next < 0)
    damaged();
  set_next_ticket(next, static_cast<int>(owed));
  return true;
}

std::string ReplayEvaluator::detail() const {
  char gpu[96];
  std::snprintf(gpu, sizeof gpu, " (%.0f GB/s copy, %.0f MiB L2)", limits_.memory_bandwidth_gbs,
                limits_.l2_bytes / (1024.0 * 1024.0));
  // The GPU's name comes from the dataset: escaped and bounded for the terminal.
  return replayed_label(recording_.origin) + "; recorded on " + printable(limits_.name, 80) + gpu;
}

// Replay records no kernel sources: the result carries none (export regenerates it).
std::string ReplayEvaluator::source(const Setting&) const {
  return {};
}

}  // namespace isletune
