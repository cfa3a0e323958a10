// Small fixed-width messages between ranks that never make a rank wait (async islands,
// GaSettings::kDriftAsync): the stop wishes every island sends every other
// (async_stop_vote.hpp) and the progress rows every rank sends rank 0 (rank_run's progress
// line). A message is `width` doubles sent with MPI_Isend; poll() hands every message that has
// arrived to a callback. Ranks send different numbers of messages (they are at different
// generations), so no collective can match them: drain() ends the exchange instead by
// announcing to each peer how many messages it sent and receiving until every announced
// message has arrived (bounded like every wait for another rank).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

namespace isletune::ring {

class Mailbox {
 public:
  // Called for each message received: the sender's rank and its `width` values.
  using Handler = std::function<void(int source, const std::vector<double>& values)>;

  // Over `comm` (duplicated: collective); `peers`: the ranks this rank sends to and receives
  // from (symmetric: r lists s iff s lists r); `what`: the wait's name in a timeout message.
  Mailbox(MPI_Comm comm, int width, std::vector<int> peers, const char* what);
  ~Mailbox();
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;

  // Sends `values` (width of them) to `peer` without waiting.
  void send(int peer, const std::vector<double>& values);
  // Hands every message that has arrived so far to `handler`; never waits.
  void poll(const Handler& handler);
  // Collective over the peers (every rank calls it once, after its last send()): hands every
  // message still on its way to `handler` and completes every send.
  void drain(const Handler& handler);

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }
  [[nodiscard]] const std::vector<int>& peers() const { return peers_; }

  static constexpr int kTag = 7201;
  static constexpr int kCountTag = 7202;

 private:
  struct PendingSend {
    std::vector<double> values;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  void reap_sends();

  MPI_Comm comm_ = MPI_COMM_NULL;
  int width_ = 0;
  int rank_ = 0;
  int size_ = 1;
  std::vector<int> peers_;
  const char* what_;
  std::vector<std::int64_t> sent_;      // per rank: messages sent to it
  std::vector<std::int64_t> received_;  // per rank: messages received from it
  std::deque<PendingSend> pending_;
  bool drained_ = false;
};

}  // namespace isletune::ring
