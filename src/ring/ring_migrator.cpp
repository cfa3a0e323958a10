// Migration around the MPI ring (see ring_migrator.hpp).
#include "ring/ring_migrator.hpp"

#include <algorithm>
#include <iterator>
#include <memory>
#include <stdexcept>

#include "ring/bounded_wait.hpp"
#include "ring/migrant_codec.hpp"

namespace isletune::ring {

RingMigrator::RingMigrator(MPI_Comm comm, int lag, bool early)
    : lag_(std::max(0, lag)), early_(early) {
  MPI_Request dup = MPI_REQUEST_NULL;
  MPI_Comm_idup(comm, &comm_, &dup);
  wait_or_abort(&dup, "setting up the migration ring");
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  if (size_ > 1) {
    const int left = (rank_ - 1 + size_) % size_;
    const int right = (rank_ + 1) % size_;
    peers_.push_back(left);
    if (right != left)
      peers_.push_back(right);
  }
  next_seq_.assign(peers_.size(), 0);
  held_.resize(peers_.size());
  arrived_.assign(peers_.size(), 0);
}

RingMigrator::~RingMigrator() {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (!finalised)
    MPI_Comm_free(&comm_);
}

int RingMigrator::peer_index(int rank) const {
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    if (peers_[i] == rank)
      return static_cast<int>(i);
  }
  return -1;
}

void RingMigrator::send(const std::vector<Migrant>& migrants) {
  sends_out_.reap();
  MigrantBatch batch{sends_, migrants};
  for (Migrant& m : batch.migrants)
    m.source_rank = rank_;
  const bool first = sends_ == 0;
  ++sends_;
  if (peers_.empty())
    return;
  const std::vector<std::uint8_t> bytes = encode_batch(batch);
  if (first)
    first_ = bytes;
  for (int peer : peers_) {
    sends_out_.send(bytes, peer, kMigrationTag, comm_);
    ++stats_.sent_messages;
    stats_.sent_migrants += static_cast<std::int64_t>(migrants.size());
  }
}

void RingMigrator::remember_first(const std::vector<Migrant>& batch) {
  if (sends_ > 0 || peers_.empty())
    return;
  MigrantBatch first{0, batch};
  for (Migrant& m : first.migrants)
    m.source_rank = rank_;
  first_ = encode_batch(first);
}

void RingMigrator::receive_one(const MPI_Status& status) {
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(count));
  MPI_Recv(bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, kMigrationTag, comm_,
           MPI_STATUS_IGNORE);
  const int index = peer_index(status.MPI_SOURCE);
  if (index < 0)
    throw std::runtime_error("migrant message from a rank that is no neighbour");
  MigrantBatch batch = decode_batch(bytes);
  held_[index][batch.seq] = std::move(batch.migrants);
  ++arrived_[index];
}

void RingMigrator::poll() {
  // One empty probe is not proof: after a long time without MPI calls (a generation on the
  // GPU) Open MPI's first probes only progress what arrived meanwhile. A few more, each a
  // microsecond, find it (ring_test delivery: early delivery after a 100 ms pause).
  for (int empty = 0; empty < kEmptyProbes;) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kMigrationTag, comm_, &flag, &status);
    if (flag) {
      receive_one(status);
      empty = 0;
    } else {
      ++empty;
    }
  }
}

std::vector<Migrant> RingMigrator::receive() {
  sends_out_.reap();
  last_wait_s_ = 0;
  std::vector<Migrant> out;
  if (peers_.empty())
    return out;
  poll();
  const std::int64_t upto = sends_ - lag_;  // deliver sequences < upto
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    for (; next_seq_[i] < upto; ++next_seq_[i]) {
      auto it = held_[i].find(next_seq_[i]);
      if (it == held_[i].end()) {
        const double start = MPI_Wtime();
        // Bounded like every wait for another rank: a frozen neighbour ends the job. The
        // bound counts from the first ready() that found this batch missing (fills).
        poll_or_abort(
            [&] {
              int flag = 0;
              MPI_Status status;
              MPI_Iprobe(peers_[i], kMigrationTag, comm_, &flag, &status);
              if (flag)
                receive_one(status);
              return (it = held_[i].find(next_seq_[i])) != held_[i].end();
            },
            kMigrationWait, waiting_.since());
        last_wait_s_ += MPI_Wtime() - start;
      }
      deliver(i, it, out);
    }
    // Early delivery: the later batches already here (a peer's arrive in its send order).
    for (auto it = held_[i].find(next_seq_[i]); early_ && it != held_[i].end();
         it = held_[i].find(++next_seq_[i])) {
      deliver(i, it, out);
    }
  }
  waiting_.answered();
  total_wait_s_ += last_wait_s_;
  return out;
}

bool RingMigrator::ready() {
  if (peers_.empty())
    return true;
  poll();
  const std::int64_t upto = sends_ - lag_;
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    for (std::int64_t seq = next_seq_[i]; seq < upto; ++seq) {
      if (!held_[i].count(seq)) {
        waiting_.not_yet(kMigrationWait);  // ends the job once the wait is past its bound
        return false;
      }
    }
  }
  return true;
}

void RingMigrator::deliver(std::size_t peer, Held::iterator batch, std::vector<Migrant>& out) {
  ++stats_.delivered_messages;
  stats_.delivered_migrants += static_cast<std::int64_t>(batch->second.size());
  std::move(batch->second.begin(), batch->second.end(), std::back_inserter(out));
  held_[peer].erase(batch);
}

std::vector<Migrant> RingMigrator::gather_first() {
  std::vector<Migrant> out;
  if (size_ < 2)
    return out;
  const double start = MPI_Wtime();
  const int mine = static_cast<int>(first_.size());
  std::vector<int> counts(static_cast<std::size_t>(size_)), offsets(counts.size());
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, comm_, &request);
  wait_or_abort(&request, "the exchange of generation 0");
  int total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    offsets[r] = total;
    total += counts[r];
  }
  std::vector<std::uint8_t> all(static_cast<std::size_t>(total));
  MPI_Iallgatherv(first_.data(), mine, MPI_BYTE, all.data(), counts.data(), offsets.data(),
                  MPI_BYTE, comm_, &request);
  wait_or_abort(&request, "the exchange of generation 0");
  for (int r = 0; r < size_; ++r) {
    if (r == rank_ || counts[r] == 0)
      continue;
    const auto at = all.begin() + offsets[r];
    MigrantBatch batch = decode_batch(std::vector<std::uint8_t>(at, at + counts[r]));
    std::move(batch.migrants.begin(), batch.migrants.end(), std::back_inserter(out));
  }
  last_wait_s_ = MPI_Wtime() - start;
  total_wait_s_ += last_wait_s_;
  return out;
}

DrainStats RingMigrator::drain() {
  if (drained_)
    return stats_;
  // Tell each neighbour how many batches to expect from us, then receive until every
  // neighbour's announced count has arrived and every send of ours has completed.
  std::vector<std::int64_t> announce(peers_.size(), sends_);
  std::vector<std::int64_t> expected(peers_.size(), -1);
  std::vector<MPI_Request> requests(2 * peers_.size(), MPI_REQUEST_NULL);
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    MPI_Isend(&announce[i], 1, MPI_INT64_T, peers_[i], kDrainTag, comm_, &requests[i]);
    MPI_Irecv(&expected[i], 1, MPI_INT64_T, peers_[i], kDrainTag, comm_,
              &requests[peers_.size() + i]);
  }
  poll_or_abort(
      [&] {
        poll();
        sends_out_.reap();
        int counts_known = 0;
        MPI_Testall(static_cast<int>(requests.size()), requests.data(), &counts_known,
                    MPI_STATUSES_IGNORE);
        bool complete = counts_known && sends_out_.empty();
        for (std::size_t i = 0; complete && i < peers_.size(); ++i)
          complete = arrived_[i] >= expected[i];
        return complete;
      },
      "the last migrations");
  for (auto& per_peer : held_) {
    for (auto& [seq, migrants] : per_peer) {
      ++stats_.drained_messages;
      stats_.drained_migrants += static_cast<std::int64_t>(migrants.size());
    }
    per_peer.clear();
  }
  drained_ = true;
  return stats_;
}

}  // namespace isletune::ring
