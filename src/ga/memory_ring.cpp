// In-memory ring migration and pipelined stop vote.
#include "ga/memory_ring.hpp"

#include <stdexcept>

namespace isletune {

// One island's end of the ring.
class MemoryRing::Port final : public Migrator {
 public:
  Port(MemoryRing& ring, int rank) : ring_(ring), rank_(rank) {}
  [[nodiscard]] int neighbours() const override {
    return static_cast<int>(ring_.neighbours_of(rank_).size());
  }
  void send(const std::vector<Migrant>& migrants) override {
    const std::lock_guard lock(ring_.mutex_);
    if (!ring_.first_[rank_])
      ring_.first_[rank_] = migrants;
    for (const int peer : ring_.neighbours_of(rank_)) {
      if (ring_.lag_ >= 0)
        ring_.held_[peer][rank_][sends_] = migrants;
      for (const Migrant& m : migrants) {
        if (ring_.lag_ < 0)
          ring_.inboxes_[peer].push_back(m);
        ++ring_.sent_;
      }
    }
    ++sends_;
    ring_.arrived_.notify_all();
  }
  std::vector<Migrant> receive() override {
    std::unique_lock lock(ring_.mutex_);
    std::vector<Migrant> out;
    if (ring_.lag_ < 0) {
      out.swap(ring_.inboxes_[rank_]);
      return out;
    }
    // The MPI ring's order: left neighbour first, then right, by send number.
    const std::int64_t upto = sends_ - ring_.lag_;
    for (const int peer : ring_.neighbours_of(rank_)) {
      auto& batches = ring_.held_[rank_][peer];
      if (ring_.blocking_) {  // every batch up to `upto` sent (batches of a peer arrive in order)
        ring_.arrived_.wait(lock, [&] {
          return upto <= 0 || (!batches.empty() && batches.rbegin()->first >= upto - 1) ||
                 delivered_[peer] >= upto;
        });
      }
      for (auto it = batches.begin(); it != batches.end() && it->first < upto;) {
        delivered_[peer] = it->first + 1;
        out.insert(out.end(), it->second.begin(), it->second.end());
        it = batches.erase(it);
      }
    }
    return out;
  }
  void remember_first(const std::vector<Migrant>& batch) override {
    const std::lock_guard lock(ring_.mutex_);
    if (!ring_.first_[rank_])
      ring_.first_[rank_] = batch;
    ring_.arrived_.notify_all();
  }
  std::vector<Migrant> gather_first() override {
    std::unique_lock lock(ring_.mutex_);
    if (ring_.blocking_) {
      ring_.arrived_.wait(lock, [&] {
        for (const auto& f : ring_.first_)
          if (!f)
            return false;
        return true;
      });
    }
    std::vector<Migrant> out;
    for (int r = 0; r < ring_.size(); ++r) {
      if (r != rank_ && ring_.first_[r])
        out.insert(out.end(), ring_.first_[r]->begin(), ring_.first_[r]->end());
    }
    return out;
  }

 private:
  MemoryRing& ring_;
  int rank_;
  std::int64_t sends_ = 0;
  std::map<int, std::int64_t> delivered_;  // per peer: batches handed out so far
};

MemoryRing::~MemoryRing() = default;

MemoryRing::MemoryRing(int islands, int lag, bool blocking)
    : inboxes_(islands), lag_(lag), held_(islands), first_(islands), blocking_(blocking) {
  if (islands < 1)
    throw std::invalid_argument("MemoryRing needs at least one island");
  for (int r = 0; r < islands; ++r)
    migrators_.push_back(std::make_unique<Port>(*this, r));
}

Migrator& MemoryRing::migrator(int rank) {
  return *migrators_[rank];
}

std::vector<int> MemoryRing::neighbours_of(int rank) const {
  const int n = size();
  if (n == 1)
    return {};
  if (n == 2)
    return {1 - rank};
  return {(rank + n - 1) % n, (rank + 1) % n};
}

// One island's ballot.
class MemoryStopVote::Voter final : public StopVote {
 public:
  explicit Voter(MemoryStopVote& all) : all_(all) {}
  StopReason vote(int generation, StopReason local) override {
    return all_.cast(generation, local);
  }

 private:
  MemoryStopVote& all_;
};

MemoryStopVote::~MemoryStopVote() = default;

MemoryStopVote::MemoryStopVote(int islands, bool blocking)
    : islands_(islands), blocking_(blocking) {
  for (int r = 0; r < islands; ++r)
    voters_.push_back(std::make_unique<Voter>(*this));
}

StopVote& MemoryStopVote::vote(int rank) {
  return *voters_[rank];
}

// Records a wish for `generation` and answers generation - 1's decision.
StopReason MemoryStopVote::cast(int generation, StopReason wish) {
  std::unique_lock lock(mutex_);
  wishes_[generation].add(wish);
  cast_.notify_all();
  if (blocking_ && generation > 0) {
    cast_.wait(lock, [&] {
      const auto it = wishes_.find(generation - 1);
      return it != wishes_.end() && it->second.votes >= islands_;
    });
  }
  const auto previous = wishes_.find(generation - 1);
  if (previous == wishes_.end())
    return StopReason::none;
  if (previous->second.votes < islands_) {
    throw std::logic_error("MemoryStopVote: an island voted ahead of the others");
  }
  return previous->second.decision(islands_);
}

}  // namespace isletune
