// Messages that never make a rank wait (see mailbox.hpp).
#include "ring/mailbox.hpp"

#include <memory>
#include <utility>

#include "ring/bounded_wait.hpp"

namespace isletune::ring {

Mailbox::Mailbox(MPI_Comm comm, int width, std::vector<int> peers, const char* what)
    : width_(width), peers_(std::move(peers)), what_(what) {
  MPI_Request dup = MPI_REQUEST_NULL;
  MPI_Comm_idup(comm, &comm_, &dup);
  wait_or_abort(&dup, what_);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  sent_.assign(static_cast<std::size_t>(size_), 0);
  received_.assign(static_cast<std::size_t>(size_), 0);
}

Mailbox::~Mailbox() {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (finalised)
    return;
  // Without a drain (an error path) sends may still read their buffers: hand the requests
  // back to MPI and keep the buffers until the process ends.
  if (!pending_.empty()) {
    auto* orphans = std::make_unique<std::deque<PendingSend>>(std::move(pending_)).release();
    for (PendingSend& p : *orphans) {
      if (p.request != MPI_REQUEST_NULL)
        MPI_Request_free(&p.request);
    }
  }
  MPI_Comm_free(&comm_);
}

void Mailbox::reap_sends() {
  while (!pending_.empty()) {
    int done = 0;
    MPI_Test(&pending_.front().request, &done, MPI_STATUS_IGNORE);
    if (!done)
      return;
    pending_.pop_front();
  }
}

void Mailbox::send(int peer, const std::vector<double>& values) {
  reap_sends();
  PendingSend& p = pending_.emplace_back();
  p.values = values;
  p.values.resize(static_cast<std::size_t>(width_));
  MPI_Isend(p.values.data(), width_, MPI_DOUBLE, peer, kTag, comm_, &p.request);
  ++sent_[static_cast<std::size_t>(peer)];
}

void Mailbox::poll(const Handler& handler) {
  reap_sends();
  std::vector<double> values(static_cast<std::size_t>(width_));
  for (;;) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kTag, comm_, &flag, &status);
    if (!flag)
      return;
    MPI_Recv(values.data(), width_, MPI_DOUBLE, status.MPI_SOURCE, kTag, comm_, MPI_STATUS_IGNORE);
    ++received_[static_cast<std::size_t>(status.MPI_SOURCE)];
    handler(status.MPI_SOURCE, values);
  }
}

void Mailbox::drain(const Handler& handler) {
  if (drained_)
    return;
  const std::size_t n = peers_.size();
  std::vector<std::int64_t> announce(n), expected(n, -1);
  std::vector<MPI_Request> requests(2 * n, MPI_REQUEST_NULL);
  for (std::size_t i = 0; i < n; ++i) {
    announce[i] = sent_[static_cast<std::size_t>(peers_[i])];
    MPI_Isend(&announce[i], 1, MPI_INT64_T, peers_[i], kCountTag, comm_, &requests[i]);
    MPI_Irecv(&expected[i], 1, MPI_INT64_T, peers_[i], kCountTag, comm_, &requests[n + i]);
  }
  poll_or_abort(
      [&] {
        poll(handler);
        int counts_known = 0;
        MPI_Testall(static_cast<int>(requests.size()), requests.data(), &counts_known,
                    MPI_STATUSES_IGNORE);
        bool complete = counts_known && pending_.empty();
        for (std::size_t i = 0; complete && i < n; ++i)
          complete = received_[static_cast<std::size_t>(peers_[i])] >= expected[i];
        return complete;
      },
      what_);
  drained_ = true;
}

}  // namespace isletune::ring
