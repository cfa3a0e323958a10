// Plain values stored in and read back from a trace (docs/trace.md), beside the per-rank
// records of src/ga/records.hpp. No HDF5 here: the CLI, ring and evaluators fill these.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "common/version.hpp"
#include "setting/device_limits.hpp"
#include "setting/setting.hpp"
#include "stencil/stencil.hpp"

namespace isletune {

// Schema version written to the root `version` attribute; readers accept only this one.
inline constexpr int kTraceVersion = 1;
inline constexpr const char* kTraceFormat = "isletune-trace";
inline constexpr const char* kDatasetFormat = "isletune-dataset";
inline constexpr const char* kRankFormat = "isletune-rank";

// Root attributes of a run.
// Current UTC time as ISO 8601 (the `created` stamp of a trace and of its rank files).
[[nodiscard]] std::string utc_now_iso();  // e.g. "2026-11-23T12:26:25.123456Z"

struct RunInfo {
  std::string command;  // the command line
  std::uint64_t seed = 0;
  std::string created;  // ISO 8601 UTC (microseconds); empty: filled with "now"
  std::string isletune_version = version();
};

// One entry of /environment: what a rank ran on. Filled by the evaluator and the ring.
struct EnvironmentInfo {
  int rank = 0;
  std::string host;
  std::string gpu_name;
  std::string gpu_uuid;
  int sm_count = 0;
  int sm_clock_mhz = 0;
  int memory_clock_mhz = 0;
  std::string driver_version;
  std::string cuda_version;
  std::string mpi_library;
  // NVRTC threads that compiled each batch (the CUDA worker's pool); 0 when not known (older
  // traces, replayed runs that knew none). Replay simulates a batch's parallel compile with it.
  int compile_threads = 0;
  // The CPUs those threads ran on ("0-15"; empty when not known): the rank's share of its
  // node (eval/cuda/compile_cpus.hpp). A replayed run records the share a CUDA worker would
  // take there (nothing compiles in replay).
  std::string compile_cpus;
  // The node the rank ran on (Slurm's node name where Slurm started it, else `host`), and
  // its place among the ranks of that node (MPI_COMM_TYPE_SHARED): node-local rank
  // `node_rank` of `node_ranks`, which pick its GPU and its share of the node's CPUs.
  // node_ranks 0: not known (older traces).
  std::string node;
  int node_rank = 0;
  int node_ranks = 0;
  // The GPU the rank uses as its environment numbers it: its entry of CUDA_VISIBLE_DEVICES,
  // else its device ordinal; empty when not known (older traces).
  std::string gpu_device;
  // The device's limits (stored as /environment/rank_NNNN/device_limits), so replay and
  // the space of a resumed run see the recording GPU; nullopt when not known.
  std::optional<DeviceLimits> limits;
};

// The GPU's name from a recorded environment entry, without the "replay: " marks that
// older replay runs wrote in front of it (and twice when replaying a replayed run). A
// replayed run records the recording GPU's name; its config says it was replayed.
inline std::string recorded_gpu_name(std::string name) {
  constexpr const char* kMark = "replay: ";
  while (name.rfind(kMark, 0) == 0)
    name.erase(0, 8);
  return name;
}

// The recording GPU's limits from a trace's /environment: rank 0's device_limits group when
// recorded (bandwidth, L2, shared memory, ...), else the H100 defaults of DeviceLimits with
// the recorded name and SM count (traces written before device_limits was recorded).
inline DeviceLimits recorded_limits(const std::vector<EnvironmentInfo>& environment) {
  DeviceLimits limits;
  if (environment.empty())
    return limits;
  const EnvironmentInfo& first = environment.front();
  if (first.limits)
    limits = *first.limits;
  if (!first.gpu_name.empty())
    limits.name = recorded_gpu_name(first.gpu_name);
  if (first.sm_count > 0)
    limits.sm_count = first.sm_count;
  return limits;
}

// One stencil feature (paper Table 2) by name.
struct StencilFeature {
  std::string name;
  double value = 0;
  bool operator==(const StencilFeature&) const = default;
};

// /stencil as read back (Stencil::make rebuilds the validated stencil from it).
struct StencilInfo {
  std::string name;
  int dims = 2;
  int order = 0;
  std::string shape;  // star, box, cross or custom
  std::vector<Offset> offsets;
  std::vector<double> coefficients;
  std::vector<StencilFeature> features;
};

// /space/parameters: one row per parameter in Param order.
struct ParameterInfo {
  std::string name;
  std::string kind;  // flag, enum, axis, int
  std::vector<int> values;
  bool operator==(const ParameterInfo&) const = default;
};

// /space/ocs: one row of the OC table (the families' OCs, kernel/registry.hpp): id, name, the
// legacy flag columns and the rule (Oc::rule; for a trace written before the rule column,
// the rule of its flags).
struct OcInfo {
  int oc = 0;
  std::string name;
  int streaming = 0, merge = 0, retiming = 0, prefetch = 0, temporal = 0;
  std::string rule;
  bool operator==(const OcInfo&) const = default;
};

// /sample: the settings the GA may visit.
struct SampleData {
  std::vector<Setting> settings;
  std::vector<int> oc;
  std::vector<double> predicted;
  bool operator==(const SampleData&) const = default;
};

// /result: the best verified setting and how the search ended.
struct ResultInfo {
  std::string best_key;
  Setting best;
  int best_rank = 0;
  double median_ms = std::numeric_limits<double>::quiet_NaN();
  double gcells_per_s = 0;
  std::string stop_reason;
  int generations = 0;
  std::int64_t evaluations = 0;
  double wall_s = 0;
  std::string source;  // the best kernel's CUDA source
};

// A rank's checkpoint: an opaque blob (the serialised island state) and its generation.
struct Checkpoint {
  int generation = 0;
  std::vector<std::uint8_t> bytes;
};

}  // namespace isletune
