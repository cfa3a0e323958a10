// Non-blocking sends whose buffers live until MPI is done with them: the migration ring's
// batches and the mailbox's messages (ring_migrator.hpp, mailbox.hpp). A send's bytes are
// kept until its request completes (reap()); a queue destroyed with sends unfinished (an
// error path, no drain) hands the requests back to MPI and keeps their buffers until the
// process ends, since MPI may still read them.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <deque>
#include <vector>

namespace isletune::ring {

class SendQueue {
 public:
  SendQueue() = default;
  ~SendQueue();
  SendQueue(const SendQueue&) = delete;
  SendQueue& operator=(const SendQueue&) = delete;

  // MPI_Isend of `bytes` to `peer` with `tag` over `comm`; completed sends are reaped first.
  void send(std::vector<std::uint8_t> bytes, int peer, int tag, MPI_Comm comm);
  // Frees the buffers of the sends that have completed, oldest first; never waits.
  void reap();
  // No send unfinished (after reap()).
  [[nodiscard]] bool empty() const { return pending_.empty(); }

 private:
  struct Pending {
    std::vector<std::uint8_t> bytes;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  std::deque<Pending> pending_;
};

}  // namespace isletune::ring
