// The worker's compile pool with a time bound per compile.
#include "eval/cuda/worker_compile.hpp"

#include <algorithm>
#include <thread>

namespace isletune::cuda {

CompilePool::CompilePool(Compile compile, std::vector<std::string> sources, int threads,
                         double timeout_s)
    : state_(std::make_shared<State>()), timeout_s_(timeout_s) {
  state_->compile = std::move(compile);
  const std::size_t n = sources.size();
  state_->sources = std::move(sources);
  state_->results.resize(n);
  state_->phase.assign(n, Phase::queued);
  state_->started.resize(n);
  for (int t = 0; t < std::max(1, std::min(static_cast<int>(n), threads)); ++t)
    add_thread();
}

std::optional<CompileResult> CompilePool::take(std::size_t i, double& ms) {
  std::unique_lock lock(state_->m);
  for (;;) {
    if (state_->phase[i] == Phase::done)
      return std::move(state_->results[i]);
    if (state_->phase[i] == Phase::queued) {
      state_->cv.wait(lock);
      continue;
    }
    const auto deadline = state_->started[i] + std::chrono::duration_cast<Clock::duration>(
                                                   std::chrono::duration<double>(timeout_s_));
    if (Clock::now() >= deadline) {
      ms = std::chrono::duration<double, std::milli>(Clock::now() - state_->started[i]).count();
      lock.unlock();
      add_thread();  // the abandoned thread stays in its compile; keep the pool's width
      return std::nullopt;
    }
    state_->cv.wait_until(lock, deadline);
  }
}

bool CompilePool::stuck() const {
  std::lock_guard lock(state_->m);
  return std::find(state_->phase.begin(), state_->phase.end(), Phase::running) !=
         state_->phase.end();
}

void CompilePool::add_thread() {
  std::thread([st = state_] {
    for (;;) {
      std::unique_lock lock(st->m);
      if (st->next >= st->sources.size())
        return;
      const std::size_t i = st->next++;
      st->phase[i] = Phase::running;
      st->started[i] = Clock::now();
      st->cv.notify_all();
      lock.unlock();
      CompileResult r = st->compile(st->sources[i]);
      lock.lock();
      st->results[i] = std::move(r);
      st->phase[i] = Phase::done;
      st->cv.notify_all();
    }
  }).detach();
}

}  // namespace isletune::cuda
