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

void QueueModel::add(Ticket ticket, double now, double compile_s, double gpu_s, double raced_gpu_s,
                     double settled_gpu_s) {
  Job j;
  j.ticket = ticket;
  j.submit = now;
  j.gpu_s = gpu_s;
  j.raced_s = gpu_s > 0 ? std::min(raced_gpu_s, gpu_s) : -1;
  j.settled_s = gpu_s > 0 ? std::min(settled_gpu_s, gpu_s) : -1;
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
    const auto first = std::min_element(free_at_.begin(), free_at_.end());
    *first = std::max(*first, now) + compile_s;
    j.compiled = *first;
    if (gpu_s <= 0) {
      j.start = std::numeric_limits<double>::quiet_NaN();
      j.finish = j.compiled;
      j.fixed = true;
    }
  }
  jobs_.push_back(j);
}

std::optional<QueueModel::Done> QueueModel::next() {
  const auto earliest = [&](bool fixed) {
    auto best = jobs_.end();
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
      if (it->fixed != fixed)
        continue;
      const double key = fixed ? it->finish : it->compiled;
      const double best_key = best == jobs_.end() ? 0 : (fixed ? best->finish : best->compiled);
      if (best == jobs_.end() || key < best_key || (key == best_key && it->ticket < best->ticket))
        best = it;
    }
    return best;
  };
  const auto done = [](const Job& j) {
    return Done{j.ticket, Timeline{j.submit, j.start, j.finish}, j.raced, j.settled};
  };
  if (!running_) {
    // The GPU takes the kernel whose compile ended first, once it is free.
    const auto gpu = earliest(false);
    if (gpu != jobs_.end()) {
      const double start = std::max(gpu_free_, gpu->compiled);
      const auto fixed = earliest(true);
      if (fixed != jobs_.end() && fixed->finish <= start) {
        const auto out = done(*fixed);
        jobs_.erase(fixed);
        return out;
      }
      Job j = *gpu;
      jobs_.erase(gpu);
      j.start = start;
      // Raced (settled) when another kernel's compile has ended by the time the race is
      // decided (the runs that settle are timed).
      const auto waiting_at = [&](double t) {
        return std::any_of(jobs_.begin(), jobs_.end(),
                           [&](const Job& o) { return !o.fixed && o.compiled <= t; });
      };
      if (j.raced_s >= 0 && waiting_at(start + j.raced_s)) {
        j.raced = true;
        j.gpu_s = j.raced_s;
      } else if (j.settled_s >= 0 && waiting_at(start + j.settled_s)) {
        j.settled = true;
        j.gpu_s = j.settled_s;
      }
      j.finish = gpu_free_ = start + j.gpu_s;
      running_ = j;
    }
  }
  const auto fixed = earliest(true);
  if (fixed != jobs_.end() && (!running_ || fixed->finish < running_->finish)) {
    const auto out = done(*fixed);
    jobs_.erase(fixed);
    return out;
  }
  if (!running_)
    return std::nullopt;
  const auto out = done(*running_);
  running_.reset();
  return out;
}

namespace {
constexpr std::uint32_t kQueueTag = 0x51554533U;  // "QUE3"
// Read as before: "QUE2" (before settling), "QUE1" (before racing).
constexpr std::uint32_t kQueueTagRacing = 0x51554532U;
constexpr std::uint32_t kQueueTagOld = 0x51554531U;

void put_job(ByteWriter& w, const auto& j) {
  w.put(j.ticket);
  for (const double x : {j.submit, j.compiled, j.gpu_s, j.start, j.finish, j.raced_s})
    w.put(x);
  w.put(static_cast<std::uint8_t>(j.fixed));
  w.put(static_cast<std::uint8_t>(j.raced));
  w.put(j.settled_s);
  w.put(static_cast<std::uint8_t>(j.settled));
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
  if (tag != kQueueTag && tag != kQueueTagRacing && tag != kQueueTagOld)
    r.failed();
  const bool racing = tag != kQueueTagOld, settling = tag == kQueueTag;
  const auto get_job = [&r, racing, settling] {
    Job j;
    j.ticket = r.get<Ticket>();
    j.submit = r.get<double>();
    j.compiled = r.get<double>();
    j.gpu_s = r.get<double>();
    j.start = r.get<double>();
    j.finish = r.get<double>();
    if (racing)
      j.raced_s = r.get<double>();
    j.fixed = r.get<std::uint8_t>() != 0;
    if (racing)
      j.raced = r.get<std::uint8_t>() != 0;
    if (settling) {
      j.settled_s = r.get<double>();
      j.settled = r.get<std::uint8_t>() != 0;
    }
    return j;
  };
  const int threads = r.get<std::int32_t>();
  if (threads < 0 || threads > 4096)
    r.failed();
  threads_ = threads;
  free_at_.assign(static_cast<std::size_t>(threads_), 0.0);
  for (double& f : free_at_)
    f = r.get<double>();
  gpu_free_ = r.get<double>();
  serial_free_ = r.get<double>();
  const std::size_t job_bytes =
      sizeof(Ticket) + (5 + racing + settling) * sizeof(double) + (1 + racing + settling);
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
