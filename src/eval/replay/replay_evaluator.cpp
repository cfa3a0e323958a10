// The replay evaluator (see replay_evaluator.hpp).
#include "eval/replay/replay_evaluator.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <thread>

#include "common/error.hpp"
#include "config/config.hpp"
#include "kernel/registry.hpp"
#include "trace/reader.hpp"

namespace isletune {

ReplayEvaluator::ReplayEvaluator(const ProblemShape& shape,
                                 const std::vector<EvaluationRecord>& records, DeviceLimits limits,
                                 std::string origin)
    : shape_(shape), limits_(std::move(limits)), origin_(std::move(origin)) {
  for (const EvaluationRecord& r : records) {
    if (r.cached || r.migrant)
      continue;
    if (r.measurement.status == Status::invalid)
      continue;
    const Setting kernel = canonical(shape_, r.setting);
    if (table_.emplace(kernel, r.measurement).second)
      candidates_.push_back(kernel);
  }
  if (candidates_.empty()) {
    throw InputError(origin_ + ": the replay dataset has no recorded measurements to answer from.");
  }
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the answers, in recording order
  const auto mix = [&h](const void* data, std::size_t n) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i)
      h = (h ^ bytes[i]) * 0x100000001b3ULL;
  };
  for (const Setting& setting : candidates_) {
    const Measurement& m = table_.at(setting);
    mix(setting.values.data(), sizeof(setting.values[0]) * setting.values.size());
    const auto status = static_cast<std::int32_t>(m.status);
    mix(&status, sizeof status);
    for (const double x : {m.median_ms, m.compile_ms, m.verify_ms, m.run_ms})
      mix(&x, sizeof x);
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  fingerprint_ = text;
}

double batch_span_s(std::span<const Measurement> batch, int threads) {
  double span = 0;
  if (threads <= 0) {
    for (const Measurement& m : batch)
      span += m.cost_s();
    return span;
  }
  // Each compile starts on the first free thread, in batch order, and ends ...
  std::vector<double> free_at(static_cast<std::size_t>(threads), 0.0);
  std::vector<double> compiled(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto first = std::min_element(free_at.begin(), free_at.end());
    *first += batch[i].compile_ms * 1e-3;
    compiled[i] = *first;
  }
  // ... and its kernel runs on the GPU as soon as it is compiled and the GPU is free (the
  // worker's CompilePool::take_next; equal ends in batch order).
  std::vector<std::size_t> order(batch.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return compiled[a] < compiled[b]; });
  for (const std::size_t i : order)
    span = std::max(span, compiled[i]) + (batch[i].verify_ms + batch[i].run_ms) * 1e-3;
  return span;
}

std::vector<Measurement> ReplayEvaluator::evaluate(std::span<const Setting> batch) {
  if (delay_s_ > 0)
    std::this_thread::sleep_for(std::chrono::duration<double>(delay_s_));
  std::vector<Measurement> out;
  out.reserve(batch.size());
  for (const Setting& s : batch) {
    const auto it = table_.find(canonical(shape_, s));
    if (it == table_.end()) {
      Measurement m;
      m.status = Status::invalid;
      m.message = "no record of this setting in " + origin_;
      out.push_back(std::move(m));
      continue;
    }
    ++measured_;
    out.push_back(it->second);
  }
  // The answers for unrecorded settings carry no costs and leave the span as it is.
  clock_s_ += batch_span_s(out, compile_threads_);
  return out;
}

ReplayEvaluator ReplayEvaluator::from_file(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) {
    throw InputError(path.string() +
                     ": replay dataset not found (expected an isletune dataset "
                     "or a trace written by `isletune measure` or `isletune run`).");
  }
  const TraceReader reader(path);
  std::vector<EvaluationRecord> records;
  for (int rank : reader.ranks()) {
    auto rows = reader.evaluations(rank);
    std::move(rows.begin(), rows.end(), std::back_inserter(records));
  }
  // The recording GPU's limits (bandwidth and L2 feed the space, the roofline predictor and
  // the copy share; a replayed run's trace records them again).
  const auto environment = reader.environment();
  const DeviceLimits limits = recorded_limits(environment);
  // The recorded problem: its stencil (/stencil) and grid (/config, when recorded).
  const StencilInfo info = reader.stencil();
  const Stencil stencil = Stencil::make(info.name, info.dims, info.offsets, info.coefficients);
  const RecordedProblem problem = recorded_problem(reader.config_yaml());
  ReplayEvaluator replay(on_device(shape_of(stencil, problem.grid.value_or(Grid{})), limits),
                         records, limits, path.string());
  if (!environment.empty())
    replay.set_compile_threads(environment.front().compile_threads);
  return replay;
}

std::string ReplayEvaluator::detail() const {
  char gpu[160];
  std::snprintf(gpu, sizeof gpu, "; recorded on %s (%.0f GB/s copy, %.0f MiB L2)",
                limits_.name.c_str(), limits_.memory_bandwidth_gbs,
                limits_.l2_bytes / (1024.0 * 1024.0));
  return replayed_label(origin_) + gpu;
}

// Replay records no kernel sources: the result carries none (export regenerates it).
std::string ReplayEvaluator::source(const Setting&) const {
  return {};
}

}  // namespace isletune
