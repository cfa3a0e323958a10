// The worker's bounded compile pool: sources compiled on detached threads (started in index
// order) and taken as they finish (take_next, wait_next). Sources are given at once (a batch)
// or added while the pool runs (add: the worker's queue). A compile that runs longer than the
// timeout is abandoned (NVRTC cannot be interrupted) and its thread replaced, so the rest
// goes on; a process with an abandoned compile still running must end after the batch
// (stuck()). Pure C++ (the compile function is given), so it is tested without NVRTC.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "eval/cuda/nvrtc_compiler.hpp"

namespace isletune::cuda {

class CompilePool {
 public:
  using Compile = std::function<CompileResult(const std::string&)>;

  // Starts `threads` threads (at least 1, at most one per source) compiling `sources` with
  // `compile`, each compile allowed `timeout_s` seconds. `compile` must stay callable for as
  // long as an abandoned compile may run.
  CompilePool(Compile compile, std::vector<std::string> sources, int threads, double timeout_s);
  // An empty pool of up to `threads` threads (started as sources are added).
  CompilePool(Compile compile, int threads, double timeout_s);
  // Ends the waiting threads (a running compile ends first).
  ~CompilePool();
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  // Queues one more source; returns its index.
  std::size_t add(std::string source);
  // What wait_next() found.
  enum class Next { compiled, overdue, woken, idle };
  // As take_next, but returns `woken` when wake() was called meanwhile (then nothing is
  // taken), and when every item has been taken `idle` at once, or (block_idle) waits for an
  // item or a wake().
  Next wait_next(std::size_t& i, std::optional<CompileResult>& result, double& ms,
                 bool block_idle = false);
  // Makes a wait_next() in progress (or the next one) return `woken`; from any thread.
  void wake();

  // The next item not taken yet, in the order compiles end: the lowest-index one whose
  // compile has ended, else the first running one past the timeout (nullopt; `ms` is then the
  // time it had run), else it waits for either. `i` is set to the item. So the worker runs
  // each kernel as soon as it is compiled, while slower compiles of the batch still run (a
  // batch's span: its slowest compile plus the kernels that end after it, not the compiles
  // before a kernel plus every kernel before it). Throws std::logic_error once every item has
  // been taken.
  [[nodiscard]] std::optional<CompileResult> take_next(std::size_t& i, double& ms);

  // Whether a compile is still running (an abandoned one).
  [[nodiscard]] bool stuck() const;
  // Whether an item's compile has ended and it has not been taken yet: a kernel waits for
  // the GPU (racing's condition, eval/race.hpp).
  [[nodiscard]] bool compiled_waiting() const;

 private:
  using Clock = std::chrono::steady_clock;
  enum class Phase { queued, running, done };
  // Shared with the threads, which may outlive the pool.
  struct State {
    std::mutex m;
    std::condition_variable cv;
    Compile compile;
    std::vector<std::string> sources;
    std::vector<CompileResult> results;
    std::vector<Phase> phase;
    std::vector<Clock::time_point> started;
    std::vector<bool> taken;
    std::size_t next = 0;
    int threads = 0;  // started and not ended
    int waiting = 0;  // of them, waiting for a source
    bool closed = false;
    bool woken = false;
  };

  // One more thread compiling queued items until none is left.
  void add_thread();

  std::shared_ptr<State> state_;
  double timeout_s_;
  int width_ = 1;  // threads at most (abandoned ones replaced)
};

}  // namespace isletune::cuda
