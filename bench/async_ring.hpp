// The replay sweep's asynchronous ring (bench/sweep.cpp, key async=1). Header-only, tested by
// tests/unit/test_async_ring.cpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "ga/migrator.hpp"

namespace isletune {

// async=1: islands that never wait for each other (a design the product's MPI loop does not
// have yet; the wall model's view of it). Each island steps when its own wall clock is the
// earliest of all, sends its emigrants stamped with its wall clock, and receives what its ring
// neighbours sent up to its own clock; every island decides its own stop (time budgets and
// evaluation budgets are per island). Generation 1 still starts after every island's
// generation 0 (the gather).
class AsyncRing {
 public:
  // `now(r)`: island r's wall clock.
  AsyncRing(int islands, std::function<double(int)> now)
      : inbox_(static_cast<std::size_t>(islands)),
        first_(static_cast<std::size_t>(islands)),
        now_(std::move(now)) {
    for (int r = 0; r < islands; ++r)
      ports_.push_back(std::make_unique<Port>(*this, r));
  }
  [[nodiscard]] Migrator& migrator(int r) { return *ports_[static_cast<std::size_t>(r)]; }

 private:
  struct Stamped {
    double at;
    std::vector<Migrant> migrants;
  };
  class Port final : public Migrator {
   public:
    Port(AsyncRing& ring, int rank) : ring_(ring), rank_(rank) {}
    [[nodiscard]] int neighbours() const override {
      return static_cast<int>(ring_.neighbours_of(rank_).size());
    }
    void send(const std::vector<Migrant>& migrants) override {
      if (!ring_.first_[static_cast<std::size_t>(rank_)])
        ring_.first_[static_cast<std::size_t>(rank_)] = migrants;
      for (const int peer : ring_.neighbours_of(rank_))
        ring_.inbox_[static_cast<std::size_t>(peer)].push_back({ring_.now_(rank_), migrants});
    }
    std::vector<Migrant> receive() override {
      auto& in = ring_.inbox_[static_cast<std::size_t>(rank_)];
      const double now = ring_.now_(rank_);
      std::vector<Migrant> out;
      for (auto it = in.begin(); it != in.end();) {
        if (it->at <= now) {
          out.insert(out.end(), it->migrants.begin(), it->migrants.end());
          it = in.erase(it);
        } else {
          ++it;
        }
      }
      return out;
    }
    std::vector<Migrant> gather_first() override {
      std::vector<Migrant> out;
      for (std::size_t r = 0; r < ring_.first_.size(); ++r) {
        if (static_cast<int>(r) != rank_ && ring_.first_[r])
          out.insert(out.end(), ring_.first_[r]->begin(), ring_.first_[r]->end());
      }
      return out;
    }

   private:
    AsyncRing& ring_;
    int rank_;
  };
  [[nodiscard]] std::vector<int> neighbours_of(int r) const {
    const int n = static_cast<int>(inbox_.size());
    if (n == 1)
      return {};
    if (n == 2)
      return {1 - r};
    return {(r + n - 1) % n, (r + 1) % n};
  }
  std::vector<std::vector<Stamped>> inbox_;
  std::vector<std::optional<std::vector<Migrant>>> first_;
  std::function<double(int)> now_;
  std::vector<std::unique_ptr<Port>> ports_;
};

// drift=D (D >= 0): islands that wait only when D generations ahead, the MPI ring's rule with
// ga.migration.drift D (src/ring/ring_migrator.hpp): an island that has ended g generations
// starts its next once each ring neighbour has ended g - D of them (it needs their batch of
// generation g - 1 - D) and every island g - 1 - D (the stop vote, pipelined D + 1 generations).
// `ends[q]`: the wall clock at the end of each generation island q has ended; `going[q]`: false
// once q has stopped (it no longer holds anyone). Returns when island r may start, or nullopt
// while a generation it needs has not ended yet.
inline std::optional<double> drift_start(const std::vector<std::vector<double>>& ends,
                                         const std::vector<bool>& going, int r, int drift,
                                         double own_clock) {
  const int n = static_cast<int>(ends.size());
  const auto g = static_cast<long long>(ends[static_cast<std::size_t>(r)].size());
  double start = own_clock;
  // Needs island q to have ended `count` generations.
  const auto needs = [&](int q, long long count) {
    const auto& e = ends[static_cast<std::size_t>(q)];
    if (count <= 0)
      return true;
    if (static_cast<long long>(e.size()) < count)
      return !going[static_cast<std::size_t>(q)];  // a stopped island holds no one
    start = std::max(start, e[static_cast<std::size_t>(count - 1)]);
    return true;
  };
  if (n > 1) {
    for (const int d : {n - 1, 1}) {
      if (!needs((r + d) % n, g - drift))
        return std::nullopt;
    }
    for (int q = 0; q < n; ++q) {
      if (!needs(q, g - 1 - drift))
        return std::nullopt;
    }
  }
  return start;
}

}  // namespace isletune
