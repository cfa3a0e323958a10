// The stop vote of islands that never wait for each other (GaSettings::kDriftAsync;
// docs/architecture.md, "Stopping"). An island's wish is sticky: once it wishes a stop, it
// keeps wishing it (a done island, StopTally's "needs every island", stays done: it keeps
// stepping, measuring nothing new, until the others are done too), so a wish only ever grows.
// An island's own limits (max_generations, time_budget) end that island at once and count as
// done for the others, which go on to theirs
// and is sent to every other island once, when it changes, as a message (ring/mailbox.hpp).
// vote() answers at once, never waiting: the StopTally of every wish this island knows. Since
// wishes only grow, an island that stops, stops for a reason the others reach too, once its
// message arrives (for a time budget or a signal within about one generation of theirs; the
// clock of every island runs from the same start anyway). drain(), collective after the last
// vote, receives every wish still on its way: every island then knows every final wish and
// returns the same tally, the run's one reason.
#pragma once

#include <mpi.h>

#include <vector>

#include "ga/migrator.hpp"
#include "ring/mailbox.hpp"

namespace isletune::ring {

class AsyncStopVote final : public StopVote {
 public:
  explicit AsyncStopVote(MPI_Comm comm);  // collective

  StopReason vote(int generation, StopReason local) override;
  [[nodiscard]] bool ready() override { return true; }

  // Collective end: every wish received; returns the run's reason (the same on every rank:
  // the tally of every island's final wish).
  StopReason drain();

 private:
  // A wish as two reasons: the smallest that stops all, the smallest that needs every island.
  struct Wish {
    StopReason other = StopReason::none;
    StopReason done = StopReason::none;
    // `w` merged in (smallest reason of each kind; none never replaces a reason).
    bool merge(const Wish& w);
  };
  void take(int source, const std::vector<double>& values);
  void receive();
  [[nodiscard]] StopReason tally() const;

  Mailbox mail_;
  std::vector<Wish> wishes_;  // per rank
};

}  // namespace isletune::ring
