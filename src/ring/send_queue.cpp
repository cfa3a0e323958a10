// Non-blocking sends that keep their buffers (see send_queue.hpp).
#include "ring/send_queue.hpp"

#include <memory>
#include <utility>

namespace isletune::ring {

SendQueue::~SendQueue() {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (finalised || pending_.empty())
    return;
  auto* orphans = std::make_unique<std::deque<Pending>>(std::move(pending_)).release();
  for (Pending& p : *orphans) {
    if (p.request != MPI_REQUEST_NULL)
      MPI_Request_free(&p.request);
  }
}

void SendQueue::reap() {
  while (!pending_.empty()) {
    int done = 0;
    MPI_Test(&pending_.front().request, &done, MPI_STATUS_IGNORE);
    if (!done)
      return;
    pending_.pop_front();
  }
}

void SendQueue::send(std::vector<std::uint8_t> bytes, int peer, int tag, MPI_Comm comm) {
  reap();
  Pending& p = pending_.emplace_back();
  p.bytes = std::move(bytes);
  MPI_Isend(p.bytes.data(), static_cast<int>(p.bytes.size()), MPI_BYTE, peer, tag, comm,
            &p.request);
}

}  // namespace isletune::ring
