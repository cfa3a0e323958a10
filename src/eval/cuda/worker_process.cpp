// Spawning and ending the CUDA worker process (posix_spawn with every descriptor but the
// socket and stderr closed in the child).
#include "eval/cuda/worker_process.hpp"

#include <dirent.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "common/error.hpp"

extern char** environ;

namespace isletune::cuda {
namespace {

// Owns a posix_spawn_file_actions_t.
class FileActions {
 public:
  FileActions() { posix_spawn_file_actions_init(&fa_); }
  ~FileActions() { posix_spawn_file_actions_destroy(&fa_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  posix_spawn_file_actions_t* get() { return &fa_; }

 private:
  posix_spawn_file_actions_t fa_;
};

// Makes the child close every descriptor from 3 up. glibc >= 2.34 does it in one action
// (closefrom in the child, so descriptors opened by other threads meanwhile are covered);
// elsewhere every descriptor open in the parent now is closed one by one.
void close_all_from_3(posix_spawn_file_actions_t* fa) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  posix_spawn_file_actions_addclosefrom_np(fa, 3);
#else
  if (DIR* d = ::opendir("/proc/self/fd")) {
    const int own = ::dirfd(d);
    while (const dirent* e = ::readdir(d)) {
      char* end = nullptr;
      const long fd = std::strtol(e->d_name, &end, 10);
      if (end != e->d_name && *end == '\0' && fd >= 3 && fd != own)
        posix_spawn_file_actions_addclose(fa, static_cast<int>(fd));
    }
    ::closedir(d);
  }
#endif
}

}  // namespace

WorkerProcess::WorkerProcess(const std::vector<std::string>& argv) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    throw InputError(std::string("cannot create the socket to the CUDA worker: ") +
                     std::strerror(errno));
  }
  FileActions fa;
  posix_spawn_file_actions_adddup2(fa.get(), sv[1], 0);
  posix_spawn_file_actions_adddup2(fa.get(), sv[1], 1);
  close_all_from_3(fa.get());
  std::vector<std::string> words = argv;
  std::vector<char*> args;
  for (std::string& w : words)
    args.push_back(w.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, words.at(0).c_str(), fa.get(), nullptr, args.data(), environ);
  ::close(sv[1]);
  if (rc != 0) {
    ::close(sv[0]);
    throw InputError("the CUDA backend needs its worker program '" + argv.at(0) +
                     "', which could not be started: " + std::strerror(rc));
  }
  pid_ = pid;
  fd_ = sv[0];
}

WorkerProcess::WorkerProcess(WorkerProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), fd_(std::exchange(other.fd_, -1)) {}

WorkerProcess& WorkerProcess::operator=(WorkerProcess&& other) noexcept {
  if (this != &other) {
    stop(true);
    pid_ = std::exchange(other.pid_, -1);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

int WorkerProcess::stop(bool kill) {
  int status = 0;
  if (pid_ > 0) {
    bool reaped = false;
    // A worker asked to quit gets a moment; anything else is ended at once.
    for (int i = 0; !kill && i < 200; ++i) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped = true;
        break;
      }
      ::usleep(10000);
    }
    if (!reaped) {
      ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  pid_ = -1;
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
  return status;
}

}  // namespace isletune::cuda
