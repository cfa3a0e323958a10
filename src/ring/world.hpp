// The MPI world of one isletune run: initialisation, rank and node-local rank, the
// rank → GPU mapping, and the few collectives the CLI needs to agree on errors and to
// gather per-rank values on rank 0. The CLI talks to MPI only through this class.
#pragma once

#include <mpi.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace isletune::ring {

// Number of GPUs a CUDA_VISIBLE_DEVICES value lists ("0,1,3" → 3, "" → 0), or -1 when
// the variable is unset (all of the node's GPUs are visible).
[[nodiscard]] int visible_gpu_count(const char* cuda_visible_devices);

// Device ordinal (relative to the visible list) for a node-local rank: ranks of a node
// take the visible GPUs round-robin; with one visible GPU per task (srun
// --gpus-per-task=1) every rank gets ordinal 0; with the variable unset the local rank
// itself (the evaluator wraps it by the device count).
[[nodiscard]] int gpu_ordinal(int local_rank, int visible_count);

class World {
 public:
  // Initialises MPI (unless someone already did) and finds the node-local rank.
  World(int* argc, char*** argv);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  [[nodiscard]] MPI_Comm comm() const { return comm_; }
  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }
  [[nodiscard]] int local_rank() const { return local_rank_; }
  [[nodiscard]] int local_size() const { return local_size_; }
  // GPU ordinal of this rank, from the node-local rank and CUDA_VISIBLE_DEVICES.
  [[nodiscard]] int gpu() const;
  // Host name of this rank.
  [[nodiscard]] std::string host() const;
  // The node of this rank: Slurm's name of it (SLURMD_NODENAME) where Slurm started the
  // rank, else host(). The ranks of one node are those of MPI_COMM_TYPE_SHARED.
  [[nodiscard]] std::string node() const;
  // The GPU of this rank as its environment numbers it: the gpu()-th entry of
  // CUDA_VISIBLE_DEVICES when that is set and not empty, else gpu() itself.
  [[nodiscard]] std::string gpu_device() const;
  // "Open MPI v4.1.4, ..." as the library reports it.
  [[nodiscard]] static std::string library_version();

  // Collective: every rank passes its error ("" when fine); every rank gets the error of
  // the lowest failing rank (prefixed "rank N: " when N > 0), or "" when all are fine.
  [[nodiscard]] std::string first_error(const std::string& mine) const;
  // Collective: rank 0 gets every rank's string in rank order; other ranks get {}.
  [[nodiscard]] std::vector<std::string> gather(const std::string& mine) const;
  // Collective: rank 0 gets every rank's value in rank order; other ranks get {}.
  [[nodiscard]] std::vector<double> gather(double mine) const;
  // Collective: rank 0 gets every rank's `mine` (all of the same length) concatenated in
  // rank order; other ranks get {}.
  [[nodiscard]] std::vector<double> gather(const std::vector<double>& mine) const;
  // Collective over the ranks of this rank's node (MPI_COMM_TYPE_SHARED): every one of them
  // gets every node rank's `mine` in node-rank order (e.g. their CPU bindings).
  [[nodiscard]] std::vector<std::vector<int>> gather_node(const std::vector<int>& mine) const;
  // Collective: every rank gets root's string.
  [[nodiscard]] std::string broadcast(const std::string& s, int root = 0) const;
  // Collective: the maximum over ranks.
  [[nodiscard]] double max(double mine) const;
  void barrier() const;
  // Last resort when a rank cannot continue and cannot tell the others.
  [[noreturn]] void abort(int code) const;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm node_comm_ = MPI_COMM_NULL;  // the ranks of this rank's node
  bool owns_mpi_ = false;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
};

// Gathers of fixed-width rows of doubles to rank 0 that never hold a rank up (the run's
// per-generation progress line): start() begins one and returns at once; rank 0 reads each
// gather, in the order started, once every rank has joined it. A blocking gather made rank 0
// wait every generation for the slowest rank, and through the ring its neighbours behind
// it. Every rank starts the same gathers in the same order; every rank calls drain() once,
// at the same point, after its last start().
class BackgroundGather {
 public:
  BackgroundGather(MPI_Comm comm, int width);  // `comm` is duplicated (collective)
  ~BackgroundGather();
  BackgroundGather(const BackgroundGather&) = delete;
  BackgroundGather& operator=(const BackgroundGather&) = delete;

  // Begins a gather of `mine` (`width` values).
  void start(const std::vector<double>& mine);
  // The gathers completed so far that no earlier call returned, oldest first: on rank 0
  // every rank's row in rank order, concatenated; on the other ranks nothing. Never waits,
  // but for the oldest gather while more than kMaxPending are in flight.
  [[nodiscard]] std::vector<std::vector<double>> ready();
  // Waits for every gather started (bounded like every wait of the run) and returns them
  // as ready() does.
  [[nodiscard]] std::vector<std::vector<double>> drain();
  [[nodiscard]] std::size_t pending() const { return pending_.size(); }

  static constexpr std::size_t kMaxPending = 64;

 private:
  struct Pending {
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<double> mine;
    std::vector<double> all;
  };
  std::vector<std::vector<double>> take(bool wait_all);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int width_ = 0;
  bool root_ = false;
  std::deque<std::unique_ptr<Pending>> pending_;
};

}  // namespace isletune::ring
