// In-memory fakes shared by the sampler and GA tests: a synthetic evaluator that counts
// every measurement, a recording TraceSink, and synthetic sampled sets and landscapes.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "eval/evaluator.hpp"
#include "ga/records.hpp"
#include "sample/sampled_set.hpp"
#include "setting/setting.hpp"

namespace isletune::testing {

// Evaluator over a time function; each measurement costs `cost_s` of simulated clock.
// A time <= 0 or NaN comes back as a failure (status invalid, fitness 0).
class SyntheticEvaluator final : public Evaluator {
 public:
  using TimeFn = std::function<double(const Setting&)>;
  explicit SyntheticEvaluator(TimeFn time_ms, double cost_s = 0.5)
      : time_ms_(std::move(time_ms)), cost_s_(cost_s) {}

  std::vector<Measurement> evaluate(std::span<const Setting> batch) override {
    ++batches;
    std::vector<Measurement> out;
    for (const Setting& s : batch) {
      ++measured[s];
      log.push_back(s);
      Measurement m;
      const double t = time_ms_(s);
      if (t > 0 && std::isfinite(t)) {
        m.status = Status::ok;
        m.median_ms = t;
        m.times_ms = {t};
      } else {
        m.status = Status::invalid;
      }
      m.run_ms = cost_s_ * 1e3;
      clock_ += cost_s_;
      out.push_back(m);
    }
    return out;
  }
  [[nodiscard]] DeviceLimits limits() const override { return {}; }
  [[nodiscard]] double clock_s() const override { return clock_; }
  [[nodiscard]] std::string name() const override { return "synthetic"; }

  std::unordered_map<Setting, int, SettingHash> measured;  // measurements per setting
  std::vector<Setting> log;                                // every measured setting, in order
  int batches = 0;

 private:
  TimeFn time_ms_;
  double cost_s_;
  double clock_ = 0;
};

// Keeps every record.
class MemorySink final : public TraceSink {
 public:
  void evaluation(const EvaluationRecord& r) override { evaluations.push_back(r); }
  void generation(const GenerationRecord& r) override { generations.push_back(r); }
  void migration(const MigrationRecord& r) override { migrations.push_back(r); }
  void flush() override { ++flushes; }

  std::vector<EvaluationRecord> evaluations;
  std::vector<GenerationRecord> generations;
  std::vector<MigrationRecord> migrations;
  int flushes = 0;
};

// A MemorySink that calls `before(g)` once, at the first evaluation row of each generation
// g, before storing it (so a test can look at an island while it evaluates generation g).
class HookSink final : public TraceSink {
 public:
  void evaluation(const EvaluationRecord& r) override {
    if (r.generation > last_ && before) {
      last_ = r.generation;
      before(r.generation);
    }
    rows.evaluation(r);
  }
  void generation(const GenerationRecord& r) override { rows.generation(r); }
  void migration(const MigrationRecord& r) override { rows.migration(r); }
  void flush() override { rows.flush(); }

  std::function<void(int)> before;
  MemorySink rows;

 private:
  int last_ = -1;
};

// The product of value lists over a few parameters (others 0/1 defaults), as a set.
inline SampledSet product_set(const std::vector<std::pair<Param, std::vector<int>>>& axes) {
  SampledSet set;
  std::vector<Setting> out(1);
  for (auto& s : out) {
    s[Param::tdeg] = 1;
    s[Param::tbz] = 1;
  }
  for (const auto& [p, values] : axes) {
    std::vector<Setting> next;
    for (const Setting& s : out) {
      for (const int v : values) {
        Setting t = s;
        t[p] = v;
        next.push_back(t);
      }
    }
    out = std::move(next);
  }
  for (const Setting& s : out) {
    set.settings.push_back(s);
    set.oc.push_back(0);
    set.predicted_ms.push_back(1.0);
  }
  return set;
}

// A 8 x 8 x 4 x 4 = 1024-setting set over tbx, tby, mfx, ufx (values are value indices).
inline SampledSet landscape_set() {
  return product_set({{Param::tbx, {0, 1, 2, 3, 4, 5, 6, 7}},
                      {Param::tby, {0, 1, 2, 3, 4, 5, 6, 7}},
                      {Param::mfx, {0, 1, 2, 3}},
                      {Param::ufx, {0, 1, 2, 3}}});
}

// Separable: each parameter contributes its distance to a target value.
inline double separable_ms(const Setting& s) {
  return 1.0 + 0.3 * std::abs(s[Param::tbx] - 5) + 0.3 * std::abs(s[Param::tby] - 2) +
         0.4 * std::abs(s[Param::mfx] - 3) + 0.4 * std::abs(s[Param::ufx] - 1);
}

// Deceptive: a broad local basin around (1,6,0,3) and a narrower, deeper global one
// around (6,1,3,0); most of the space slopes toward the local basin.
inline double deceptive_ms(const Setting& s) {
  const double d_local = std::abs(s[Param::tbx] - 1) + std::abs(s[Param::tby] - 6) +
                         std::abs(s[Param::mfx] - 0) + std::abs(s[Param::ufx] - 3);
  const double d_global = std::abs(s[Param::tbx] - 6) + std::abs(s[Param::tby] - 1) +
                          std::abs(s[Param::mfx] - 3) + std::abs(s[Param::ufx] - 0);
  return std::min(1.4 + 0.1 * d_local, 1.0 + 0.25 * d_global);
}

// A pseudo-random landscape: a time in [1, 11) per setting from its hash and `seed`,
// with about `fail` of the settings failing.
inline SyntheticEvaluator::TimeFn random_landscape(std::uint64_t seed, double fail = 0.1) {
  return [seed, fail](const Setting& s) {
    std::uint64_t h = setting_hash(s) ^ (seed * 0x9E3779B97F4A7C15ULL);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    const double u = static_cast<double>(h >> 11) * 0x1.0p-53;
    if (u < fail)
      return -1.0;
    return 1.0 + 10.0 * (u - fail) / (1.0 - fail);
  };
}

// Steps every island search (pointers with step()) to its end: one thread each (a blocking
// in-memory ring and vote: lag 0) or in turn on this thread.
template <class Islands>
void run_islands(Islands& islands, bool threaded) {
  if (threaded) {
    std::vector<std::thread> threads;
    for (auto& island : islands)
      threads.emplace_back([&island] {
        while (island->step()) {
        }
      });
    for (std::thread& t : threads)
      t.join();
    return;
  }
  for (bool going = true; going;) {
    going = false;
    for (auto& island : islands)
      going = island->step() || going;
  }
}

}  // namespace isletune::testing
