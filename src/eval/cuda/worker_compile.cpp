// The worker's compile pool with a time bound per compile.
#include "eval/cuda/worker_compile.hpp"

#include <algorithm>
#include <stdexcept>
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
  state_->taken.assign(n, false);
  for (int t = 0; t < std::max(1, std::min(static_cast<int>(n), threads)); ++t)
    add_thread();
}

std::optional<CompileResult> CompilePool::take_next(std::size_t& i, double& ms) {
  const auto bound =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
  std::unique_lock lock(state_->m);
  State& st = *state_;
  for (;;) {
    std::optional<std::size_t> overdue;
    std::optional<Clock::time_point> deadline;  // the earliest of the running items'
    bool open = false;
    for (std::size_t k = 0; k < st.phase.size(); ++k) {
      if (st.taken[k])
        continue;
      open = true;
      if (st.phase[k] == Phase::done) {
        i = k;
        st.taken[k] = true;
        return std::move(st.results[k]);
      }
      if (st.phase[k] == Phase::running) {
        const auto d = st.started[k] + bound;
        if (Clock::now() >= d && !overdue)
          overdue = k;
        if (!deadline || d < *deadline)
          deadline = d;
      }
    }
    if (!open)
      throw std::logic_error("CompilePool::take_next: every item has been taken");
    if (overdue) {
      i = *overdue;
      st.taken[i] = true;
      ms = std::chrono::duration<double, std::milli>(Clock::now() - st.started[i]).count();
      lock.unlock();
      add_thread();  // the abandoned thread stays in its compile; keep the pool's width
      return std::nullopt;
    }
    if (deadline)
      st.cv.wait_until(lock, *deadline);
    else
      st.cv.wait(lock);
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
