// The MPI world of one run (see world.hpp).
#include "ring/world.hpp"

#include "ring/bounded_wait.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace isletune::ring {

int visible_gpu_count(const char* cuda_visible_devices) {
  if (cuda_visible_devices == nullptr)
    return -1;
  const std::string list(cuda_visible_devices);
  if (list.empty())
    return 0;
  int count = 1;
  for (char c : list)
    count += c == ',' ? 1 : 0;
  return count;
}

int gpu_ordinal(int local_rank, int visible_count) {
  if (visible_count <= 0)
    return local_rank;
  return local_rank % visible_count;
}

World::World(int* argc, char*** argv) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    owns_mpi_ = true;
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_comm_);
  MPI_Comm_rank(node_comm_, &local_rank_);
  MPI_Comm_size(node_comm_, &local_size_);
}

World::~World() {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (finalised)
    return;
  MPI_Comm_free(&node_comm_);
  MPI_Comm_free(&comm_);
  if (owns_mpi_)
    MPI_Finalize();
}

int World::gpu() const {
  return gpu_ordinal(local_rank_, visible_gpu_count(std::getenv("CUDA_VISIBLE_DEVICES")));
}

std::string World::host() const {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  return std::string(name, static_cast<std::size_t>(len));
}

std::string World::node() const {
  const char* slurm = std::getenv("SLURMD_NODENAME");
  if (slurm != nullptr && *slurm != '\0')
    return slurm;
  return host();
}

std::string World::gpu_device() const {
  const int ordinal = gpu();
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (visible == nullptr || *visible == '\0')
    return std::to_string(ordinal);
  const std::string list(visible);
  std::size_t start = 0;
  for (int i = 0; i < ordinal; ++i) {
    start = list.find(',', start);
    if (start == std::string::npos)
      return std::to_string(ordinal);
    ++start;
  }
  return list.substr(start, list.find(',', start) - start);
}

std::vector<std::vector<int>> World::gather_node(const std::vector<int>& mine) const {
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(local_size_));
  MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, node_comm_);
  std::vector<int> offsets(counts.size(), 0);
  for (std::size_t i = 1; i < counts.size(); ++i)
    offsets[i] = offsets[i - 1] + counts[i - 1];
  std::vector<int> all(static_cast<std::size_t>(offsets.back() + counts.back()));
  MPI_Allgatherv(mine.data(), count, MPI_INT, all.data(), counts.data(), offsets.data(), MPI_INT,
                 node_comm_);
  std::vector<std::vector<int>> out;
  for (std::size_t i = 0; i < counts.size(); ++i)
    out.emplace_back(all.begin() + offsets[i], all.begin() + offsets[i] + counts[i]);
  return out;
}

std::string World::library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, static_cast<std::size_t>(len));
  const auto end = s.find_first_of(",\n");
  return end == std::string::npos ? s : s.substr(0, end);
}

std::string World::first_error(const std::string& mine) const {
  const int failing = mine.empty() ? size_ : rank_;
  int lowest = size_;
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallreduce(&failing, &lowest, 1, MPI_INT, MPI_MIN, comm_, &request);
  wait_or_abort(&request, "the error vote");
  if (lowest == size_)
    return {};
  std::string message = rank_ == lowest ? mine : std::string();
  message = broadcast(message, lowest);
  if (lowest > 0)
    message = "rank " + std::to_string(lowest) + ": " + message;
  return message;
}

std::vector<std::string> World::gather(const std::string& mine) const {
  const int len = static_cast<int>(mine.size());
  std::vector<int> lens(rank_ == 0 ? size_ : 0);
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Igather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, comm_, &request);
  wait_or_abort(&request, "a gather");
  std::vector<int> displs(lens.size());
  int total = 0;
  for (std::size_t i = 0; i < lens.size(); ++i) {
    displs[i] = total;
    total += lens[i];
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  MPI_Igatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0,
               comm_, &request);
  wait_or_abort(&request, "a gather");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < lens.size(); ++i)
    out.push_back(all.substr(displs[i], lens[i]));
  return out;
}

std::vector<double> World::gather(double mine) const {
  std::vector<double> all(rank_ == 0 ? size_ : 0);
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Igather(&mine, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, 0, comm_, &request);
  wait_or_abort(&request, "a gather");
  return all;
}

std::vector<double> World::gather(const std::vector<double>& mine) const {
  const int n = static_cast<int>(mine.size());
  std::vector<double> all(rank_ == 0 ? static_cast<std::size_t>(n) * size_ : 0);
  // Bounded, so a frozen rank cannot hang rank 0.
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Igather(mine.data(), n, MPI_DOUBLE, all.data(), n, MPI_DOUBLE, 0, comm_, &request);
  wait_or_abort(&request, "a gather");
  return all;
}

std::string World::broadcast(const std::string& s, int root) const {
  int len = static_cast<int>(s.size());
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibcast(&len, 1, MPI_INT, root, comm_, &request);
  wait_or_abort(&request, "a broadcast");
  std::string out = rank_ == root ? s : std::string(static_cast<std::size_t>(len), '\0');
  MPI_Ibcast(out.data(), len, MPI_CHAR, root, comm_, &request);
  wait_or_abort(&request, "a broadcast");
  return out;
}

double World::max(double mine) const {
  double out = mine;
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Iallreduce(&mine, &out, 1, MPI_DOUBLE, MPI_MAX, comm_, &request);
  wait_or_abort(&request, "a reduction");
  return out;
}

void World::barrier() const {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibarrier(comm_, &request);
  wait_or_abort(&request, "a barrier");
}

BackgroundGather::BackgroundGather(MPI_Comm comm, int width) : width_(width) {
  MPI_Request dup = MPI_REQUEST_NULL;
  MPI_Comm_idup(comm, &comm_, &dup);
  wait_or_abort(&dup, "setting up the progress gather");
  int rank = 0;
  MPI_Comm_rank(comm_, &rank);
  root_ = rank == 0;
}

BackgroundGather::~BackgroundGather() {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (!finalised && comm_ != MPI_COMM_NULL)
    MPI_Comm_free(&comm_);  // gathers still in flight (a run that failed) complete on their own
}

void BackgroundGather::start(const std::vector<double>& mine) {
  auto p = std::make_unique<Pending>();
  p->mine = mine;
  p->mine.resize(static_cast<std::size_t>(width_));
  int size = 1;
  MPI_Comm_size(comm_, &size);
  p->all.resize(root_ ? static_cast<std::size_t>(width_) * static_cast<std::size_t>(size) : 0);
  MPI_Igather(p->mine.data(), width_, MPI_DOUBLE, p->all.data(), width_, MPI_DOUBLE, 0, comm_,
              &p->request);
  pending_.push_back(std::move(p));
}

std::vector<std::vector<double>> BackgroundGather::take(bool wait_all) {
  std::vector<std::vector<double>> out;
  while (!pending_.empty()) {
    Pending& p = *pending_.front();
    if (wait_all || pending_.size() > kMaxPending) {
      wait_or_abort(&p.request, "the progress gather");
    } else {
      int done = 0;
      MPI_Test(&p.request, &done, MPI_STATUS_IGNORE);
      if (!done)
        break;
    }
    if (root_)
      out.push_back(std::move(p.all));
    pending_.pop_front();
  }
  return out;
}

std::vector<std::vector<double>> BackgroundGather::ready() {
  return take(false);
}

std::vector<std::vector<double>> BackgroundGather::drain() {
  return take(true);
}

void World::abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();
}

}  // namespace isletune::ring
