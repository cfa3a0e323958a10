// The asynchronous stop vote (see async_stop_vote.hpp).
#include "ring/async_stop_vote.hpp"

namespace isletune::ring {
namespace {

std::vector<int> everyone_else(MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::vector<int> out;
  for (int r = 0; r < size; ++r) {
    if (r != rank)
      out.push_back(r);
  }
  return out;
}

bool smaller(StopReason a, StopReason b) {
  return a != StopReason::none && (b == StopReason::none || a < b);
}

}  // namespace

bool AsyncStopVote::Wish::merge(const Wish& w) {
  bool changed = false;
  if (smaller(w.other, other)) {
    other = w.other;
    changed = true;
  }
  if (smaller(w.done, done)) {
    done = w.done;
    changed = true;
  }
  return changed;
}

AsyncStopVote::AsyncStopVote(MPI_Comm comm)
    : mail_(comm, 2, everyone_else(comm), "the stop wishes"),
      wishes_(static_cast<std::size_t>(mail_.size())) {}

void AsyncStopVote::take(int source, const std::vector<double>& v) {
  // A message from another island: only reasons a wish can hold count (nothing else, however
  // it arrived, reaches the tally).
  const auto reason = [](double x) {
    const int r = static_cast<int>(x);
    return r > 0 && r <= static_cast<int>(StopReason::error) ? static_cast<StopReason>(r)
                                                             : StopReason::none;
  };
  wishes_[static_cast<std::size_t>(source)].merge({reason(v[0]), reason(v[1])});
}

void AsyncStopVote::receive() {
  mail_.poll([this](int source, const std::vector<double>& v) { take(source, v); });
}

StopReason AsyncStopVote::tally() const {
  StopTally t;
  for (const Wish& w : wishes_)
    t.add(w.other, w.done);
  return t.decision(static_cast<int>(wishes_.size()));
}

StopReason AsyncStopVote::vote(int /*generation*/, StopReason local) {
  Wish mine;
  // An island's own limits (its generations, its clock) end that island, not the others, which
  // go on to theirs: it is done (on GPUs every island's clock started together, so all reach
  // the time budget within about a generation; in replay each island spends its own simulated
  // budget).
  const bool own_limit = local == StopReason::max_generations || local == StopReason::time_budget;
  (needs_every_island(local) || own_limit ? mine.done : mine.other) = local;
  Wish& own = wishes_[static_cast<std::size_t>(mail_.rank())];
  if (own.merge(mine)) {
    const std::vector<double> values = {static_cast<double>(own.other),
                                        static_cast<double>(own.done)};
    for (const int peer : mail_.peers())
      mail_.send(peer, values);
  }
  receive();
  const StopReason decided = tally();
  return decided != StopReason::none || !own_limit ? decided : local;
}

StopReason AsyncStopVote::drain() {
  mail_.drain([this](int source, const std::vector<double>& v) { take(source, v); });
  return tally();
}

}  // namespace isletune::ring
