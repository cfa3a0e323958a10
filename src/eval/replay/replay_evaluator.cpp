// The replay evaluator (see replay_evaluator.hpp).
#include "eval/replay/replay_evaluator.hpp"

#include <chrono>
#include <thread>

#include "common/error.hpp"
#include "kernel/registry.hpp"
#include "trace/reader.hpp"

namespace isletune {

ReplayEvaluator::ReplayEvaluator(const std::vector<EvaluationRecord>& records, DeviceLimits limits,
                                 std::string origin)
    : limits_(std::move(limits)), origin_(std::move(origin)) {
  for (const EvaluationRecord& r : records) {
    if (r.cached || r.migrant)
      continue;
    if (r.measurement.status == Status::invalid)
      continue;
    const Setting kernel = canonical(r.setting);
    if (table_.emplace(kernel, r.measurement).second)
      candidates_.push_back(kernel);
  }
  if (candidates_.empty()) {
    throw InputError(origin_ + ": the replay dataset has no recorded measurements to answer from.");
  }
}

std::vector<Measurement> ReplayEvaluator::evaluate(std::span<const Setting> batch) {
  if (delay_s_ > 0)
    std::this_thread::sleep_for(std::chrono::duration<double>(delay_s_));
  std::vector<Measurement> out;
  out.reserve(batch.size());
  for (const Setting& s : batch) {
    const auto it = table_.find(canonical(s));
    if (it == table_.end()) {
      Measurement m;
      m.status = Status::invalid;
      m.message = "no record of this setting in " + origin_;
      out.push_back(std::move(m));
      continue;
    }
    clock_s_ += it->second.cost_s();
    ++measured_;
    out.push_back(it->second);
  }
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
  // The schema records the device's name and SM count; the other limits are those of
  // the H100 defaults of DeviceLimits (the only GPU datasets are recorded on).
  DeviceLimits limits;
  const auto environment = reader.environment();
  if (!environment.empty()) {
    if (!environment.front().gpu_name.empty())
      limits.name = recorded_gpu_name(environment.front().gpu_name);
    if (environment.front().sm_count > 0)
      limits.sm_count = environment.front().sm_count;
  }
  return ReplayEvaluator(records, limits, path.string());
}

// Replay records no kernel sources: the result carries none (export regenerates it).
std::string ReplayEvaluator::source(const Setting&) const {
  return {};
}

}  // namespace isletune
