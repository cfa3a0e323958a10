// Decorators that remember the ring state a checkpoint needs (see checkpoint.hpp): the
// last batch of emigrants and the last stop wish, with their counts. They forward every
// call unchanged, so the search behaves exactly as with the wrapped objects.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ga/migrator.hpp"

namespace isletune::run {

class RecordingMigrator final : public Migrator {
 public:
  explicit RecordingMigrator(Migrator& inner) : inner_(inner) {}
  [[nodiscard]] int neighbours() const override { return inner_.neighbours(); }
  void send(const std::vector<Migrant>& migrants) override {
    last_sent_ = migrants;
    ++sends_;
    inner_.send(migrants);
  }
  std::vector<Migrant> receive() override { return inner_.receive(); }
  [[nodiscard]] bool ready() override { return inner_.ready(); }
  std::vector<Migrant> gather_first() override { return inner_.gather_first(); }
  void remember_first(const std::vector<Migrant>& batch) override { inner_.remember_first(batch); }

  // Continues from a checkpoint. With lag 1 the wrapped (fresh) migrator re-sends the
  // batch the neighbours had not integrated yet, so they receive it when they would have;
  // resumed from generation 0, that batch is generation 0's, the first batch of the fresh
  // migrator, so gather_first() before generation 1 answers what it would have. With lag
  // 0 the neighbours integrated it before the checkpoint: it is not sent again, only
  // remembered as the first batch when resumed from generation 0.
  void restore(std::int64_t sends, const std::vector<Migrant>& last_sent, int lag = 1) {
    sends_ = sends;
    last_sent_ = last_sent;
    if (sends > 0 && lag > 0)
      inner_.send(last_sent);
    else if (sends == 1)
      inner_.remember_first(last_sent);
  }
  [[nodiscard]] std::int64_t sends() const { return sends_; }
  [[nodiscard]] const std::vector<Migrant>& last_sent() const { return last_sent_; }

 private:
  Migrator& inner_;
  std::int64_t sends_ = 0;
  std::vector<Migrant> last_sent_;
};

class RecordingVote final : public StopVote {
 public:
  explicit RecordingVote(StopVote& inner) : inner_(inner) {}
  StopReason vote(int generation, StopReason local) override {
    last_wish_ = local;
    ++votes_;
    return inner_.vote(generation, local);
  }
  [[nodiscard]] bool ready() override { return inner_.ready(); }

  // Continues from a checkpoint: re-casts the last wish in the (fresh, pipelined) vote
  // so the next vote answers what it would have answered. A signal wish is dropped: it
  // belonged to the interrupted process. With a vote `depth` generations deep (drift) the
  // last wish stands for the `depth` votes in flight (the earlier ones are not kept; a run
  // with drift depends on timing anyway), so the next vote answers a stop wished then.
  void restore(int votes, StopReason last_wish, int generation, int depth = 1) {
    votes_ = votes;
    last_wish_ = last_wish == StopReason::signal ? StopReason::none : last_wish;
    for (int k = 0; k < std::min(depth, votes); ++k)
      (void)inner_.vote(generation, last_wish_);
  }
  [[nodiscard]] int votes() const { return votes_; }
  [[nodiscard]] StopReason last_wish() const { return last_wish_; }

 private:
  StopVote& inner_;
  int votes_ = 0;
  StopReason last_wish_ = StopReason::none;
};

}  // namespace isletune::run
