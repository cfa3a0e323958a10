// Compiles in child processes (see compile_process.hpp).
#include "eval/cuda/compile_process.hpp"

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace isletune::cuda {
namespace {

// Sockets only (MSG_NOSIGNAL: a peer that is gone is an error here, not SIGPIPE).
bool write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

bool read_all(int fd, void* data, std::size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

bool write_bytes(int fd, const std::string& s) {
  const std::uint64_t n = s.size();
  return write_all(fd, &n, sizeof n) && write_all(fd, s.data(), s.size());
}

// Lengths above this are a broken exchange, not a source, log or cubin.
constexpr std::uint64_t kMaxBytes = 1ULL << 30;

bool read_bytes(int fd, std::string& s) {
  std::uint64_t n = 0;
  if (!read_all(fd, &n, sizeof n) || n > kMaxBytes)
    return false;
  s.resize(static_cast<std::size_t>(n));
  return read_all(fd, s.data(), s.size());
}

}  // namespace

void serve_compiles(int in_fd, int out_fd,
                    const std::function<CompileResult(const std::string&)>& compile) {
  std::string source;
  while (read_bytes(in_fd, source)) {
    const CompileResult r = compile(source);
    const std::uint8_t ok = r.ok ? 1 : 0;
    if (!write_all(out_fd, &ok, sizeof ok) || !write_all(out_fd, &r.ms, sizeof r.ms) ||
        !write_bytes(out_fd, r.log) || !write_bytes(out_fd, r.cubin))
      return;
  }
}

std::optional<CompileResult> request_compile(int fd, const std::string& source) {
  if (!write_bytes(fd, source))
    return std::nullopt;
  CompileResult r;
  std::uint8_t ok = 0;
  if (!read_all(fd, &ok, sizeof ok) || !read_all(fd, &r.ms, sizeof r.ms) ||
      !read_bytes(fd, r.log) || !read_bytes(fd, r.cubin))
    return std::nullopt;
  r.ok = ok != 0;
  return r;
}

void CompileProcesses::reserve(int n) {
  std::lock_guard lock(m_);
  while (static_cast<int>(idle_.size() + busy_.size()) < n)
    idle_.push_back(std::make_unique<WorkerProcess>(argv_));
}

std::optional<CompileResult> CompileProcesses::compile(const std::string& source) {
  std::unique_ptr<WorkerProcess> p;
  {
    std::lock_guard lock(m_);
    if (idle_.empty())
      return std::nullopt;
    p = std::move(idle_.back());
    idle_.pop_back();
    busy_[p->pid()] = Clock::now();
  }
  std::optional<CompileResult> r = request_compile(p->fd(), source);
  std::lock_guard lock(m_);
  busy_.erase(p->pid());
  if (r) {
    idle_.push_back(std::move(p));
    return r;
  }
  const int status = p->stop(true);
  CompileResult failed;
  failed.log = WIFSIGNALED(status)
                   ? "the compile process ended with signal " + std::to_string(WTERMSIG(status)) +
                         " (" + strsignal(WTERMSIG(status)) + ") during this compile"
                   : "the compile process ended during this compile";
  return failed;
}

int CompileProcesses::alive() const {
  std::lock_guard lock(m_);
  return static_cast<int>(idle_.size() + busy_.size());
}

int CompileProcesses::kill_overdue(double seconds) {
  std::lock_guard lock(m_);
  const auto bound =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  const auto now = Clock::now();
  int killed = 0;
  for (const auto& [pid, since] : busy_) {
    if (now - since >= bound && ::kill(pid, SIGKILL) == 0)
      ++killed;  // its caller's read ends; the caller reaps it (WorkerProcess::stop)
  }
  return killed;
}

}  // namespace isletune::cuda
