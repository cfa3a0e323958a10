// Event-timed runs of a kernel's schedule; the median per step.
#include "eval/cuda/worker_timing.hpp"

#include "eval/race.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace isletune::cuda {

// Round-trip precision: the trace keeps the very runs the median was taken of, so a median
// recomputed from them (a settled or raced kernel's, replay's) is the worker's to the bit.
std::string Timing::times_text() const {
  std::string list;
  for (const double t : times_ms) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%.17g", list.empty() ? "" : " ", t);
    list += buf;
  }
  return list;
}

Timing time_schedule(cudaStream_t stream, const Schedule& s, PingPong buffers,
                     const TimingPlan& plan) {
  const Event e0, e1;
  const double* src = buffers.a;
  double* dst = buffers.b;
  // Milliseconds of `steps` steps enqueued back to back.
  auto timed = [&](long long steps) {
    CUDA_CHECK(cudaEventRecord(e0.get(), stream));
    enqueue_steps(stream, s, steps, buffers, src, dst);
    CUDA_CHECK(cudaEventRecord(e1.get(), stream));
    CUDA_CHECK(cudaEventSynchronize(e1.get()));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e0.get(), e1.get()));
    return static_cast<double>(ms);
  };
  const long long per = std::max(1, s.main.steps);
  double ms = 0;
  for (int w = 0; w < std::max(1, plan.warmup); ++w)
    ms = timed(per);
  const double per_step = std::max(ms / static_cast<double>(per), 1e-6);
  const long long most = std::max(per, (plan.max_steps + per - 1) / per * per);
  const auto wanted = static_cast<long long>(std::ceil(plan.min_rep_ms / per_step));
  Timing t;
  t.steps_per_rep = std::clamp((wanted + per - 1) / per * per, per, most);
  const auto waiting = [&] { return !plan.others_waiting || plan.others_waiting(); };
  for (int rep = 0; rep < std::max(1, plan.repeats); ++rep) {
    t.times_ms.push_back(timed(t.steps_per_rep) / static_cast<double>(t.steps_per_rep));
    const int runs = static_cast<int>(t.times_ms.size());
    if (rep + 1 >= plan.repeats)
      break;
    if (runs == kRaceRuns && races_out(t.times_ms, plan.best_ms, plan.race_factor) && waiting()) {
      t.raced = true;
      break;
    }
    if (runs == kSettleRuns && settles(t.times_ms, plan.settle_spread) && waiting()) {
      t.settled = true;
      break;
    }
  }
  t.median_ms = median_of_first(t.times_ms, t.times_ms.size());
  return t;
}

}  // namespace isletune::cuda
