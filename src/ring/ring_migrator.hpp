// Migration around the MPI ring (docs/architecture.md, "The island GA"): each island sends its
// emigrants, with their measurements, to both ring neighbours with MPI_Isend and picks up
// immigrants with MPI_Iprobe + MPI_Get_count + MPI_Recv.
//
// Neighbours: rank r talks to (r-1) and (r+1) mod N. With 2 ranks both neighbours are the
// same peer and a batch is sent to it ONCE (neighbours() == 1); a single rank has no
// neighbours and send() does nothing.
//
// Determinism: every send() is one message per neighbour carrying the sender's send
// sequence number (an empty batch is still sent). receive() after this rank's k-th send
// delivers exactly the batches with sequence < k - lag from every neighbour (left
// first, then right, in sequence order), waiting for them if they have not arrived yet;
// batches that arrived early are held back. Every island calls send() at the same
// generations, so with lag 1 an island never waits for more than its neighbours'
// previous round, with lag 0 (the run's default, ga.migration.lag) for their current
// one, and either way the same seed gives the same trajectory whatever the timing.
//
// Early delivery (ga.migration.drift, islands that wait only when drift generations apart):
// receive() also hands out every later batch that has already arrived, and still waits only for
// those older than `lag` sends. An island then breeds from its neighbours' newest
// measurements without waiting for them; what it receives depends on timing.
//
// gather_first() is the one exchange with every rank, not only the neighbours: each
// rank's first batch (generation 0's measurements) to every rank, as one collective.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <map>
#include <vector>

#include "ga/migrator.hpp"
#include "ring/bounded_wait.hpp"
#include "ring/send_queue.hpp"

namespace isletune::ring {

// What a drain found: everything is accounted for when, summed over all ranks,
// sent_messages == delivered_messages + drained_messages.
struct DrainStats {
  std::int64_t sent_messages = 0;       // batches sent (one per neighbour per send())
  std::int64_t sent_migrants = 0;       // migrants sent, counted once per neighbour
  std::int64_t delivered_messages = 0;  // batches handed out by receive()
  std::int64_t delivered_migrants = 0;
  std::int64_t drained_messages = 0;  // batches that arrived after the last receive()
  std::int64_t drained_migrants = 0;
};

class RingMigrator final : public Migrator {
 public:
  static constexpr int kMigrationTag = 7101;  // within the guaranteed tag range (≤ 32767)
  static constexpr int kDrainTag = 7102;
  static constexpr int kEmptyProbes = 16;  // probes that find nothing before poll() gives up

  // Ring over `comm` (duplicated, so its messages never meet anyone else's); `early`: hand out
  // later batches as soon as they have arrived (see above).
  explicit RingMigrator(MPI_Comm comm, int lag = 1, bool early = false);
  ~RingMigrator() override;
  RingMigrator(const RingMigrator&) = delete;
  RingMigrator& operator=(const RingMigrator&) = delete;

  [[nodiscard]] int neighbours() const override { return static_cast<int>(peers_.size()); }
  void send(const std::vector<Migrant>& migrants) override;
  std::vector<Migrant> receive() override;
  // Whether every batch receive() must wait for (older than `lag` sends) has arrived;
  // probes, never blocks. The wait it reports counts towards ISLETUNE_RANK_TIMEOUT_S
  // (bounded_wait.hpp, WaitClock): past it, it ends the job.
  [[nodiscard]] bool ready() override;
  // Every other rank's first batch (MPI_Allgatherv over the whole communicator, bounded
  // like every wait for another rank), in rank order; collective.
  std::vector<Migrant> gather_first() override;
  void remember_first(const std::vector<Migrant>& batch) override;

  // Collective end of migration: completes every send, receives every batch still in
  // flight (counted, not delivered) and returns the totals. Call once, on every rank.
  DrainStats drain();

  // The distinct neighbour ranks (left first).
  [[nodiscard]] const std::vector<int>& peers() const { return peers_; }
  // Seconds receive() spent waiting for neighbours, in its last call and in total.
  [[nodiscard]] double last_wait_s() const { return last_wait_s_; }
  [[nodiscard]] double total_wait_s() const { return total_wait_s_; }

 private:
  // Receives every message that has already arrived into held_.
  void poll();
  // Receives one message from `source` (which must be matched by a probe).
  void receive_one(const MPI_Status& status);
  [[nodiscard]] int peer_index(int rank) const;
  using Held = std::map<std::int64_t, std::vector<Migrant>>;  // a peer's batches, by seq
  // Hands `batch` of peer index `peer` out into `out` and forgets it.
  void deliver(std::size_t peer, Held::iterator batch, std::vector<Migrant>& out);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int lag_ = 1;
  bool early_ = false;
  std::vector<int> peers_;
  std::int64_t sends_ = 0;
  std::vector<std::uint8_t> first_;     // the encoded batch of the first send()
  std::vector<std::int64_t> next_seq_;  // per peer: next sequence to deliver
  std::vector<Held> held_;              // per peer
  std::vector<std::int64_t> arrived_;   // per peer: batches received from MPI
  SendQueue sends_out_;
  DrainStats stats_;
  double last_wait_s_ = 0;
  double total_wait_s_ = 0;
  bool drained_ = false;
  static constexpr const char* kMigrationWait = "the migration from a neighbour";
  WaitClock waiting_;  // since the first ready() that found a batch missing
};

}  // namespace isletune::ring
