// NVRTC compiles in child processes. NVRTC serialises much of a compile inside one process: on
// the 16-core host of an H100, 16 threads of one process compile 8-11 of star3d2r's kernels a
// second and a compile takes 2.5x its time alone, while the same 16 threads spread over 4 to 16
// processes compile 31-36 a second (docs/decisions.md#compile-processes). The worker
// therefore compiles each source in a process of a pool of its own: the worker binary in its
// compile mode (`isletune-worker --compile-server ARCH`), which answers compile requests on its
// stdin/stdout. Pure POSIX and C++ (the compile itself is a given function), so the exchange is
// tested without NVRTC.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "eval/cuda/nvrtc_compiler.hpp"
#include "eval/cuda/worker_process.hpp"

namespace isletune::cuda {

// The server side: answers compile requests read from `in_fd` on `out_fd` with `compile`, until
// the peer closes `in_fd`. A request is a u64 source length and the source; an answer a u8 ok, a
// f64 ms, and the log and the cubin, each a u64 length and its bytes.
void serve_compiles(int in_fd, int out_fd,
                    const std::function<CompileResult(const std::string&)>& compile);

// The client side of one exchange: sends `source` on `fd` and waits for the answer; nullopt when
// the server is gone (end of file or an error) before it answered.
[[nodiscard]] std::optional<CompileResult> request_compile(int fd, const std::string& source);

// A pool of compile processes started with `argv` (stdin/stdout their socket). The processes end
// with the thread that starts them (the worker's PR_SET_PDEATHSIG), so reserve() belongs to one
// long-lived thread; compile() may be called from any thread.
class CompileProcesses {
 public:
  explicit CompileProcesses(std::vector<std::string> argv) : argv_(std::move(argv)) {}

  // Starts processes until `n` are alive, idle or busy. Throws InputError when one cannot start.
  void reserve(int n);
  // Compiles `source` in an idle process: nullopt when none is idle (the caller compiles it
  // itself). A process that ends before it answers gives a failed result whose log says so, and
  // is replaced by the next reserve().
  [[nodiscard]] std::optional<CompileResult> compile(const std::string& source);
  // Processes alive (idle or compiling).
  [[nodiscard]] int alive() const;
  // Ends (SIGKILL) every process that has been compiling for `seconds` or longer: a compile
  // the worker has given up on no longer holds a CPU, and its caller gets a failed result at
  // once. Returns how many it ended.
  int kill_overdue(double seconds);

 private:
  using Clock = std::chrono::steady_clock;
  std::vector<std::string> argv_;
  mutable std::mutex m_;
  std::vector<std::unique_ptr<WorkerProcess>> idle_;
  std::map<pid_t, Clock::time_point> busy_;  // compiling, by pid: since when
};

}  // namespace isletune::cuda
