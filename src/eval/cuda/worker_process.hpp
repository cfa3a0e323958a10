// The CUDA worker as a child process: one owner of its pid and of the parent's end of the
// socket pair. The child gets the socket on fds 0 and 1, inherits stderr (fd 2) and nothing
// else: every other descriptor of the parent (HDF5 files and their locks, MPI's sockets) is
// closed by the spawn itself, whether or not it was opened with O_CLOEXEC. Pure POSIX.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace isletune::cuda {

class WorkerProcess {
 public:
  WorkerProcess() = default;
  // Starts argv[0] with argv and the current environment. Throws InputError (one sentence)
  // when the socket or the process cannot be created.
  explicit WorkerProcess(const std::vector<std::string>& argv);
  ~WorkerProcess() { stop(true); }
  WorkerProcess(WorkerProcess&& other) noexcept;
  WorkerProcess& operator=(WorkerProcess&& other) noexcept;
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  [[nodiscard]] bool running() const { return pid_ > 0; }
  [[nodiscard]] pid_t pid() const { return pid_; }
  // The parent's end of the socket (-1 when not running).
  [[nodiscard]] int fd() const { return fd_; }

  // Ends the child: with kill = false it gets two seconds to exit on its own (after a "quit"
  // message), then SIGKILL; the socket is closed. Returns the wait status (0 if none ran).
  int stop(bool kill);

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
};

}  // namespace isletune::cuda
