// Reading a replay dataset into (setting, measurement) pairs and the replay evaluator.
#include "trace/replay_dataset.hpp"

#include <iterator>

#include "common/error.hpp"
#include "config/config.hpp"
#include "trace/reader.hpp"

namespace isletune {

std::vector<RecordedMeasurement> measured_pairs(std::span<const EvaluationRecord> rows) {
  std::vector<RecordedMeasurement> out;
  out.reserve(rows.size());
  for (const EvaluationRecord& r : rows) {
    if (!r.cached && !r.migrant)
      out.push_back({r.setting, r.measurement});
  }
  return out;
}

ReplayEvaluator load_replay(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) {
    throw InputError(path.string() +
                     ": replay dataset not found (expected an isletune dataset "
                     "or a trace written by `isletune measure` or `isletune run`).");
  }
  const TraceReader reader(path);
  std::vector<RecordedMeasurement> measured;
  for (int rank : reader.ranks()) {
    const std::vector<EvaluationRecord> rows = reader.evaluations(rank);
    std::vector<RecordedMeasurement> pairs = measured_pairs(rows);
    std::move(pairs.begin(), pairs.end(), std::back_inserter(measured));
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
                         measured, limits, path.string());
  if (!environment.empty())
    replay.set_compile_threads(environment.front().compile_threads);
  return replay;
}

}  // namespace isletune
