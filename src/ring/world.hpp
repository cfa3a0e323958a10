// The MPI world of one isletune run: initialisation, rank and node-local rank, the
// rank → GPU mapping, and the few collectives the CLI needs to agree on errors and to
// gather per-rank values on rank 0. The CLI talks to MPI only through this class.
#pragma once

#include <mpi.h>

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
  // Collective: every rank gets root's string.
  [[nodiscard]] std::string broadcast(const std::string& s, int root = 0) const;
  // Collective: the maximum over ranks.
  [[nodiscard]] double max(double mine) const;
  void barrier() const;
  // Last resort when a rank cannot continue and cannot tell the others.
  [[noreturn]] void abort(int code) const;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owns_mpi_ = false;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
};

}  // namespace isletune::ring
