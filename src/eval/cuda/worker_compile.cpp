// The worker's compile pool with a time bound per compile.
#include "eval/cuda/worker_compile.hpp"

#include <algorithm>
#include <stdexcept>
#include <thread>

namespace isletune::cuda {

CompilePool::CompilePool(Compile compile, std::vector<std::string> sources, int threads,
                         double timeout_s)
    : CompilePool(std::move(compile),
                  std::max(1, std::min(static_cast<int>(sources.size()), threads)), timeout_s) {
  for (std::string& s : sources)
    add(std::move(s));
}

CompilePool::CompilePool(Compile compile, int threads, double timeout_s)
    : state_(std::make_shared<State>()), timeout_s_(timeout_s), width_(std::max(1, threads)) {
  state_->compile = std::move(compile);
}

CompilePool::~CompilePool() {
  std::lock_guard lock(state_->m);
  state_->closed = true;
  state_->cv.notify_all();
}

std::size_t CompilePool::add(std::string source) {
  bool start = false;
  std::size_t i = 0;
  {
    std::lock_guard lock(state_->m);
    State& st = *state_;
    i = st.sources.size();
    st.sources.push_back(std::move(source));
    st.results.emplace_back();
    st.phase.push_back(Phase::queued);
    st.started.emplace_back();
    st.taken.push_back(false);
    // A thread more when none waits for it and the pool is not at its width.
    start = st.waiting == 0 && st.threads < width_;
    st.cv.notify_all();
  }
  if (start)
    add_thread();
  return i;
}

void CompilePool::wake() {
  std::lock_guard lock(state_->m);
  state_->woken = true;
  state_->cv.notify_all();
}

CompilePool::Next CompilePool::wait_next(std::size_t& i, std::optional<CompileResult>& result,
                                         double& ms, bool block_idle) {
  const auto bound =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
  std::unique_lock lock(state_->m);
  State& st = *state_;
  for (;;) {
    if (st.woken) {
      st.woken = false;
      return Next::woken;
    }
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
        result = std::move(st.results[k]);
        return Next::compiled;
      }
      if (st.phase[k] == Phase::running) {
        const auto d = st.started[k] + bound;
        if (Clock::now() >= d && !overdue)
          overdue = k;
        if (!deadline || d < *deadline)
          deadline = d;
      }
    }
    if (!open && !block_idle)
      return Next::idle;
    if (overdue) {
      i = *overdue;
      st.taken[i] = true;
      ms = std::chrono::duration<double, std::milli>(Clock::now() - st.started[i]).count();
      lock.unlock();  // abandoned: a thread more keeps the pool's width
      add_thread();
      result.reset();
      return Next::overdue;
    }
    if (deadline)
      st.cv.wait_until(lock, *deadline);
    else
      st.cv.wait(lock);
  }
}

std::optional<CompileResult> CompilePool::take_next(std::size_t& i, double& ms) {
  std::optional<CompileResult> result;
  for (;;) {
    switch (wait_next(i, result, ms)) {
      case Next::compiled:
      case Next::overdue:
        return result;
      case Next::idle:
        throw std::logic_error("CompilePool::take_next: every item has been taken");
      case Next::woken:
        break;
    }
  }
}

bool CompilePool::compiled_waiting() const {
  std::lock_guard lock(state_->m);
  for (std::size_t k = 0; k < state_->phase.size(); ++k) {
    if (!state_->taken[k] && state_->phase[k] == Phase::done)
      return true;
  }
  return false;
}

bool CompilePool::stuck() const {
  std::lock_guard lock(state_->m);
  return std::find(state_->phase.begin(), state_->phase.end(), Phase::running) !=
         state_->phase.end();
}

void CompilePool::add_thread() {
  {
    std::lock_guard lock(state_->m);
    ++state_->threads;
  }
  std::thread([st = state_] {
    std::unique_lock lock(st->m);
    for (;;) {
      if (st->next >= st->sources.size()) {
        if (st->closed)
          break;
        ++st->waiting;
        st->cv.wait(lock, [&] { return st->closed || st->next < st->sources.size(); });
        --st->waiting;
        continue;
      }
      const std::size_t i = st->next++;
      st->phase[i] = Phase::running;
      st->started[i] = Clock::now();
      st->cv.notify_all();
      const std::string source = st->sources[i];  // add() may move the vector meanwhile
      lock.unlock();
      CompileResult r = st->compile(source);
      lock.lock();
      st->results[i] = std::move(r);
      st->phase[i] = Phase::done;
      st->cv.notify_all();
    }
    --st->threads;
  }).detach();
}

}  // namespace isletune::cuda
