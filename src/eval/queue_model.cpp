// The simulated queue (queue_model.hpp).
#include "eval/queue_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "eval/byte_codec.hpp"

namespace isletune {

QueueModel::QueueModel(int threads)
    : threads_(std::max(0, threads)), free_at_(static_cast<std::size_t>(threads_), 0.0) {}

void QueueModel::add(Ticket ticket, double now, double compile_s, double gpu_s, int priority) {
  Job j;
  j.ticket = ticket;
  j.submit = now;
  j.gpu_s = gpu_s;
  j.compile_s = compile_s;
  j.priority = priority;
  j.compile_start = now;
  if (compile_s <= 0 && gpu_s <= 0) {  // nothing to do (an unrecorded setting): done now
    j.start = std::numeric_limits<double>::quiet_NaN();
    j.compiled = j.finish = now;
    j.fixed = true;
  } else if (threads_ == 0) {
    const double start = std::max(now, serial_free_);
    j.compiled = start + compile_s;
    j.start = gpu_s > 0 ? j.compiled : std::numeric_limits<double>::quiet_NaN();
    j.finish = serial_free_ = j.compiled + gpu_s;
    j.fixed = true;
  } else {
    j.begun = false;  // planned below
    j.fixed = gpu_s <= 0;
    if (j.fixed)
      j.start = std::numeric_limits<double>::quiet_NaN();
  }
  jobs_.push_back(j);
  if (threads_ > 0)
    plan(now);
}

void QueueModel::plan(double now) {
  // A compile planned to begin before `now` has begun (one planned at `now` may still give
  // way to a kernel of a higher priority submitted at `now`: a proposal's settings compete).
  std::vector<Job*> waiting;
  for (Job& j : jobs_) {
    if (j.begun)
      continue;
    if (j.compile_start < now && j.thread >= 0) {
      release(j);
      continue;
    }
    waiting.push_back(&j);
  }
  std::stable_sort(waiting.begin(), waiting.end(), [](const Job* a, const Job* b) {
    return a->priority != b->priority ? a->priority > b->priority : a->ticket < b->ticket;
  });
  std::vector<double> free = free_at_;
  for (Job* j : waiting) {
    const auto first = std::min_element(free.begin(), free.end());
    j->thread = static_cast<int>(first - free.begin());
    j->compile_start = std::max(*first, now);
    j->compiled = *first = j->compile_start + j->compile_s;
    if (j->fixed)
      j->finish = j->compiled;
  }
}

void QueueModel::release(Job& j) {
  if (!j.begun && j.thread >= 0) {
    double& f = free_at_[static_cast<std::size_t>(j.thread)];
    f = std::max(f, j.compiled);
  }
  j.begun = true;
}

std::optional<std::pair<Ticket, Timeline>> QueueModel::next() {
  const auto earliest_fixed = [&] {
    auto best = jobs_.end();
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
      if (it->fixed && (best == jobs_.end() || it->finish < best->finish ||
                        (it->finish == best->finish && it->ticket < best->ticket)))
        best = it;
    }
    return best;
  };
  // The kernel the GPU takes once it is free: of those compiled by then (or, with none, the
  // first to be) the highest priority, ties the earliest compile, then the earliest ticket.
  const auto for_gpu = [&]() -> std::pair<std::vector<Job>::iterator, double> {
    double first = std::numeric_limits<double>::infinity();
    for (const Job& j : jobs_) {
      if (!j.fixed)
        first = std::min(first, j.compiled);
    }
    if (first == std::numeric_limits<double>::infinity())
      return {jobs_.end(), 0};
    const double start = std::max(gpu_free_, first);
    auto best = jobs_.end();
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
      if (it->fixed || it->compiled > start)
        continue;
      if (best == jobs_.end() || it->priority > best->priority ||
          (it->priority == best->priority &&
           (it->compiled < best->compiled ||
            (it->compiled == best->compiled && it->ticket < best->ticket))))
        best = it;
    }
    return {best, start};
  };
  const auto done = [](const Job& j) {
    return std::make_pair(j.ticket, Timeline{j.submit, j.start, j.finish});
  };
  const auto take = [&](std::vector<Job>::iterator it) {
    release(*it);
    Job j = *it;
    jobs_.erase(it);
    return j;
  };
  if (!running_) {
    const auto [gpu, start] = for_gpu();
    if (gpu != jobs_.end()) {
      const auto fixed = earliest_fixed();
      if (fixed != jobs_.end() && fixed->finish <= start)
        return done(take(fixed));
      Job j = take(gpu);
      j.start = start;
      j.finish = gpu_free_ = start + j.gpu_s;
      running_ = j;
    }
  }
  const auto fixed = earliest_fixed();
  if (fixed != jobs_.end() && (!running_ || fixed->finish < running_->finish))
    return done(take(fixed));
  if (!running_)
    return std::nullopt;
  const auto out = done(*running_);
  running_.reset();
  return out;
}

namespace {
constexpr std::uint32_t kQueueTag = 0x51554532U;   // "QUE2" (priorities)
constexpr std::uint32_t kQueueTag1 = 0x51554531U;  // "QUE1" (first come first served)

void put_job(ByteWriter& w, const auto& j) {
  w.put(j.ticket);
  for (const double x : {j.submit, j.compiled, j.gpu_s, j.start, j.finish})
    w.put(x);
  w.put(static_cast<std::uint8_t>(j.fixed));
  w.put(j.compile_s);
  w.put(j.compile_start);
  w.put(static_cast<std::int32_t>(j.thread));
  w.put(static_cast<std::int32_t>(j.priority));
  w.put(static_cast<std::uint8_t>(j.begun));
}
}  // namespace

std::vector<std::uint8_t> QueueModel::save() const {
  ByteWriter w;
  w.put(kQueueTag);
  w.put(static_cast<std::int32_t>(threads_));
  for (const double f : free_at_)
    w.put(f);
  w.put(gpu_free_);
  w.put(serial_free_);
  w.put(static_cast<std::uint32_t>(jobs_.size()));
  for (const Job& j : jobs_)
    put_job(w, j);
  w.put(static_cast<std::uint8_t>(running_.has_value()));
  if (running_)
    put_job(w, *running_);
  return std::move(w.bytes);
}

void QueueModel::restore(std::span<const std::uint8_t> bytes) {
  ByteReader r(bytes, [] { throw std::invalid_argument("damaged queue state"); });
  const std::uint32_t tag = r.get<std::uint32_t>();
  if (tag != kQueueTag && tag != kQueueTag1)
    r.failed();
  const bool planned = tag == kQueueTag;
  const int threads = r.get<std::int32_t>();
  if (threads < 0 || threads > 4096)
    r.failed();
  const auto get_job = [&r, planned, threads] {
    Job j;
    j.ticket = r.get<Ticket>();
    j.submit = r.get<double>();
    j.compiled = r.get<double>();
    j.gpu_s = r.get<double>();
    j.start = r.get<double>();
    j.finish = r.get<double>();
    j.fixed = r.get<std::uint8_t>() != 0;
    if (planned) {  // (a first-come queue's jobs have all begun: their times are fixed)
      j.compile_s = r.get<double>();
      j.compile_start = r.get<double>();
      j.thread = r.get<std::int32_t>();
      j.priority = r.get<std::int32_t>();
      j.begun = r.get<std::uint8_t>() != 0;
      if (j.thread < -1 || j.thread >= threads || (!j.begun && j.thread < 0))
        r.failed();
    }
    return j;
  };
  threads_ = threads;
  free_at_.assign(static_cast<std::size_t>(threads_), 0.0);
  for (double& f : free_at_)
    f = r.get<double>();
  gpu_free_ = r.get<double>();
  serial_free_ = r.get<double>();
  const std::size_t job_bytes =
      sizeof(Ticket) + 5 * sizeof(double) + 1 + (planned ? 2 * sizeof(double) + 9 : 0);
  const std::uint32_t jobs = r.get<std::uint32_t>();
  if (jobs > bytes.size() / job_bytes)
    r.failed();
  jobs_.resize(jobs);
  for (Job& j : jobs_)
    j = get_job();
  running_.reset();
  if (r.get<std::uint8_t>())
    running_ = get_job();
  if (!r.done())
    r.failed();
}

}  // namespace isletune
