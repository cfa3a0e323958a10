// Loading a replay dataset (an `isletune measure` dataset or a run's trace) for the replay
// evaluator: the trace layer reads the file and hands the evaluator (setting, measurement)
// pairs, so the evaluator (src/eval/replay) imports nothing above it.
#pragma once

#include <filesystem>
#include <span>
#include <vector>

#include "eval/replay/replay_evaluator.hpp"
#include "ga/records.hpp"

namespace isletune {

// The measurements among trace rows, in row order: cached and migrant rows are not
// measurements (an island answered from its cache or took a neighbour's).
[[nodiscard]] std::vector<RecordedMeasurement> measured_pairs(
    std::span<const EvaluationRecord> rows);

// The replay evaluator of every rank's evaluations of a dataset or trace file (trace.h5
// follows its rank links), keyed by their canonical settings for the file's /stencil and
// /config grid, with the recording GPU's limits and compile threads. Throws InputError naming
// the file when it is missing, not an isletune dataset/trace, of another schema version, or
// has no usable records.
[[nodiscard]] ReplayEvaluator load_replay(const std::filesystem::path& path);

}  // namespace isletune
