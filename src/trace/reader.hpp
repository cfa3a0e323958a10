// TraceReader: reads a run's trace.h5 (following the external links to the rank files)
// or an `isletune measure` dataset (docs/trace.md). Used by replay, report, resume.
// Every problem with the file is one InputError sentence naming the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ga/records.hpp"
#include "space/space.hpp"
#include "trace/trace_types.hpp"

namespace isletune {

class TraceReader {
 public:
  // Opens a run directory (its trace.h5), a trace.h5 or a dataset file; checks the format
  // and version. Throws InputError when the file is missing, not HDF5, not an isletune
  // trace, or of another schema version.
  explicit TraceReader(const std::filesystem::path& path);
  TraceReader(TraceReader&&) noexcept;
  TraceReader& operator=(TraceReader&&) noexcept;
  ~TraceReader();

  [[nodiscard]] const std::filesystem::path& path() const;
  [[nodiscard]] std::string format() const;  // kTraceFormat or kDatasetFormat
  [[nodiscard]] bool is_dataset() const { return format() == kDatasetFormat; }
  [[nodiscard]] int version() const;
  [[nodiscard]] RunInfo run_info() const;

  // The effective configuration as YAML text (empty if none was written).
  [[nodiscard]] std::string config_yaml() const;
  // The fingerprint of the replay dataset a run answered from (/config attribute
  // replay_fingerprint; empty for other backends and older traces).
  [[nodiscard]] std::string replay_fingerprint() const;
  [[nodiscard]] StencilInfo stencil() const;
  [[nodiscard]] std::vector<ParameterInfo> space_parameters() const;
  // /space/parameters' `neutral` attribute (one value per row); empty in older traces.
  [[nodiscard]] std::vector<int> space_neutral_values() const;
  // /space/ocs, the OC table; empty in traces written before it was recorded.
  [[nodiscard]] std::vector<OcInfo> space_ocs() const;
  // The allowed values per parameter, as Space takes them.
  [[nodiscard]] Space::Values space_values() const;
  [[nodiscard]] std::optional<SampleData> sample() const;
  [[nodiscard]] std::vector<EnvironmentInfo> environment() const;

  // Ranks present under /ranks, ascending.
  [[nodiscard]] std::vector<int> ranks() const;
  // A rank's tables. Throws InputError naming the rank file when it is missing or damaged.
  [[nodiscard]] std::vector<EvaluationRecord> evaluations(int rank) const;
  [[nodiscard]] std::vector<GenerationRecord> generations(int rank) const;
  [[nodiscard]] std::vector<MigrationRecord> migrations(int rank) const;
  [[nodiscard]] std::optional<Checkpoint> checkpoint(int rank) const;

  // /result, or nullopt while the run has not finished.
  [[nodiscard]] std::optional<ResultInfo> result() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace isletune
